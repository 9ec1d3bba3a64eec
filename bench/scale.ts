/**
 * Scenario `scale`: the cost curve. At each fleet size (default 250, 500, 1000 and 2000 PDUs polled
 * every 10 s, and 4000 every 30 s, the poll rate of about 1333 at 10 s) a fresh rig (lib/fleet-rig.ts:
 * mosquitto, simulators, traffic counter) runs the bridge as the plain command and the naive floor AT
 * THE SAME TIME, the floor on a twin fleet (lib/fleet-rig.ts withFloorBeside), both measured over one
 * window after every PDU was polled twice (at least 30 s and 3000 polls). Recorded per size and
 * poller: CPU per poll, peak RSS (VmHWM of the process tree), MQTT messages/s, poll lateness p50/p99.
 *
 * Whether cost grows linearly:
 * - CPU ({@link cpuGrowth}): the bridge's CPU per poll as a multiple of the floor's in the same
 *   window. The floor does the same work for every poll at any size, so the multiple cancels what
 *   the machine's neighbours did to both; a cost that grows faster than the fleet makes it rise. It
 *   must not rise more than 25 % from one size to the next, nor from the smallest to the largest.
 *   The marginal-cost steps of CPU per second (below) are printed too, for information: measured
 *   minutes apart on a shared machine they moved by tens of per cent either way between runs.
 * - RSS (lib/linearity.ts): peak RSS against PDUs, the marginal cost of each step between sizes
 *   compared with the mean; a step departing more than 25 % is flagged. The curve is drawn as an SVG chart
 * (lib/svg-chart.ts) to bench/results/scale-<time>.svg, and with `--write-docs` to
 * docs/images/scale.svg (shown by docs/performance.md).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fleetShapeRows, measureChangingShare, type ChangingShare } from "./lib/changes.js";
import { ROOT } from "./lib/child.js";
import { OUTLETS, measureBridge, withFloorBeside, withRig } from "./lib/fleet-rig.js";
import { describeLinearity, linearity, type Linearity } from "./lib/linearity.js";
import type { BenchContext, PollerRun, ScenarioResult } from "./lib/measure.js";
import { RESULTS_DIR, row, type Row } from "./lib/report.js";
import { ratio } from "./lib/stats.js";
import { describeStart, measureStarts, startRows, type StartRun } from "./lib/starts.js";
import { lineChart } from "./lib/svg-chart.js";

export interface ScaleSize {
  readonly pdus: number;
  readonly intervalS: number;
}

export const DEFAULT_SIZES = "250,500,1000,2000,4000@30";
export const QUICK_SIZES = "10,20,40@4";

/**
 * Parses `250,500,4000@30` (PDUs, optionally `@` poll interval in seconds, else `defaultIntervalS`)
 * into sizes in ascending order; throws on anything else.
 */
export function parseSizes(text: string, defaultIntervalS: number): ScaleSize[] {
  const sizes = text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((part) => {
      const m = /^(\d+)(?:@(\d+))?$/.exec(part);
      const pdus = Number(m?.[1]);
      const intervalS = m?.[2] === undefined ? defaultIntervalS : Number(m[2]);
      if (m === null || !(pdus >= 1 && pdus <= 10_000) || !(intervalS >= 1 && intervalS <= 300))
        throw new Error(`bad size "${part}": expected PDUs (1-10000), optionally @interval seconds (1-300)`);
      return { pdus, intervalS };
    });
  if (sizes.length === 0) throw new Error("no sizes given");
  return sizes.sort((a, b) => a.pdus - b.pdus);
}

export interface ScalePoint {
  readonly pdus: number;
  readonly intervalS: number;
  readonly bridge: PollerRun;
  readonly floor: PollerRun;
}

/** The plain command's starts at the largest size: on both broker limits, clean and restarted. */
export const SCALE_START_VARIANTS = [
  { limits: "default", flags: "plain" },
  { limits: "unlimited", flags: "plain" },
] as const;

/** PDUs polled every 10 s that make the same poll rate. */
const at10s = (p: { pdus: number; intervalS: number }) => (p.pdus * 10) / p.intervalS;

/** Linearity of CPU (ms per second against the poll rate) and of peak RSS (MB against PDUs). */
export function scaleLinearity(
  points: readonly { pdus: number; intervalS: number; cpuMsPerPoll: number | null; rssMb: number }[],
): { cpu: Linearity; rss: Linearity } {
  const cpu = points
    .filter((p) => p.cpuMsPerPoll !== null)
    .map((p) => ({ x: at10s(p), y: (p.cpuMsPerPoll! * at10s(p)) / 10 }));
  const rss = points.filter((p) => p.rssMb > 0).map((p) => ({ x: p.pdus, y: p.rssMb }));
  return { cpu: linearity(cpu), rss: linearity(rss) };
}

/** How much a multiple may rise from one size to the next (and from the smallest to the largest). */
export const GROWTH_TOLERANCE = 0.25;

export interface CpuGrowth {
  /** Per size, by PDUs: the bridge's CPU per poll over the floor's in the same window. */
  readonly multiples: readonly {
    readonly pdus: number;
    readonly intervalS: number;
    readonly multiple: number;
  }[];
  /** Each step to the next larger size, and smallest → largest: the multiple's relative change. */
  readonly steps: readonly { readonly from: number; readonly to: number; readonly change: number }[];
  /** No step rises more than {@link GROWTH_TOLERANCE} (and at least two sizes were measured). */
  readonly linear: boolean;
}

/**
 * Does the bridge's CPU grow faster than the fleet? Its CPU per poll over the floor's, measured in
 * the same window, at each size (ordered by PDUs); a rise of more than {@link GROWTH_TOLERANCE}
 * from a size to the next, or from the smallest to the largest, is growth faster than linear. A
 * multiple that falls with size is a fixed cost spread over more polls, not a defect.
 */
export function cpuGrowth(
  points: readonly { pdus: number; intervalS: number; bridgeMs: number | null; floorMs: number | null }[],
): CpuGrowth {
  const multiples = points
    .filter((p) => p.bridgeMs !== null && p.floorMs !== null && p.floorMs > 0)
    .map((p) => ({ pdus: p.pdus, intervalS: p.intervalS, multiple: p.bridgeMs! / p.floorMs! }))
    .sort((a, b) => a.pdus - b.pdus);
  const step = (a: (typeof multiples)[number], b: (typeof multiples)[number]) => ({
    from: a.pdus,
    to: b.pdus,
    change: b.multiple / a.multiple - 1,
  });
  const steps = multiples.slice(1).map((b, i) => step(multiples[i]!, b));
  if (multiples.length > 2) steps.push(step(multiples[0]!, multiples[multiples.length - 1]!));
  return {
    multiples,
    steps,
    linear: multiples.length >= 2 && steps.every((s) => s.change <= GROWTH_TOLERANCE),
  };
}

/** One line per step, e.g. `500→1000: ×0.91 → ×0.88 (−3 %)`, flagged ones marked. */
export function describeGrowth(g: CpuGrowth): string[] {
  const at = (pdus: number) => g.multiples.find((m) => m.pdus === pdus)!.multiple.toFixed(2);
  return g.steps.map(
    (s) =>
      `${s.from}→${s.to}: ×${at(s.from)} → ×${at(s.to)} (${s.change >= 0 ? "+" : ""}${(s.change * 100).toFixed(0)} %)` +
      (s.change > GROWTH_TOLERANCE ? "  FASTER THAN LINEAR" : ""),
  );
}

/** The chart of the curve: CPU per poll (left axis) and peak RSS (right axis), bridge vs floor. */
export function scaleChart(points: readonly ScalePoint[], subtitle: string): string {
  const series = (pick: (r: PollerRun) => number | null, who: "bridge" | "floor") =>
    points.flatMap((p) => {
      const y = pick(who === "bridge" ? p.bridge : p.floor);
      return y === null ? [] : [{ x: p.pdus, y: Math.round(y * 1000) / 1000 }];
    });
  const tickLabels: Record<number, string> = {};
  for (const p of points)
    if (p.intervalS !== 10) tickLabels[p.pdus] = `${p.pdus.toLocaleString("en-US")} @${p.intervalS} s`;
  return lineChart({
    title: "pdu-bridge scaling: CPU per poll and peak RSS against the naive floor",
    subtitle,
    xLabel: `PDUs (${OUTLETS} outlets each; "@N s": polled every N s instead of 10 s)`,
    xTicks: [0, ...points.map((p) => p.pdus)],
    y1Label: "CPU per poll (ms)",
    y2Label: "peak RSS (MB)",
    xTickLabels: tickLabels,
    series: [
      {
        name: "CPU/poll, bridge",
        axis: 1,
        color: "#2f81f7",
        dashed: false,
        points: series((r) => r.cpuMsPerPoll, "bridge"),
      },
      {
        name: "CPU/poll, floor",
        axis: 1,
        color: "#2f81f7",
        dashed: true,
        points: series((r) => r.cpuMsPerPoll, "floor"),
      },
      {
        name: "peak RSS, bridge",
        axis: 2,
        color: "#e16f24",
        dashed: false,
        points: series((r) => (r.exited ? null : r.rssHwmMb), "bridge"),
      },
      {
        name: "peak RSS, floor",
        axis: 2,
        color: "#e16f24",
        dashed: true,
        points: series((r) => (r.exited ? null : r.rssHwmMb), "floor"),
      },
    ],
  });
}

/** Polls a full run's window holds at least, at every size. */
export const WINDOW_POLLS = 3000;

/**
 * A size's window: at least 30 s and two poll intervals, and long enough for {@link WINDOW_POLLS}
 * polls. A small fleet's fixed costs (timers, MQTT keep-alive, a full collection every few tens of
 * seconds) weigh on few polls: in a 30 s window of 250 PDUs one full collection more or less moved the
 * CPU per poll by a third between runs, more than any step of the curve.
 */
export function scaleWindowSeconds(size: ScaleSize, quick = false): number {
  if (quick) return Math.max(6, 2 * size.intervalS);
  return Math.max(30, 2 * size.intervalS, Math.ceil((WINDOW_POLLS * size.intervalS) / size.pdus));
}

export async function runScale(ctx: BenchContext): Promise<ScenarioResult> {
  const sizes = ctx.scaleSizes ?? parseSizes(ctx.quick ? QUICK_SIZES : DEFAULT_SIZES, ctx.quick ? 2 : 10);
  ctx.log(
    `scale: ${sizes.map((s) => `${s.pdus}@${s.intervalS}s`).join(", ")}; plain bridge and floor at once at each`,
  );
  const points: ScalePoint[] = [];
  /** The starts of the largest size (one entry). */
  const largestStarts: { pdus: number; intervalS: number; runs: StartRun[]; shape: ChangingShare }[] = [];
  for (const [k, size] of sizes.entries()) {
    const windowSeconds = scaleWindowSeconds(size, ctx.quick);
    ctx.log(` ${size.pdus} PDUs every ${size.intervalS} s, ${windowSeconds} s windows`);
    const largest = k === sizes.length - 1;
    const point = await withRig(
      ctx,
      { name: `scale-${size.pdus}`, pdus: size.pdus, intervalS: size.intervalS, warmupPolls: 2 },
      async (rig) => {
        const measured: ScalePoint = await withFloorBeside(rig, `${size.pdus} PDUs`, async (beside) => {
          const bridge = await measureBridge(rig, {
            tag: `${size.pdus} PDUs, plain command`,
            windowSeconds,
            flags: "plain",
            beside,
          });
          if (bridge.companion === undefined) throw new Error(`${size.pdus} PDUs: the bridge exited`);
          return { ...size, floor: bridge.companion, bridge };
        });
        if (largest) {
          const [runs, shape] = await Promise.all([
            measureStarts(rig, SCALE_START_VARIANTS),
            measureChangingShare(rig.fleet.ports, rig.intervalMs),
          ]);
          largestStarts.push({ ...size, runs, shape });
        }
        return measured;
      },
    );
    points.push(point);
  }

  const lin = {
    bridge: scaleLinearity(
      points.map((p) => ({ ...p, cpuMsPerPoll: p.bridge.cpuMsPerPoll, rssMb: p.bridge.rssHwmMb })),
    ),
    floor: scaleLinearity(
      points.map((p) => ({ ...p, cpuMsPerPoll: p.floor.cpuMsPerPoll, rssMb: p.floor.rssHwmMb })),
    ),
  };
  const growth = cpuGrowth(
    points.map((p) => ({ ...p, bridgeMs: p.bridge.cpuMsPerPoll, floorMs: p.floor.cpuMsPerPoll })),
  );
  const loads = points.map((p) => p.bridge.loadavg1);
  const subtitle = `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${ctx.quick ? "quick run, " : ""}load ${Math.min(...loads)}–${Math.max(...loads)}`;
  const svg = scaleChart(points, subtitle);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const chartFile = join(RESULTS_DIR, `scale-${ctx.stamp}.svg`);
  writeFileSync(chartFile, svg);
  ctx.log(`  chart: ${chartFile}`);
  if (ctx.writeDocs === true) {
    if (ctx.quick) ctx.log("  --write-docs ignored for a quick run (docs/images/scale.svg unchanged)");
    else {
      const docsFile = join(ROOT, "docs/images/scale.svg");
      mkdirSync(join(ROOT, "docs/images"), { recursive: true });
      writeFileSync(docsFile, svg);
      ctx.log(`  chart: ${docsFile}`);
    }
  }
  const lines = [
    ...describeGrowth(growth).map((l) => `scale: bridge CPU per poll over the floor's ${l}`),
    ...describeLinearity(lin.bridge.cpu, "CPU ms/s per PDU@10s").map((l) => `scale: bridge CPU ${l}`),
    ...describeLinearity(lin.bridge.rss, "MB per PDU").map((l) => `scale: bridge RSS ${l}`),
    ...describeLinearity(lin.floor.cpu, "CPU ms/s per PDU@10s").map((l) => `scale: floor CPU ${l}`),
    ...describeLinearity(lin.floor.rss, "MB per PDU").map((l) => `scale: floor RSS ${l}`),
  ];
  for (const l of lines) ctx.log(`  ${l}`);
  const startsAt = largestStarts[0] ?? null;
  const startsPrefix = startsAt === null ? "" : `${startsAt.pdus} PDUs @${startsAt.intervalS} s: `;
  return {
    rows: [
      ...scaleRows(points, growth, lin.bridge.rss),
      ...(startsAt === null
        ? []
        : [
            ...fleetShapeRows("scale", startsAt.shape, {
              prefix: startsPrefix,
              judgeShare: !ctx.quick,
              ...(ctx.quick ? { shareNote: "quick run: short polls change fewer values" } : {}),
            }),
            ...startRows("scale", startsAt.runs, { rssTargets: false, prefix: startsPrefix }),
          ]),
    ],
    details: { outlets: OUTLETS, sizes, points, growth, linearity: lin, chartFile, starts: startsAt },
    notes: [
      "scale: per size a fresh rig (mosquitto, simulators, counter); the bridge as the plain command (no NODE_OPTIONS) and the naive floor (bench/baseline-fleet.ts, on a twin fleet: the same PDUs in their own simulator processes) at the same time, both measured over one window after every PDU was polled twice; RSS = VmHWM summed over the process tree.",
      `scale: CPU grows linearly = the bridge's CPU per poll over the floor's in the same window rises no more than ${GROWTH_TOLERANCE * 100} % from a size to the next larger one, nor from the smallest to the largest (${describeGrowth(growth).join("; ")}).`,
      `scale: for information, marginal CPU per second of each step (against the poll rate as PDUs at 10 s), bridge: ${describeLinearity(lin.bridge.cpu, "ms/s per PDU@10s").join("; ")}; floor: ${describeLinearity(lin.floor.cpu, "ms/s per PDU@10s").join("; ")}.`,
      "scale: RSS linearity = marginal MB per PDU of each step between sizes compared with the mean step; more than 25 % off is NOT LINEAR.",
      `scale: chart ${chartFile}`,
      ...(startsAt === null
        ? []
        : [
            `scale: starts as a user sees them at ${startsAt.pdus} PDUs every ${startsAt.intervalS} s (lib/starts.ts, as in fleet; the plain command only, VmHWM for information): discovery and values within ${startsAt.runs[0]?.targetSeconds ?? "–"} s, 0 MQTT errors and reconnects.`,
            ...startsAt.runs.map((r) => `scale: start ${describeStart(r)}`),
          ]),
    ],
  };
}

function scaleRows(points: readonly ScalePoint[], growth: CpuGrowth, rss: Linearity): Row[] {
  const s = "scale";
  const rows: Row[] = [];
  for (const p of points) {
    const at = `${p.pdus} PDUs @${p.intervalS} s`;
    const info = (metric: string, unit: string, pick: (r: PollerRun) => number | null) =>
      row({
        scenario: s,
        metric: `${at}: ${metric}`,
        unit,
        target: "info",
        measured: pick(p.bridge),
        baseline: pick(p.floor),
        baselineLabel: "naive",
        ratio: ratio(pick(p.bridge), pick(p.floor)),
        pass: null,
        ...(p.bridge.polls < 0.99 * p.bridge.duePolls ? { note: `${at}: the bridge lost polls` } : {}),
      });
    rows.push(
      info("CPU per poll", "ms", (r) => r.cpuMsPerPoll),
      info("RSS peak", "MB", (r) => (r.exited ? null : r.rssHwmMb)),
      info("MQTT messages", "/s", (r) => r.ownMessagesPerSecond),
      info("lateness p50", "ms", (r) => r.latenessP50Ms),
      info("lateness p99", "ms", (r) => r.latenessP99Ms),
    );
  }
  const linear = (metric: string, l: Linearity, unit: string) =>
    row({
      scenario: s,
      metric,
      unit,
      target: "each step within 25 % of the mean",
      measured: l.meanSlope,
      baseline: null,
      ratio: null,
      pass: l.segments.length > 0 && l.linear,
      ...(l.linear
        ? {}
        : {
            note: `not linear: ${describeLinearity(l, unit)
              .filter((x) => x.includes("NOT"))
              .join("; ")}`,
          }),
    });
  const worst = growth.steps.reduce((m, st) => Math.max(m, st.change), -Infinity);
  rows.push(
    row({
      scenario: s,
      metric:
        "bridge CPU grows linearly (CPU per poll over the floor's, same window; largest rise between sizes)",
      unit: "%",
      target: `each step ≤ +${GROWTH_TOLERANCE * 100} %`,
      measured: Number.isFinite(worst) ? Math.round(worst * 1000) / 10 : null,
      baseline: null,
      ratio: null,
      pass: growth.linear,
      ...(growth.linear
        ? {}
        : {
            note: `faster than linear: ${describeGrowth(growth)
              .filter((x) => x.includes("FASTER"))
              .join("; ")}`,
          }),
    }),
    linear("bridge RSS grows linearly (mean marginal cost)", rss, "MB/PDU"),
  );
  return rows;
}
