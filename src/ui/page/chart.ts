/**
 * The outlet's power as an SVG line chart (hand-written: a path, a grid and labels are smaller than
 * any charting library). The time axis spans the samples it has (up to an hour), so the first
 * minutes after a start fill the chart instead of sitting at its right edge; the value of the
 * sample nearest the pointer (or chosen with the arrow keys) is shown with its time. Samples stay
 * bounded: older than an hour or beyond MAX_POINTS are dropped as new ones arrive.
 */
import { num, svg } from "./dom.js";

const WINDOW_MS = 3_600_000;
/** The axis spans at least this much, so two samples a second apart are not a vertical line. */
const MIN_SPAN_MS = 10_000;
const MAX_POINTS = 4000;
const H = 240;
const PAD = { left: 52, right: 14, top: 12, bottom: 28 };
/** Tick steps of the time axis, the first giving at most six ticks is used. */
const STEPS_MS = [2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000];

const clock = (t: number, seconds: boolean): string =>
  new Date(t).toLocaleTimeString("en-GB", {
    hour: "2-digit",
    minute: "2-digit",
    ...(seconds ? { second: "2-digit" } : {}),
  });

export class PowerChart {
  readonly element: SVGElement;
  /** The value under the pointer or the cursor ("14:02:31 · 58 W"), for a caption beside the chart. */
  readonly readout: HTMLElement;
  #times: number[] = [];
  #values: (number | null)[] = [];
  /** The sample the cursor is on (keyboard or pointer), or null. */
  #cursor: number | null = null;
  #now = Date.now();

  constructor(label: string) {
    this.element = svg("svg", { class: "chart", role: "img", "aria-label": label, tabindex: 0 });
    this.readout = document.createElement("p");
    this.readout.className = "chart-readout";
    this.element.addEventListener("pointermove", (event) => this.#pointAt(event.clientX));
    this.element.addEventListener("pointerleave", () => this.#setCursor(null));
    this.element.addEventListener("blur", () => this.#setCursor(null));
    this.element.addEventListener("keydown", (event) => this.#key(event));
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
      this.#cursor = null;
    }
  }

  /** Summary for screen readers and the caption. */
  summary(): string {
    const numbers = this.#values.filter((v): v is number => v !== null);
    if (numbers.length === 0) return "no power samples yet";
    const since = this.#times[0] ?? this.#now;
    const span = Math.max(1, Math.round((this.#now - since) / 60_000));
    return `${numbers.length} samples over ${span} min; min ${num(Math.min(...numbers), 0)} W, max ${num(Math.max(...numbers), 0)} W, latest ${num(numbers.at(-1), 0)} W`;
  }

  /** The axis: from the first sample (at most an hour back) to now. */
  #span(now: number): { start: number; span: number } {
    const first = this.#times[0] ?? now;
    const start = Math.min(Math.max(first, now - WINDOW_MS), now - MIN_SPAN_MS);
    return { start, span: now - start };
  }

  #width(): number {
    return Math.max(280, Math.round(this.element.getBoundingClientRect().width) || 720);
  }

  render(now: number): void {
    this.#now = now;
    const el = this.element;
    // Drawn at the element's own width, so text and lines are never stretched.
    const W = this.#width();
    el.setAttribute("viewBox", `0 0 ${W} ${H}`);
    while (el.firstChild) el.removeChild(el.firstChild);
    const numbers = this.#values.filter((v): v is number => v !== null);
    const top = niceCeiling(Math.max(1, ...numbers));
    const { start, span } = this.#span(now);
    const x = (t: number) => PAD.left + ((t - start) / span) * (W - PAD.left - PAD.right);
    const y = (v: number) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
    for (const v of [0, top / 2, top]) {
      el.appendChild(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: "grid" }));
      const label = svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" });
      label.textContent = `${num(v, 0)} W`;
      el.appendChild(label);
    }
    const step = STEPS_MS.find((s) => span / s <= 6) ?? 3_600_000;
    for (let t = Math.ceil(start / step) * step; t <= now; t += step) {
      const label = svg("text", { x: x(t), y: H - 8, "text-anchor": "middle", class: "axis" });
      label.textContent = clock(t, step < 60_000);
      el.appendChild(label);
      el.appendChild(
        svg("line", { x1: x(t), x2: x(t), y1: PAD.top, y2: H - PAD.bottom, class: "grid faint" }),
      );
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
    const cursor = this.#cursor;
    const ct = cursor === null ? undefined : this.#times[cursor];
    const cv = cursor === null ? undefined : this.#values[cursor];
    if (ct !== undefined && cv !== undefined && cv !== null) {
      el.appendChild(svg("line", { x1: x(ct), x2: x(ct), y1: PAD.top, y2: H - PAD.bottom, class: "cursor" }));
      el.appendChild(svg("circle", { cx: x(ct), cy: y(cv), r: 4, class: "dot" }));
    }
    el.setAttribute(
      "aria-label",
      `Power since ${clock(start, false)}: ${this.summary()}. Arrow keys read the samples.`,
    );
  }

  /** The sample nearest a pointer position. */
  #pointAt(clientX: number): void {
    if (this.#times.length === 0) return;
    const box = this.element.getBoundingClientRect();
    const W = this.#width();
    const { start, span } = this.#span(this.#now);
    const t = start + ((clientX - box.left - PAD.left) / (W - PAD.left - PAD.right)) * span;
    let best = 0;
    for (let i = 1; i < this.#times.length; i++)
      if (Math.abs(this.#times[i]! - t) < Math.abs(this.#times[best]! - t)) best = i;
    this.#setCursor(best);
  }

  #key(event: KeyboardEvent): void {
    const last = this.#times.length - 1;
    if (last < 0) return;
    const at = this.#cursor ?? last;
    const next =
      event.key === "ArrowLeft"
        ? at - 1
        : event.key === "ArrowRight"
          ? at + 1
          : event.key === "Home"
            ? 0
            : event.key === "End"
              ? last
              : null;
    if (next === null) return;
    event.preventDefault();
    this.#setCursor(Math.max(0, Math.min(last, next)));
  }

  #setCursor(index: number | null): void {
    if (this.#cursor === index) return;
    this.#cursor = index;
    const t = index === null ? undefined : this.#times[index];
    const v = index === null ? undefined : this.#values[index];
    this.readout.textContent =
      t === undefined
        ? ""
        : `${clock(t, true)} · ${v === null || v === undefined ? "no value" : `${num(v, 0)} W`}`;
    this.render(this.#now);
  }
}

/** 1, 2, 2.5 or 5 times a power of ten, at or above `v`. */
function niceCeiling(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
