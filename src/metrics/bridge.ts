/**
 * `/metrics` (docs/metrics.md): the bridge's own metrics (prom-client), the process metrics, and the
 * reading families of the latest snapshots (./readings.ts), in the Prometheus text format or
 * OpenMetrics. One instance per running App; the process metrics are shared by the process.
 *
 * A part of the service (src/lifecycle.ts): from `start` it counts what the bus tells (`pollDone`,
 * `pollFailed`, `control`); everything else it reads at scrape time.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { EventBus, OwnershipChangedEvent } from "../bus.js";
import { GROUP_ACTIONS, OUTLET_ACTIONS } from "../control/types.js";
import { SETTINGS_ACTION } from "../control/settings.js";
import type { FastPath, HttpApp } from "../http/types.js";
import type { Logger } from "../log.js";
import type { Snapshot } from "../pdu/model.js";
import type { Ownership } from "../ownership.js";
import type { InstanceStatus, SnapshotStore } from "../poller/store.js";
import type { AssetsView } from "../assets/view.js";
import { loadChunks, type LoadSource } from "./alarms.js";
import { assetChunks, fleetLoadSources } from "./assets.js";
import { NO_ENERGY, type EnergyReader } from "../energy-reader.js";
import { registerClusterMetrics, type ClusterMetricsView } from "./cluster.js";
import { registerWebhookMetrics, type WebhookMetricsView } from "./webhooks.js";
import { registerTrapMetrics, type TrapCounts } from "./traps.js";
import { MAX_SERIES_PER_INSTANCE, metricsPlan, readingChunks, type LeftOutReason } from "./readings.js";

export const TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
export const OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/** What the metrics read from the running service at scrape time. */
export interface MetricsSources {
  readonly store: SnapshotStore;
  /** Polls, their failures and control attempts are counted from its events. */
  readonly bus: EventBus;
  /** Polls skipped so far because the previous poll of the instance was still running. */
  skippedPolls(instanceId: string): number;
  /** The MQTT side, or null before it is started. */
  mqtt(): MqttTraffic | null;
  /** Where the first series left out of an instance's readings is reported (once per reason). */
  readonly logger?: Logger;
  /** This replica in the cluster; present only with `Cluster.Enabled` (then the cluster's series exist). */
  cluster?(): ClusterMetricsView;
  /** Assets and feeds (src/assets/view.ts): their families, and their alarms in `pdu_alarm_active`. */
  readonly assets?: AssetsView;
  /**
   * The instances whose series this process exports: the ones it polls now (among several replicas,
   * those of its buckets: another replica exports the rest). Default: all.
   */
  readonly ownership?: Ownership;
  /** The lifetime energy counters (src/energy/); default none. */
  readonly energy?: EnergyReader;
  /** Each webhook receiver's counts (src/webhooks/); absent when none is configured. */
  webhooks?(): readonly WebhookMetricsView[];
}

/** The store's instances this process reports now (see {@link MetricsSources.ownership}). */
function reported(sources: MetricsSources): readonly InstanceStatus[] {
  const all = sources.store.list();
  const ownership = sources.ownership;
  return ownership === undefined ? all : all.filter((s) => ownership.owns(s.id));
}

const LEFT_OUT_WHY: Readonly<Record<LeftOutReason, string>> = {
  "unsafe-name": "a device, entity or group id is not a safe name (as for MQTT topics)",
  "series-cap": `over the cap of ${MAX_SERIES_PER_INSTANCE} series per PDU`,
};

export interface MqttTraffic {
  readonly connected: boolean;
  /** Messages handed to the MQTT client since start. */
  readonly published: number;
  /** Messages dropped (not connected) or refused by the client since start. */
  readonly failed: number;
  /** Home Assistant discovery config topics currently published retained. */
  readonly discoveryConfigs: number;
}

type Source = "rest" | "console" | "mqtt";

const KNOWN_ACTIONS = new Set<string>([...OUTLET_ACTIONS, ...GROUP_ACTIONS, SETTINGS_ACTION]);

/** The registry of the process metrics, created on first use (one per process, like them). */
let processMetrics: Registry | null = null;
function processRegistry(): Registry {
  if (processMetrics === null) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
    // Gauges named like counters (the sums of the per-type gauges beside them): promtool flags them.
    for (const name of [
      "nodejs_active_resources_total",
      "nodejs_active_handles_total",
      "nodejs_active_requests_total",
    ])
      processMetrics.removeSingleMetric(name);
  }
  return processMetrics;
}

/**
 * prom-client's text output as OpenMetrics: counter families lose `_total` (their samples keep it)
 * and blank lines go. prom-client's own OpenMetrics mode renames the metric objects it renders (the
 * text format then lost `_total`), so both formats are rendered from the text registry.
 */
export function textToOpenMetrics(text: string): string {
  const lines = text.split("\n").filter((line) => line !== "");
  const counters = new Set<string>();
  for (const line of lines) {
    const match = /^# TYPE (\S+)_total counter$/.exec(line);
    if (match) counters.add(match[1]!);
  }
  let out = "";
  for (const line of lines) {
    const match = /^# (HELP|TYPE) (\S+)_total( .*)?$/.exec(line);
    out += match && counters.has(match[2]!) ? `# ${match[1]} ${match[2]}${match[3] ?? ""}\n` : `${line}\n`;
  }
  return out;
}

/** Whether the Accept header prefers OpenMetrics to the Prometheus text format. */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let om = 0;
  let text = 0;
  for (const range of accept.split(",").slice(0, 32)) {
    const [type = "", ...params] = range.split(";").map((p) => p.trim().toLowerCase());
    let q = 1;
    for (const p of params) {
      if (!p.startsWith("q=")) continue;
      const parsed = Number(p.slice(2));
      q = Number.isFinite(parsed) && parsed >= 0 && parsed <= 1 ? parsed : 0;
    }
    if (type === "application/openmetrics-text") om = Math.max(om, q);
    else if (type === "text/plain") text = Math.max(text, q);
  }
  return om > 0 && om >= text;
}

/** The poll and MQTT series read from their sources at each scrape. */
function registerPollAndMqttGauges(
  registers: Registry[],
  sources: MetricsSources,
  ids: readonly string[],
): void {
  const skippedSeen = new Map<string, number>();
  new Counter({
    name: "pdu_bridge_polls_skipped_total",
    help: "Polls skipped because the previous poll of the instance was still running",
    labelNames: ["instance"],
    registers,
    collect() {
      for (const id of ids) {
        const now = sources.skippedPolls(id);
        this.inc({ instance: id }, Math.max(0, now - (skippedSeen.get(id) ?? 0)));
        skippedSeen.set(id, now);
      }
    },
  });
  new Gauge({
    name: "pdu_bridge_last_successful_poll_timestamp_seconds",
    help: "When the last successful poll of the instance finished (Unix time)",
    labelNames: ["instance"],
    registers,
    collect() {
      this.reset();
      for (const s of reported(sources))
        if (s.lastSuccessUtc !== null) this.set({ instance: s.id }, s.lastSuccessUtc / 1000);
    },
  });
  new Gauge({
    name: "pdu_bridge_mqtt_connected",
    help: "1 while connected to the MQTT broker",
    registers,
    collect() {
      this.set(sources.mqtt()?.connected === true ? 1 : 0);
    },
  });
  mirroredCounter(
    registers,
    "pdu_bridge_mqtt_messages_published_total",
    "MQTT messages handed to the client for the broker",
    () => sources.mqtt()?.published,
  );
  mirroredCounter(
    registers,
    "pdu_bridge_mqtt_publish_failures_total",
    "MQTT messages dropped while disconnected or refused by the client",
    () => sources.mqtt()?.failed,
  );
  new Gauge({
    name: "pdu_bridge_mqtt_discovery_configs",
    help: "Home Assistant discovery config topics the bridge publishes retained",
    registers,
    collect() {
      this.set(sources.mqtt()?.discoveryConfigs ?? 0);
    },
  });
}

/** The count of reading series left out of /metrics per instance and reason, each reason logged once. */
function registerLeftOutGauge(registers: Registry[], sources: MetricsSources): void {
  const warned = new Set<string>();
  new Gauge({
    name: "pdu_bridge_metrics_series_left_out",
    help: "Reading series of the instance's latest snapshot left out of /metrics, by reason (unsafe-name, series-cap)",
    labelNames: ["instance", "reason"],
    registers,
    collect() {
      this.reset();
      for (const s of reported(sources)) {
        if (!isUp(s) || s.snapshot === null) continue;
        const { leftOut } = metricsPlan(s.snapshot);
        for (const reason of Object.keys(leftOut) as LeftOutReason[]) {
          const n = leftOut[reason];
          if (n === 0) continue;
          this.set({ instance: s.id, reason }, n);
          // Instances and reasons are few (configuration and code): the set stays small.
          const key = `${s.id}\u0000${reason}`;
          if (warned.has(key)) continue;
          warned.add(key);
          sources.logger?.warn(
            { instance: s.id, reason, series: n },
            `/metrics leaves out series of this PDU: ${LEFT_OUT_WHY[reason]}`,
          );
        }
      }
    },
  });
}

export class BridgeMetrics {
  readonly name = "metrics";
  readonly #sources: MetricsSources;
  readonly #registry = new Registry();
  readonly #pollDuration: Histogram<"instance">;
  readonly #pollFailures: Counter<"instance">;
  readonly #control: Counter<"source" | "action" | "outcome">;
  readonly #http: Counter<"listener" | "route" | "code">;
  readonly #apiWorkerRestarts: Counter;
  readonly #clusterTransition: ((event: OwnershipChangedEvent) => void) | null;

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    const registers = [this.#registry];
    const store = sources.store;
    const ids = store.ids();

    new Gauge({
      name: "pdu_bridge_up",
      help: "1 when the last poll of the instance succeeded, else 0",
      labelNames: ["instance"],
      registers,
      collect() {
        this.reset();
        for (const s of reported(sources)) this.set({ instance: s.id }, isUp(s) ? 1 : 0);
      },
    });
    this.#pollDuration = new Histogram({
      name: "pdu_bridge_poll_duration_seconds",
      help: "Duration of polls (successful and failed)",
      labelNames: ["instance"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#pollFailures = new Counter({
      name: "pdu_bridge_poll_failures_total",
      help: "Failed polls",
      labelNames: ["instance"],
      registers,
    });
    registerPollAndMqttGauges(registers, sources, ids);
    this.#control = new Counter({
      name: "pdu_bridge_control_commands_total",
      help: "Control commands by surface, action and outcome (done, refused, failed)",
      labelNames: ["source", "action", "outcome"],
      registers,
    });
    this.#http = new Counter({
      name: "pdu_bridge_http_requests_total",
      help: "HTTP requests answered, by listener, route and status class",
      labelNames: ["listener", "route", "code"],
      registers,
    });
    registerLeftOutGauge(registers, sources);
    const webhooks = sources.webhooks?.bind(sources);
    if (webhooks !== undefined) registerWebhookMetrics(registers, webhooks);
    this.#apiWorkerRestarts = new Counter({
      name: "pdu_bridge_api_worker_restarts_total",
      help: "Starts of a new REST API worker thread after one exited unexpectedly (every attempt)",
      registers,
    });
    const cluster = sources.cluster?.bind(sources);
    this.#clusterTransition = cluster === undefined ? null : registerClusterMetrics(registers, cluster);
    for (const id of ids) {
      this.#pollFailures.inc({ instance: id }, 0);
    }
  }

  /** Counts from now on. */
  start(): void {
    this.#sources.bus.listen(this, {
      pollDone: ({ instanceId, ms }) => this.observePoll(instanceId, ms),
      // A failed poll is recorded by the store exactly once.
      pollFailed: ({ instanceId }) => this.#pollFailures.inc({ instance: instanceId }),
      control: (e) => this.observeControl(e.source.surface, e.action, e.status),
      ...(this.#clusterTransition === null ? {} : { ownershipChanged: this.#clusterTransition }),
    });
  }

  stop(): void {
    this.close();
  }

  /** A finished poll, successful or not. */
  observePoll(instanceId: string, ms: number): void {
    this.#pollDuration.observe({ instance: instanceId }, Math.max(0, ms) / 1000);
  }

  /** One audited control attempt. The action is outside input: anything unknown counts as `other`. */
  observeControl(source: Source, action: string | null, status: number): void {
    const outcome = status === 200 ? "done" : status >= 500 ? "failed" : "refused";
    const known = action !== null && KNOWN_ACTIONS.has(action) ? action : action === null ? "none" : "other";
    this.#control.inc({ source, action: known, outcome });
  }

  /** One answered HTTP request; `route` is the route pattern (bounded), never the raw URL. */
  observeHttp(listener: "api" | "health", route: string, statusCode: number, count = 1): void {
    const klass = statusCode >= 100 && statusCode < 600 ? `${Math.floor(statusCode / 100)}xx` : "other";
    this.#http.inc({ listener, route, code: klass }, count);
  }

  /** The REST API's worker thread is being started again (Api.Worker). */
  /** The SNMP trap receiver's series (`Traps.Enabled`), from its counts at each scrape. */
  countTraps(counts: () => TrapCounts): void {
    registerTrapMetrics([this.#registry], counts);
  }

  observeApiWorkerRestart(): void {
    this.#apiWorkerRestarts.inc();
  }

  /** Counts every response of this fastify app (requests answered by a fast path: {@link wrapFastPath}). */
  instrument(app: HttpApp, listener: "api" | "health"): void {
    app.addHook("onResponse", (request, reply, done) => {
      this.observeHttp(listener, request.routeOptions.url ?? "unmatched", reply.statusCode);
      done();
    });
  }

  /** The same fast path, counting what it answers under the path it answered. */
  wrapFastPath(listener: "api" | "health", fastPath: FastPath): FastPath {
    return (request: IncomingMessage, response: ServerResponse) => {
      const answered = fastPath(request, response);
      if (answered) this.observeHttp(listener, (request.url ?? "").split("?", 1)[0]!, response.statusCode);
      return answered;
    };
  }

  /**
   * The whole exposition in the format asked for, as chunks: the bridge's own and the process
   * metrics first (small), then the reading families built from the snapshots as they are read.
   */
  async stream(openMetrics: boolean): Promise<{ contentType: string; chunks: Generator<string> }> {
    const own = await this.#registry.metrics();
    const process = await processRegistry().metrics();
    const snapshots: Snapshot[] = [];
    const loads: LoadSource[] = [];
    for (const s of reported(this.#sources))
      if (isUp(s) && s.snapshot !== null) {
        snapshots.push(s.snapshot);
        loads.push({ instanceId: s.id, load: s.load });
      }
    const assets = this.#sources.assets;
    loads.push(...fleetLoadSources(assets));
    const energy = this.#sources.energy ?? NO_ENERGY;
    const head = openMetrics
      ? `${textToOpenMetrics(own)}${textToOpenMetrics(process)}`
      : `${own}\n${process}\n`;
    function* chunks(): Generator<string> {
      yield head;
      yield* readingChunks(snapshots, openMetrics ? "openmetrics" : "text", energy);
      yield* loadChunks(loads);
      yield* assetChunks(assets);
      if (openMetrics) yield "# EOF\n";
    }
    return { contentType: openMetrics ? OPENMETRICS_CONTENT_TYPE : TEXT_CONTENT_TYPE, chunks: chunks() };
  }

  /** {@link stream} as one string. */
  async render(openMetrics: boolean): Promise<{ contentType: string; body: string }> {
    const { contentType, chunks } = await this.stream(openMetrics);
    return { contentType, body: [...chunks].join("") };
  }

  /** Stops counting. */
  close(): void {
    this.#sources.bus.release(this);
  }
}

function isUp(status: { snapshot: Snapshot | null; consecutiveFailures: number }): boolean {
  return status.snapshot !== null && status.consecutiveFailures === 0;
}

/**
 * A counter that follows a count kept elsewhere (the MQTT connection's): each scrape adds what the
 * count grew by; a count that starts again (a new connection object) never makes the counter go back.
 */
function mirroredCounter(
  registers: Registry[],
  name: string,
  help: string,
  read: () => number | undefined,
): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read() ?? seen;
      this.inc(Math.max(0, now - seen));
      seen = Math.max(now, seen);
    },
  });
}
