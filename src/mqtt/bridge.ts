/**
 * The MQTT side of the service: embedded broker (when `Mqtt.Connection.Host` is omitted), the
 * connection, the publisher fed by the snapshot store, Home Assistant discovery and commands.
 */
import { randomBytes } from "node:crypto";
import type { Config } from "../config/schema.js";
import type { ControlService } from "../control/types.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";
import type { SnapshotStore } from "../poller/store.js";
import type { EmbeddedBroker } from "./broker.js";
import { CommandHandler } from "./commands.js";
import { MqttConnection } from "./connection.js";
import { discoveryNodeId } from "./discovery.js";
import { GhostSweeper } from "./ghost-cleanup.js";
import { Publisher } from "./publisher.js";
import { TopicIdGuard, Topics } from "./topics.js";
import type { HomeAssistantStatus, MqttBridgeHandle, MqttStatus } from "./types.js";

/** The ghost cleanup's settle time after each round's marker on the embedded broker (ms). */
const EMBEDDED_SWEEP_SETTLE_MS = 100;
/** Retained configs per round of the ghost cleanup on the embedded broker. */
const EMBEDDED_ROUND_CONFIGS = 10_000;

/** Home Assistant's `online` republishes everything at most once per this window (ms). */
export const HA_RESYNC_WINDOW_MS = 30_000;

/** Value refresh period when `SensorExpireAfterSeconds` is 0 (sensors never expire). */
export const DEFAULT_REFRESH_MS = 300_000;

export interface MqttBridgeDeps {
  readonly config: Config;
  readonly store: SnapshotStore;
  readonly logger: Logger;
}

export interface MqttBridge extends MqttBridgeHandle {
  /** Commands are executed only while a control service is attached (null detaches). */
  attachControl(control: ControlService | null): void;
  /** Messages handed to the MQTT client and dropped or refused since start, discovery configs retained. */
  traffic(): { readonly published: number; readonly failed: number; readonly discoveryConfigs: number };
  /** Republishes one instance's discovery and retained topics (after a live change of its overrides). */
  refresh(instanceId: string): void;
  /** Where the embedded broker listens, or null when an external broker is used. */
  readonly embeddedBroker: { readonly host: string; readonly port: number } | null;
}

/** How often values are republished at least: half of `expire_after`, or 5 minutes when it is 0. */
export function refreshPeriodMs(sensorExpireAfterSeconds: number): number {
  return sensorExpireAfterSeconds > 0 ? (sensorExpireAfterSeconds * 1000) / 2 : DEFAULT_REFRESH_MS;
}

/**
 * Starts the embedded broker if configured, then connects. Throws when the embedded broker cannot
 * listen (ConfigError naming `Mqtt.Embedded.Port`) or the broker refuses the credentials; a broker
 * that is down is not an error (the bridge keeps reconnecting).
 */
export async function startMqttBridge(deps: MqttBridgeDeps): Promise<MqttBridge> {
  const { config, store } = deps;
  const logger = deps.logger.child({ part: "mqtt" });
  const topics = new Topics(config.Mqtt.ParentTopic);
  warnWhenSensorsExpireBetweenPolls(config, logger);

  const commands = new CommandHandler({ topics, instances: config.instances, logger });
  // The bridge's password at its own embedded broker: only it may use its client id.
  const bridgeSecret = randomBytes(24).toString("base64url");
  const embedded = await startEmbeddedIfConfigured(config, bridgeSecret, logger);
  // The publisher needs the connection and the connection's hooks need the publisher.
  let publisher: Publisher | null = null;
  let ghosts: GhostSweeper | null = null;
  let connection: MqttConnection;
  try {
    connection = await connect(
      config,
      embedded,
      bridgeSecret,
      commands,
      () => publisher,
      () => ghosts,
      logger,
    );
  } catch (error) {
    await embedded?.close();
    throw error;
  }
  const active = createPublisher(config, connection, store, topics, logger, (id) => ghosts?.discovered(id));
  publisher = active;
  if (config.HomeAssistant.DiscoveryEnabled) {
    const sweeper = new GhostSweeper({
      prefix: config.HomeAssistant.DiscoveryTopic,
      nodeIds: new Map(config.instances.map((i) => [discoveryNodeId(topics.parent, i.id), i.id])),
      sink: connection,
      current: (id) => active.discoveryTopics(id),
      markerTopic: topics.sweepMarker(),
      // aedes streams a subscription's retained messages on their own (its marker may come first)
      // and holds no per-client queue limit: larger rounds, and a short settle after each marker.
      ...(embedded === null
        ? {}
        : { settleMs: EMBEDDED_SWEEP_SETTLE_MS, roundConfigs: EMBEDDED_ROUND_CONFIGS }),
      logger,
    });
    ghosts = sweeper;
    // Connected before the sweeper existed: start collecting now (later connects do nothing).
    if (connection.connected) sweeper.onConnect();
  }
  const unsubscribe = store.subscribe((event) => active.handle(event));
  // Connected before the publisher existed: publish what the store already holds.
  if (connection.connected) active.resync();

  let stopping: Promise<void> | null = null;
  const ha = config.HomeAssistant;
  return {
    embeddedBroker: embedded === null ? null : { host: embedded.host, port: embedded.port },
    attachControl: (control) => commands.attach(control),
    refresh: (instanceId) => active.refresh(instanceId),
    status: (): MqttStatus => {
      const status = connection.status();
      const dropped = (status.droppedMessages ?? 0) + active.failed;
      return dropped > 0 ? { ...status, droppedMessages: dropped } : status;
    },
    traffic: () => ({ ...connection.traffic, discoveryConfigs: active.discoveryConfigs }),
    homeAssistant: (): HomeAssistantStatus => ({
      enabled: ha.DiscoveryEnabled,
      discoveryTopic: ha.DiscoveryTopic,
      lastDiscoveryUtc: active.lastDiscoveryUtc,
    }),
    stop() {
      stopping ??= (async () => {
        unsubscribe();
        ghosts?.close();
        commands.attach(null);
        // Every instance goes `offline` with the bridge (docs/mqtt.md, "Availability"), not only `P/status`.
        await connection.close(config.instances.map((instance) => topics.instanceStatus(instance.id)));
        await embedded?.close();
      })();
      return stopping;
    },
  };
}

/** One warning per instance that polls no faster than Home Assistant lets its sensors expire. */
function warnWhenSensorsExpireBetweenPolls(config: Config, logger: Logger): void {
  const expireAfter = config.HomeAssistant.SensorExpireAfterSeconds;
  if (expireAfter <= 0) return;
  for (const instance of config.instances) {
    if (instance.PollInterval < expireAfter) continue;
    logger.warn(
      { instance: instance.id, pollInterval: instance.PollInterval, expireAfter },
      "PollInterval is not below HomeAssistant.SensorExpireAfterSeconds: sensors will expire between polls",
    );
  }
}

/**
 * The embedded broker when `Mqtt.Connection.Host` is omitted, else null. The bridge connects to it
 * with its client id and `bridgeSecret`.
 */
async function startEmbeddedIfConfigured(
  config: Config,
  bridgeSecret: string,
  logger: Logger,
): Promise<EmbeddedBroker | null> {
  const mqtt = config.Mqtt;
  const ha = config.HomeAssistant;
  if (mqtt.Connection.Host !== null) return null;
  // Loaded only here: aedes and its dependencies are about 30 modules a bridge with its own broker
  // never runs, and a module's source and records stay in the heap for the life of the process.
  const { startEmbeddedBroker } = await import("./broker.js");
  return startEmbeddedBroker({
    bind: mqtt.Embedded.Bind,
    port: mqtt.Embedded.Port,
    username: mqtt.Credentials.Username,
    password: mqtt.Credentials.Password,
    logger,
    bridge: { clientId: mqtt.ClientId, secret: bridgeSecret },
    parentTopic: mqtt.ParentTopic,
    ...(ha.DiscoveryEnabled ? { discoveryPrefix: ha.DiscoveryTopic } : {}),
    maxPacketSize: mqtt.Embedded.MaxPacketSize,
  });
}

/**
 * Connects to the configured broker, or to the embedded one, subscribed to the command topics (and
 * Home Assistant's status topic); every connect, and Home Assistant coming online, resyncs the publisher.
 */
function connect(
  config: Config,
  embedded: EmbeddedBroker | null,
  bridgeSecret: string,
  commands: CommandHandler,
  publisher: () => Publisher | null,
  ghosts: () => GhostSweeper | null,
  logger: Logger,
): Promise<MqttConnection> {
  const ha = config.HomeAssistant;
  const haStatusTopic = Topics.homeAssistantStatus(ha.DiscoveryTopic);
  const mqtt = config.Mqtt;
  // Each `online` would republish the whole fleet's discovery: at most one per window, and one
  // more at its end when Home Assistant said `online` again meanwhile (it may have restarted).
  const birth = atMostOncePer(HA_RESYNC_WINDOW_MS, () => {
    logger.info("Home Assistant is online: republishing discovery and states");
    publisher()?.resync();
  });
  return MqttConnection.open({
    config:
      embedded === null
        ? mqtt
        : {
            ...mqtt,
            Credentials: { Username: mqtt.Credentials.Username ?? mqtt.ClientId, Password: bridgeSecret },
          },
    ...(embedded === null
      ? {}
      : {
          // aedes speaks MQTT 3.1.1 only (the loader refuses ProtocolVersion 5 without a Host).
          target: {
            scheme: "mqtt",
            host: embedded.host,
            port: embedded.port,
            protocolVersion: 4,
            embedded: true,
            // aedes cannot announce its limit (MQTT 3.1.1) and closes a connection that exceeds it.
            maxPacketSize: mqtt.Embedded.MaxPacketSize,
          },
        }),
    subscriptions: [...commands.subscriptions(), ...(ha.DiscoveryEnabled ? [haStatusTopic] : [])],
    logger,
    hooks: {
      onConnect: () => {
        publisher()?.resync();
        ghosts()?.onConnect();
      },
      onMessage: (topic, payload, retained) => {
        const sweeper = ghosts();
        if (sweeper?.accepts(topic) === true) {
          sweeper.collect(topic, payload, retained);
          return;
        }
        // Our own discovery configs still arriving on the sweeper's filters after its window closed
        // (the unsubscribe was in flight): never commands, so not audited as refused ones.
        if (topic.startsWith(`${ha.DiscoveryTopic}/`) && topic.endsWith("/config")) return;
        if (topic === haStatusTopic) {
          // A retained `online` arrives on every subscribe; the connect itself already republished.
          if (!retained && payload.toString("utf8").trim().toLowerCase() === "online") birth.trigger();
          return;
        }
        void commands.handle(topic, payload, retained).catch((error: unknown) => {
          logger.error({ topic, err: describeError(error) }, "MQTT command handling failed");
        });
      },
    },
  });
}

/** The publisher of states, availability and (when enabled) Home Assistant discovery. */
function createPublisher(
  config: Config,
  connection: MqttConnection,
  store: SnapshotStore,
  topics: Topics,
  logger: Logger,
  onDiscovery: (instanceId: string) => void,
): Publisher {
  const ha = config.HomeAssistant;
  return new Publisher({
    sink: connection,
    store,
    instances: config.instances,
    topics,
    guard: new TopicIdGuard(logger),
    discovery: ha.DiscoveryEnabled
      ? { topics, prefix: ha.DiscoveryTopic, expireAfter: ha.SensorExpireAfterSeconds }
      : null,
    refreshMs: refreshPeriodMs(ha.SensorExpireAfterSeconds),
    logger,
    onDiscovery,
  });
}

/**
 * `run` at once when it last ran `windowMs` ago or more; otherwise once when the window is over,
 * however often it was asked for meanwhile.
 */
function atMostOncePer(windowMs: number, run: () => void): { trigger(): void } {
  let last = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  const fire = (): void => {
    timer = null;
    last = Date.now();
    run();
  };
  return {
    trigger() {
      if (timer !== null) return;
      const wait = last + windowMs - Date.now();
      if (wait <= 0) {
        fire();
        return;
      }
      timer = setTimeout(fire, wait);
      timer.unref();
    },
  };
}
