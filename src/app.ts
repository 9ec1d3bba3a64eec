/**
 * Composition root: builds the parts from a validated configuration, starts them in order and
 * stops them in reverse. Nothing else wires parts together.
 *
 * Start order: PDU drivers and store → poller (polling starts at once, so the first snapshots
 * arrive while MQTT connects) → MQTT (embedded broker first when configured) → REST API → health
 * listener (probes answer only once the API listens).
 * Stop order: control (writes in flight get a budget to finish) with the poller → health listener →
 * REST API → MQTT (`offline` published, embedded broker closed) → PDU clients.
 */
import type { LiveChanges } from "./config/kubernetes/source.js";
import { apiTlsFiles } from "./config/oidc.js";
import { ConfigError } from "./config/errors.js";
import type { Config } from "./config/schema.js";
import { observeControlAudit } from "./control/audit.js";
import { createLogger, type Logger } from "./log.js";
import { createControlService, type ControlCore } from "./control/service.js";
import type { ControlService } from "./control/types.js";
import type { ApiListener } from "./http/api-worker/host.js";
import type { RunningListener } from "./http/listener.js";
import { startHealthServer } from "./http/health/server.js";
import type { HttpDeps } from "./http/types.js";
import { BridgeMetrics } from "./metrics/bridge.js";
import { metricsRoute } from "./metrics/endpoint.js";
import { startMqttBridge, type MqttBridge } from "./mqtt/bridge.js";
import type { PduDriver } from "./pdu/driver.js";
import { createDriver } from "./pdu/drivers.js";
import { LoadTracker, thresholdsOf } from "./pdu/load.js";
import { overridesView, unknownOverrides } from "./pdu/overrides.js";
import { Poller } from "./poller/scheduler.js";
import { SnapshotStore } from "./poller/store.js";
import { heapFlagsReport, heapLimitMb, heapNeededMb } from "./runtime.js";
import { ConsoleFeed, type ConsoleLimits } from "./ui/feed.js";
import { consoleRoutes } from "./ui/routes.js";
import { CredentialsCheck } from "./control/credentials.js";

export interface AppOptions {
  /** Logger to use (tests pass one that captures lines); default: pino on stdout at Logging.Level. */
  logger?: Logger;
  /** The console's event-stream bounds; default the documented ones (tests make them small). */
  consoleLimits?: ConsoleLimits;
}

/** A part of the running service with a lifecycle. */
export interface Part {
  readonly name: string;
  stop(): Promise<void>;
}

export class App {
  #config: Config;
  readonly logger: Logger;
  readonly store: SnapshotStore;
  readonly poller: Poller;
  /** One driver per instance (its PDU family, `Pdus.<id>.Driver`). */
  readonly clients: ReadonlyMap<string, PduDriver>;
  readonly startedAt = Date.now();
  /** What the surfaces (REST, MQTT) call: the core, observed by the console when it is on. */
  readonly control: ControlService;
  readonly #controlCore: ControlCore;
  /** Aborted on shutdown once control has stopped (a hard stop of anything still writing). */
  readonly #shutdown = new AbortController();
  #mqtt: MqttBridge | null = null;
  #api: RunningListener | null = null;
  /** The REST API's worker side (Api.Worker); null otherwise. */
  #apiWorker: ApiListener | null = null;
  #health: RunningListener | null = null;
  /** Parts started after the poller, stopped in reverse order. */
  readonly #parts: Part[] = [];
  #stopping: Promise<void> | null = null;
  readonly #online = new Set<string>();
  /** The web console's live feed and outlet history (only with the REST API on). */
  readonly console: ConsoleFeed | null;
  /** The login check of the instances with control (a wrong password found at start). */
  readonly credentials: CredentialsCheck;
  /** null when Metrics.Enabled is false (then nothing is counted). */
  readonly #metrics: BridgeMetrics | null = null;

  private constructor(config: Config, logger: Logger, consoleLimits: ConsoleLimits = {}) {
    this.#config = config;
    this.logger = logger;
    this.clients = new Map(
      config.instances.map((instance) => [instance.id, createDriver(instance, { logger })]),
    );
    this.store = new SnapshotStore(config.instances.map((i) => i.id));
    // The overrides seam: every consumer of the store reads snapshots with them applied.
    for (const instance of config.instances) this.store.setView(instance.id, overridesView(instance));
    // Loads against ratings and alarms: assessed once per snapshot kept (src/pdu/load.ts).
    const thresholds = thresholdsOf(config.Alarms);
    for (const instance of config.instances)
      this.store.setLoad(instance.id, new LoadTracker(instance.Ratings, thresholds));
    this.poller = new Poller(
      config.instances.map((instance) => {
        const client = this.clients.get(instance.id)!;
        return {
          id: instance.id,
          intervalMs: instance.PollInterval * 1000,
          poll: (signal: AbortSignal) => client.poll(signal),
        };
      }),
      this.store,
      { logger, onPollDone: (id, ms) => this.#metrics?.observePoll(id, ms) },
    );
    if (config.Metrics.Enabled) {
      const metrics = new BridgeMetrics({
        store: this.store,
        skippedPolls: (id) => this.poller.skippedPolls(id),
        logger,
        mqtt: () =>
          this.#mqtt === null ? null : { ...this.#mqtt.traffic(), connected: this.#mqtt.status().connected },
      });
      this.#metrics = metrics;
      const unobserve = observeControlAudit((e) =>
        metrics.observeControl(e.source.surface, e.action, e.status),
      );
      this.#parts.push({
        name: "metrics",
        stop: () => {
          unobserve();
          metrics.close();
          return Promise.resolve();
        },
      });
    }
    const app = () => this.config;
    this.#controlCore = createControlService({
      // A getter, like the listeners': live changes (poll intervals) reach control's Retry-After.
      get config() {
        return app();
      },
      store: this.store,
      clients: this.clients,
      pollSoon: (id, delayMs) => this.poller.pollSoon(id, delayMs),
      logger,
      signal: this.#shutdown.signal,
    });
    const credentials = new CredentialsCheck({
      config: () => this.config,
      drivers: this.clients,
      store: this.store,
      logger,
      signal: this.#shutdown.signal,
    });
    this.credentials = credentials;
    // A write that succeeds proves the login works (the password was fixed on the PDU).
    const control = credentials.observe(this.#controlCore);
    this.console = config.Api.Enabled
      ? new ConsoleFeed({
          ...consoleLimits,
          store: this.store,
          config: () => this.config,
          logger,
          loginProblem: (id) => credentials.problem(id),
        })
      : null;
    const feed = this.console;
    if (feed) credentials.onChange((id) => feed.statusChanged(id));
    // Control outcomes (REST and MQTT) also go to the console's event streams.
    this.control = feed ? feed.observe(control) : control;
  }

  static async start(config: Config, options: AppOptions = {}): Promise<App> {
    // This build runs only as the one owner of the fleet: as one of several replicas it would poll
    // and write to every PDU beside the others. The coordination layer (src/cluster/) is not part
    // of the service's parts, so the cluster is refused rather than silently ignored.
    if (config.Cluster.Enabled) {
      throw new ConfigError(
        "Cluster.Enabled",
        "is true, but this build of pdu-bridge runs only as the one owner of the fleet (docs/cluster.md): set it to false and run one replica",
      );
    }
    const logger = options.logger ?? createLogger({ level: config.Logging.Level });
    const app = new App(config, logger, options.consoleLimits);
    try {
      await app.#start();
    } catch (error) {
      await app.stop();
      throw error;
    }
    return app;
  }

  async #start(): Promise<void> {
    // One line per instance when it comes online (first poll, or first after failures); the poller
    // logs the failures themselves.
    this.store.subscribe((event) => {
      if (event.kind !== "snapshot" || !event.fromPoll) return;
      if (this.store.get(event.instanceId)?.lastSuccessUtc !== event.snapshot.timestamp) return;
      if (this.#online.has(event.instanceId)) return;
      this.#online.add(event.instanceId);
      const devices = event.snapshot.devices;
      const outlets = devices.reduce((n, d) => n + d.outlets.length, 0);
      this.logger.info(
        { instance: event.instanceId, mode: event.snapshot.mode, devices: devices.length, outlets },
        "instance online",
      );
    });
    this.store.subscribe((event) => {
      if (event.kind === "failure") this.#online.delete(event.instanceId);
    });
    // One line per alarm raised, changed or cleared.
    this.store.subscribe((event) => {
      if (event.kind !== "snapshot") return;
      for (const { change, alarm } of event.alarmChanges) {
        const line = {
          instance: event.instanceId,
          alarm: alarm.id,
          name: alarm.name,
          source: alarm.source,
          severity: alarm.severity,
          percent: alarm.percent,
          reported: alarm.reported,
        };
        if (change === "cleared") this.logger.info(line, "alarm cleared");
        else this.logger.warn(line, change === "raised" ? "alarm raised" : "alarm changed");
      }
    });
    // Overrides naming things the PDU does not have: warned once, after the instance's first poll.
    const unchecked = new Set(this.config.instances.map((i) => i.id));
    this.store.subscribe((event) => {
      if (event.kind !== "snapshot" || !event.fromPoll || !unchecked.delete(event.instanceId)) return;
      this.#warnUnknownOverrides(event.instanceId);
    });
    this.poller.start();
    // One login per instance with control, now: a wrong password is reported at start.
    this.credentials.start();

    const mqtt = await startMqttBridge({ config: this.config, store: this.store, logger: this.logger });
    this.#mqtt = mqtt;
    this.#parts.push({ name: "mqtt", stop: () => mqtt.stop() });
    mqtt.attachControl(this.control);

    const currentConfig = () => this.config;
    const deps: HttpDeps = {
      // A getter, so live configuration changes (poll intervals) show in the listeners.
      get config() {
        return currentConfig();
      },
      store: this.store,
      logger: this.logger,
      startedAt: this.startedAt,
      mqttStatus: () => mqtt.status(),
      homeAssistantStatus: () => mqtt.homeAssistant(),
      apiOutage: () => this.#apiWorker?.outage() ?? null,
      loginProblem: (id) => this.credentials.problem(id),
      control: this.control,
      consoleRoutes: consoleRoutes(this.console ?? undefined),
      ...(this.#metrics === null
        ? {}
        : { metrics: this.#metrics, metricsRoute: metricsRoute(this.#metrics) }),
    };
    if (this.config.Api.Enabled) {
      // Loaded only when the API is on: its routes, schemas and control handlers are modules whose
      // source and records would stay in the heap of every bridge without it.
      const tls = await apiTlsFiles(this.config);
      this.#apiWorker = this.config.Api.Worker
        ? await (await import("./http/api-worker/host.js")).startApiWorker(deps, tls)
        : null;
      const api = this.#apiWorker ?? (await (await import("./http/api/server.js")).startApiServer(deps, tls));
      this.#api = api;
      this.#parts.push({ name: "api", stop: () => api.close() });
    }
    // The health listener last: a readiness probe cannot pass while the API still refuses
    // connections (the worker thread takes a while to listen).
    if (this.config.Health.Enabled) {
      const health = await startHealthServer(deps);
      this.#health = health;
      this.#parts.push({ name: "health", stop: () => health.close() });
    }
    this.logger.info(
      {
        instances: this.config.instances.map((i) => i.id),
        origin: this.config.origin,
        mqtt: mqtt.status().broker,
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

  /** Where the listeners and the embedded broker actually listen (ports resolved when 0 was configured). */
  get endpoints(): {
    apiPort: number | null;
    healthPort: number | null;
    embeddedBroker: { host: string; port: number } | null;
  } {
    return {
      apiPort: this.#api?.port ?? null,
      healthPort: this.#health?.port ?? null,
      embeddedBroker: this.#mqtt?.embeddedBroker ?? null,
    };
  }

  /** The REST API's worker side when `Api.Worker` (its state; tests end its thread to see it restart). */
  get apiWorker(): ApiListener | null {
    return this.#apiWorker;
  }

  get mqtt(): MqttBridge | null {
    return this.#mqtt;
  }

  /** The configuration in force (replaced by live changes from the Kubernetes source). */
  get config(): Config {
    return this.#config;
  }

  /** Applies the changes that need no restart: poll intervals, the log level, overrides and Measurements. */
  applyLive(next: Config, live: LiveChanges): void {
    this.#config = next;
    for (const [id, seconds] of live.pollIntervals) {
      this.poller.setInterval(id, seconds * 1000);
      this.clients.get(id)?.setPollInterval?.(seconds * 1000);
    }
    if (live.logLevel !== undefined) this.logger.level = live.logLevel;
    for (const id of live.overrides) {
      const instance = next.instances.find((i) => i.id === id);
      if (instance === undefined) continue;
      // Re-derives the snapshot (REST, control's Protected, MQTT retained topics at once), then
      // discovery: renamed things republished, hidden things' configs cleared.
      this.store.setView(id, overridesView(instance));
      this.#mqtt?.refresh(id);
      this.#warnUnknownOverrides(id);
    }
    this.logger.info(
      {
        pollIntervals: Object.fromEntries(live.pollIntervals),
        logLevel: live.logLevel,
        overrides: [...live.overrides],
      },
      "configuration change applied",
    );
  }

  /** One warning per override that names nothing in the instance's latest snapshot (none before a poll). */
  #warnUnknownOverrides(id: string): void {
    const snapshot = this.store.get(id)?.snapshot ?? null;
    const instance = this.config.instances.find((i) => i.id === id);
    if (snapshot === null || instance === undefined) return;
    for (const problem of unknownOverrides(snapshot, instance)) {
      this.logger.warn(
        { instance: id, problem },
        "override names nothing on the PDU (ignored until it does)",
      );
    }
  }

  /** Stops every part; safe to call more than once (later calls wait for the first). */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    // Control first: nothing new is sent, and writes in flight get the stop budget to finish (what
    // is still unfinished then is reported as outcome unknown, never as "retry").
    this.#mqtt?.attachControl(null);
    await Promise.all([this.#controlCore.stop(), this.poller.stop()]);
    this.#shutdown.abort();
    for (const part of [...this.#parts].reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.logger.warn({ part: part.name, err: error }, "error while stopping");
      }
    }
    this.console?.close();
    this.credentials.close();
    this.store.close();
    await Promise.allSettled([...this.clients.values()].map((c) => c.close()));
    this.logger.info("pdu-bridge stopped");
  }
}
