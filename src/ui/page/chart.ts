/**
 * The outlet's power over the last hour as an SVG line chart (hand-written: a path, two grid lines
 * and four labels are smaller than any charting library). Samples stay bounded: older than an hour
 * or beyond MAX_POINTS are dropped as new ones arrive.
 */
import { num, svg } from "./dom.js";

const WINDOW_MS = 3_600_000;
const MAX_POINTS = 4000;
const H = 240;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

export class PowerChart {
  readonly element: SVGElement;
  #times: number[] = [];
  #values: (number | null)[] = [];

  constructor(label: string) {
    this.element = svg("svg", { class: "chart", role: "img", "aria-label": label });
  }

  /** Replaces the samples (the history answer). */
  set(times: readonly number[], values: readonly (number | null)[]): void {
    this.#times = [...times];
    this.#values = [...values];
    this.#trim(times.at(-1) ?? Date.now());
  }

  /** Adds a sample from a live snapshot (ignored when not newer than the last one). */
  add(time: number, value: number | null): void {
    const last = this.#times.at(-1);
    if (last !== undefined && time <= last) return;
    this.#times.push(time);
    this.#values.push(value);
    this.#trim(time);
  }

  #trim(now: number): void {
    let drop = 0;
    while (drop < this.#times.length && this.#times[drop]! < now - WINDOW_MS) drop++;
    drop = Math.max(drop, this.#times.length - MAX_POINTS);
    if (drop > 0) {
      this.#times.splice(0, drop);
      this.#values.splice(0, drop);
    }
  }

  /** Summary for screen readers and the caption. */
  summary(): string {
    const numbers = this.#values.filter((v): v is number => v !== null);
    if (numbers.length === 0) return "no power samples yet";
    return `${numbers.length} samples; min ${num(Math.min(...numbers))} W, max ${num(Math.max(...numbers))} W, latest ${num(numbers.at(-1))} W`;
  }

  render(now: number): void {
    const el = this.element;
    // Drawn at the element's own width, so text and lines are never stretched.
    const W = Math.max(280, Math.round(el.getBoundingClientRect().width) || 720);
    el.setAttribute("viewBox", `0 0 ${W} ${H}`);
    while (el.firstChild) el.removeChild(el.firstChild);
    const numbers = this.#values.filter((v): v is number => v !== null);
    const top = niceCeiling(Math.max(1, ...numbers));
    const x = (t: number) => PAD.left + ((t - (now - WINDOW_MS)) / WINDOW_MS) * (W - PAD.left - PAD.right);
    const y = (v: number) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
    for (const v of [0, top / 2, top]) {
      el.appendChild(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: "grid" }));
      const label = svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" });
      label.textContent = `${num(v, 0)} W`;
      el.appendChild(label);
    }
    for (const [minutes, anchor] of [
      [60, "start"],
      [30, "middle"],
      [0, "end"],
    ] as const) {
      const label = svg("text", {
        x: x(now - minutes * 60_000),
        y: H - 8,
        "text-anchor": anchor,
        class: "axis",
      });
      label.textContent = minutes === 0 ? "now" : `−${minutes} min`;
      el.appendChild(label);
    }
    let d = "";
    let pen = false;
    this.#times.forEach((t, i) => {
      const v = this.#values[i];
      if (v === null || v === undefined) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    if (d !== "") el.appendChild(svg("path", { d, class: "line" }));
    el.setAttribute("aria-label", `Power over the last hour: ${this.summary()}`);
  }
}

/** 1, 2, 2.5 or 5 times a power of ten, at or above `v`. */
function niceCeiling(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
