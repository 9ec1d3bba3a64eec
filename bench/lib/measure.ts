/**
 * The shared shape of a scenario and the polling measurement used by `fleet` and `peer`: start a
 * poller (the bridge, the naive baseline or Node-RED) in its own process against the simulated
 * fleet, let it warm up, then measure one window: its CPU and RSS from /proc, the polls and their
 * lateness as the simulators saw them, and the broker's traffic as a subscriber on `#` counted it.
 */
import type { Broker } from "./broker.js";
import { sleep, type IpcChild } from "./child.js";
import { ProcMonitor, sampleProc } from "./proc.js";
import type { Row } from "./report.js";
import type { SimFleet } from "./sim-fleet.js";
import { percentile, pollLateness } from "./stats.js";
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
  /** False when warm-up did not finish (polls missing, or start-up traffic still flowing). */
  readonly settled: boolean;
  /** The poller's process ended before the window did (crashed): every figure is empty. */
  readonly exited: boolean;
}

export interface Poller {
  readonly pid: number;
  stop(): Promise<void>;
  /** Run just before and just after the measured window (e.g. to start and stop a profiler). */
  windowStart?(): Promise<void>;
  windowEnd?(): Promise<void>;
}

const MB = 1024 * 1024;

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
}): Promise<PollerRun> {
  const { fleet, intervalMs } = options;
  await fleet.reset();
  const t0 = performance.now();
  const poller = await options.start();
  try {
    const monitor = new ProcMonitor(poller.pid);
    const brokerMonitor = new ProcMonitor(options.broker.pid);
    try {
      // A poller that cannot keep up is a result, not an error: measure it as it is.
      let settled = true;
      try {
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
      await fleet.reset();
      await options.counter.request("reset");
      if (sampleProc(poller.pid) === null) return exited(options, warmupSeconds);
      await poller.windowStart?.();
      monitor.begin();
      brokerMonitor.begin();
      await sleep(options.windowSeconds * 1000);
      if (sampleProc(poller.pid) === null) return exited(options, warmupSeconds);
      const usage = monitor.end();
      const brokerUsage = brokerMonitor.end();
      await poller.windowEnd?.();
      const hwm = sampleProc(poller.pid)?.hwmBytes ?? 0;
      const times = (await fleet.times()).slice(0, options.pdus);
      const traffic = await options.counter.request<Traffic>("collect");
      const late = pollLateness(times, intervalMs);
      const own = options.prefixes.reduce((n, p) => n + (traffic.byPrefix[p] ?? 0), 0);
      const run: PollerRun = {
        name: options.name,
        pdus: options.pdus,
        windowSeconds: usage.seconds,
        cpuSeconds: usage.cpuSeconds,
        intervalMs,
        polls: late.polls,
        pollsPerSecond: late.polls / usage.seconds,
        duePolls: (options.pdus * usage.seconds * 1000) / intervalMs,
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
        brokerCpuPercent: (100 * brokerUsage.cpuSeconds) / brokerUsage.seconds,
        warmupSeconds,
        settled,
        exited: false,
      };
      const f = (v: number | null, digits: number) => (v === null ? "–" : v.toFixed(digits));
      options.log(
        `  ${options.name}: ${run.polls} polls, ${f(run.cpuMsPerPoll, 2)} ms CPU/poll, ` +
          `${run.cpuPercent.toFixed(0)}% CPU, RSS ${run.rssHwmMb.toFixed(0)} MB, ` +
          `lateness p99 ${f(run.latenessP99Ms, 0)} ms, ${run.ownMessagesPerSecond.toFixed(0)} msg/s`,
      );
      return run;
    } finally {
      monitor.stop();
      brokerMonitor.stop();
    }
  } finally {
    await poller.stop();
  }
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
    settled: false,
    exited: true,
  };
}
