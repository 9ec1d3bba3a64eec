/**
 * The fleet view, built for thousands of instances: problems first (offline, critical, warning,
 * stale), a text filter (instance id, host, label, model), state filters with their counts, sortable
 * columns, and per instance its health, total power and most loaded phase, bank or breaker (the
 * highest share of its rating) as a bar against its rating.
 *
 * Only what is on screen is in the page: the rows are windowed over the page's scroll (a row per
 * instance in view, plus a few above and below, reused as the window moves), and a live update
 * changes the text of the rows on screen that changed. Status events are folded into one render per
 * frame, however many arrive; the order is recomputed only when something that decides it changed.
 */
import type { WireInstanceStatus } from "../../wire.js";
import { loadBar, loadText, type LoadBar } from "../bar.js";
import { h, replace, setAttr, setClass, setText } from "../dom.js";
import {
  ago,
  HEALTH_ORDER,
  HEALTH_TEXT,
  healthDetail,
  healthOf,
  isStale,
  watts,
  type Health,
} from "../format.js";
import { href, state, type View } from "../state.js";
import { WindowedRows, type WindowRow } from "./windowed.js";

type FilterName = "all" | "problems" | Health;
type SortKey = "instance" | "health" | "power" | "load" | "outlets" | "polled";

/** The view's choices, kept while the page is open (back from a PDU, the fleet is as it was). */
const prefs = {
  text: "",
  filter: "all" as FilterName,
  sort: "health" as SortKey,
  descending: false,
  problemsFirst: true,
};

const PROBLEMS: ReadonlySet<Health> = new Set(["offline", "unpolled", "critical", "warning", "stale"]);
const FILTERS: readonly FilterName[] = ["all", "problems", "offline", "critical", "warning", "stale", "ok"];
const FILTER_TEXT: Readonly<Record<FilterName, string>> = {
  all: "All",
  problems: "Problems",
  ...HEALTH_TEXT,
};

const COLUMNS: readonly { key: SortKey; title: string; descending: boolean; cls: string }[] = [
  { key: "instance", title: "Instance", descending: false, cls: "c-id" },
  { key: "health", title: "State", descending: false, cls: "c-health" },
  { key: "power", title: "Power", descending: true, cls: "c-power n" },
  { key: "load", title: "Most loaded", descending: true, cls: "c-load" },
  { key: "outlets", title: "Outlets", descending: true, cls: "c-outlets n" },
  { key: "polled", title: "Last good poll", descending: false, cls: "c-age n" },
];

interface Entry {
  s: WireInstanceStatus;
  health: Health;
  rank: number;
  /** Id, host, label and model, lower case, for the text filter. */
  search: string;
}

function entryOf(s: WireInstanceStatus, now: number): Entry {
  const health = healthOf(s, now);
  return {
    s,
    health,
    rank: HEALTH_ORDER.indexOf(health),
    search: [s.id, s.host, s.label ?? "", s.model ?? ""].join("\u0000").toLowerCase(),
  };
}

const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

/** The sort value of an entry (null sorts last either way). */
function sortValue(e: Entry, key: SortKey): number | string | null {
  switch (key) {
    case "instance":
      return e.s.id;
    case "health":
      return e.rank;
    case "power":
      return e.s.powerW;
    case "load":
      return e.s.peak === null ? null : (e.s.peak.percent ?? -1 / (1 + (e.s.peak.current ?? 0)));
    case "outlets":
      return e.s.outlets;
    case "polled":
      return e.s.lastSuccessUtc === null ? null : Date.parse(e.s.lastSuccessUtc);
  }
}

function compare(a: Entry, b: Entry): number {
  if (prefs.problemsFirst && a.rank !== b.rank) return a.rank - b.rank;
  const x = sortValue(a, prefs.sort);
  const y = sortValue(b, prefs.sort);
  if (x !== y) {
    if (x === null) return 1;
    if (y === null) return -1;
    const c = typeof x === "string" || typeof y === "string" ? collator.compare(String(x), String(y)) : x - y;
    if (c !== 0) return prefs.descending ? -c : c;
  }
  return collator.compare(a.s.id, b.s.id);
}

function matches(e: Entry, terms: readonly string[]): boolean {
  const f = prefs.filter;
  if (f === "problems" ? !PROBLEMS.has(e.health) : f !== "all" && f !== e.health) return false;
  return terms.every((t) => e.search.includes(t));
}

/** One row element, reused for whichever instance scrolls into its place. */
interface RowElement extends WindowRow {
  readonly link: HTMLAnchorElement;
  readonly sub: HTMLElement;
  readonly badge: HTMLElement;
  readonly detail: HTMLElement;
  readonly power: HTMLElement;
  readonly bar: LoadBar;
  readonly outlets: HTMLElement;
  readonly age: HTMLElement;
}

function rowElement(): RowElement {
  const link = h("a", {});
  const sub = h("span", { class: "sub" });
  const badge = h("span", { class: "badge" });
  const detail = h("span", { class: "detail" });
  const power = h("span", {});
  const bar = loadBar();
  const outlets = h("span", {});
  const age = h("span", {});
  const row = h(
    "div",
    { class: "row", role: "row" },
    h("div", { class: "cell c-id", role: "rowheader" }, link, sub),
    h("div", { class: "cell c-health", role: "cell" }, badge, detail),
    h("div", { class: "cell c-power n", role: "cell" }, power),
    h("div", { class: "cell c-load", role: "cell" }, bar.element, bar.text),
    h("div", { class: "cell c-outlets n", role: "cell" }, outlets),
    h("div", { class: "cell c-age n", role: "cell" }, age),
  );
  return { row, link, sub, badge, detail, power, bar, outlets, age, id: "", top: -1 };
}

function fill(r: RowElement, e: Entry, now: number): void {
  const s = e.s;
  const stale = isStale(s, now);
  setClass(r.row, `row h-${e.health}${stale ? " stale" : ""}`);
  r.row.dataset.instance = s.id;
  setText(r.link, s.id);
  setAttr(r.link, "href", href.pdu(s.id));
  setText(r.sub, [s.label, s.host].filter(Boolean).join(" · "));
  setClass(r.badge, `badge ${stale && e.health !== "offline" ? "stale" : e.health}`);
  setText(r.badge, HEALTH_TEXT[e.health]);
  setText(r.detail, healthDetail(s, now));
  setText(r.power, watts(s.powerW));
  r.bar.update(s.peak, s.peak === null ? "Most loaded" : s.peak.name);
  setText(r.bar.text, s.peak === null ? "no load current" : `${s.peak.name}: ${loadText(s.peak)}`);
  setText(r.outlets, s.outlets === null ? "–" : String(s.outlets));
  // Among several replicas, an instance whose state is not here has no age to show.
  setText(r.age, s.replica?.state === "none" ? "–" : ago(s.lastSuccessUtc, now));
}

/** Once per page load: when the first fleet with rows was on screen (the console benchmark reads it). */
let firstRenderMarked = false;

/** The filter, the state chips, "Problems first" and the column headers; `changed` on any choice. */
class FleetControls {
  readonly element: HTMLElement;
  readonly headers: HTMLElement[];
  readonly counts = new Map<FilterName, HTMLElement>();
  /** Jumps to the alarms panel (below the table on narrow screens). */
  readonly toAlarms: HTMLButtonElement;

  constructor(changed: () => void) {
    const input = h("input", {
      id: "fleet-filter",
      type: "search",
      value: prefs.text,
      placeholder: "id, host, label or model",
      autocomplete: "off",
      spellcheck: "false",
    });
    input.addEventListener("input", () => {
      prefs.text = input.value;
      changed();
    });
    const problemsFirst = h("input", {
      type: "checkbox",
      id: "problems-first",
      checked: prefs.problemsFirst,
    });
    problemsFirst.addEventListener("change", () => {
      prefs.problemsFirst = problemsFirst.checked;
      changed();
    });
    this.toAlarms = h("button", {
      type: "button",
      class: "to-alarms",
      onClick: () => document.querySelector(".panel.alarms")?.scrollIntoView({ block: "start" }),
    });
    this.element = h(
      "div",
      { class: "fleet-controls" },
      h("label", { for: "fleet-filter", class: "filter-label" }, "Filter"),
      input,
      this.#chips(changed),
      h("label", { class: "check" }, problemsFirst, " Problems first"),
      this.toAlarms,
    );
    this.headers = COLUMNS.map((c) => {
      const button = h("button", { type: "button", class: "sort", "data-sort": c.key }, c.title);
      button.addEventListener("click", () => {
        if (prefs.sort === c.key) prefs.descending = !prefs.descending;
        else {
          prefs.sort = c.key;
          prefs.descending = c.descending;
        }
        changed();
      });
      return h("div", { class: `cell ${c.cls}`, role: "columnheader" }, button);
    });
  }

  #chips(changed: () => void): HTMLElement {
    return h(
      "fieldset",
      { class: "chips" },
      h("legend", { class: "sr-only" }, "Show"),
      ...FILTERS.map((f) => {
        const count = h("span", { class: "count" });
        this.counts.set(f, count);
        const radio = h("input", {
          type: "radio",
          name: "fleet-state",
          value: f,
          checked: prefs.filter === f,
        });
        radio.addEventListener("change", () => {
          prefs.filter = f;
          changed();
        });
        return h("label", { class: `chip f-${f}` }, radio, h("span", {}, FILTER_TEXT[f], " ", count));
      }),
    );
  }

  /** Marks the sorted column. */
  sorted(): void {
    for (const [i, c] of COLUMNS.entries()) {
      const sort = prefs.sort === c.key ? (prefs.descending ? "descending" : "ascending") : null;
      setAttr(this.headers[i]!, "aria-sort", sort);
    }
  }
}

class FleetView implements View {
  readonly #entries = new Map<string, Entry>();
  #order: Entry[] = [];
  #orderDirty = true;
  readonly #dirty = new Set<string>();
  #scheduled = false;
  readonly #controls: FleetControls;
  readonly #rows = new WindowedRows<Entry, RowElement>({
    make: rowElement,
    key: (e) => e.s.id,
    fallbackHeight: 52,
  });
  readonly #table: HTMLElement;
  readonly #summary = h("p", { class: "meta fleet-summary" });
  readonly #announce = h("p", { class: "sr-only", "aria-live": "polite" });
  readonly #empty = h("p", { class: "note", hidden: true });
  readonly #onScroll = () => this.#schedule(false);
  readonly #onResize = () => {
    this.#rows.remeasure();
    this.#schedule(true);
  };

  constructor(main: HTMLElement) {
    this.#controls = new FleetControls(() => {
      this.#orderDirty = true;
      this.#schedule(true);
    });
    this.#table = h(
      "div",
      { class: "fleet-table", role: "table", "aria-label": "PDU instances", "aria-rowcount": "1" },
      h(
        "div",
        { class: "head", role: "rowgroup" },
        h("div", { class: "row", role: "row", "aria-rowindex": "1" }, ...this.#controls.headers),
      ),
      this.#rows.element,
    );
    replace(
      main,
      h("h1", {}, "Fleet"),
      this.#summary,
      this.#controls.element,
      this.#announce,
      this.#table,
      this.#empty,
    );
    window.addEventListener("scroll", this.#onScroll, { passive: true });
    window.addEventListener("resize", this.#onResize, { passive: true });
  }

  update(changed: ReadonlySet<string> | null): void {
    const now = Date.now();
    if (changed === null) {
      // A second passed: ages, and data that went stale.
      for (const e of this.#entries.values()) {
        if (healthOf(e.s, now) === e.health) continue;
        Object.assign(e, entryOf(e.s, now));
        this.#orderDirty = true;
      }
      this.#schedule(true);
      return;
    }
    for (const id of changed) {
      const s = state.statuses.get(id);
      if (s !== undefined) this.#status(s, now);
    }
    this.#schedule(false);
  }

  destroy(): void {
    window.removeEventListener("scroll", this.#onScroll);
    window.removeEventListener("resize", this.#onResize);
  }

  /** A new status of an instance: its entry, and whether the order may have changed. */
  #status(s: WireInstanceStatus, now: number): void {
    const before = this.#entries.get(s.id);
    const next = entryOf(s, now);
    if (before === undefined) {
      this.#entries.set(s.id, next);
      this.#orderDirty = true;
    } else {
      const dataSort = prefs.sort !== "instance" && prefs.sort !== "health";
      if (
        before.rank !== next.rank ||
        before.search !== next.search ||
        (dataSort && sortValue(before, prefs.sort) !== sortValue(next, prefs.sort))
      )
        this.#orderDirty = true;
      Object.assign(before, next);
    }
    this.#dirty.add(s.id);
  }

  #schedule(all: boolean): void {
    if (all) for (const id of this.#rows.ids()) this.#dirty.add(id);
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => this.#frame());
  }

  #frame(): void {
    this.#scheduled = false;
    // Layout is read before anything is written in this frame (no forced synchronous layout).
    const top = this.#rows.element.getBoundingClientRect().top;
    if (this.#orderDirty) {
      this.#orderDirty = false;
      this.#recompute();
    }
    const now = Date.now();
    this.#rows.render(this.#order, top, (r, e, fresh) => {
      if (fresh || this.#dirty.has(e.s.id)) fill(r, e, now);
    });
    this.#dirty.clear();
    this.#counts();
    if (!firstRenderMarked && this.#order.length > 0) {
      firstRenderMarked = true;
      performance.mark("pdu-bridge:fleet-first-render");
    }
  }

  /** Filters and sorts. */
  #recompute(): void {
    const terms = prefs.text.toLowerCase().split(/\s+/).filter(Boolean);
    this.#order = [...this.#entries.values()].filter((e) => matches(e, terms)).sort(compare);
    setAttr(this.#table, "aria-rowcount", String(this.#order.length + 1));
    this.#controls.sorted();
    this.#empty.hidden = this.#order.length > 0 || this.#entries.size === 0;
    setText(this.#empty, "No instance matches the filter.");
    setText(this.#announce, `${this.#order.length} of ${this.#entries.size} instances shown`);
    for (const id of this.#rows.ids()) this.#dirty.add(id);
  }

  /** The chips' counts and the summary line. */
  #counts(): void {
    const n = new Map<FilterName, number>(FILTERS.map((f) => [f, 0]));
    let power = 0;
    for (const e of this.#entries.values()) {
      n.set(e.health, (n.get(e.health) ?? 0) + 1);
      if (PROBLEMS.has(e.health)) n.set("problems", (n.get("problems") ?? 0) + 1);
      power += e.s.status === "failing" ? 0 : (e.s.powerW ?? 0);
    }
    n.set("all", this.#entries.size);
    setText(this.#controls.toAlarms, `Active alarms: ${state.alarms.size}`);
    for (const [f, el] of this.#controls.counts) setText(el, String(n.get(f) ?? 0));
    const pending = n.get("pending") ?? 0;
    const unpolled = n.get("unpolled") ?? 0;
    const away = n.get("elsewhere") ?? 0;
    setText(
      this.#summary,
      `${this.#entries.size} instances · ${watts(power)} in all (online instances)` +
        (pending > 0 ? ` · ${pending} not polled yet` : "") +
        (unpolled > 0 ? ` · ${unpolled} polled by no replica` : "") +
        (away > 0 ? ` · ${away} held by a replica whose state is not here` : ""),
    );
  }
}

export function fleetView(main: HTMLElement): View {
  return new FleetView(main);
}
