/**
 * What the lifetime energy counters cost (docs/energy.md, docs/performance.md "Energy"), measured
 * from outside the bridge's process:
 *
 * - CPU per poll: two bridges of this build AT THE SAME TIME on the same simulated PDUs (24 outlets
 *   each, values changing) and the same mosquitto, one with the lifetime counters on and
 *   checkpointed to `State.Dir` (as a single replica runs), one with `Energy.LifetimeCounters:
 *   false`, the configuration switch that keeps no counter at all (the honest baseline: the same
 *   program, the same polls, nothing of the counters). Their CPU seconds over the same windows,
 *   summed over each process tree from /proc, give the ratio (target at most 1.05x). The pair is
 *   started twice on a fresh mosquitto, the one started first alternating (the bridge started
 *   first reads a few percent higher: docs/performance.md), and all windows are pooled.
 * - Checkpoints: the `State.Dir` file as the bridge with counters writes it, watched from outside
 *   (every 100 ms: a new inode or mtime is a write): writes per minute and bytes, at the run's
 *   outlets. From that very file, the records a cluster would write: its instances spread over the
 *   default 64 buckets, each bucket's checkpoint deflated and in base64 (src/energy/engine.ts), the
 *   largest against the record's bound (131,072 characters) and etcd's request limit (1.5 MiB by
 *   default); and the same for the first 1,000 outlets' instances (one file, one record). After
 *   the CPU windows, a third bridge of its own with the counters on polls the first 42 PDUs (1,008
 *   outlets) for one window: its file's writes per minute and size.
 *
 *   node dist/bench/run.js --only energy [--quick]
 */
import { mkdirSync, readFileSync, statSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { bucketOf } from "../src/cluster/assign.js";
import { checkpointOf, readCheckpoint, type InstanceEntry } from "../src/energy/checkpoint.js";
import { encodeRecord } from "../src/energy/engine.js";
import { bridgeProcess, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { discoveryQuiet } from "./lib/subscribe.js";
import { sleep } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { ProcMonitor } from "./lib/proc.js";
import { row, type Row } from "./lib/report.js";
import { startSimFleet } from "./lib/sim-fleet.js";

const OUTLETS = 24;
const BUCKETS = 64;
/** etcd's default request limit (--max-request-bytes). */
const ETCD_REQUEST_BYTES = 1.5 * 1024 * 1024;
/** A record's payload bound (src/cluster/store.ts, MAX_RECORD_PAYLOAD_LENGTH). */
const RECORD_PAYLOAD = 131_072;

interface Sizes {
  readonly pdus: number;
  readonly intervalS: number;
  readonly windowS: number;
  readonly rounds: number;
  /** Starts of the pair, the one started first alternating. */
  readonly starts: number;
}

const sizesOf = (quick: boolean): Sizes =>
  quick
    ? { pdus: 42, intervalS: 5, windowS: 20, rounds: 2, starts: 2 }
    : { pdus: 1000, intervalS: 10, windowS: 60, rounds: 3, starts: 2 };

/** Watches a file from outside: a new inode or mtime is a write. */
class FileWatch {
  readonly #file: string;
  readonly #timer: NodeJS.Timeout;
  #last = "";
  writes = 0;
  bytes = 0;

  constructor(file: string) {
    this.#file = file;
    this.#timer = setInterval(() => this.#look(), 100);
    this.#timer.unref();
  }

  #look(): void {
    try {
      const s = statSync(this.#file);
      const key = `${s.ino}/${s.mtimeMs}`;
      if (key !== this.#last) {
        if (this.#last !== "") this.writes++;
        this.#last = key;
        this.bytes = s.size;
      }
    } catch {
      // Not written yet.
    }
  }

  reset(): void {
    this.writes = 0;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** The checkpoint of `entries` as a cluster's records: the largest and the total (characters). */
function records(entries: Record<string, InstanceEntry>): { largest: number; total: number; used: number } {
  const byBucket = new Map<number, Record<string, InstanceEntry>>();
  for (const [id, entry] of Object.entries(entries)) {
    const b = bucketOf(id, BUCKETS);
    byBucket.set(b, { ...byBucket.get(b), [id]: entry });
  }
  let largest = 0;
  let total = 0;
  for (const bucket of byBucket.values()) {
    const length = encodeRecord(JSON.stringify(checkpointOf(bucket, Date.now()))).length;
    largest = Math.max(largest, length);
    total += length;
  }
  return { largest, total, used: byBucket.size };
}

/**
 * The checkpoint's writes at about 1,000 outlets: a bridge of its own with the counters on, polling
 * the first PDUs of the fleet (42 × 24 outlets) for one window after its first checkpoints, its
 * State.Dir file watched as the big one's is.
 */
async function smallFleetWrites(
  ctx: BenchContext,
  s: Sizes,
  dir: string,
  ports: readonly number[],
  broker: Awaited<ReturnType<typeof startBroker>>,
): Promise<{ outlets: number; perMinute: number; bytes: number }> {
  const pdus = Math.min(ports.length, Math.ceil(1000 / OUTLETS));
  const stateDir = join(dir, "state-1k");
  const file = writeBridgeConfig({
    dir,
    name: "energy-1k",
    ports: ports.slice(0, pdus),
    broker,
    pollIntervalS: s.intervalS,
  });
  appendFileSync(file, `State:\n  Dir: ${JSON.stringify(stateDir)}\n`);
  const bridge = await bridgeProcess(file, join(dir, "energy-1k.log"), ctx.bridgeNodeArgs, "plain");
  const watch = new FileWatch(join(stateDir, "energy.json"));
  try {
    await sleep((s.intervalS * 2 + 5) * 1000);
    watch.reset();
    const started = Date.now();
    await sleep(s.windowS * 1000);
    const perMinute = (watch.writes / ((Date.now() - started) / 1000)) * 60;
    ctx.log(`energy: ${pdus * OUTLETS} outlets: ${watch.writes} checkpoint writes in ${s.windowS} s`);
    return { outlets: pdus * OUTLETS, perMinute, bytes: watch.bytes };
  } finally {
    watch.stop();
    await bridge.stop();
  }
}

/** One start of the pair: its CPU seconds over its windows, its polls and its checkpoint writes. */
interface Start {
  readonly onFirst: boolean;
  readonly cpuOn: number;
  readonly cpuOff: number;
  readonly polls: number;
  readonly seconds: number;
  readonly writes: number;
  readonly bytes: number;
  /** The `State.Dir` file of the bridge with counters. */
  readonly file: string;
}

/**
 * Both bridges started afresh on a fresh mosquitto (`onFirst`: the one with counters first; which
 * starts first reads a little higher, so the starts alternate), measured over `rounds` windows,
 * stopped.
 */
async function onePair(
  ctx: BenchContext,
  s: Sizes,
  dir: string,
  fleet: Awaited<ReturnType<typeof startSimFleet>>,
  n: number,
  onFirst: boolean,
): Promise<Start> {
  const broker = await startBroker(ctx.tools.mosquitto);
  const stateDir = join(dir, `state-${n}`);
  const config = (name: string, extra: string) => {
    const file = writeBridgeConfig({ dir, name, ports: fleet.ports, broker, pollIntervalS: s.intervalS });
    appendFileSync(file, extra);
    return file;
  };
  const on = config(`energy-on-${n}`, `State:\n  Dir: ${JSON.stringify(stateDir)}\n`);
  const off = config(`energy-off-${n}`, "Energy:\n  LifetimeCounters: false\n");
  const start = (which: "on" | "off") =>
    bridgeProcess(
      which === "on" ? on : off,
      join(dir, `energy-${which}-${n}.log`),
      ctx.bridgeNodeArgs,
      "plain",
    );
  const bridges: Awaited<ReturnType<typeof start>>[] = [];
  const file = join(stateDir, "energy.json");
  const watch = new FileWatch(file);
  try {
    for (const which of onFirst ? (["on", "off"] as const) : (["off", "on"] as const))
      bridges.push(await start(which));
    const [onBridge, offBridge] = onFirst ? [bridges[0]!, bridges[1]!] : [bridges[1]!, bridges[0]!];
    await fleet.waitForPolls(4, (s.intervalS * 4 + 60) * 1000);
    // The start's Home Assistant discovery (every outlet's configs, the lifetime sensors among them
    // in one bridge) is a cost of the start: the windows begin once it is out.
    await discoveryQuiet(broker, 2 * s.intervalS * 1000, 300_000);
    const monitors = [new ProcMonitor(onBridge.pid), new ProcMonitor(offBridge.pid)];
    let cpuOn = 0;
    let cpuOff = 0;
    let polls = 0;
    let seconds = 0;
    watch.reset();
    for (let r = 0; r < s.rounds; r++) {
      await fleet.reset();
      monitors.forEach((m) => m.begin());
      await sleep(s.windowS * 1000);
      const [u0, u1] = monitors.map((m) => m.end());
      const counts = await fleet.counts();
      polls += counts.reduce((a, b) => a + b, 0) / 2;
      seconds += u0!.seconds;
      cpuOn += u0!.cpuSeconds;
      cpuOff += u1!.cpuSeconds;
      ctx.log(
        `energy: start ${n} (${onFirst ? "counters on" : "counters off"} first), round ${r + 1}: on ${u0!.cpuSeconds.toFixed(2)} s, off ${u1!.cpuSeconds.toFixed(2)} s CPU, ratio ${(u0!.cpuSeconds / u1!.cpuSeconds).toFixed(3)}`,
      );
    }
    return { onFirst, cpuOn, cpuOff, polls, seconds, writes: watch.writes, bytes: watch.bytes, file };
  } finally {
    watch.stop();
    await Promise.allSettled(bridges.map((b) => b.stop()));
    await broker.close();
  }
}

export async function runEnergy(ctx: BenchContext): Promise<ScenarioResult> {
  const s = sizesOf(ctx.quick);
  const dir = join(ctx.workDir, "energy");
  mkdirSync(dir, { recursive: true });
  const fleet = await startSimFleet({ pdus: s.pdus, processes: ctx.quick ? 1 : 4, outlets: OUTLETS });
  const broker = await startBroker(ctx.tools.mosquitto);
  try {
    const starts: Start[] = [];
    for (let n = 1; n <= s.starts; n++) starts.push(await onePair(ctx, s, dir, fleet, n, n % 2 === 1));
    const total = (pick: (x: Start) => number) => starts.reduce((t, x) => t + pick(x), 0);
    const cpu = [total((x) => x.cpuOn), total((x) => x.cpuOff)];
    const polls = total((x) => x.polls);
    const seconds = total((x) => x.seconds);
    const writes = total((x) => x.writes);
    const file = starts[starts.length - 1]!.file;
    const watch = { bytes: starts[starts.length - 1]!.bytes };
    const expected = (seconds / s.intervalS) * s.pdus;
    const writesPerMinute = (writes / seconds) * 60;
    const small = await smallFleetWrites(ctx, s, dir, fleet.ports, broker);
    const msPerPoll = (cpuSeconds: number) => (cpuSeconds * 1000) / polls;
    const checkpoint = readCheckpoint(JSON.parse(readFileSync(file, "utf8")) as unknown);
    const all = checkpoint.instances;
    const firstThousand = Object.fromEntries(Object.entries(all).slice(0, Math.ceil(1000 / OUTLETS)));
    const json1k = JSON.stringify(checkpointOf(firstThousand, Date.now())).length;
    const rec = records(all);
    const rec1k = records(firstThousand);
    const outlets = s.pdus * OUTLETS;
    const rows: Row[] = [
      row({
        scenario: "energy",
        metric: `bridge CPU per poll, lifetime counters on (${s.pdus} PDUs, ${outlets} outlets)`,
        unit: "ms",
        target: "≤ 1.05× off",
        measured: msPerPoll(cpu[0]!),
        baseline: msPerPoll(cpu[1]!),
        ratio: cpu[0]! / cpu[1]!,
        pass: cpu[0]! / cpu[1]! <= 1.05,
        baselineLabel: "Energy.LifetimeCounters: false, same run",
        note: `${starts.length} start(s) of the pair, the order alternated: ${starts.map((x) => `${(x.cpuOn / x.cpuOff).toFixed(2)} (${x.onFirst ? "on" : "off"} first)`).join(", ")}; CPU seconds of all windows pooled`,
      }),
      row({
        scenario: "energy",
        metric: `State.Dir checkpoint writes (${outlets} outlets, polls every ${s.intervalS} s)`,
        unit: "per min",
        target: "≤ 1 per poll interval",
        measured: writesPerMinute,
        baseline: 60 / s.intervalS,
        ratio: writesPerMinute / (60 / s.intervalS),
        pass: writesPerMinute <= (60 / s.intervalS) * 1.05,
      }),
      row({
        scenario: "energy",
        metric: `State.Dir checkpoint writes (${small.outlets} outlets, a bridge of its own, polls every ${s.intervalS} s)`,
        unit: "per min",
        target: "≤ 1 per poll interval",
        measured: small.perMinute,
        baseline: 60 / s.intervalS,
        ratio: small.perMinute / (60 / s.intervalS),
        pass: small.perMinute <= (60 / s.intervalS) * 1.05,
        note: `its file ${(small.bytes / 1024).toFixed(1)} KiB`,
      }),
      row({
        scenario: "energy",
        metric: `State.Dir checkpoint size (${outlets} outlets)`,
        unit: "KiB",
        target: "info",
        measured: watch.bytes / 1024,
        baseline: null,
        ratio: null,
        pass: null,
      }),
      row({
        scenario: "energy",
        metric: `State.Dir checkpoint size (${Object.keys(firstThousand).length * OUTLETS} outlets)`,
        unit: "KiB",
        target: "info",
        measured: json1k / 1024,
        baseline: null,
        ratio: null,
        pass: null,
      }),
      row({
        scenario: "energy",
        metric: `largest etcd record of ${rec.used} buckets used of ${BUCKETS} (${outlets} outlets)`,
        unit: "KiB",
        target: `≤ 10 % of etcd's 1.5 MiB request`,
        measured: rec.largest / 1024,
        baseline: ETCD_REQUEST_BYTES / 1024,
        ratio: rec.largest / ETCD_REQUEST_BYTES,
        pass: rec.largest <= ETCD_REQUEST_BYTES * 0.1 && rec.largest <= RECORD_PAYLOAD,
        note: `${((rec.largest / RECORD_PAYLOAD) * 100).toFixed(1)} % of a record's ${RECORD_PAYLOAD} characters; all records ${(rec.total / 1024).toFixed(1)} KiB`,
      }),
      row({
        scenario: "energy",
        metric: `largest etcd record (${Object.keys(firstThousand).length * OUTLETS} outlets)`,
        unit: "KiB",
        target: "info",
        measured: rec1k.largest / 1024,
        baseline: ETCD_REQUEST_BYTES / 1024,
        ratio: rec1k.largest / ETCD_REQUEST_BYTES,
        pass: null,
      }),
    ];
    return {
      rows,
      details: {
        ...s,
        outlets,
        polls,
        expectedPolls: expected,
        cpuSeconds: { on: cpu[0], off: cpu[1] },
        starts,
        checkpoint: { writes, seconds, bytes: watch.bytes, bytes1k: json1k, small },
        records: { all: rec, firstThousand: rec1k },
      },
      notes: [
        `energy: two bridges of this build at the same time on the same ${s.pdus} simulated PDUs, one with the lifetime counters (State.Dir), one with Energy.LifetimeCounters: false, started ${s.starts} time(s) on a fresh mosquitto, the one started first alternating; CPU summed over each process tree from /proc over ${s.rounds} windows of ${s.windowS} s per start; ${polls.toFixed(0)} polls each (${expected.toFixed(0)} expected).`,
        `energy: the etcd records are built from the State.Dir file the bridge wrote, its instances spread over ${BUCKETS} buckets as a cluster spreads them (src/energy/engine.ts encoding).`,
      ],
    };
  } finally {
    await broker.close();
    await fleet.close();
  }
}
