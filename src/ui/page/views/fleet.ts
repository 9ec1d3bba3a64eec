/**
 * The fleet view, built for thousands of instances: problems first (offline, critical, warning,
 * stale), a text filter (instance id, host, label, model), state filters with their counts, sortable
 * columns, and per instance its health, total power and most loaded phase as a bar against its
 * rating.
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

const PROBLEMS: ReadonlySet<Health> = new Set(["offline", "critical", "warning", "stale"]);
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
  { key: "load", title: "Most loaded phase", descending: true, cls: "c-load" },
  { key: "outlets", title: "Outlets", descending: true, cls: "c-outlets n" },
  { key: "polled", title: "Last good poll", descending: false, cls: "c-age n" },
];

/** Rows rendered above and below the window. */
const OVERSCAN = 6;

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
interface RowElement {
  readonly row: HTMLElement;
  readonly link: HTMLAnchorElement;
  readonly sub: HTMLElement;
  readonly badge: HTMLElement;
  readonly detail: HTMLElement;
  readonly power: HTMLElement;
  readonly bar: LoadBar;
  readonly outlets: HTMLElement;
  readonly age: HTMLElement;
  id: string;
  top: number;
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
  r.bar.update(s.peak, s.peak === null ? "Most loaded phase" : s.peak.name);
  setText(r.bar.text, s.peak === null ? "no phase current" : `${s.peak.name}: ${loadText(s.peak)}`);
  setText(r.outlets, s.outlets === null ? "–" : String(s.outlets));
  setText(r.age, ago(s.lastSuccessUtc, now));
}

/** Once per page load: when the first fleet with rows was on screen (the console benchmark reads it). */
let firstRenderMarked = false;

export function fleetView(main: HTMLElement): View {
  const entries = new Map<string, Entry>();
  let order: Entry[] = [];
  let orderDirty = true;
  const dirty = new Set<string>();
  let scheduled = false;
  let rowHeight = 0;
  const visible = new Map<string, RowElement>();
  const spare: RowElement[] = [];

  const summary = h("p", { class: "meta fleet-summary" });
  const announce = h("p", { class: "sr-only", "aria-live": "polite" });
  const input = h("input", {
    id: "fleet-filter",
    type: "search",
    value: prefs.text,
    placeholder: "id, host, label or model",
    autocomplete: "off",
    spellcheck: "false",
  });
  const counts = new Map<FilterName, HTMLElement>();
  const chips = h(
    "fieldset",
    { class: "chips" },
    h("legend", { class: "sr-only" }, "Show"),
    ...FILTERS.map((f) => {
      const count = h("span", { class: "count" });
      counts.set(f, count);
      const radio = h("input", { type: "radio", name: "fleet-state", value: f, checked: prefs.filter === f });
      radio.addEventListener("change", () => {
        prefs.filter = f;
        orderDirty = true;
        schedule(true);
      });
      return h("label", { class: `chip f-${f}` }, radio, h("span", {}, FILTER_TEXT[f], " ", count));
    }),
  );
  const problemsFirst = h("input", { type: "checkbox", id: "problems-first", checked: prefs.problemsFirst });
  problemsFirst.addEventListener("change", () => {
    prefs.problemsFirst = problemsFirst.checked;
    orderDirty = true;
    schedule(true);
  });
  input.addEventListener("input", () => {
    prefs.text = input.value;
    orderDirty = true;
    schedule(true);
  });
  const headers = COLUMNS.map((c) => {
    const button = h("button", { type: "button", class: "sort", "data-sort": c.key }, c.title);
    button.addEventListener("click", () => {
      if (prefs.sort === c.key) prefs.descending = !prefs.descending;
      else {
        prefs.sort = c.key;
        prefs.descending = c.descending;
      }
      orderDirty = true;
      schedule(true);
    });
    return h("div", { class: `cell ${c.cls}`, role: "columnheader" }, button);
  });
  const rows = h("div", { class: "rows", role: "rowgroup" });
  const table = h(
    "div",
    { class: "fleet-table", role: "table", "aria-label": "PDU instances", "aria-rowcount": "1" },
    h(
      "div",
      { class: "head", role: "rowgroup" },
      h("div", { class: "row", role: "row", "aria-rowindex": "1" }, ...headers),
    ),
    rows,
  );
  const empty = h("p", { class: "note", hidden: true });
  // The alarms panel sits beside the table on wide screens and below it on narrow ones.
  const toAlarms = h("button", {
    type: "button",
    class: "to-alarms",
    onClick: () => document.querySelector(".panel.alarms")?.scrollIntoView({ block: "start" }),
  });
  replace(
    main,
    h("h1", {}, "Fleet"),
    summary,
    h(
      "div",
      { class: "fleet-controls" },
      h("label", { for: "fleet-filter", class: "filter-label" }, "Filter"),
      input,
      chips,
      h("label", { class: "check" }, problemsFirst, " Problems first"),
      toAlarms,
    ),
    announce,
    table,
    empty,
  );

  const onScroll = () => schedule(false);
  const onResize = () => {
    rowHeight = 0;
    schedule(true);
  };
  window.addEventListener("scroll", onScroll, { passive: true });
  window.addEventListener("resize", onResize, { passive: true });

  function schedule(all: boolean): void {
    if (all) for (const id of visible.keys()) dirty.add(id);
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(frame);
  }

  function recompute(): void {
    const terms = prefs.text.toLowerCase().split(/\s+/).filter(Boolean);
    order = [...entries.values()].filter((e) => matches(e, terms)).sort(compare);
    setAttr(table, "aria-rowcount", String(order.length + 1));
    for (const [i, c] of COLUMNS.entries()) {
      setAttr(
        headers[i]!,
        "aria-sort",
        prefs.sort === c.key ? (prefs.descending ? "descending" : "ascending") : null,
      );
    }
    empty.hidden = order.length > 0 || entries.size === 0;
    setText(empty, "No instance matches the filter.");
    setText(announce, `${order.length} of ${entries.size} instances shown`);
    for (const id of visible.keys()) dirty.add(id);
  }

  function updateCounts(): void {
    const n = new Map<FilterName, number>(FILTERS.map((f) => [f, 0]));
    let power = 0;
    for (const e of entries.values()) {
      n.set(e.health, (n.get(e.health) ?? 0) + 1);
      if (PROBLEMS.has(e.health)) n.set("problems", (n.get("problems") ?? 0) + 1);
      power += e.s.status === "failing" ? 0 : (e.s.powerW ?? 0);
    }
    n.set("all", entries.size);
    setText(toAlarms, `Active alarms: ${state.alarms.size}`);
    for (const [f, el] of counts) setText(el, String(n.get(f) ?? 0));
    const pending = n.get("pending") ?? 0;
    setText(
      summary,
      `${entries.size} instances · ${watts(power)} in all (online instances)` +
        (pending > 0 ? ` · ${pending} not polled yet` : ""),
    );
  }

  let rowsHeight = "";

  function frame(): void {
    scheduled = false;
    const now = Date.now();
    // Layout is read before anything is written in this frame (no forced synchronous layout).
    const top = rows.getBoundingClientRect().top;
    if (orderDirty) {
      orderDirty = false;
      recompute();
    }
    if (rowHeight === 0) {
      const probe = visible.values().next().value ?? spare[0] ?? rowElement();
      if (!probe.row.isConnected) rows.appendChild(probe.row);
      rowHeight = probe.row.getBoundingClientRect().height || 52;
      if (!visible.has(probe.id)) {
        probe.row.remove();
        if (!spare.includes(probe)) spare.push(probe);
      }
      for (const r of visible.values()) r.top = -1;
    }
    const height = `${order.length * rowHeight}px`;
    if (height !== rowsHeight) {
      rowsHeight = height;
      rows.style.setProperty("height", height);
    }
    const first = Math.max(0, Math.floor(-top / rowHeight) - OVERSCAN);
    const last = Math.min(order.length, Math.ceil((window.innerHeight - top) / rowHeight) + OVERSCAN);
    const wanted = new Set<string>();
    for (let i = first; i < last; i++) wanted.add(order[i]!.s.id);
    for (const [id, r] of visible) {
      if (wanted.has(id)) continue;
      visible.delete(id);
      r.row.remove();
      spare.push(r);
    }
    for (let i = first; i < last; i++) {
      const e = order[i]!;
      let r = visible.get(e.s.id);
      if (r === undefined) {
        r = spare.pop() ?? rowElement();
        r.id = e.s.id;
        visible.set(e.s.id, r);
        fill(r, e, now);
        rows.appendChild(r.row);
      } else if (dirty.has(e.s.id)) fill(r, e, now);
      const y = i * rowHeight;
      if (r.top !== y) {
        r.top = y;
        r.row.style.setProperty("transform", `translateY(${y}px)`);
        r.row.setAttribute("aria-rowindex", String(i + 2));
      }
    }
    dirty.clear();
    updateCounts();
    if (!firstRenderMarked && visible.size > 0) {
      firstRenderMarked = true;
      performance.mark("pdu-bridge:fleet-first-render");
    }
  }

  return {
    update(changed) {
      const now = Date.now();
      if (changed === null) {
        // A second passed: ages, and data that went stale.
        for (const e of entries.values()) {
          const health = healthOf(e.s, now);
          if (health !== e.health) {
            Object.assign(e, entryOf(e.s, now));
            orderDirty = true;
          }
        }
        schedule(true);
        return;
      }
      for (const id of changed) {
        const s = state.statuses.get(id);
        if (s === undefined) continue;
        const before = entries.get(id);
        const next = entryOf(s, now);
        if (before === undefined) {
          entries.set(id, next);
          orderDirty = true;
        } else {
          if (
            before.rank !== next.rank ||
            before.search !== next.search ||
            (prefs.sort !== "instance" &&
              prefs.sort !== "health" &&
              sortValue(before, prefs.sort) !== sortValue(next, prefs.sort))
          )
            orderDirty = true;
          Object.assign(before, next);
        }
        dirty.add(id);
      }
      schedule(false);
    },
    destroy() {
      window.removeEventListener("scroll", onScroll);
      window.removeEventListener("resize", onResize);
    },
  };
}
