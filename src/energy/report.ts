/**
 * Energy reports (`GET /api/v1/energy`, docs/energy.md "Reports"): the energy of a period per
 * outlet, asset, tenant or instance, from a Prometheus that scrapes the bridge
 * (`Energy.ReportSource`): `increase()` of the lifetime counters over the period, and the data's
 * actual coverage (when lifetime series existed at all, and which rows started or ended within
 * the period), so that a gap in scraping is said, not hidden.
 *
 * The Prometheus answer is untrusted input: it is read within a size and a time limit, its shape
 * is checked field by field, label values must be safe names and numbers finite and not negative;
 * anything else fails the report (502) rather than becoming a row.
 */
import { isSafeName } from "../names.js";

export const GROUP_BYS = ["outlet", "asset", "tenant", "instance"] as const;
export type GroupBy = (typeof GROUP_BYS)[number];

/** The largest Prometheus answer read (bytes). */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/** How long Prometheus has for each query (ms). */
export const QUERY_TIMEOUT_MS = 30_000;
/** Rows a report holds at most. */
export const MAX_ROWS = 100_000;
/** Points of the coverage query per group at most (Prometheus allows 11,000). */
const COVERAGE_POINTS = 1000;
/** The longest period asked (s): 400 days. */
export const MAX_PERIOD_S = 400 * 86_400;

const OUTLET_METRIC = "pdu_outlet_energy_lifetime_wh_total";
const ASSET_METRIC = "pdu_asset_energy_lifetime_wh_total";

/** Per grouping: the series summed and the labels of a row (and of its coverage). */
const GROUPINGS: Readonly<
  Record<GroupBy, { metric: string; labels: readonly string[]; coverage: readonly string[] }>
> = {
  outlet: { metric: OUTLET_METRIC, labels: ["instance", "device", "outlet"], coverage: ["instance"] },
  instance: { metric: OUTLET_METRIC, labels: ["instance"], coverage: ["instance"] },
  asset: { metric: ASSET_METRIC, labels: ["asset", "tenant"], coverage: ["asset"] },
  tenant: { metric: ASSET_METRIC, labels: ["tenant"], coverage: ["tenant"] },
};

/** A stretch of time (epoch seconds). */
export interface Span {
  readonly from: number;
  readonly to: number;
}

export interface ReportRow {
  /** The row's labels (`instance`, `device`, `outlet`; `asset`, `tenant`; ...). */
  readonly labels: Readonly<Record<string, string>>;
  /** Energy in the period (Wh): Prometheus's increase() of the lifetime counters, summed. */
  readonly energyWh: number;
  /** When the row's data existed within the period (at the coverage step). */
  readonly covered: Span | null;
  /** Stretches within `covered` with no data (longer than a step). */
  readonly gaps: readonly Span[];
}

export interface EnergyReport {
  readonly from: number;
  readonly to: number;
  readonly groupBy: GroupBy;
  /** The coverage step (s): gaps shorter than this are not seen. */
  readonly stepSeconds: number;
  /** When any lifetime series existed in the period, and the stretches without any. */
  readonly covered: Span | null;
  readonly gaps: readonly Span[];
  readonly totalWh: number;
  readonly rows: readonly ReportRow[];
}

/** Prometheus could not be asked, or answered something that is not a report's data. */
export class ReportSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReportSourceError";
  }
}

/** The report of [from, to] (epoch seconds) from the Prometheus at `base`. */
export async function energyReport(
  base: string,
  from: number,
  to: number,
  groupBy: GroupBy,
): Promise<EnergyReport> {
  const g = GROUPINGS[groupBy];
  const range = to - from;
  const by = g.labels.join(",");
  const energy = await query(base, "query", {
    query: `sum by (${by}) (increase(${g.metric}[${range}s]))`,
    time: String(to),
  });
  const stepSeconds = Math.max(1, Math.ceil(range / COVERAGE_POINTS));
  const coverage = await query(base, "query_range", {
    query: `count by (${g.coverage.join(",")}) (${g.metric})`,
    start: String(from),
    end: String(to),
    step: String(stepSeconds),
  });
  const vector = readResult(energy, "vector", g.labels);
  const matrix = readResult(coverage, "matrix", g.coverage);
  const spans = new Map<string, { covered: Span | null; gaps: Span[] }>();
  const times = new Set<number>();
  for (const series of matrix) {
    const stamps = series.points.map((p) => p[0]);
    for (const t of stamps) times.add(t);
    spans.set(keyOf(series.labels, g.coverage), coverageOf(stamps, stepSeconds));
  }
  const whole = coverageOf(
    [...times].sort((a, b) => a - b),
    stepSeconds,
  );
  const rows = vector
    .map((series): ReportRow => {
      const own = spans.get(keyOf(series.labels, g.coverage)) ?? { covered: null, gaps: [] };
      return { labels: series.labels, energyWh: series.points[0]?.[1] ?? 0, ...own };
    })
    .sort((a, b) => compareRows(a, b, g.labels));
  const totalWh = rows.reduce((sum, r) => sum + r.energyWh, 0);
  return { from, to, groupBy, stepSeconds, ...whole, totalWh, rows };
}

/** When points (epoch seconds, in order, one per step where data existed) cover, and the gaps between. */
export function coverageOf(stamps: readonly number[], step: number): { covered: Span | null; gaps: Span[] } {
  const first = stamps[0];
  const last = stamps[stamps.length - 1];
  if (first === undefined || last === undefined) return { covered: null, gaps: [] };
  const gaps: Span[] = [];
  for (let i = 1; i < stamps.length; i++) {
    const a = stamps[i - 1]!;
    const b = stamps[i]!;
    if (b - a > step * 1.5) gaps.push({ from: a, to: b });
  }
  return { covered: { from: first, to: last }, gaps };
}

const keyOf = (labels: Readonly<Record<string, string>>, names: readonly string[]): string =>
  names.map((n) => labels[n] ?? "").join("\u0000");

function compareRows(a: ReportRow, b: ReportRow, names: readonly string[]): number {
  for (const n of names) {
    const x = a.labels[n] ?? "";
    const y = b.labels[n] ?? "";
    if (x === y) continue;
    const nx = Number(x);
    const ny = Number(y);
    if (x !== "" && y !== "" && Number.isInteger(nx) && Number.isInteger(ny)) return nx - ny;
    return x < y ? -1 : 1;
  }
  return 0;
}

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  readonly points: readonly (readonly [number, number])[];
}

/** Asks Prometheus's HTTP API (`/api/v1/<endpoint>`); the parsed JSON of a successful answer. */
async function query(
  base: string,
  endpoint: "query" | "query_range",
  params: Record<string, string>,
): Promise<unknown> {
  const url = new URL(`${base.replace(/\/+$/, "")}/api/v1/${endpoint}`);
  const signal = AbortSignal.timeout(QUERY_TIMEOUT_MS);
  let text: string;
  try {
    const answer = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(params).toString(),
      redirect: "error",
      signal,
    });
    text = await boundedText(answer);
    if (!answer.ok && answer.status !== 400 && answer.status !== 422)
      throw new ReportSourceError(`Energy.ReportSource answered HTTP ${answer.status}`);
  } catch (error) {
    if (error instanceof ReportSourceError) throw error;
    const why = signal.aborted ? `no answer within ${QUERY_TIMEOUT_MS / 1000} s` : describe(error);
    throw new ReportSourceError(`Energy.ReportSource could not be asked: ${why}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ReportSourceError("Energy.ReportSource answered something that is not JSON");
  }
  if (!isObject(value) || value.status !== "success") {
    const why = isObject(value) && typeof value.error === "string" ? `: ${value.error.slice(0, 200)}` : "";
    throw new ReportSourceError(`Energy.ReportSource refused the query${why}`);
  }
  return value.data;
}

/** The body as text, refused beyond {@link MAX_ANSWER_BYTES}. */
async function boundedText(answer: Response): Promise<string> {
  const declared = Number(answer.headers.get("content-length") ?? "0");
  if (declared > MAX_ANSWER_BYTES)
    throw new ReportSourceError(`Energy.ReportSource's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
  const body = answer.body as AsyncIterable<Uint8Array> | null;
  if (body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    // Leaving the loop by the throw gives the stream up.
    if (size > MAX_ANSWER_BYTES)
      throw new ReportSourceError(`Energy.ReportSource's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** The series of a query's `data`, each checked: its labels among `names`, its values finite and not negative. */
function readResult(data: unknown, type: "vector" | "matrix", names: readonly string[]): Series[] {
  if (!isObject(data) || data.resultType !== type || !Array.isArray(data.result))
    throw new ReportSourceError(`Energy.ReportSource answered no ${type}`);
  if (data.result.length > MAX_ROWS)
    throw new ReportSourceError(`Energy.ReportSource answered more than ${MAX_ROWS} series`);
  return data.result.map((item: unknown, i): Series => {
    if (!isObject(item) || !isObject(item.metric)) throw bad(i, "has no labels");
    const labels: Record<string, string> = {};
    for (const name of names) {
      const value = item.metric[name];
      if (value === undefined) continue;
      if (typeof value !== "string" || !isSafeName(value)) throw bad(i, `has an unusable ${name} label`);
      labels[name] = value;
    }
    const raw = type === "vector" ? [item.value] : item.values;
    if (!Array.isArray(raw) || raw.length > 11_000) throw bad(i, "has no values");
    return { labels, points: raw.map((p) => point(p, i)) };
  });
}

function point(p: unknown, i: number): [number, number] {
  if (!Array.isArray(p) || p.length !== 2) throw bad(i, "has a malformed value");
  const [t, v] = p as unknown[];
  const value = typeof v === "string" && /^[0-9.eE+-]+$/.test(v) ? Number(v) : NaN;
  if (typeof t !== "number" || !Number.isFinite(t) || !Number.isFinite(value) || value < 0)
    throw bad(i, "has a value that is not a finite amount");
  return [t, value];
}

const bad = (i: number, what: string) => new ReportSourceError(`Energy.ReportSource's series ${i} ${what}`);

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The report as CSV: one line per row, each with the period and its coverage (RFC 4180, CRLF). */
export function reportCsv(report: EnergyReport): string {
  const names = GROUPINGS[report.groupBy].labels;
  const iso = (s: number) => new Date(s * 1000).toISOString();
  const head = [
    ...names,
    "energy_wh",
    "energy_kwh",
    "period_from",
    "period_to",
    "covered_from",
    "covered_to",
    "gaps",
  ];
  const lines = [head.join(",")];
  for (const row of report.rows) {
    const gaps = row.gaps.map((g) => `${iso(g.from)}/${iso(g.to)}`).join(" ");
    lines.push(
      [
        ...names.map((n) => csvField(row.labels[n] ?? "")),
        String(Math.round(row.energyWh * 1000) / 1000),
        String(Math.round(row.energyWh) / 1000),
        iso(report.from),
        iso(report.to),
        row.covered === null ? "" : iso(row.covered.from),
        row.covered === null ? "" : iso(row.covered.to),
        gaps,
      ].join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}

/** A CSV field: quoted when it holds a comma, quote or line break; a leading formula character defused. */
function csvField(text: string): string {
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
