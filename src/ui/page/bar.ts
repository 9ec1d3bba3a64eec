/**
 * A load against its rating as a bar (a `meter`): filled to the percent (capped at the bar's end),
 * coloured by the state, with the warning and critical lines marked. Without a rating it shows the
 * current alone and no fill.
 */
import type { WireLoad } from "../wire.js";
import { bootstrap } from "./state.js";
import { h, setAttr, setClass, setText } from "./dom.js";
import { amps, fixed } from "./format.js";

export interface LoadBar {
  readonly element: HTMLElement;
  /** The text beside the bar ("24.00 A of 32 A · 75 %"). */
  readonly text: HTMLElement;
  update(load: WireLoad | null, name: string): void;
}

/** The bar reaches to this percent of the rating. */
const SCALE = 120;

/** "24.00 A of 32 A · 75 %", "3.30 A, no rating", "no current reported". */
export function loadText(load: WireLoad | null): string {
  if (load === null) return "no current reported";
  const current = amps(load.current);
  if (load.percent === null || load.rating === null) return `${current}, no rating`;
  return `${current} of ${fixed(load.rating, Number.isInteger(load.rating) ? 0 : 1)} A · ${load.percent} %`;
}

export function loadBar(): LoadBar {
  const fill = h("span", { class: "fill" });
  const track = h(
    "span",
    { class: "track" },
    fill,
    h("span", { class: "line warn", "aria-hidden": "true" }),
    h("span", { class: "line crit", "aria-hidden": "true" }),
  );
  const element = h(
    "span",
    { class: "bar", role: "meter", "aria-valuemin": "0", "aria-valuemax": String(SCALE) },
    track,
  );
  const text = h("span", { class: "bar-text" });
  const lines = track.querySelectorAll<HTMLElement>(".line");
  lines[0]?.style.setProperty("left", `${(bootstrap.alarms.warnPercent / SCALE) * 100}%`);
  lines[1]?.style.setProperty("left", `${(bootstrap.alarms.criticalPercent / SCALE) * 100}%`);
  let width = "";
  return {
    element,
    text,
    update(load, name) {
      const percent = load?.percent ?? null;
      const state = load?.state ?? "normal";
      setClass(element, `bar ${state}${percent === null ? " unrated" : ""}`);
      const next = percent === null ? "0%" : `${(Math.min(percent, SCALE) / SCALE) * 100}%`;
      if (next !== width) {
        width = next;
        fill.style.setProperty("width", next);
      }
      const label = loadText(load);
      setText(text, label);
      // A meter needs a value: without a rating the bar is an image of its text.
      setAttr(element, "role", percent === null ? "img" : "meter");
      setAttr(element, "aria-valuenow", percent === null ? null : String(Math.min(percent, SCALE)));
      setAttr(element, "aria-valuemin", percent === null ? null : "0");
      setAttr(element, "aria-valuemax", percent === null ? null : String(SCALE));
      setAttr(element, "aria-label", percent === null ? `${name} load: ${label}` : `${name} load`);
      setAttr(element, "aria-valuetext", percent === null ? null : label);
    },
  };
}
