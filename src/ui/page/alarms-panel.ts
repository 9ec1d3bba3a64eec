/**
 * The "Active alarms" panel: every active alarm of the fleet, critical first, each with where it
 * is, why, since when and a link to its PDU. Rendered at most once per frame however many alarm
 * events arrive, and at most {@link SHOWN} entries (the rest counted).
 */
import type { WireActiveAlarm } from "../wire.js";
import { h, replace, setText } from "./dom.js";
import { ago } from "./format.js";
import { alarmCause, alarmPlace } from "./events-panel.js";
import { href, state } from "./state.js";

const SHOWN = 25;

function entry(a: WireActiveAlarm, now: number, ages: Map<HTMLElement, string>): HTMLElement {
  const since = h("span", { class: "sub" }, `since ${ago(a.sinceUtc, now)}`);
  ages.set(since, a.sinceUtc);
  return h(
    "li",
    { class: `alarm-item ${a.severity}`, "data-alarm": `${a.instanceId}/${a.id}` },
    h("span", { class: `badge ${a.severity}` }, a.severity),
    h(
      "span",
      { class: "what" },
      h("a", { href: href.pdu(a.instanceId) }, a.instanceId),
      `: ${alarmPlace(a)}, ${alarmCause(a)}`,
      since,
    ),
  );
}

export class AlarmsPanel {
  readonly element: HTMLElement;
  readonly #title = h("h2", { id: "alarms-title" }, "Active alarms");
  readonly #list = h("ul", { class: "alarm-list" });
  readonly #more = h("p", { class: "note" });
  #scheduled = false;
  /** The "since" texts of the entries shown, with their start. */
  readonly #ages = new Map<HTMLElement, string>();

  constructor() {
    this.element = h(
      "section",
      { class: "panel alarms", "aria-labelledby": "alarms-title" },
      this.#title,
      this.#list,
      this.#more,
    );
  }

  /** A second passed: the ages. */
  tick(): void {
    const now = Date.now();
    for (const [element, since] of this.#ages) setText(element, `since ${ago(since, now)}`);
  }

  /** Renders with the next frame (the alarms live in the page state). */
  changed(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      this.#render();
    });
  }

  #render(): void {
    const all = [...state.alarms.values()].sort((a, b) =>
      a.severity !== b.severity
        ? a.severity === "critical"
          ? -1
          : 1
        : a.instanceId.localeCompare(b.instanceId) || a.id.localeCompare(b.id),
    );
    const critical = all.filter((a) => a.severity === "critical").length;
    setText(
      this.#title,
      all.length === 0
        ? "Active alarms: none"
        : `Active alarms: ${critical} critical, ${all.length - critical} warning`,
    );
    const now = Date.now();
    this.#ages.clear();
    replace(this.#list, ...all.slice(0, SHOWN).map((a) => entry(a, now, this.#ages)));
    setText(
      this.#more,
      all.length > SHOWN ? `and ${all.length - SHOWN} more (GET /api/v1/alarms lists them all)` : "",
    );
    this.#more.hidden = all.length <= SHOWN;
  }
}
