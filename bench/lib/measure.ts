/**
 * The shared shape of a scenario and the polling measurement used by `fleet` and `peer`: start a
 * poller (the bridge, the naive baseline or Node-RED) in its own process against the simulated
 * fleet, let it warm up, then measure one window: its CPU and RSS from /proc, the polls and their
 * lateness as the simulators saw them, and the broker's traffic as a subscriber on `#` counted it.
 */
import { loadavg } from "node:os";
import type { Broker } from "./broker.js";
import type { ClusterBenchOptions } from "./cluster-options.js";
import { sleep, type IpcChild } from "./child.js";
import { ProcMonitor, sampleProc, type WindowUsage } from "./proc.js";
import type { Row } from "./report.js";
import type { SimFleet } from "./sim-fleet.js";
import { percentile, pollLateness, sawtooth } from "./stats.js";
import type { Tools } from "./tools.js";

export interface BenchContext {
  readonly quick: boolean;
  readonly profile: boolean;
  readonly tools: Tools;
  /** Scratch directory of this run (configs, logs, profiles). */
  readonly workDir: string;
  readonly stamp: string;
  /** Extra node options of every bridge child (`--bridge-node-option` experiments); normally empty. */
  readonly bridgeNodeArgs: readonly string[];
  readonly log: (line: string) => void;
  /** Sizes of the `scale` scenario (`--sizes`); default: the scenario's own. */
  readonly scaleSizes?: readonly { readonly pdus: number; readonly intervalS: number }[];
  /** Also write the charts shown by the docs (docs/images/), `--write-docs`. */
  readonly writeDocs?: boolean;
  /** Sizes and timings of the `cluster` scenario (`--cluster-*`); default: the scenario's own. */
  readonly cluster?: ClusterBenchOptions;
}

export interface ScenarioResult {
  readonly rows: Row[];
  readonly details: Record<string, unknown>;
  readonly notes?: string[];
}

export interface Traffic {
  readonly seconds: number;
  readonly total: number;
  readonly bytes: number;
  readonly byPrefix: Record<string, number>;
}

export interface PollerRun {
  readonly name: string;
  readonly pdus: number;
  readonly windowSeconds: number;
  readonly cpuSeconds: number;
  readonly intervalMs: number;
  readonly polls: number;
  readonly pollsPerSecond: number;
  /** Polls due in the window (PDUs × window / interval); polls / due < 1 means polls were lost. */
  readonly duePolls: number;
  /** CPU milliseconds per completed poll. */
  readonly cpuMsPerPoll: number | null;
  /** CPU used, in % of one core. */
  readonly cpuPercent: number;
  readonly rssPeakWindowMb: number;
  readonly rssLastMb: number;
  /** VmHWM at the end of the window: the peak over the whole run, start-up included. */
  readonly rssHwmMb: number;
  readonly latenessP50Ms: number | null;
  readonly latenessP99Ms: number | null;
  readonly latenessMaxMs: number | null;
  readonly spacingP99Ms: number | null;
  readonly skippedPolls: number;
  readonly messagesPerSecond: number;
  /** Messages per second under this poller's own topic prefixes. */
  readonly ownMessagesPerSecond: number;
  readonly traffic: Traffic;
  /** Broker CPU in % of one core during the window. */
  readonly brokerCpuPercent: number;
  /** Seconds from the poller's start to the start of the window. */
  readonly warmupSeconds: number;
  /** Seconds from spawning the poller until every PDU was polled once; null when that never happened. */
  readonly startupSeconds: number | null;
  /** Seconds from SIGTERM until the process exited (a SIGKILL after the grace time included). */
  readonly shutdownSeconds: number | null;
  /** RSS rise above its floor within the window ({@link sawtooth}), sampled every `sampleMs`. */
  readonly rssSawtooth: number | null;
  readonly rssSamples: number;
  readonly rssSampleMs: number;
  /** The machine's 1-minute load average at the end of the window. */
  readonly loadavg1: number;
  /** False when warm-up did not finish (polls missing, or start-up traffic still flowing). */
  readonly settled: boolean;
  /** The poller's process ended before the window did (crashed): every figure is empty. */
  readonly exited: boolean;
  /** The {@link Companion} that ran beside this poller, measured over the same window. */
  readonly companion?: PollerRun;
}

/**
 * A second poller already running beside the measured one, on a fleet of its own (the same PDUs:
 * same seeds, same outlets) and the same broker. It is measured over exactly the same window, so
 * whatever else loads the machine loads both alike and the ratio of their CPU per poll does not
 * carry minutes of drift. Its start-up, warm-up and shutdown are not measured.
 */
export interface Companion {
  readonly name: string;
  readonly pid: number;
  readonly fleet: SimFleet;
  /** The first topic levels that count as the companion's own traffic. */
  readonly prefixes: readonly string[];
}

export interface Poller {
  readonly pid: number;
  stop(): Promise<void>;
  /** Run just before and just after the measured window (e.g. to start and stop a profiler). */
  windowStart?(): Promise<void>;
  windowEnd?(): Promise<void>;
}

const MB = 1024 * 1024;
/** How often the poller's RSS is sampled during the window (for the sawtooth). */
const RSS_SAMPLE_MS = 200;

/**
 * Starts a poller, waits until every PDU was polled `warmupPolls` times, measures `windowSeconds`,
 * stops it. `prefixes`: the first topic levels that count as the poller's own traffic.
 */
export async function measurePoller(options: {
  name: string;
  start: () => Promise<Poller>;
  fleet: SimFleet;
  pdus: number;
  broker: Broker;
  counter: IpcChild;
  intervalMs: number;
  windowSeconds: number;
  warmupPolls: number;
  prefixes: readonly string[];
  log: (line: string) => void;
  /**
   * Also wait until the broker saw no message under this topic prefix for 2 s (the bridge's Home
   * Assistant discovery burst is over, and the counter has caught up with it), then one more poll
   * interval (the values republished after discovery are out): the window then shows steady state.
   */
  settlePrefix?: string;
  /** Measure this poller too, over the same window (see {@link Companion}). */
  companion?: Companion;
}): Promise<PollerRun> {
  await options.fleet.reset();
  const t0 = performance.now();
  const poller = await options.start();
  let run: PollerRun;
  try {
    run = await measureStarted(options, poller, t0);
  } catch (error) {
    await poller.stop();
    throw error;
  }
  const stopping = performance.now();
  await poller.stop();
  return { ...run, shutdownSeconds: (performance.now() - stopping) / 1000 };
}

type MeasureOptions = Parameters<typeof measurePoller>[0];

async function measureStarted(options: MeasureOptions, poller: Poller, t0: number): Promise<PollerRun> {
  const { fleet, intervalMs } = options;
  const monitor = new ProcMonitor(poller.pid, RSS_SAMPLE_MS);
  const brokerMonitor = new ProcMonitor(options.broker.pid);
  try {
    // A poller that cannot keep up is a result, not an error: measure it as it is.
    let settled = true;
    let startupSeconds: number | null = null;
    try {
      await fleet.waitForPolls(1, intervalMs * 2 + 60_000, options.pdus);
      startupSeconds = (performance.now() - t0) / 1000;
      await fleet.waitForPolls(
        options.warmupPolls,
        intervalMs * (options.warmupPolls + 1) + 60_000,
        options.pdus,
      );
    } catch (error) {
      settled = false;
      options.log(
        `  ${options.name}: ${error instanceof Error ? error.message : String(error)}; measuring anyway`,
      );
    }
    if (options.settlePrefix !== undefined && settled) {
      settled = await settle(options.counter, options.settlePrefix, 90_000);
      if (!settled)
        options.log(`  ${options.name}: ${options.settlePrefix}/# still busy after 90 s; measuring anyway`);
      await sleep(intervalMs);
    }
    const warmupSeconds = (performance.now() - t0) / 1000;
    options.log(
      `  ${options.name}: warmed up in ${warmupSeconds.toFixed(1)} s, measuring ${options.windowSeconds} s`,
    );
    const companion = options.companion ?? null;
    const companionMonitor = companion === null ? null : new ProcMonitor(companion.pid, RSS_SAMPLE_MS);
    try {
      await Promise.all([fleet.reset(), companion?.fleet.reset()]);
      await options.counter.request("reset");
      if (sampleProc(poller.pid) === null) return exited(options, warmupSeconds, startupSeconds);
      await poller.windowStart?.();
      monitor.begin();
      companionMonitor?.begin();
      brokerMonitor.begin();
      await sleep(options.windowSeconds * 1000);
      if (sampleProc(poller.pid) === null) return exited(options, warmupSeconds, startupSeconds);
      const usage = monitor.end();
      const besideUsage = companionMonitor?.end() ?? null;
      const brokerUsage = brokerMonitor.end();
      await poller.windowEnd?.();
      const traffic = await options.counter.request<Traffic>("collect");
      const common = { pdus: options.pdus, intervalMs, traffic, brokerUsage, warmupSeconds, startupSeconds };
      const run = windowRun({
        ...common,
        name: options.name,
        pid: poller.pid,
        usage,
        times: await fleet.times(),
        prefixes: options.prefixes,
        settled,
      });
      report(options.log, run);
      if (companion === null || besideUsage === null) return run;
      // Started before the measured poller: its own start-up was not measured.
      const beside = windowRun({
        ...common,
        startupSeconds: null,
        name: companion.name,
        pid: companion.pid,
        usage: besideUsage,
        times: await companion.fleet.times(),
        prefixes: companion.prefixes,
        settled: true,
      });
      report(options.log, beside);
      return { ...run, companion: beside };
    } finally {
      companionMonitor?.stop();
    }
  } finally {
    monitor.stop();
    brokerMonitor.stop();
  }
}

/** The figures of one poller over a measured window. */
function windowRun(o: {
  name: string;
  pid: number;
  pdus: number;
  intervalMs: number;
  usage: WindowUsage;
  times: number[][];
  traffic: Traffic;
  prefixes: readonly string[];
  brokerUsage: WindowUsage;
  warmupSeconds: number;
  startupSeconds: number | null;
  settled: boolean;
}): PollerRun {
  const { usage, traffic } = o;
  const hwm = sampleProc(o.pid)?.hwmBytes ?? 0;
  const late = pollLateness(o.times.slice(0, o.pdus), o.intervalMs);
  const own = o.prefixes.reduce((n, p) => n + (traffic.byPrefix[p] ?? 0), 0);
  return {
    name: o.name,
    pdus: o.pdus,
    windowSeconds: usage.seconds,
    cpuSeconds: usage.cpuSeconds,
    intervalMs: o.intervalMs,
    polls: late.polls,
    pollsPerSecond: late.polls / usage.seconds,
    duePolls: (o.pdus * usage.seconds * 1000) / o.intervalMs,
    cpuMsPerPoll: late.polls > 0 ? (usage.cpuSeconds * 1000) / late.polls : null,
    cpuPercent: (100 * usage.cpuSeconds) / usage.seconds,
    rssPeakWindowMb: usage.rssPeakBytes / MB,
    rssLastMb: usage.rssLastBytes / MB,
    rssHwmMb: hwm / MB,
    latenessP50Ms: percentile(late.lateness, 50),
    latenessP99Ms: percentile(late.lateness, 99),
    latenessMaxMs: percentile(late.lateness, 100),
    spacingP99Ms: percentile(late.spacing, 99),
    skippedPolls: late.skipped,
    messagesPerSecond: traffic.total / traffic.seconds,
    ownMessagesPerSecond: own / traffic.seconds,
    traffic,
    brokerCpuPercent: (100 * o.brokerUsage.cpuSeconds) / o.brokerUsage.seconds,
    warmupSeconds: o.warmupSeconds,
    startupSeconds: o.startupSeconds,
    shutdownSeconds: null,
    rssSawtooth: sawtooth(usage.rssSamples),
    rssSamples: usage.rssSamples.length,
    rssSampleMs: RSS_SAMPLE_MS,
    loadavg1: Math.round(loadavg()[0]! * 100) / 100,
    settled: o.settled,
    exited: false,
  };
}

function report(log: (line: string) => void, run: PollerRun): void {
  const f = (v: number | null, digits: number) => (v === null ? "–" : v.toFixed(digits));
  log(
    `  ${run.name}: ${run.polls} polls, ${f(run.cpuMsPerPoll, 2)} ms CPU/poll, ` +
      `${run.cpuPercent.toFixed(0)}% CPU, RSS ${run.rssHwmMb.toFixed(0)} MB, ` +
      `lateness p99 ${f(run.latenessP99Ms, 0)} ms, ${run.ownMessagesPerSecond.toFixed(0)} msg/s`,
  );
}

/** Resolves true once 2 s pass without a message under `prefix`, false after `timeoutMs`. */
export async function settle(counter: IpcChild, prefix: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await counter.request("reset");
    await sleep(2000);
    const traffic = await counter.request<Traffic>("collect");
    if ((traffic.byPrefix[prefix] ?? 0) === 0) return true;
  }
  return false;
}

/** The result of a poller whose process ended before its window did. */
function exited(
  o: { name: string; pdus: number; intervalMs: number; log: (line: string) => void },
  warmupSeconds: number,
  startupSeconds: number | null,
): PollerRun {
  o.log(`  ${o.name}: the process exited before the end of the window (see its log)`);
  return {
    name: o.name,
    pdus: o.pdus,
    windowSeconds: 0,
    cpuSeconds: 0,
    intervalMs: o.intervalMs,
    polls: 0,
    pollsPerSecond: 0,
    duePolls: 1,
    cpuMsPerPoll: null,
    cpuPercent: 0,
    rssPeakWindowMb: 0,
    rssLastMb: 0,
    rssHwmMb: 0,
    latenessP50Ms: null,
    latenessP99Ms: null,
    latenessMaxMs: null,
    spacingP99Ms: null,
    skippedPolls: 0,
    messagesPerSecond: 0,
    ownMessagesPerSecond: 0,
    traffic: { seconds: 0, total: 0, bytes: 0, byPrefix: {} },
    brokerCpuPercent: 0,
    warmupSeconds,
    startupSeconds,
    shutdownSeconds: null,
    rssSawtooth: null,
    rssSamples: 0,
    rssSampleMs: RSS_SAMPLE_MS,
    loadavg1: Math.round(loadavg()[0]! * 100) / 100,
    settled: false,
    exited: true,
  };
}
