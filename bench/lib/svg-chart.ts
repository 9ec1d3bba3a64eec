/**
 * A small hand-written SVG line chart with two y axes (no dependencies): the scale scenario's
 * curve for docs/performance.md. Text and grid take their colour from a `prefers-color-scheme`
 * style so the chart reads on GitHub's light and dark themes; the series colours suit both.
 * Every plotted point carries `data-series`, `data-x` and `data-y` (the values it stands for) and a
 * `<title>` tooltip.
 */

export interface Series {
  readonly name: string;
  /** 1: left axis, 2: right axis. */
  readonly axis: 1 | 2;
  readonly color: string;
  readonly dashed: boolean;
  readonly points: readonly { readonly x: number; readonly y: number }[];
}

export interface Chart {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly y1Label: string;
  readonly y2Label: string;
  readonly series: readonly Series[];
  /** Where the x ticks go (default: round numbers from 0). */
  readonly xTicks?: readonly number[];
  /** Text under an x tick instead of the number (e.g. `4000 @30 s`). */
  readonly xTickLabels?: Readonly<Record<number, string>>;
}

const W = 760;
const H = 440;
const M = { left: 72, right: 72, top: 92, bottom: 62 };

/** Round tick values from 0 to at least `max` (steps of 1, 2 or 5 × 10^k). */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((f) => f * magnitude).find((s) => s >= rough) ?? 10 * magnitude;
  const ticks: number[] = [];
  for (let v = 0; v < max + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1]! < max) ticks.push(Number((ticks.length * step).toPrecision(12)));
  return ticks;
}

export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => `&${{ "&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos" }[c]!};`,
  );
}

const num = (v: number): string => String(Math.round(v * 10) / 10);
const label = (v: number): string => (Math.abs(v) >= 1000 ? v.toLocaleString("en-US") : String(v));

export function lineChart(c: Chart): string {
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const all = (axis: 1 | 2 | "x") =>
    c.series
      .filter((s) => axis === "x" || s.axis === axis)
      .flatMap((s) => s.points.map((p) => (axis === "x" ? p.x : p.y)));
  const xTicks = c.xTicks ?? niceTicks(Math.max(0, ...all("x")));
  const y1Ticks = niceTicks(Math.max(0, ...all(1)));
  const y2Ticks = niceTicks(Math.max(0, ...all(2)));
  const xMax = Math.max(...xTicks, ...all("x")) || 1;
  const sx = (x: number) => M.left + (x / xMax) * plotW;
  const sy = (axis: 1 | 2, y: number) => {
    const ticks = axis === 1 ? y1Ticks : y2Ticks;
    return M.top + plotH - (y / ticks[ticks.length - 1]!) * plotH;
  };
  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="chart-title">`,
    "<style>",
    "  text { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 12px; fill: #57606a; }",
    "  .title { font-size: 16px; font-weight: 600; fill: #24292f; }",
    "  .axis { stroke: #8c959f; stroke-width: 1; }",
    "  .grid { stroke: #d0d7de; stroke-width: 1; }",
    "  @media (prefers-color-scheme: dark) {",
    "    text { fill: #9198a1; }",
    "    .title { fill: #e6edf3; }",
    "    .axis { stroke: #6e7681; }",
    "    .grid { stroke: #30363d; }",
    "  }",
    "</style>",
    `<title id="chart-title">${escapeXml(c.title)}</title>`,
    `<text class="title" x="${W / 2}" y="24" text-anchor="middle">${escapeXml(c.title)}</text>`,
  ];
  if (c.subtitle !== undefined)
    out.push(`<text x="${W / 2}" y="44" text-anchor="middle">${escapeXml(c.subtitle)}</text>`);

  // grid and axes
  for (const t of y1Ticks) {
    const y = num(sy(1, t));
    out.push(`<line class="grid" x1="${M.left}" y1="${y}" x2="${W - M.right}" y2="${y}"/>`);
    out.push(`<text x="${M.left - 8}" y="${y}" dy="4" text-anchor="end">${label(t)}</text>`);
  }
  for (const t of y2Ticks)
    out.push(
      `<text x="${W - M.right + 8}" y="${num(sy(2, t))}" dy="4" text-anchor="start">${label(t)}</text>`,
    );
  for (const t of xTicks) {
    const x = num(sx(t));
    out.push(`<line class="axis" x1="${x}" y1="${M.top + plotH}" x2="${x}" y2="${M.top + plotH + 5}"/>`);
    out.push(
      `<text x="${x}" y="${M.top + plotH + 19}" text-anchor="middle">${escapeXml(c.xTickLabels?.[t] ?? label(t))}</text>`,
    );
  }
  out.push(
    `<line class="axis" x1="${M.left}" y1="${M.top + plotH}" x2="${W - M.right}" y2="${M.top + plotH}"/>`,
    `<line class="axis" x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${M.top + plotH}"/>`,
    `<line class="axis" x1="${W - M.right}" y1="${M.top}" x2="${W - M.right}" y2="${M.top + plotH}"/>`,
    `<text x="${M.left + plotW / 2}" y="${H - 16}" text-anchor="middle">${escapeXml(c.xLabel)}</text>`,
    `<text transform="translate(18 ${M.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(c.y1Label)}</text>`,
    `<text transform="translate(${W - 14} ${M.top + plotH / 2}) rotate(90)" text-anchor="middle">${escapeXml(c.y2Label)}</text>`,
  );

  // legend: one row above the plot
  const slot = plotW / Math.max(1, c.series.length);
  c.series.forEach((s, i) => {
    const x = M.left + i * slot;
    const y = M.top - 22;
    out.push(
      `<line x1="${num(x)}" y1="${y}" x2="${num(x + 24)}" y2="${y}" stroke="${s.color}" stroke-width="2.5"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      `<text x="${num(x + 30)}" y="${y}" dy="4">${escapeXml(s.name)}</text>`,
    );
  });

  // series
  for (const s of c.series) {
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    const path = pts.map((p) => `${num(sx(p.x))},${num(sy(s.axis, p.y))}`).join(" ");
    out.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2.5"${s.dashed ? ' stroke-dasharray="6 4"' : ""} points="${path}"/>`,
    );
    for (const p of pts) {
      out.push(
        `<circle cx="${num(sx(p.x))}" cy="${num(sy(s.axis, p.y))}" r="4" fill="${s.dashed ? "none" : s.color}" stroke="${s.color}" stroke-width="2" data-series="${escapeXml(s.name)}" data-x="${p.x}" data-y="${p.y}"><title>${escapeXml(`${s.name}: ${p.y} at ${p.x}`)}</title></circle>`,
      );
    }
  }
  out.push("</svg>", "");
  return out.join("\n");
}
