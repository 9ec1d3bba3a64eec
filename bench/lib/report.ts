/** Result rows, the printed table and the JSON files in bench/results/. */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, freemem, loadavg, totalmem } from "node:os";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { ROOT } from "./child.js";
import { round } from "./stats.js";

export interface Row {
  readonly scenario: string;
  readonly metric: string;
  readonly unit: string;
  /** Human-readable target, e.g. `≤ 1.5× baseline`, `< 500 ms`, `info`. */
  readonly target: string;
  readonly measured: number | null;
  readonly baseline: number | null;
  /** measured / baseline. */
  readonly ratio: number | null;
  /** null: informational (no target). */
  readonly pass: boolean | null;
  /** What the baseline column is. */
  readonly baselineLabel?: string;
  readonly note?: string;
}

export function row(r: Row): Row {
  return {
    ...r,
    measured: round(r.measured, 3),
    baseline: round(r.baseline, 3),
    ratio: round(r.ratio, 3),
  };
}

export interface Machine {
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly freeMemoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly loadavg: readonly number[];
}

export function machine(): Machine {
  return {
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadavg: loadavg().map((v) => Math.round(v * 100) / 100),
  };
}

const fmt = (v: number | null, digits = 2): string => {
  if (v === null) return "–";
  if (Math.abs(v) >= 1000) return v.toFixed(0);
  if (Math.abs(v) >= 100) return v.toFixed(1);
  return v.toFixed(digits);
};

export function formatTable(rows: readonly Row[]): string {
  const header = ["scenario", "metric", "target", "measured", "baseline", "ratio", "result"];
  const body = rows.map((r) => [
    r.scenario,
    `${r.metric}${r.unit ? ` (${r.unit})` : ""}`,
    r.target,
    fmt(r.measured),
    r.baseline === null ? "–" : `${fmt(r.baseline)}${r.baselineLabel ? ` [${r.baselineLabel}]` : ""}`,
    r.ratio === null ? "–" : `${fmt(r.ratio)}×`,
    r.pass === null ? "info" : r.pass ? "PASS" : "FAIL",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

/** Markdown version of the table (for docs/performance.md). */
export function formatMarkdown(rows: readonly Row[]): string {
  const out = [
    "| scenario | metric | target | measured | baseline | ratio | result |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    out.push(
      `| ${r.scenario} | ${r.metric}${r.unit ? ` (${r.unit})` : ""} | ${r.target} | ${fmt(r.measured)} | ${
        r.baseline === null ? "–" : `${fmt(r.baseline)}${r.baselineLabel ? ` (${r.baselineLabel})` : ""}`
      } | ${r.ratio === null ? "–" : `${fmt(r.ratio)}×`} | ${r.pass === null ? "info" : r.pass ? "PASS" : "FAIL"} |`,
    );
  }
  return out.join("\n");
}

export const RESULTS_DIR = join(ROOT, "bench/results");

/** Writes `bench/results/<scenario>-<stamp>.json`; returns the path. */
export function writeResult(scenario: string, stamp: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${scenario}-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
