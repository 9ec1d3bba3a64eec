/**
 * The assets core in one process (src/assets/, docs/assets.md): what keeping assets costs per poll,
 * against the work every poll already does in the same run, and how long the fleet-wide steps take.
 *
 *   node dist/bench/assets.js [--pdus 1000] [--assets 10000] [--rounds 20] [--plans 20]
 *
 * - Per poll: every PDU's snapshot (one device of 24 outlets, three breakers, an inlet; currents
 *   that move every round) goes through its load assessment (src/pdu/load.ts, what the store does
 *   per poll today) and then through the asset book's update; the figure is the book's time over
 *   the assessment's, per snapshot, over `--rounds` rounds of the fleet (the first round, which
 *   resolves every cord, is left out). Assets have two cords, on instances of feeds A and B.
 * - A sequence of every asset planned (`on`), and its journal's records made (`--plans` times).
 * - The feed-loss projection of both feeds over the fleet, and one protected-asset check.
 * Prints the medians (ms) and the ratio; writes nothing. Only ratios within one run mean anything
 * on a shared machine (docs/performance.md).
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { AssetBook } from "../src/assets/book.js";
import { FeedLossTracker, projectFeedLoss } from "../src/assets/feed-loss.js";
import { newJournal } from "../src/assets/journal.js";
import { buildAssetModel } from "../src/assets/model.js";
import { protectedConflicts } from "../src/assets/protect.js";
import { planSequence } from "../src/assets/sequence.js";
import type { InstanceReading } from "../src/assets/state.js";
import type { AssetConfig, InstanceAssetsConfig } from "../src/assets/types.js";
import { DEFAULT_THRESHOLDS, LoadTracker } from "../src/pdu/load.js";
import type { Snapshot } from "../src/pdu/model.js";
import { pduSnapshot } from "../testkit/asset-fleet.js";
import { median } from "./lib/stats.js";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    pdus: { type: "string", default: "1000" },
    assets: { type: "string", default: "10000" },
    rounds: { type: "string", default: "20" },
    plans: { type: "string", default: "20" },
  },
  strict: true,
});
const PDUS = Number(values.pdus);
const ASSETS = Number(values.assets);
const ROUNDS = Number(values.rounds);
const PLANS = Number(values.plans);
const OUTLETS = 24;
if (ASSETS > (PDUS / 2) * OUTLETS)
  throw new Error(`--assets: at most ${(PDUS / 2) * OUTLETS} for ${PDUS} PDUs`);

const ids = Array.from({ length: PDUS }, (_, i) => `pdu-${String(i).padStart(4, "0")}`);
const pdus: Record<string, InstanceAssetsConfig> = {};
ids.forEach(
  (id, i) =>
    (pdus[id] = {
      Feed: i < PDUS / 2 ? "A" : "B",
      OutletCircuits: { "0-7": "breaker0", "8-15": "breaker1", "16-23": "breaker2" },
    }),
);
const assets: Record<string, AssetConfig> = {};
for (let k = 0; k < ASSETS; k++) {
  const pair = k % (PDUS / 2);
  const outlet = Math.floor(k / (PDUS / 2));
  assets[`srv-${String(k).padStart(5, "0")}`] = {
    Cords: [
      { Instance: ids[pair]!, Outlet: outlet },
      { Instance: ids[pair + PDUS / 2]!, Outlet: outlet },
    ],
    Priority: k % 10,
    StartSeconds: 20 + (k % 40),
    Protected: k % 7 === 0,
  };
}
const { model, problems } = buildAssetModel({
  Feeds: { A: {}, B: {} },
  Pdus: pdus,
  Assets: assets,
  Sequences: { MaxConcurrentStarts: 4 },
});
if (problems.length > 0) throw new Error(problems[0]!.problem);

/** Round `r`'s snapshot of PDU `i`: currents that move with the round. */
function snapshotOf(i: number, r: number): Snapshot {
  const amps = (o: number) => 0.2 + ((i * 7 + o * 3 + r) % 11) / 10;
  return pduSnapshot(
    ids[i]!,
    [
      {
        id: `D${i}`,
        outlets: Array.from({ length: OUTLETS }, (_, o) => ({
          current: amps(o),
          power: amps(o) * 230,
          energy: 100 + r,
          feedsFrom: `breaker${Math.floor(o / 8)}`,
        })),
        entities: [
          { key: "breaker0", current: 6, rated: 16 },
          { key: "breaker1", current: 6, rated: 16 },
          { key: "breaker2", current: 6, rated: 16 },
          { key: "inlet0", current: 18, rated: 32 },
        ],
      },
    ],
    r,
  );
}

const trackers = ids.map(() => new LoadTracker({}, DEFAULT_THRESHOLDS));
const book = new AssetBook(model);
const assessMs: number[] = [];
const bookMs: number[] = [];
for (let r = 0; r <= ROUNDS; r++) {
  const snapshots = ids.map((_, i) => snapshotOf(i, r));
  let assess = 0;
  let update = 0;
  for (let i = 0; i < PDUS; i++) {
    const t0 = performance.now();
    const { report } = trackers[i]!.assess(snapshots[i]!);
    const t1 = performance.now();
    const reading: InstanceReading = { id: ids[i]!, snapshot: snapshots[i]!, online: true, load: report };
    book.update(reading, true, r);
    const t2 = performance.now();
    assess += t1 - t0;
    update += t2 - t1;
  }
  if (r === 0) continue;
  assessMs.push(assess);
  bookMs.push(update);
}

const planMs: number[] = [];
let waves = 0;
for (let p = 0; p < PLANS; p++) {
  const t0 = performance.now();
  const planned = planSequence(model, { action: "on", assets: "all" });
  if (!planned.ok) throw new Error("plan refused");
  newJournal("bench", planned.plan, "bench/1", 0);
  planMs.push(performance.now() - t0);
  waves = planned.plan.waves.length;
}

const projectMs: number[] = [];
const alarmMs: number[] = [];
const feedLoss = new FeedLossTracker(DEFAULT_THRESHOLDS);
for (let p = 0; p < Math.max(3, Math.floor(PLANS / 4)); p++) {
  const t0 = performance.now();
  const projections = projectFeedLoss(model, book.states(), book.readings());
  const t1 = performance.now();
  feedLoss.assess(projections, p);
  projectMs.push(t1 - t0);
  alarmMs.push(performance.now() - t1);
}
const t0 = performance.now();
protectedConflicts(book, [{ instance: ids[0]!, deviceId: "D0", index: 0 }]);
const protectMs = performance.now() - t0;

const fmt = (v: number | null) => (v === null ? "-" : v.toFixed(3));
const assess = median(assessMs);
const update = median(bookMs);
process.stdout.write(
  [
    `assets bench: ${PDUS} PDUs, ${ASSETS} assets of 2 cords, ${ROUNDS} rounds`,
    `per round of the fleet (ms, median): load assessment ${fmt(assess)}, asset book ${fmt(update)}, ratio ${fmt(assess === null || update === null ? null : update / assess)}`,
    `per snapshot (µs, median): load assessment ${fmt(assess === null ? null : (assess * 1000) / PDUS)}, asset book ${fmt(update === null ? null : (update * 1000) / PDUS)}`,
    `sequence of ${ASSETS} assets planned with its journal (ms, median of ${PLANS}): ${fmt(median(planMs))} (${waves} waves)`,
    `feed-loss projection of both feeds (ms, median): ${fmt(median(projectMs))}, its alarms assessed ${fmt(median(alarmMs))}`,
    `one protected-asset check (ms): ${fmt(protectMs)}`,
    "",
  ].join("\n"),
);
