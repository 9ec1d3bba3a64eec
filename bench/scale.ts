/**
 * Scenario `scale`: the cost curve. At each fleet size (default 250, 500, 1000 and 2000 PDUs polled
 * every 10 s, and 4000 every 30 s, the poll rate of about 1333 at 10 s) a fresh rig (lib/fleet-rig.ts:
 * mosquitto, simulators, traffic counter) runs the naive floor, then the bridge as the plain command,
 * each for a window after every PDU was polled twice (at least 30 s and 3000 polls). Recorded per
 * size and poller: CPU per poll, peak RSS (VmHWM of the process tree), MQTT messages/s, poll
 * lateness p50/p99.
 *
 * Whether cost grows linearly (lib/linearity.ts): CPU per second against the poll rate (as PDUs at
 * 10 s) and peak RSS against PDUs, the marginal cost of each step between sizes compared with the
 * mean; a step departing more than 25 % is flagged. The curve is drawn as an SVG chart
 * (lib/svg-chart.ts) to bench/results/scale-<time>.svg, and with `--write-docs` to
 * docs/images/scale.svg (shown by docs/performance.md).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./lib/child.js";
import { OUTLETS, measureBaseline, measureBridge, withRig } from "./lib/fleet-rig.js";
import { describeLinearity, linearity, type Linearity } from "./lib/linearity.js";
import type { BenchContext, PollerRun, ScenarioResult } from "./lib/measure.js";
import { RESULTS_DIR, row, type Row } from "./lib/report.js";
import { ratio } from "./lib/stats.js";
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
    `scale: ${sizes.map((s) => `${s.pdus}@${s.intervalS}s`).join(", ")}; floor then plain bridge at each`,
  );
  const points: ScalePoint[] = [];
  for (const size of sizes) {
    const windowSeconds = scaleWindowSeconds(size, ctx.quick);
    ctx.log(` ${size.pdus} PDUs every ${size.intervalS} s, ${windowSeconds} s windows`);
    const point = await withRig(
      ctx,
      { name: `scale-${size.pdus}`, pdus: size.pdus, intervalS: size.intervalS, warmupPolls: 2 },
      async (rig) => {
        const floor = await measureBaseline(rig, { tag: `${size.pdus} PDUs`, windowSeconds });
        const bridge = await measureBridge(rig, {
          tag: `${size.pdus} PDUs, plain command`,
          windowSeconds,
          flags: "plain",
        });
        return { ...size, floor, bridge };
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
    ...describeLinearity(lin.bridge.cpu, "CPU ms/s per PDU@10s").map((l) => `scale: bridge CPU ${l}`),
    ...describeLinearity(lin.bridge.rss, "MB per PDU").map((l) => `scale: bridge RSS ${l}`),
    ...describeLinearity(lin.floor.cpu, "CPU ms/s per PDU@10s").map((l) => `scale: floor CPU ${l}`),
    ...describeLinearity(lin.floor.rss, "MB per PDU").map((l) => `scale: floor RSS ${l}`),
  ];
  for (const l of lines) ctx.log(`  ${l}`);
  return {
    rows: scaleRows(points, lin.bridge),
    details: { outlets: OUTLETS, sizes, points, linearity: lin, chartFile },
    notes: [
      "scale: per size a fresh rig (mosquitto, simulators, counter); the naive floor (bench/baseline-fleet.ts) then the bridge as the plain command (no NODE_OPTIONS), each measured after every PDU was polled twice; RSS = VmHWM summed over the process tree.",
      "scale: linearity = marginal cost of each step between sizes (CPU ms per second against the poll rate as PDUs at 10 s; peak RSS MB against PDUs) compared with the mean step; more than 25 % off is NOT LINEAR.",
      `scale: chart ${chartFile}`,
    ],
  };
}

function scaleRows(points: readonly ScalePoint[], lin: { cpu: Linearity; rss: Linearity }): Row[] {
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
  rows.push(
    linear("bridge CPU grows linearly (mean marginal cost)", lin.cpu, "ms/s per PDU@10s"),
    linear("bridge RSS grows linearly (mean marginal cost)", lin.rss, "MB/PDU"),
  );
  return rows;
}
