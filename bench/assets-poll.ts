/**
 * Scenario `assets`: what keeping assets costs the bridge per poll, measured from outside the
 * process. Two bridges run AT THE SAME TIME on the same simulated fleet (24-outlet PDUs, half on
 * feed A, half on feed B) and the same mosquitto: one configured with the fleet only, one with the
 * same fleet and its assets (two cords each, one on a feed-A PDU and one on a feed-B PDU, as
 * bench/assets.ts lays them out). Their CPU seconds are read from /proc over the same windows and
 * divided by the polls the simulators counted, so whatever else loads the machine loads both alike:
 * the ratio is the figure (target at most 1.1×).
 *
 * The pair of bridges is started several times (each start on a fresh mosquitto, the two started in
 * turn first): one pair's ratio holds across its windows yet moves from one start to the next (where
 * each process lands, what its JIT made of it: docs/performance.md, Assets), so the figure is
 * the median start's ratio, not one start's. The windows of a start begin once both bridges' Home
 * Assistant discovery is out (a cost of the start, not of a poll). The outcome a user sees is
 * checked at every start: every asset's retained `P/$assets/<asset>/state` topic published by the
 * bridge with assets, and every asset's device discovered, read by subscribers of the broker (the
 * fewest over the starts is reported). The time to plan a
 * sequence of every asset is bench/assets.ts's figure, run as its own process at the same sizes (its
 * in-process costs are measured there, not again here).
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { join, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker, type Broker } from "./lib/broker.js";
import { DIST, sleep, stopChild, type LoggedChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { sampleProc } from "./lib/proc.js";
import { discoveryQuiet, subscribeUntil } from "./lib/subscribe.js";
import { row } from "./lib/report.js";
import { pduId, startSimFleet, type SimFleet } from "./lib/sim-fleet.js";
import { mean, ratio } from "./lib/stats.js";

const OUTLETS = 24;
const run = promisify(execFile);

interface Sizes {
  readonly pdus: number;
  readonly assets: number;
  readonly intervalS: number;
  readonly windowS: number;
  /** Windows per start of the pair. */
  readonly rounds: number;
  /** Starts of the pair of bridges. */
  readonly starts: number;
  readonly plans: number;
}

const FULL: Sizes = {
  pdus: 1000,
  assets: 10_000,
  intervalS: 10,
  windowS: 60,
  rounds: 2,
  starts: 3,
  plans: 20,
};
const QUICK: Sizes = { pdus: 40, assets: 400, intervalS: 2, windowS: 10, rounds: 1, starts: 1, plans: 3 };

/** Feeds, each PDU's feed and the assets, added to the configuration `file` of the fleet. */
function addAssets(file: string, s: Sizes): void {
  const doc = parse(readFileSync(file, "utf8")) as {
    Pdus: Record<string, Record<string, unknown>>;
    [key: string]: unknown;
  };
  const half = s.pdus / 2;
  for (let i = 0; i < s.pdus; i++) doc.Pdus[pduId(i)]!.Feed = i < half ? "A" : "B";
  doc.Feeds = { A: { Label: "Feed A" }, B: { Label: "Feed B" } };
  const assets: Record<string, unknown> = {};
  for (let k = 0; k < s.assets; k++) {
    const pair = k % half;
    const outlet = Math.floor(k / half);
    assets[`srv-${String(k).padStart(5, "0")}`] = {
      Cords: [
        { Instance: pduId(pair), Outlet: outlet },
        { Instance: pduId(pair + half), Outlet: outlet },
      ],
      Priority: k % 10,
      Protected: k % 7 === 0,
    };
  }
  doc.Assets = assets;
  writeFileSync(file, stringify(doc));
}

/** The asset ids whose retained state topic the broker holds (a fresh subscriber gets them all). */
async function publishedStates(broker: Broker, expected: number, timeoutMs: number): Promise<number> {
  const seen = new Set<string>();
  await subscribeUntil(
    broker,
    "states",
    "pdu-bridge/$assets/+/state",
    (topic, payload) => {
      if (payload.length > 0) seen.add(topic.split("/")[2] ?? "");
    },
    () => seen.size >= expected,
    timeoutMs,
  );
  return seen.size;
}

/**
 * Waits until Home Assistant discovery is out: every asset's device discovered (its `state` config
 * retained under the node id `pdu-bridge-assets`) and no discovery config of either bridge arriving
 * for `quietMs`. Answers the assets discovered. The start's discovery (every outlet's and every
 * asset's configs) is a cost of the start, not of a poll: the windows begin after it.
 */
async function discoveryOut(
  broker: Broker,
  expected: number,
  quietMs: number,
  timeoutMs: number,
): Promise<number> {
  const assets = new Set<string>();
  await discoveryQuiet(
    broker,
    quietMs,
    timeoutMs,
    (topic, payload) => {
      const parts = topic.split("/");
      if (payload.length > 0 && parts[2] === "pdu-bridge-assets" && parts[3]?.endsWith("_state") === true)
        assets.add(parts[3]);
    },
    () => assets.size >= expected,
  );
  return assets.size;
}

/** bench/assets.ts at these sizes, as its own process: its median time to plan a sequence of every asset. */
async function planMs(s: Sizes): Promise<{ ms: number | null; line: string }> {
  const { stdout: out } = await run(process.execPath, [
    resolve(DIST, "bench/assets.js"),
    "--pdus",
    String(s.pdus),
    "--assets",
    String(s.assets),
    "--rounds",
    "1",
    "--plans",
    String(s.plans),
  ]);
  const line = out.split("\n").find((l) => l.startsWith("sequence of")) ?? "";
  const match = /\(ms, median of \d+\): ([\d.]+)/.exec(line);
  return { ms: match === null ? null : Number(match[1]), line };
}

interface Measured {
  readonly plain: number[];
  readonly withAssets: number[];
  readonly pollsPerBridge: number[];
}

/** `rounds` windows of one start: both bridges' CPU seconds per poll (ms) over the same window. */
async function measure(
  ctx: BenchContext,
  s: Sizes,
  fleet: SimFleet,
  plain: LoggedChild,
  assets: LoggedChild,
): Promise<Measured> {
  const out: Measured = { plain: [], withAssets: [], pollsPerBridge: [] };
  for (let round = 1; round <= s.rounds; round++) {
    await fleet.reset();
    const p0 = sampleProc(plain.pid);
    const a0 = sampleProc(assets.pid);
    await sleep(s.windowS * 1000);
    const p1 = sampleProc(plain.pid);
    const a1 = sampleProc(assets.pid);
    const polls = (await fleet.counts()).reduce((x, y) => x + y, 0) / 2;
    if (p0 === null || p1 === null || a0 === null || a1 === null) throw new Error("a bridge died");
    const perPoll = (cpu: number) => (cpu * 1000) / polls;
    out.plain.push(perPoll(p1.cpuSeconds - p0.cpuSeconds));
    out.withAssets.push(perPoll(a1.cpuSeconds - a0.cpuSeconds));
    out.pollsPerBridge.push(polls);
    ctx.log(
      `    window ${round}: without assets ${out.plain.at(-1)!.toFixed(3)} ms/poll, with ${s.assets} assets ` +
        `${out.withAssets.at(-1)!.toFixed(3)} ms/poll, ratio ${(out.withAssets.at(-1)! / out.plain.at(-1)!).toFixed(3)}; ` +
        `polls per bridge ${polls} of ${(s.pdus * s.windowS) / s.intervalS} expected`,
    );
  }
  return out;
}

/** One start of the pair: its windows (after warm-up and discovery) and what a user saw of it. */
interface Start extends Measured {
  readonly ratio: number;
  readonly published: number;
  readonly discovered: number;
}

/** Both bridges started on a fresh mosquitto (`plainFirst`: which starts first), measured, stopped. */
async function onePair(
  ctx: BenchContext,
  s: Sizes,
  fleet: SimFleet,
  n: number,
  plainFirst: boolean,
): Promise<Start> {
  const broker = await startBroker(ctx.tools.mosquitto);
  const running: LoggedChild[] = [];
  try {
    const base = { dir: ctx.workDir, ports: fleet.ports, broker, pollIntervalS: s.intervalS };
    const plainFile = writeBridgeConfig({ ...base, name: `assets-plain-${n}` });
    const assetsFile = writeBridgeConfig({ ...base, name: `assets-with-${n}` });
    addAssets(assetsFile, s);
    const start = async (file: string, name: string): Promise<LoggedChild> => {
      const child = await startBridge({
        configFile: file,
        logFile: join(ctx.workDir, `${name}.log`),
        nodeArgs: ctx.bridgeNodeArgs,
        startTimeoutMs: 120_000,
      });
      running.push(child);
      return child;
    };
    let plain: LoggedChild;
    let assets: LoggedChild;
    if (plainFirst) {
      plain = await start(plainFile, `assets-plain-${n}`);
      assets = await start(assetsFile, `assets-with-${n}`);
    } else {
      assets = await start(assetsFile, `assets-with-${n}`);
      plain = await start(plainFile, `assets-plain-${n}`);
    }
    // Warm-up: every PDU polled a few times by both, discovery out.
    await fleet.reset();
    await fleet.waitForPolls(2 * 3, Math.max(120, (s.intervalS * 10 * s.pdus) / 250) * 1000);
    const published = await publishedStates(broker, s.assets, 60_000);
    const discovered = await discoveryOut(broker, s.assets, 2 * s.intervalS * 1000, 300_000);
    ctx.log(
      `  start ${n} (${plainFirst ? "without" : "with"} assets first): ${published} states, ${discovered} discovered`,
    );
    const m = await measure(ctx, s, fleet, plain, assets);
    const r = ratio(mean(m.withAssets), mean(m.plain)) ?? NaN;
    ctx.log(`  start ${n}: ratio ${r.toFixed(3)}`);
    return { ...m, ratio: r, published, discovered };
  } finally {
    await Promise.all(running.map((c) => stopChild(c.child)));
    await broker.close();
  }
}

export async function runAssets(ctx: BenchContext): Promise<ScenarioResult> {
  const s = ctx.quick ? QUICK : FULL;
  ctx.log(
    `assets: ${s.pdus} PDUs × ${OUTLETS} outlets polled every ${s.intervalS} s by two bridges at once, ` +
      `one with ${s.assets} assets; ${s.starts} start(s) of the pair, ${s.rounds} window(s) of ${s.windowS} s each`,
  );
  let fleet: SimFleet | null = null;
  try {
    fleet = await startSimFleet({
      pdus: s.pdus,
      processes: Math.max(1, Math.min(4, Math.ceil(s.pdus / 250))),
      outlets: OUTLETS,
      frozen: false,
    });
    const starts: Start[] = [];
    for (let n = 1; n <= s.starts; n++) starts.push(await onePair(ctx, s, fleet, n, n % 2 === 1));
    const plan = await planMs(s);
    const published = Math.min(...starts.map((x) => x.published));
    const discovered = Math.min(...starts.map((x) => x.discovered));
    ctx.log(
      `  fewest over the starts: ${published} of ${s.assets} asset state topics published, ${discovered} assets discovered; ` +
        `bench/assets.ts: ${plan.line}`,
    );
    const everyAsset = (metric: string, count: number) =>
      row({
        scenario: "assets",
        metric,
        unit: "assets",
        target: `all ${s.assets}`,
        measured: count,
        baseline: s.assets,
        ratio: count / s.assets,
        pass: count === s.assets,
      });
    // The median start (by its ratio): its figures are the row's.
    const middle = [...starts].sort((a, b) => a.ratio - b.ratio)[Math.floor((starts.length - 1) / 2)]!;
    const cpuPlain = mean(middle.plain);
    const cpuAssets = mean(middle.withAssets);
    const r = ratio(cpuAssets, cpuPlain);
    return {
      rows: [
        row({
          scenario: "assets",
          metric: `bridge CPU per poll, ${s.pdus} PDUs with ${s.assets} assets`,
          unit: "ms",
          target: "≤ 1.1× without assets",
          measured: cpuAssets,
          baseline: cpuPlain,
          baselineLabel: "the same fleet without assets, same run",
          ratio: r,
          pass: r !== null && r <= 1.1,
          note:
            starts.length > 1
              ? `the median of ${starts.length} starts of the pair: ${starts.map((x) => x.ratio.toFixed(2)).join(", ")}`
              : undefined,
        }),
        everyAsset("asset state topics published", published),
        everyAsset("assets discovered in Home Assistant (their state config retained)", discovered),
        row({
          scenario: "assets",
          metric: `sequence of ${s.assets} assets planned (with its journal)`,
          unit: "ms",
          target: "info",
          measured: plan.ms,
          baseline: null,
          ratio: null,
          pass: null,
          note: "bench/assets.ts, its own process",
        }),
      ],
      details: { sizes: s, starts, published, discovered, planLine: plan.line },
    };
  } finally {
    await fleet?.close();
  }
}
