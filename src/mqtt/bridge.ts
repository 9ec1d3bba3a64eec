/**
 * The MQTT side of the service, one part (src/lifecycle.ts): the embedded broker (when
 * `Mqtt.Connection.Host` is omitted), the connection, the publisher of the snapshots, Home Assistant
 * discovery and its ghost cleanup, and the command topics.
 *
 * What it hears on the bus: `snapshot` and `pollFailed` (published), `configApplied` (an instance
 * whose overrides changed is republished) and `ownershipChanged` (alone: an instance taken over is
 * published at once; among several replicas: it is published from its first poll here, and its
 * discovery only where it differs from the configs the broker retains, read per bucket taken). Its connection tells the bus `mqttConnected` and `mqttLost`; the connection's
 * own hooks, taken once everything that publishes exists, republish every instance after each
 * connect and route the messages received. It publishes, takes commands for and clears ghosts of
 * only the instances its {@link Ownership} owns, and on stop marks only those `offline`.
 */
import { randomBytes } from "node:crypto";
import { ASSETS_SCOPE, FEEDS_SCOPE } from "../assets/alarms.js";
import type { AssetsView } from "../assets/view.js";
import type { EventBus } from "../bus.js";
import type { Config } from "../config/schema.js";
import type { ControlService } from "../control/types.js";
import type { EnergyReader } from "../energy-reader.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import type { SnapshotStore, StoreEvent } from "../poller/store.js";
import { AssetTopics } from "./assets.js";
import type { EmbeddedBroker } from "./broker.js";
import { AssetCommands, type AssetCommandControl } from "./asset-commands.js";
import { CommandHandler } from "./commands.js";
import { MqttConnection, type CreateOptions } from "./connection.js";
import { discoveryNodeId } from "./discovery.js";
import { GhostSweeper } from "./ghost-cleanup.js";
import { Publisher } from "./publisher.js";
import { BucketStatus } from "./bucket-status.js";
import { TopicIdGuard, Topics, type ReplicaTopics } from "./topics.js";
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
  readonly bus: EventBus;
  readonly logger: Logger;
  /** What commands are executed by; none: refused until {@link MqttBridge.attachControl}. */
  readonly control?: ControlService | null;
  /** What asset commands (`<P>/$assets/<asset>/set`, `…/reboot`) go to; none: refused. */
  readonly assetControl?: AssetCommandControl | null;
  /** Which instances are published and commanded here; default all. */
  readonly ownership?: Ownership;
  /** Assets and feeds (src/assets/view.ts), published under `P/$assets` and `P/$feeds` (./assets.ts). */
  readonly assets?: AssetsView;
  /**
   * This replica among several (docs/cluster.md): its client id is `<ClientId>-<member>`, its
   * status topic its own, and each held bucket has an availability connection (./bucket-status.ts).
   */
  readonly replica?: ReplicaTopics & { holdsBucket(bucket: number): boolean };
  /** The lifetime energy counters, published retained beside the measurements (docs/energy.md). */
  readonly energy?: EnergyReader;
}

/** Messages handed to the MQTT client and dropped or refused since start, discovery configs retained. */
export interface MqttTraffic {
  readonly published: number;
  readonly failed: number;
  readonly discoveryConfigs: number;
}

/** What {@link MqttBridge.start} builds. */
interface Running {
  readonly embedded: EmbeddedBroker | null;
  readonly connection: MqttConnection;
  readonly publisher: Publisher;
  readonly ghosts: GhostSweeper | null;
  readonly buckets: BucketStatus | null;
  readonly assets: AssetTopics | null;
}

/** How often values are republished at least: half of `expire_after`, or 5 minutes when it is 0. */
export function refreshPeriodMs(sensorExpireAfterSeconds: number): number {
  return sensorExpireAfterSeconds > 0 ? (sensorExpireAfterSeconds * 1000) / 2 : DEFAULT_REFRESH_MS;
}

/** Builds the MQTT part and starts it ({@link MqttBridge.start}). */
export async function startMqttBridge(deps: MqttBridgeDeps): Promise<MqttBridge> {
  const bridge = new MqttBridge(deps);
  await bridge.start();
  return bridge;
}

export class MqttBridge implements MqttBridgeHandle {
  readonly name = "mqtt";
  readonly #deps: MqttBridgeDeps;
  readonly #logger: Logger;
  readonly #topics: Topics;
  readonly #ownership: Ownership;
  readonly #commands: CommandHandler;
  readonly #assetCommands: AssetCommands;
  #running: Running | null = null;
  #stopping: Promise<void> | null = null;
  /** Instances whose discovery {@link clearRemoved} cleared: nothing more is published for them. */
  readonly #removed = new Set<string>();

  constructor(deps: MqttBridgeDeps) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ part: "mqtt" });
    this.#topics = new Topics(deps.config.Mqtt.ParentTopic, deps.replica ?? null);
    this.#ownership = deps.ownership ?? OWN_ALL;
    this.#commands = new CommandHandler({
      topics: this.#topics,
      instances: deps.config.instances,
      logger: this.#logger,
      bus: deps.bus,
      ownership: this.#ownership,
    });
    this.#commands.attach(deps.control ?? null);
    this.#assetCommands = new AssetCommands({
      parent: deps.config.Mqtt.ParentTopic,
      config: deps.config,
      logger: this.#logger,
      bus: deps.bus,
      ownership: this.#ownership,
    });
    this.#assetCommands.attach(deps.assetControl ?? null);
  }

  /**
   * Starts the embedded broker if configured, then connects. Throws when the embedded broker cannot
   * listen (ConfigError naming `Mqtt.Embedded.Port`) or the broker refuses the credentials, leaving
   * nothing running; a broker that is down is not an error (the bridge keeps reconnecting).
   */
  async start(): Promise<void> {
    const { config } = this.#deps;
    const logger = this.#logger;
    warnWhenSensorsExpireBetweenPolls(config, logger);
    // The bridge's password at its own embedded broker: only it may use its client id.
    const bridgeSecret = randomBytes(24).toString("base64url");
    const embedded = await startEmbeddedIfConfigured(config, bridgeSecret, logger);
    const replica = this.#deps.replica;
    const buckets =
      replica === undefined
        ? null
        : new BucketStatus({
            config: config.Mqtt,
            topics: this.#topics,
            logger,
            holds: (bucket) => replica.holdsBucket(bucket),
          });
    try {
      const target = connectionTarget(config, embedded, bridgeSecret);
      const connection = await MqttConnection.create({
        ...target,
        // Among several replicas each connects as itself, with its own status topic.
        ...(replica === undefined
          ? {}
          : {
              config: { ...target.config, ClientId: `${config.Mqtt.ClientId}-${replica.member}` },
              statusTopic: this.#topics.bridgeStatus(),
            }),
        subscriptions: [
          ...this.#commands.subscriptions(),
          ...this.#assetCommands.subscriptions(),
          ...this.#haStatusSubscription(),
        ],
        logger,
        bus: this.#deps.bus,
      });
      // The ghost cleanup reads what the publisher last published as discovery, and the publisher
      // tells it when it published: neither asks the other before the connect below.
      const ghosts = this.#ghostSweeper(
        connection,
        embedded !== null,
        (id) => publisher.discoveryTopics(id),
        (id, configs) => {
          if (this.#ownership.owns(id)) publisher.retainedRead(id, configs);
        },
      );
      const publisher = createPublisher(
        config,
        connection,
        this.#deps.store,
        this.#topics,
        logger,
        (id) => ghosts?.discovered(id),
        (id) => this.#publishes(id),
        this.#deps.energy,
      );
      const assets = this.#assetTopics(connection);
      this.#listen(publisher, buckets, ghosts, assets);
      await connection.connect({
        // Every connect: every instance's status, discovery and retained topics again, and the
        // assets'; the first starts the ghost cleanup.
        onConnect: () => {
          publisher.resync(this.#owned());
          assets?.resync();
          ghosts?.onConnect();
        },
        onMessage: this.#router(publisher, ghosts),
      });
      this.#running = { embedded, connection, publisher, ghosts, buckets, assets };
    } catch (error) {
      this.#deps.bus.release(this);
      await buckets?.close();
      await embedded?.close();
      throw error;
    }
  }

  /** Executes commands with `control` from now on (null: refuses them, "not available"). */
  attachControl(control: ControlService | null): void {
    this.#commands.attach(control);
  }

  /** Where the embedded broker listens, or null when an external broker is used (or before start). */
  get embeddedBroker(): { readonly host: string; readonly port: number } | null {
    const embedded = this.#running?.embedded ?? null;
    return embedded === null ? null : { host: embedded.host, port: embedded.port };
  }

  status(): MqttStatus {
    const running = this.#running;
    if (running === null) {
      return { connected: false, broker: "", embedded: false, lastError: null, since: null };
    }
    const status = running.connection.status();
    const dropped = (status.droppedMessages ?? 0) + running.publisher.failed;
    return dropped > 0 ? { ...status, droppedMessages: dropped } : status;
  }

  /** What was sent since start; null before it. */
  traffic(): MqttTraffic | null {
    const running = this.#running;
    if (running === null) return null;
    return { ...running.connection.traffic, discoveryConfigs: running.publisher.discoveryConfigs };
  }

  homeAssistant(): HomeAssistantStatus {
    const ha = this.#deps.config.HomeAssistant;
    return {
      enabled: ha.DiscoveryEnabled,
      discoveryTopic: ha.DiscoveryTopic,
      lastDiscoveryUtc: this.#running?.publisher.lastDiscoveryUtc ?? null,
    };
  }

  /** Republishes one instance's discovery and retained topics (after a live change of its overrides). */
  refresh(instanceId: string): void {
    if (this.#ownership.owns(instanceId)) this.#running?.publisher.refresh(instanceId);
  }

  /** Publishes `offline` for every instance it owns and the bridge, then disconnects. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const running = this.#running;
      this.#commands.attach(null);
      if (running === null) return;
      // Nothing more is published: the lifecycle released the listeners before this stop; a
      // bridge started without it (startMqttBridge) releases them here.
      this.#deps.bus.release(this);
      running.assets?.close();
      running.ghosts?.close();
      await running.buckets?.close();
      // Every instance goes `offline` with the bridge, not only `P/status`: the ones it owns.
      const owned = this.#deps.config.instances.filter((i) => this.#ownership.owns(i.id));
      await running.connection.close(owned.map((i) => this.#topics.instanceStatus(i.id)));
      await running.embedded?.close();
    })();
    return this.#stopping;
  }

  /**
   * Clears the discovery of instances that left the configuration (a restart for the new one
   * follows): each config last published for an instance it owns, with one info line per instance.
   * Nothing more is published for them; their status still goes `offline` on stop, and the ghost
   * cleanup of the next start finds whatever was not cleared here (not connected, never published).
   */
  clearRemoved(instanceIds: readonly string[]): void {
    const running = this.#running;
    if (running === null) return;
    for (const id of instanceIds) {
      if (!this.#ownership.owns(id) || this.#removed.has(id)) continue;
      this.#removed.add(id);
      let cleared = 0;
      for (const topic of running.publisher.discoveryTopics(id) ?? []) {
        if (running.connection.publish(topic, "", 1, true)) cleared++;
      }
      if (cleared === 0) continue;
      this.#logger.info(
        { instance: id, cleared },
        "cleared the retained discovery configs of an instance that is no longer configured",
      );
    }
  }

  /** Whether the instance is published here: owned, and not removed ({@link clearRemoved}). */
  #publishes(id: string): boolean {
    return this.#ownership.owns(id) && !this.#removed.has(id);
  }

  /** The instances published here now, in configuration order. */
  #owned(): string[] {
    return this.#deps.store.ids().filter((id) => this.#publishes(id));
  }

  #haStatusSubscription(): string[] {
    const ha = this.#deps.config.HomeAssistant;
    return ha.DiscoveryEnabled ? [Topics.homeAssistantStatus(ha.DiscoveryTopic)] : [];
  }

  #ghostSweeper(
    connection: MqttConnection,
    embedded: boolean,
    published: (instanceId: string) => ReadonlySet<string> | null,
    retainedRead: (instanceId: string, configs: ReadonlyMap<string, string> | null) => void,
  ): GhostSweeper | null {
    const { config, replica } = this.#deps;
    if (!config.HomeAssistant.DiscoveryEnabled) return null;
    return new GhostSweeper({
      prefix: config.HomeAssistant.DiscoveryTopic,
      nodeIds: new Map(config.instances.map((i) => [discoveryNodeId(this.#topics.parent, i.id), i.id])),
      sink: connection,
      // An instance another process owns is never judged here: its configs are its owner's.
      current: (id) => (this.#ownership.owns(id) ? published(id) : null),
      markerTopic: this.#topics.sweepMarker(),
      // Among several replicas: read per bucket taken, and judged by the publisher's discovery.
      ...(replica === undefined ? {} : { onRead: retainedRead }),
      // An instance no longer configured: cleared by the holder of its bucket, which nobody else
      // may publish it from (docs/mqtt.md, "Instances removed from the configuration").
      removed: {
        parentTopic: this.#topics.parent,
        nodeIdOf: (id) => discoveryNodeId(this.#topics.parent, id),
        mayClear: (id) => replica === undefined || replica.holdsBucket(replica.bucketOf(id)),
      },
      // aedes streams a subscription's retained messages on their own (its marker may come first)
      // and holds no per-client queue limit: larger rounds, and a short settle after each marker.
      ...(embedded ? { settleMs: EMBEDDED_SWEEP_SETTLE_MS, roundConfigs: EMBEDDED_ROUND_CONFIGS } : {}),
      logger: this.#logger,
    });
  }

  /** The assets' topics and discovery (./assets.ts), when the App has assets. */
  #assetTopics(connection: MqttConnection): AssetTopics | null {
    const { assets, config } = this.#deps;
    if (assets === undefined) return null;
    const ha = config.HomeAssistant;
    return new AssetTopics({
      sink: connection,
      topics: this.#topics,
      guard: new TopicIdGuard(this.#logger),
      view: assets,
      discovery: ha.DiscoveryEnabled ? { topics: this.#topics, prefix: ha.DiscoveryTopic } : null,
      actionsEnabled: (id) => config.instances.find((i) => i.id === id)?.ActionsEnabled === true,
    });
  }

  /** The part's bus listeners: what it publishes, and when it republishes. */
  #listen(
    publisher: Publisher,
    buckets: BucketStatus | null,
    ghosts: GhostSweeper | null,
    assets: AssetTopics | null,
  ): void {
    const publish = (event: StoreEvent): void => {
      if (this.#publishes(event.instanceId)) publisher.handle(event);
    };
    this.#deps.bus.listen(this, {
      snapshot: publish,
      pollFailed: publish,
      assets: (event) => assets?.changed(event),
      trap: (event) => {
        if (this.#publishes(event.instanceId)) publisher.trap(event);
      },
      alarms: ({ instanceId, changes }) => {
        if (instanceId === ASSETS_SCOPE || instanceId === FEEDS_SCOPE) assets?.alarms(instanceId, changes);
      },
      // Re-derived snapshots (REST, control's Protected and MQTT retained topics came with the
      // store's event), then discovery: renamed things republished, hidden things' configs cleared.
      configApplied: ({ live }) => {
        for (const id of live.overrides) this.refresh(id);
      },
      ownershipChanged: ({ gained, bucket }) => {
        // Which assets this replica publishes follows the instances it polls.
        assets?.changed({ assets: [], feeds: false, reconfigured: true });
        // The bucket's availability first: `online` before its instances' topics.
        if (bucket !== undefined && buckets !== null) {
          if (bucket.held && gained.length > 0) buckets.hold(bucket.index);
          else if (!bucket.held) {
            const ended = buckets.release(bucket.index, bucket.handover);
            bucket.holdRelease?.(ended);
          }
        }
        if (this.#deps.replica === undefined) {
          for (const id of gained) this.refresh(id);
          return;
        }
        // Taken over from another replica: published from its first poll here, its discovery
        // only where it differs from what the broker retains (docs/mqtt.md).
        for (const id of gained) publisher.adopt(id);
        ghosts?.read(gained);
      },
    });
  }

  /**
   * What the connection's messages go to: the ghost cleanup's reading, Home Assistant's status
   * (its `online` republishes everything, at most once per window), and the command topics.
   */
  #router(
    publisher: Publisher,
    ghosts: GhostSweeper | null,
  ): (topic: string, payload: Buffer, retained: boolean) => void {
    const ha = this.#deps.config.HomeAssistant;
    const haStatusTopic = Topics.homeAssistantStatus(ha.DiscoveryTopic);
    const logger = this.#logger;
    // Each `online` would republish the whole fleet's discovery: at most one per window, and one
    // more at its end when Home Assistant said `online` again meanwhile (it may have restarted).
    const birth = atMostOncePer(HA_RESYNC_WINDOW_MS, () => {
      logger.info("Home Assistant is online: republishing discovery and states");
      publisher.resync(this.#owned());
    });
    return (topic, payload, retained) => {
      if (ghosts?.accepts(topic) === true) {
        ghosts.collect(topic, payload, retained);
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
      const handler = this.#assetCommands.accepts(topic) ? this.#assetCommands : this.#commands;
      void handler.handle(topic, payload, retained).catch((error: unknown) => {
        logger.error({ topic, err: describeError(error) }, "MQTT command handling failed");
      });
    };
  }
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
 * Where the connection goes: the configured broker, or the embedded one with the bridge's own
 * credentials.
 */
function connectionTarget(
  config: Config,
  embedded: EmbeddedBroker | null,
  bridgeSecret: string,
): Pick<CreateOptions, "config" | "target"> {
  const mqtt = config.Mqtt;
  if (embedded === null) return { config: mqtt };
  return {
    config: {
      ...mqtt,
      Credentials: { Username: mqtt.Credentials.Username ?? mqtt.ClientId, Password: bridgeSecret },
    },
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
  };
}

/** The publisher of states, availability and (when enabled) Home Assistant discovery. */
function createPublisher(
  config: Config,
  connection: MqttConnection,
  store: SnapshotStore,
  topics: Topics,
  logger: Logger,
  onDiscovery: (instanceId: string) => void,
  owns: (instanceId: string) => boolean,
  energy: EnergyReader | undefined,
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
    owns,
    ...(energy === undefined ? {} : { energy }),
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
