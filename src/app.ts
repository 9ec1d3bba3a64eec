/**
 * Composition root: builds the parts from a validated configuration, owns the event bus they talk
 * over (src/bus.ts), and starts them in order and stops them in reverse (src/lifecycle.ts). Nothing
 * else wires parts together; no part calls into another. docs/architecture.md ("Parts", "The event
 * bus") says what each part does and which events it emits and hears.
 *
 * Start order (stopped in reverse):
 *   pdus → energy → instance-log → assets → metrics → console → api → health → credentials →
 *   poller → mqtt → [cluster] → control
 *
 * What the order guarantees:
 * - The listeners (the REST API, then health) bind before anything reaches out: a second process
 *   started with the same configuration finds its ports taken and exits 2 before it logs in to a
 *   PDU, polls or connects to the broker, where its client id would take over the running
 *   bridge's session (and its stop would mark the whole fleet `offline`).
 * - The lifetime energy counters read their checkpoint (a file it cannot read refuses the start)
 *   and listen before anything polls or shows a snapshot: they are updated from a snapshot before
 *   the surfaces read them, and they stop (a last checkpoint) after everything that updates them.
 * - The health listener starts after the REST API: a readiness probe cannot pass while the API
 *   still refuses connections (the worker thread takes a while to listen); it is not ready before
 *   MQTT connects anyway.
 * - Every part that counts or shows polls (the assets' book, metrics, the console's history, the
 *   login check, the instance log) listens before the poller starts; polling starts before MQTT
 *   connects, so the first snapshots arrive while it connects (each connect publishes what the
 *   store holds).
 * - Control is last, so it stops first: new commands are refused and writes in flight get the stop
 *   budget to finish (what is still unfinished then is reported as outcome unknown, never as
 *   "retry"). Its start does nothing: the core answers from the moment MQTT and the API take requests.
 * - With several replicas (`Cluster.Enabled`), the cluster part stands after MQTT: it joins once
 *   MQTT connects (readiness), and on stop hands its buckets over before MQTT's stop, so nothing it
 *   held is marked `offline` (src/cluster/part.ts).
 * - Then MQTT publishes `offline` for every instance it owns and for the bridge before it closes
 *   (and the embedded broker with it); the poller stops after it, then the listeners close
 *   (health, then the REST API: reads are answered while the rest stops, and readiness fails from
 *   MQTT's stop on), and the PDU drivers and the store close last.
 */
import { AssetsPart } from "./assets/part.js";
import { CircuitApplier, parseCircuits } from "./assets/circuits.js";
import type { AssetsView } from "./assets/view.js";
import { EventBus } from "./bus.js";
import { createCluster, MAX_RECORD_PAYLOAD_LENGTH, type Cluster } from "./cluster/index.js";
import { ClusterPart } from "./cluster/part.js";
import type { LiveChanges } from "./config/kubernetes/diff.js";
import { advertisedApiUrl } from "./config/environment.js";
import { apiTlsFiles } from "./config/oidc.js";
import type { Config, InstanceConfig } from "./config/schema.js";
import { CredentialsCheck } from "./control/credentials.js";
import { EnergyPart, type CheckpointBackend } from "./energy/part.js";
import { engineBackend } from "./energy/engine.js";
import { stateDirBackend } from "./energy/state-dir.js";
import {
  engineBackend as webhookEngineBackend,
  stateDirBackend as webhookStateDirBackend,
  type ScopeBackend,
} from "./webhooks/backends.js";
import { WebhooksPart } from "./webhooks/part.js";
import { createControlService, type ControlCore } from "./control/service.js";
import {
  createReplicaForwarding,
  type ConsoleAsk,
  type ConsolePeers,
  type ReplicaForwarding,
} from "./cluster/forward/index.js";
import { AssetControl } from "./control/asset-control.js";
import type { AssetBookSource, AssetBookView } from "./control/asset-guard.js";
import { MemoryRecords, type SequenceRecords } from "./control/sequence-records.js";
import { Sequences } from "./control/sequences.js";
import { createLeaseStore, JOURNAL_PAYLOAD_MAX } from "./cluster/engines.js";
import { JournalStore } from "./cluster/journal-store.js";
import type { ControlService, WriteFence } from "./control/types.js";
import { NO_ENERGY, type EnergyReader } from "./energy-reader.js";
import type { ApiListener } from "./http/api-worker/host.js";
import type { RunningListener } from "./http/listener.js";
import { startHealthServer } from "./http/health/server.js";
import type { ClusterHealth, HttpDeps, ReplicaSurface } from "./http/types.js";
import { Lifecycle, type Part } from "./lifecycle.js";
import { FoldedLog } from "./log-limit.js";
import { createLogger, type Logger } from "./log.js";
import { BridgeMetrics } from "./metrics/bridge.js";
import { metricsRoute } from "./metrics/endpoint.js";
import { MqttBridge } from "./mqtt/bridge.js";
import { OWN_ALL, type Ownership } from "./ownership.js";
import type { PduDriver } from "./pdu/driver.js";
import { createDriver } from "./pdu/drivers.js";
import { LoadTracker, thresholdsOf } from "./pdu/load.js";
import { overridesView, unknownOverrides } from "./pdu/overrides.js";
import { Poller } from "./poller/scheduler.js";
import { SnapshotStore, type SnapshotView } from "./poller/store.js";
import { heapFlagsReport, heapLimitMb, heapNeededMb } from "./runtime.js";
import { ConsoleFeed, type ConsoleLimits } from "./ui/feed.js";
import { TrapPart } from "./traps/part.js";
import { consoleRoutes } from "./ui/routes.js";

export type { Part } from "./lifecycle.js";

export interface AppOptions {
  /** Logger to use (tests pass one that captures lines); default: pino on stdout at Logging.Level. */
  logger?: Logger;
  /** The console's event-stream bounds; default the documented ones (tests make them small). */
  consoleLimits?: ConsoleLimits;
}

export class App {
  #config: Config;
  readonly logger: Logger;
  /** What the parts tell each other. */
  readonly bus: EventBus;
  /** Which instances this process polls, publishes and writes to: all of them, or its buckets' ones. */
  readonly ownership: Ownership;
  /** This replica's part of the cluster (`Cluster.Enabled`), else null. */
  readonly cluster: ClusterPart | null;
  readonly store: SnapshotStore;
  readonly poller: Poller;
  /** One driver per instance (its PDU family, `Pdus.<id>.Driver`). */
  readonly clients: ReadonlyMap<string, PduDriver>;
  readonly startedAt = Date.now();
  /** What the surfaces (REST, MQTT) call. */
  readonly control: ControlCore;
  /** Asset control (docs/assets.md): an asset's command cord by cord through the control path. */
  readonly assetControl: AssetControl;
  /** Power sequences: planned, run and resumed among replicas from their journal. */
  readonly sequences: Sequences;
  /** Where control reads the assets' book when one is attached ({@link attachAssets}), else null. */
  #assetBook: AssetBookSource = () => null;
  /** The web console's live feed and outlet history (only with the REST API on). */
  readonly console: ConsoleFeed | null;
  /** The login check of the instances with control (a wrong password found at start). */
  readonly credentials: CredentialsCheck;
  /**
   * Assets and feeds (docs/assets.md): the book of every asset's state (`assets.book`, read at each
   * use: a live change replaces it), the feed-loss projection and the alarms about several PDUs.
   */
  readonly assets: AssetsView;
  /** The lifetime energy counters and their checkpoints (docs/energy.md). */
  readonly energy: EnergyPart;
  /** Signed webhooks of alarm, control, availability and sequence events (docs/events.md). */
  readonly webhooks: WebhooksPart;
  readonly #mqtt: MqttBridge;
  /** The SNMP trap receiver (`Traps.Enabled`, docs/events.md), else null. */
  readonly traps: TrapPart | null;
  readonly #api: ApiPart | null;
  readonly #health: ListenerPart | null;
  readonly #lifecycle: Lifecycle;
  #stopping: Promise<void> | null = null;
  /** What the REST surface calls for control (the forwarding among several replicas). */
  readonly #rest: ControlPart["rest"];

  private constructor(
    config: Config,
    logger: Logger,
    consoleLimits: ConsoleLimits = {},
    cluster: Cluster | null = null,
    journal: JournalStore | null = null,
  ) {
    this.#config = config;
    this.logger = logger;
    const bus = new EventBus({ logger });
    this.bus = bus;
    const current = (): Config => this.config;
    const clusterPart =
      cluster === null ? null : new ClusterPart(cluster, bus, logger, () => this.#mqtt.status().connected);
    this.cluster = clusterPart;
    this.ownership = clusterPart?.ownership ?? OWN_ALL;
    const ownership = this.ownership;
    // Among several replicas each request to a PDU names its replica (docs/cluster.md).
    const member = config.Cluster.Enabled ? { member: config.Cluster.MemberName } : {};
    const clients = new Map(config.instances.map((i) => [i.id, createDriver(i, { logger, ...member })]));
    this.clients = clients;
    const store = (this.store = instanceStore(config, bus));
    this.poller = new Poller(pollTargets(config, clients), store, { logger, bus, ownership });
    // Among several replicas the other replicas ask this one's console (docs/console.md).
    const consoleAnswer = (ask: ConsoleAsk): string | null => this.console?.replicaAnswer(ask) ?? null;
    const assets = assetsPart(current, store, bus, logger, ownership, (instance, device, index) =>
      this.energy.reader.outletWh(instance, device, index),
    );
    this.assets = assets;
    // The protected-asset rule, asset control and sequences read the assets part's book (or one a
    // test attaches).
    const control = new ControlPart(current, store, clients, bus, logger, ownership, cluster, consoleAnswer, {
      book: () => this.#assetBook() ?? assets.book,
      journal,
    });
    this.control = control.core;
    this.assetControl = control.assets;
    this.sequences = control.sequences;
    this.#rest = control.rest;
    this.credentials = new CredentialsCheck({ config: current, drivers: clients, bus, logger });
    this.energy = energyPart(config, current, bus, logger, ownership, cluster);
    const energy = config.Energy.LifetimeCounters ? this.energy.reader : NO_ENERGY;
    this.webhooks = webhooksPart(config, bus, logger, cluster);
    this.#mqtt = new MqttBridge({
      config,
      store,
      bus,
      logger,
      control: this.control,
      assetControl: this.assetControl,
      ownership,
      assets,
      // Without lifetime counters, discovery announces no lifetime sensors.
      ...(config.Energy.LifetimeCounters ? { energy } : {}),
      ...replicaOf(clusterPart),
    });
    const seen = { clusterPart, assets, energy, webhooks: this.webhooks };
    const metrics = bridgeMetrics(config, store, bus, this.poller, this.#mqtt, logger, seen);
    this.traps = trapsPart(config, bus, logger, ownership, metrics);
    this.console = this.#consoleFeed(consoleLimits, control.replicaConsole, energy);
    const httpDeps = (more: Partial<HttpDeps>): HttpDeps => this.#httpDeps(metrics, more);
    [this.#api, this.#health] = this.#listeners(httpDeps);
    const api = this.#api;
    this.#lifecycle = new Lifecycle(
      [
        pdusPart(store, clients, bus),
        // Before every part that reads snapshots: its counters are updated before they are shown.
        this.energy,
        // Hears every event it sends before anything polls; stops after control and the poller.
        this.webhooks,
        instanceLog(store, current, bus, logger),
        assets,
        ...(metrics === null ? [] : [metrics]),
        ...(this.console === null ? [] : [this.console]),
        // The listeners bind before anything reaches out: a second process started with this
        // configuration fails on its ports before it touches a PDU or the broker.
        ...(api === null ? [] : [api]),
        ...(this.#health === null ? [] : [this.#health]),
        this.credentials,
        this.poller,
        this.#mqtt,
        ...(this.traps === null ? [] : [this.traps]),
        ...(clusterPart === null ? [] : [clusterPart]),
        control,
      ],
      logger,
      bus,
    );
  }

  /** The web console's live feed, with the REST API on. */
  #consoleFeed(
    limits: ConsoleLimits,
    replicas: ConsolePeers | null,
    energy: EnergyReader,
  ): ConsoleFeed | null {
    if (!this.#config.Api.Enabled) return null;
    return new ConsoleFeed({
      ...limits,
      bus: this.bus,
      store: this.store,
      config: () => this.config,
      logger: this.logger,
      loginProblem: (id) => this.credentials.problem(id),
      ...(replicas === null ? {} : { replicas }),
      energy,
    });
  }

  /** What a listener is given: the App's store, bus and status functions, and `more`. */
  #httpDeps(metrics: BridgeMetrics | null, more: Partial<HttpDeps>): HttpDeps {
    const current = (): Config => this.config;
    const mqtt = this.#mqtt;
    return {
      // A getter, so live configuration changes (poll intervals) show in the listeners.
      get config() {
        return current();
      },
      store: this.store,
      bus: this.bus,
      logger: this.logger,
      startedAt: this.startedAt,
      mqttStatus: () => mqtt.status(),
      homeAssistantStatus: () => mqtt.homeAssistant(),
      loginProblem: (id) => this.credentials.problem(id),
      assets: this.assets,
      ...(this.webhooks.enabled ? { webhooks: () => this.webhooks.status().receivers } : {}),
      ...(metrics === null ? {} : { metrics, metricsRoute: metricsRoute(metrics) }),
      ...more,
    };
  }

  /** The REST API (with the console) and the health listener, as configured. */
  #listeners(httpDeps: (more: Partial<HttpDeps>) => HttpDeps): [ApiPart | null, ListenerPart | null] {
    const api = this.#config.Api.Enabled
      ? new ApiPart(
          httpDeps({
            control: this.#rest.service,
            assetControl: this.assetControl,
            sequences: this.sequences,
            ...(this.#rest.replica === undefined ? {} : { replica: this.#rest.replica }),
            consoleRoutes: consoleRoutes(this.console ?? undefined),
          }),
        )
      : null;
    // The health listener reports the API's outage (its worker restarting), and this replica in the cluster.
    const healthDeps = httpDeps({
      apiOutage: () => api?.outage() ?? null,
      ...clusterHealthOf(this.cluster, this.#config.Cluster.Backend),
    });
    const health = this.#config.Health.Enabled
      ? new ListenerPart("health", () => startHealthServer(healthDeps))
      : null;
    return [api, health];
  }

  static async start(config: Config, options: AppOptions = {}): Promise<App> {
    const logger = options.logger ?? createLogger({ level: config.Logging.Level });
    const cluster = config.Cluster.Enabled
      ? await createCluster(config.Cluster, {
          logger,
          instanceIds: config.instances.map((i) => i.id),
          url: advertisedUrl(config, logger),
        })
      : null;
    // Among several replicas the sequences' journal is in the coordination engine, beside the leases.
    const journal =
      cluster === null
        ? null
        : new JournalStore(
            await createLeaseStore(config.Cluster, process.env, "journal"),
            cluster,
            JOURNAL_PAYLOAD_MAX,
          );
    const app = new App(config, logger, options.consoleLimits, cluster, journal);
    try {
      await app.#lifecycle.start();
    } catch (error) {
      await app.stop();
      throw error;
    }
    app.#logStarted();
    return app;
  }

  #logStarted(): void {
    this.logger.info(
      {
        instances: this.config.instances.map((i) => i.id),
        origin: this.config.origin,
        mqtt: this.#mqtt.status().broker,
        apiPort: this.#api?.port ?? null,
        healthPort: this.#health?.port ?? null,
      },
      "pdu-bridge started",
    );
    const limitMb = heapLimitMb();
    const flags = heapFlagsReport();
    this.logger.info(
      { heapLimitMb: limitMb, ...flags },
      flags.applied.length > 0 ? `runtime flags applied: ${flags.applied.join(" ")}` : "runtime flags",
    );
    const neededMb = heapNeededMb(this.config.instances.length);
    if (limitMb < neededMb) {
      this.logger.warn(
        { heapLimitMb: limitMb, neededMb, instances: this.config.instances.length },
        "the heap limit looks too small for this many PDUs: raise --max-old-space-size in NODE_OPTIONS " +
          "(and the memory limit with it; see docs/deployment.md, Memory)",
      );
    }
  }

  /**
   * Where control reads the assets' book from now on (the assets part hands it over): the
   * protected-asset rule on every path, asset control and sequences read it at each request.
   */
  attachAssets(source: AssetBookSource): void {
    this.#assetBook = source;
  }

  /** The assets' book control reads now (one attached, else the assets part's). */
  get assetBook(): AssetBookView {
    return this.#assetBook() ?? this.assets.book;
  }

  /** The parts' names in start order. */
  get parts(): string[] {
    return this.#lifecycle.names;
  }

  /** Where the listeners and the embedded broker actually listen (ports resolved when 0 was configured). */
  get endpoints(): {
    apiPort: number | null;
    healthPort: number | null;
    embeddedBroker: { host: string; port: number } | null;
  } {
    return {
      apiPort: this.#api?.port ?? null,
      healthPort: this.#health?.port ?? null,
      embeddedBroker: this.#mqtt.embeddedBroker,
    };
  }

  /** The REST API's worker side when `Api.Worker` (its state; tests end its thread to see it restart). */
  get apiWorker(): ApiListener | null {
    return this.#api?.worker ?? null;
  }

  get mqtt(): MqttBridge {
    return this.#mqtt;
  }

  /** The configuration in force (replaced by live changes from the Kubernetes source). */
  get config(): Config {
    return this.#config;
  }

  /**
   * Applies the changes that need no restart: the log level here, and through the bus's
   * `configApplied` poll intervals (poller, drivers), overrides and Measurements (the store's view,
   * MQTT's discovery, the instance log's warnings).
   */
  applyLive(next: Config, live: LiveChanges): void {
    this.#config = next;
    if (live.logLevel !== undefined) this.logger.level = live.logLevel;
    this.bus.emit("configApplied", { config: next, live });
    this.logger.info(
      {
        pollIntervals: Object.fromEntries(live.pollIntervals),
        logLevel: live.logLevel,
        overrides: [...live.overrides],
        assets: live.assets === true,
      },
      "configuration change applied",
    );
  }

  /**
   * Before a restart for `next` (a change that cannot apply live): MQTT clears the discovery
   * configs of the instances `next` leaves out that this process publishes (docs/mqtt.md,
   * "Instances removed from the configuration"), and publishes nothing more for them.
   */
  clearRemovedInstances(next: Config): void {
    const kept = new Set(next.instances.map((i) => i.id));
    const removed = this.#config.instances.filter((i) => !kept.has(i.id)).map((i) => i.id);
    if (removed.length > 0) this.#mqtt.clearRemoved(removed);
  }

  /** Stops every part; safe to call more than once (later calls wait for the first). */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#lifecycle.stop();
      this.logger.info("pdu-bridge stopped");
    })();
    return this.#stopping;
  }
}

/** The SNMP trap receiver with `Traps.Enabled` (its counters in the metrics), else null. */
function trapsPart(
  config: Config,
  bus: EventBus,
  logger: Logger,
  ownership: Ownership,
  metrics: BridgeMetrics | null,
): TrapPart | null {
  if (!config.Traps.Enabled) return null;
  const traps = new TrapPart({ config, bus, logger, ownership });
  metrics?.countTraps(() => traps.counts());
  return traps;
}

/**
 * The bridge's own metrics (`Metrics.Enabled`, else null): what they count comes over the bus, the
 * rest is read at scrape time.
 */
function bridgeMetrics(
  config: Config,
  store: SnapshotStore,
  bus: EventBus,
  poller: Poller,
  mqtt: MqttBridge,
  logger: Logger,
  {
    clusterPart,
    assets,
    energy,
    webhooks,
  }: {
    clusterPart: ClusterPart | null;
    assets: AssetsView;
    energy: EnergyReader;
    webhooks: WebhooksPart;
  },
): BridgeMetrics | null {
  if (!config.Metrics.Enabled) return null;
  return new BridgeMetrics({
    store,
    bus,
    logger,
    assets,
    energy,
    ...(webhooks.enabled ? { webhooks: () => webhooks.status().receivers } : {}),
    skippedPolls: (id) => poller.skippedPolls(id),
    mqtt: () => {
      const traffic = mqtt.traffic();
      return traffic === null ? null : { ...traffic, connected: mqtt.status().connected };
    },
    // Among several replicas: the series of the instances it holds, and the cluster's (docs/metrics.md).
    ...(clusterPart === null
      ? {}
      : {
          ownership: clusterPart.ownership,
          cluster: () => {
            const { cluster } = clusterPart;
            const status = cluster.status();
            return {
              bucketsHeld: status.buckets.length,
              members: status.members.length,
              engineReachable: status.reachable,
            };
          },
        }),
  });
}

/** What the poller polls: every instance, at its interval, through its driver. */
function pollTargets(config: Config, clients: ReadonlyMap<string, PduDriver>) {
  return config.instances.map((instance) => {
    const client = clients.get(instance.id)!;
    return {
      id: instance.id,
      intervalMs: instance.PollInterval * 1000,
      poll: (signal: AbortSignal) => client.poll(signal),
    };
  });
}

/**
 * The PDU drivers and the snapshot store (built with the App: the other parts read the store from
 * the start). Live changes reach the drivers' poll intervals and the instances' overrides views;
 * stopped last, when nothing polls or writes any more.
 */
function pdusPart(store: SnapshotStore, clients: ReadonlyMap<string, PduDriver>, bus: EventBus): Part {
  return {
    name: "pdus",
    start() {
      bus.listen(this, {
        configApplied: ({ config, live }) => {
          for (const [id, seconds] of live.pollIntervals) clients.get(id)?.setPollInterval?.(seconds * 1000);
          // Re-derives the snapshot: REST, control's Protected and MQTT's retained topics at once.
          for (const id of live.overrides) {
            const instance = config.instances.find((i) => i.id === id);
            if (instance !== undefined) store.setView(id, instanceView(instance));
          }
        },
      });
    },
    async stop() {
      store.close();
      await Promise.allSettled([...clients.values()].map((c) => c.close()));
    },
  };
}

/**
 * The instance log: one line per instance when it comes online (its first poll, or the first after
 * failures; the poller logs the failures themselves), one line per alarm raised, changed or cleared
 * (a PDU whose alarms flap folded per instance and kind: the first 20 of 10 s, then one line with
 * the count, src/log-limit.ts), and one warning per override that names nothing on the PDU, after
 * the instance's first poll and after a live change of its overrides.
 */
function instanceLog(store: SnapshotStore, config: () => Config, bus: EventBus, logger: Logger): Part {
  let alarmLog = new FoldedLog(logger, { burst: 20 });
  const warnUnknownOverrides = (id: string): void => {
    const snapshot = store.get(id)?.snapshot ?? null;
    const instance = config().instances.find((i) => i.id === id);
    if (snapshot === null || instance === undefined) return;
    for (const problem of unknownOverrides(snapshot, instance)) {
      logger.warn({ instance: id, problem }, "override names nothing on the PDU (ignored until it does)");
    }
  };
  return {
    name: "instance-log",
    start() {
      const unchecked = new Set(config().instances.map((i) => i.id));
      bus.listen(this, {
        instanceStatus: (event) => {
          if (!event.online) return;
          const devices = event.snapshot.devices;
          const outlets = devices.reduce((n, d) => n + d.outlets.length, 0);
          logger.info(
            { instance: event.instanceId, mode: event.snapshot.mode, devices: devices.length, outlets },
            "instance online",
          );
          if (unchecked.delete(event.instanceId)) warnUnknownOverrides(event.instanceId);
        },
        alarms: ({ instanceId, changes }) => {
          for (const { change, alarm } of changes) {
            const line = {
              instance: instanceId,
              alarm: alarm.id,
              name: alarm.name,
              source: alarm.source,
              severity: alarm.severity,
              percent: alarm.percent,
              reported: alarm.reported,
            };
            const key = `${instanceId}|${change}`;
            if (change === "cleared") alarmLog.info(key, line, "alarm cleared");
            else alarmLog.warn(key, line, change === "raised" ? "alarm raised" : "alarm changed");
          }
        },
        configApplied: ({ live }) => {
          for (const id of live.overrides) warnUnknownOverrides(id);
        },
      });
    },
    stop() {
      // Its listeners are released by the lifecycle; the fold of alarm lines is its own.
      alarmLog.close();
      alarmLog = new FoldedLog(logger, { burst: 20 });
    },
  };
}

/**
 * The control core as a part: it answers from its construction (the surfaces call it), and its
 * stop refuses new commands, lets writes in flight finish within the stop budget, and then cuts
 * whatever still writes (reported as outcome unknown).
 */
class ControlPart implements Part {
  readonly name = "control";
  readonly core: ControlCore;
  /**
   * What the REST surface (and the console) calls: the core itself in one process; among several
   * replicas the forwarding to the holder, and this replica's side of it (docs/cluster.md).
   */
  readonly rest: { readonly service: ControlService; readonly replica?: ReplicaSurface };
  /** Among several replicas: what the web console asks of the others (docs/console.md); else null. */
  readonly replicaConsole: ConsolePeers | null;
  /** Asset control: each cord's write through `rest.service` (so to its holder among replicas). */
  readonly assets: AssetControl;
  readonly sequences: Sequences;
  readonly #forwarding: ReplicaForwarding | null;
  readonly #journal: JournalStore | null;
  readonly #bus: EventBus;
  /** Aborted once the graceful stop is over: a hard stop of anything still writing. */
  readonly #hardStop = new AbortController();

  constructor(
    config: () => Config,
    store: SnapshotStore,
    clients: ReadonlyMap<string, PduDriver>,
    bus: EventBus,
    logger: Logger,
    ownership: Ownership,
    cluster: Cluster | null,
    consoleAnswer: (ask: ConsoleAsk) => string | null,
    assets: { readonly book: AssetBookSource; readonly journal: JournalStore | null },
  ) {
    const fence: WriteFence | null = cluster;
    this.core = createControlService({
      // A getter, like the listeners': live changes (poll intervals) reach control's Retry-After.
      get config() {
        return config();
      },
      store,
      clients,
      ownership,
      // Among several replicas every PDU write waits for the cluster's grant (docs/cluster.md).
      ...(fence === null ? {} : { fence }),
      // A write's early re-poll: the poller hears it.
      pollSoon: (instanceId, delayMs) => bus.emit("pollSoon", { instanceId, delayMs }),
      logger,
      signal: this.#hardStop.signal,
      // The protected-asset rule on every path that can switch an outlet off.
      assets: assets.book,
    });
    const core = this.core;
    this.#forwarding =
      cluster === null
        ? null
        : createReplicaForwarding({ config, local: core, cluster, logger, console: consoleAnswer });
    this.replicaConsole = this.#forwarding?.console ?? null;
    this.rest =
      this.#forwarding === null
        ? { service: core }
        : { service: this.#forwarding.service, replica: this.#forwarding.surface };
    this.assets = new AssetControl({
      config,
      book: assets.book,
      cords: this.rest.service,
      audit: { logger, bus },
    });
    this.#bus = bus;
    this.#journal = assets.journal;
    const records: SequenceRecords = assets.journal ?? new MemoryRecords();
    this.sequences = new Sequences({
      config,
      records,
      control: this.assets,
      logger,
      // Among replicas: sequences whose runner died are looked for every RetryPeriod (at least 1 s).
      scanMs: cluster === null ? null : Math.max(1000, config().Cluster.RetryPeriodSeconds * 1000),
      progress: (head) =>
        bus.emit("sequence", {
          id: head.id,
          action: head.action,
          state: head.state,
          wave: head.wave,
          waves: head.sizes.length,
          executed: head.executed,
          failed: head.failedCount,
        }),
    });
  }

  start(): void {
    this.sequences.watch();
    // A member gone may have been running a sequence: look at once. (The lifecycle releases it.)
    this.#bus.listen(this, { membersChanged: () => this.sequences.scanSoon() });
  }

  async stop(): Promise<void> {
    try {
      // The runs first (nothing more sent), then asset commands (a reboot's on is still sent), then
      // the core (writes in flight get the stop budget).
      await this.sequences.close();
      await this.assets.stop();
      await this.core.stop();
      this.#hardStop.abort();
    } finally {
      await this.#forwarding?.close();
      await this.#journal?.close();
    }
  }
}

/** A listener of the service (the health listener) as a part: listens on start, closes on stop. */
class ListenerPart implements Part {
  readonly name: string;
  readonly #listen: () => Promise<RunningListener>;
  #listener: RunningListener | null = null;

  constructor(name: string, listen: () => Promise<RunningListener>) {
    this.name = name;
    this.#listen = listen;
  }

  /** Where it listens; null before it does. */
  get port(): number | null {
    return this.#listener?.port ?? null;
  }

  async start(): Promise<void> {
    this.#listener = await this.#listen();
  }

  async stop(): Promise<void> {
    await this.#listener?.close();
  }
}

/** The REST API (`Api.Enabled`): in its worker thread (`Api.Worker`), else on the main thread. */
class ApiPart implements Part {
  readonly name = "api";
  readonly #deps: HttpDeps;
  #listener: RunningListener | null = null;
  #worker: ApiListener | null = null;

  constructor(deps: HttpDeps) {
    this.#deps = deps;
  }

  /** Where it listens; null before it does. */
  get port(): number | null {
    return this.#listener?.port ?? null;
  }

  /** The worker side when `Api.Worker`, once started; else null. */
  get worker(): ApiListener | null {
    return this.#worker;
  }

  /** Why the REST API does not answer now (its worker restarting), else null. */
  outage(): string | null {
    return this.#worker?.outage() ?? null;
  }

  async start(): Promise<void> {
    const deps = this.#deps;
    // Loaded only when the API is on: its routes, schemas and control handlers are modules whose
    // source and records would stay in the heap of every bridge without it.
    const tls = await apiTlsFiles(deps.config);
    this.#worker = deps.config.Api.Worker
      ? await (await import("./http/api-worker/host.js")).startApiWorker(deps, tls)
      : null;
    this.#listener = this.#worker ?? (await (await import("./http/api/server.js")).startApiServer(deps, tls));
  }

  async stop(): Promise<void> {
    await this.#listener?.close();
  }
}

/**
 * Where the other replicas reach this replica's REST API (config/environment.ts), or null: without
 * the API the others answer 503 for this replica's instances. The loader refused an address outside
 * `Cluster.PeerNetworks`.
 */
function advertisedUrl(config: Config, logger: Logger): string | null {
  const url = advertisedApiUrl(config);
  if (url === null && config.Api.Enabled) {
    logger.warn(
      "cluster: no address for the other replicas to forward control to this one: set Cluster.AdvertiseUrl",
    );
  }
  return url;
}

/** What the MQTT part needs of the cluster among several replicas (docs/cluster.md); nothing alone. */
function replicaOf(clusterPart: ClusterPart | null) {
  if (clusterPart === null) return {};
  return {
    replica: {
      member: clusterPart.cluster.member,
      bucketOf: (id: string) => clusterPart.cluster.bucketOf(id),
      holdsBucket: (bucket: number) => clusterPart.holdsBucket(bucket),
    },
  };
}

/** What the health listener reads of this replica in the cluster (docs/cluster.md); nothing alone. */
function clusterHealthOf(
  clusterPart: ClusterPart | null,
  backend: string,
): { clusterStatus?: () => ClusterHealth } {
  if (clusterPart === null) return {};
  const { cluster } = clusterPart;
  return { clusterStatus: () => ({ ...cluster.status(), backend, bucketCount: cluster.buckets }) };
}

/** The store of the configured instances, with the overrides seam and the load assessment. */
function instanceStore(config: Config, bus: EventBus): SnapshotStore {
  const store = new SnapshotStore(
    config.instances.map((i) => i.id),
    { bus },
  );
  // The overrides seam: every consumer of the store reads snapshots with them applied.
  for (const instance of config.instances) store.setView(instance.id, instanceView(instance));
  // Loads against ratings and alarms: assessed once per snapshot kept (src/pdu/load.ts).
  const thresholds = thresholdsOf(config.Alarms);
  for (const instance of config.instances)
    store.setLoad(instance.id, new LoadTracker(instance.Ratings, thresholds));
  return store;
}

/**
 * What every consumer of the store reads of an instance's snapshots: its overrides applied, then
 * its `OutletCircuits` (`Outlet.feedsFrom` where the PDU says none; src/assets/circuits.ts).
 */
function instanceView(instance: InstanceConfig): SnapshotView | null {
  const overrides = overridesView(instance);
  const ranges = parseCircuits(instance.OutletCircuits ?? {}).ranges;
  if (ranges.length === 0) return overrides;
  const circuits = new CircuitApplier(ranges);
  return overrides === null ? (s) => circuits.apply(s) : (s) => circuits.apply(overrides(s));
}

/** Assets and feeds (docs/assets.md): an instance's cords count as live only while it polls well. */
function assetsPart(
  current: () => Config,
  store: SnapshotStore,
  bus: EventBus,
  logger: Logger,
  ownership: Ownership,
  lifetimeWh: (instanceId: string, deviceId: string, index: number) => number | null,
): AssetsPart {
  const online = (id: string): boolean => store.get(id)?.consecutiveFailures === 0;
  return new AssetsPart({ config: current, bus, logger, ownership, online, lifetimeWh });
}

/**
 * Webhooks (docs/events.md): what is not yet delivered kept in `State.Dir` in one process, in the
 * coordination engine among several replicas (a record per bucket), else in memory only.
 */
function webhooksPart(config: Config, bus: EventBus, logger: Logger, cluster: Cluster | null): WebhooksPart {
  const dir = config.State.Dir;
  let backend: ScopeBackend | null = null;
  if (cluster !== null)
    backend = webhookEngineBackend(cluster.records("webhooks"), MAX_RECORD_PAYLOAD_LENGTH);
  else if (dir !== null) backend = webhookStateDirBackend(dir);
  return new WebhooksPart({ config, bus, logger, backend, cluster });
}

/**
 * The lifetime energy counters (docs/energy.md), checkpointed to `State.Dir` in one process, to
 * the coordination engine among several replicas (a record per bucket), else kept in memory only.
 */
function energyPart(
  config: Config,
  current: () => Config,
  bus: EventBus,
  logger: Logger,
  ownership: Ownership,
  cluster: Cluster | null,
): EnergyPart {
  const dir = config.State.Dir;
  const enabled = config.Energy.LifetimeCounters;
  let backend: CheckpointBackend | null = null;
  if (!enabled) backend = null;
  else if (cluster !== null) backend = engineBackend(cluster.records("energy"));
  else if (dir !== null) backend = stateDirBackend(dir);
  const intervals = config.instances.map((i) => i.PollInterval * 1000);
  return new EnergyPart({
    bus,
    logger,
    ownership,
    instanceIds: () => current().instances.map((i) => i.id),
    backend,
    scopeOf: cluster === null ? () => 0 : (id) => cluster.bucketOf(id),
    loadAtStart: cluster === null,
    // Among replicas every record write is an etcd (or API server) write: at least 10 s apart, so
    // that checkpoints never crowd the lease rounds. A checkpoint keeps the PDU's reading it counts
    // from, so its age loses nothing unless the PDU's counter is also reset meanwhile.
    checkpointMs: Math.min(60_000, Math.max(cluster === null ? 0 : 10_000, ...intervals)),
    enabled,
  });
}
