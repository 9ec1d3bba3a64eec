/**
 * The bridge under soak, in its own process so its figures are its own: `node --expose-gc
 * dist/bench/soak-child.js <config.yaml>` with an IPC channel (started by bench/soak.ts).
 *
 * Runs the real App from the file (secrets from the environment, as in production) with its log
 * lines counted by level (and the last warnings kept), counts polls from the store's events, and
 * answers `sample` messages with `process.memoryUsage()` (after two forced GCs when asked), the
 * open file descriptors (/proc/self/fd) and the event-loop delay since the previous sample
 * (`perf_hooks.monitorEventLoopDelay`, the 10 ms sampling period subtracted). The service itself
 * exposes nothing new for this.
 */
import { readdirSync } from "node:fs";
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { Writable } from "node:stream";
import { writeHeapSnapshot } from "node:v8";
import { App } from "../src/app.js";
import { loadConfigFile } from "../src/config/load.js";
import { createLogger } from "../src/log.js";

export interface DelayFigures {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

export interface ChildSample {
  readonly at: number;
  readonly gc: boolean;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly fds: number;
  /** Event-loop delay since the previous sample. */
  readonly loopDelay: DelayFigures;
  /** Event-loop delay since the last `reset-totals`. */
  readonly loopDelayTotal: DelayFigures;
  readonly polls: { readonly ok: number; readonly failed: number };
  readonly logs: Readonly<Record<string, number>>;
  readonly audits: Readonly<Record<string, number>>;
  readonly lastWarnings: readonly string[];
  readonly cpuUserMs: number;
  readonly cpuSystemMs: number;
}

export type ParentMessage =
  | { type: "sample"; gc: boolean }
  | { type: "reset-totals" }
  | { type: "heap-snapshot"; path: string }
  | { type: "stop" };

export type ChildMessage =
  | {
      type: "ready";
      apiPort: number;
      healthPort: number;
      broker: { host: string; port: number };
      instances: number;
    }
  | { type: "sample"; sample: ChildSample }
  | { type: "heap-snapshot"; path: string }
  | { type: "stopped" }
  | { type: "error"; message: string };

const send = (message: ChildMessage): void => {
  process.send?.(message);
};

/** Sampling period of the event-loop delay monitor (ms). */
const RESOLUTION_MS = 10;
/** The histogram records whole timer periods: the delay is what exceeds the period. */
const delay = (ns: number): number => Math.max(0, ns / 1e6 - RESOLUTION_MS);
const figures = (h: IntervalHistogram): DelayFigures => ({
  p50Ms: delay(h.percentile(50)),
  p99Ms: delay(h.percentile(99)),
  maxMs: delay(h.max),
  meanMs: Number.isNaN(h.mean) ? 0 : delay(h.mean),
});

async function main(): Promise<void> {
  const path = process.argv[2];
  if (path === undefined || typeof process.send !== "function") {
    throw new Error("usage: node --expose-gc dist/bench/soak-child.js CONFIG (with an IPC channel)");
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with --expose-gc");

  const logs: Record<string, number> = {};
  const audits: Record<string, number> = {};
  const lastWarnings: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line === "") continue;
        const entry = JSON.parse(line) as { level?: string; audit?: string; status?: number; msg?: string };
        const level = entry.level ?? "?";
        logs[level] = (logs[level] ?? 0) + 1;
        if (entry.audit === "control") {
          const key = String(entry.status);
          audits[key] = (audits[key] ?? 0) + 1;
        }
        if ((level === "warn" || level === "error" || level === "fatal") && entry.audit !== "control") {
          lastWarnings.push(line.slice(0, 400));
          if (lastWarnings.length > 20) lastWarnings.shift();
        }
      }
      callback();
    },
  });

  const config = await loadConfigFile(path, process.env);
  const app = await App.start(config, {
    logger: createLogger({ level: config.Logging.Level, destination }),
  });
  const polls = { ok: 0, failed: 0 };
  app.bus.listen(polls, {
    pollFailed: () => polls.failed++,
    snapshot: (event) => {
      if (event.fromPoll) polls.ok++;
    },
  });

  const interval = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const total = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  interval.enable();
  total.enable();

  /** Two full GCs with the delay monitors paused: the pause is the soak's doing, not the bridge's. */
  const forcedGc = (): void => {
    interval.disable();
    total.disable();
    gc();
    gc();
    interval.enable();
    total.enable();
  };

  const sample = (forceGc: boolean): ChildSample => {
    if (forceGc) forcedGc();
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    const result: ChildSample = {
      at: Date.now(),
      gc: forceGc,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      heapTotal: memory.heapTotal,
      external: memory.external,
      arrayBuffers: memory.arrayBuffers,
      fds: readdirSync("/proc/self/fd").length,
      loopDelay: figures(interval),
      loopDelayTotal: figures(total),
      polls: { ...polls },
      logs: { ...logs },
      audits: { ...audits },
      lastWarnings: [...lastWarnings],
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
    };
    interval.reset();
    return result;
  };

  process.on("message", (message: ParentMessage) => {
    if (message.type === "sample") send({ type: "sample", sample: sample(message.gc) });
    else if (message.type === "reset-totals") total.reset();
    else if (message.type === "heap-snapshot") {
      forcedGc();
      send({ type: "heap-snapshot", path: writeHeapSnapshot(message.path) });
    } else if (message.type === "stop") {
      void app
        .stop()
        .then(() => {
          send({ type: "stopped" });
          process.disconnect();
        })
        .catch((error: unknown) => send({ type: "error", message: String(error) }));
    }
  });

  const { apiPort, healthPort, embeddedBroker } = app.endpoints;
  if (apiPort === null || healthPort === null || embeddedBroker === null) {
    throw new Error("the soak configuration must enable the API, health and the embedded broker");
  }
  send({ type: "ready", apiPort, healthPort, broker: embeddedBroker, instances: config.instances.length });
}

main().catch((error: unknown) => {
  send({ type: "error", message: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 100).unref();
});
