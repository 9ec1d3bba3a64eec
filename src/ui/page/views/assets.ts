/**
 * The assets view: every configured asset (a server with its cords on any PDUs) with its tenant,
 * state, power, redundancy, whether it is protected, and its cords (instance, outlet, state). A
 * text filter (id, label, tenant, tags; every word must match), filters with their counts (All,
 * Redundancy lost, Not on, Unknown, Protected) and sortable columns.
 *
 * Built for thousands of assets as the fleet view is: the rows are windowed over the page's scroll
 * (an element per row in view, plus a few above and below, reused as the window moves). The list
 * comes from `GET /api/v1/assets`, read again on each `assets` event (folded by the service, and
 * here to one read at a time).
 */
import { API_PATHS } from "../../../http/api/paths.js";
import type { AssetsEventData, WireAsset, WireCord } from "../../wire.js";
import { readJson } from "../api.js";
import { h, replace, setAttr, setClass, setText } from "../dom.js";
import { watts } from "../format.js";
import { href, type View } from "../state.js";
import { WindowedRows, type WindowRow } from "./windowed.js";

type FilterName = "all" | "lost" | "noton" | "unknown" | "protected";
type SortKey = "asset" | "tenant" | "state" | "power" | "redundancy";

/** The view's choices, kept while the page is open (back from an asset, the list is as it was). */
const prefs = { text: "", filter: "all" as FilterName, sort: "redundancy" as SortKey, descending: false };

const FILTERS: readonly FilterName[] = ["all", "lost", "noton", "unknown", "protected"];
const FILTER_TEXT: Readonly<Record<FilterName, string>> = {
  all: "All",
  lost: "Redundancy lost",
  noton: "Not on",
  unknown: "Unknown",
  protected: "Protected",
};

const COLUMNS: readonly { key: SortKey | null; title: string; cls: string }[] = [
  { key: "asset", title: "Asset", cls: "a-id" },
  { key: "tenant", title: "Tenant", cls: "a-tenant" },
  { key: "state", title: "State", cls: "a-state" },
  { key: "power", title: "Power", cls: "a-power n" },
  { key: "redundancy", title: "Redundancy", cls: "a-red" },
  { key: null, title: "Cords", cls: "a-cords" },
];

export const STATE_TEXT: Readonly<Record<WireAsset["state"], string>> = {
  on: "On",
  off: "Off",
  partial: "Partial",
  unknown: "Unknown",
};
export const REDUNDANCY_TEXT: Readonly<Record<WireAsset["redundancy"], string>> = {
  ok: "OK",
  single: "Single cord",
  lost: "Lost",
};
/** Badge classes of the console's stylesheet. */
export const STATE_BADGE: Readonly<Record<WireAsset["state"], string>> = {
  on: "on",
  off: "neutral",
  partial: "warning",
  unknown: "offline",
};
export const REDUNDANCY_BADGE: Readonly<Record<WireAsset["redundancy"], string>> = {
  ok: "ok",
  single: "neutral",
  lost: "critical",
};
const STATE_RANK: Readonly<Record<WireAsset["state"], number>> = { unknown: 0, partial: 1, off: 2, on: 3 };
const REDUNDANCY_RANK: Readonly<Record<WireAsset["redundancy"], number>> = { lost: 0, single: 1, ok: 2 };

/** "rack-a1 #4 on": a cord's instance, the PDU's own outlet number, and its state. */
export function cordText(c: WireCord): string {
  const state = c.status === "unknown" ? `unknown${c.problem === null ? "" : ` (${c.problem})`}` : c.status;
  return `${c.instanceId} #${c.index + 1} ${state}`;
}

interface Entry {
  readonly a: WireAsset;
  /** Id, label, tenant and tags, lower case, for the text filter. */
  readonly search: string;
}

const entryOf = (a: WireAsset): Entry => ({
  a,
  search: [a.id, a.label, a.tenant ?? "", ...a.tags].join("\u0000").toLowerCase(),
});

const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

function sortValue(a: WireAsset, key: SortKey): number | string | null {
  switch (key) {
    case "asset":
      return a.id;
    case "tenant":
      return a.tenant;
    case "state":
      return STATE_RANK[a.state];
    case "power":
      return a.power;
    case "redundancy":
      return REDUNDANCY_RANK[a.redundancy];
  }
}

function compare(x: Entry, y: Entry): number {
  const p = sortValue(x.a, prefs.sort);
  const q = sortValue(y.a, prefs.sort);
  if (p !== q) {
    if (p === null) return 1;
    if (q === null) return -1;
    const c = typeof p === "string" || typeof q === "string" ? collator.compare(String(p), String(q)) : p - q;
    if (c !== 0) return prefs.descending ? -c : c;
  }
  return collator.compare(x.a.id, y.a.id);
}

function inFilter(a: WireAsset, f: FilterName): boolean {
  switch (f) {
    case "all":
      return true;
    case "lost":
      return a.redundancy === "lost";
    case "noton":
      return a.state !== "on";
    case "unknown":
      return a.state === "unknown";
    case "protected":
      return a.protected;
  }
}

/** One row element, reused for whichever asset scrolls into its place. */
interface RowElement extends WindowRow {
  readonly link: HTMLAnchorElement;
  readonly sub: HTMLElement;
  readonly tenant: HTMLElement;
  readonly state: HTMLElement;
  readonly power: HTMLElement;
  readonly redundancy: HTMLElement;
  readonly cords: HTMLElement;
  shown: WireAsset | null;
}

function rowElement(): RowElement {
  const link = h("a", {});
  const sub = h("span", { class: "sub" });
  const tenant = h("span", {});
  const state = h("span", { class: "badge" });
  const power = h("span", {});
  const redundancy = h("span", { class: "badge" });
  const cords = h("span", { class: "detail" });
  const row = h(
    "div",
    { class: "row", role: "row" },
    h("div", { class: "cell a-id", role: "rowheader" }, link, sub),
    h("div", { class: "cell a-tenant", role: "cell" }, tenant),
    h("div", { class: "cell a-state", role: "cell" }, state),
    h("div", { class: "cell a-power n", role: "cell" }, power),
    h("div", { class: "cell a-red", role: "cell" }, redundancy),
    h("div", { class: "cell a-cords", role: "cell" }, cords),
  );
  return { row, link, sub, tenant, state, power, redundancy, cords, id: "", top: -1, shown: null };
}

function fill(r: RowElement, a: WireAsset): void {
  r.shown = a;
  setClass(
    r.row,
    `row${a.redundancy === "lost" ? " h-critical" : a.state === "unknown" ? " h-offline" : ""}`,
  );
  r.row.dataset.asset = a.id;
  setText(r.link, a.id);
  setAttr(r.link, "href", href.asset(a.id));
  setText(
    r.sub,
    [a.label === a.id ? "" : a.label, a.protected ? "protected" : ""].filter(Boolean).join(" · "),
  );
  setText(r.tenant, a.tenant ?? "–");
  setClass(r.state, `badge ${STATE_BADGE[a.state]}`);
  setText(r.state, STATE_TEXT[a.state]);
  setText(r.power, watts(a.power));
  setClass(r.redundancy, `badge ${REDUNDANCY_BADGE[a.redundancy]}`);
  setText(r.redundancy, REDUNDANCY_TEXT[a.redundancy]);
  setText(r.cords, `${a.cordsLive}/${a.cords} live: ${a.readings.map(cordText).join(" · ")}`);
}

/** The filter, the chips and the column headers; `changed` on any choice. */
function assetControls(changed: () => void, counts: Map<FilterName, HTMLElement>, headers: HTMLElement[]) {
  const input = h("input", {
    id: "asset-filter",
    type: "search",
    value: prefs.text,
    placeholder: "id, label, tenant or tag",
    autocomplete: "off",
    spellcheck: "false",
  });
  input.addEventListener("input", () => {
    prefs.text = input.value;
    changed();
  });
  const chips = FILTERS.map((f) => {
    const count = h("span", { class: "count" });
    counts.set(f, count);
    const radio = h("input", {
      type: "radio",
      name: "asset-filter-state",
      value: f,
      checked: prefs.filter === f,
    });
    radio.addEventListener("change", () => {
      prefs.filter = f;
      changed();
    });
    return h("label", { class: `chip f-${f}` }, radio, h("span", {}, FILTER_TEXT[f], " ", count));
  });
  for (const c of COLUMNS) {
    const key = c.key;
    const inner =
      key === null
        ? h("span", { class: "sort" }, c.title)
        : h("button", { type: "button", class: "sort", "data-sort": key }, c.title);
    if (key !== null)
      inner.addEventListener("click", () => {
        if (prefs.sort === key) prefs.descending = !prefs.descending;
        else {
          prefs.sort = key;
          prefs.descending = key === "power";
        }
        changed();
      });
    headers.push(h("div", { class: `cell ${c.cls}`, role: "columnheader" }, inner));
  }
  return h(
    "div",
    { class: "fleet-controls" },
    h("label", { for: "asset-filter", class: "filter-label" }, "Search"),
    input,
    h("fieldset", { class: "chips" }, h("legend", { class: "sr-only" }, "Show"), ...chips),
  );
}

/** Once per page load: when the first rows were on screen (the browser test reads it). */
let firstRenderMarked = false;

class AssetsListView implements View {
  #entries: Entry[] = [];
  #order: Entry[] = [];
  #loaded = false;
  #scheduled = false;
  #reading = false;
  #again = false;
  #destroyed = false;
  readonly #rows = new WindowedRows<Entry, RowElement>({
    make: rowElement,
    key: (e) => e.a.id,
    fallbackHeight: 56,
  });
  readonly #table: HTMLElement;
  readonly #headers: HTMLElement[] = [];
  readonly #counts = new Map<FilterName, HTMLElement>();
  readonly #summary = h("p", { class: "meta fleet-summary" });
  readonly #announce = h("p", { class: "sr-only", "aria-live": "polite" });
  readonly #empty = h("p", { class: "note", hidden: true });
  readonly #onScroll = () => this.#schedule();
  readonly #onResize = () => {
    this.#rows.remeasure();
    this.#schedule();
  };

  constructor(main: HTMLElement) {
    const controls = assetControls(() => this.#recompute(), this.#counts, this.#headers);
    this.#table = h(
      "div",
      { class: "fleet-table assets-table", role: "table", "aria-label": "Assets", "aria-rowcount": "1" },
      h(
        "div",
        { class: "head", role: "rowgroup" },
        h("div", { class: "row", role: "row", "aria-rowindex": "1" }, ...this.#headers),
      ),
      this.#rows.element,
    );
    replace(main, h("h1", {}, "Assets"), this.#summary, controls, this.#announce, this.#table, this.#empty);
    setText(this.#summary, "Loading the assets…");
    window.addEventListener("scroll", this.#onScroll, { passive: true });
    window.addEventListener("resize", this.#onResize, { passive: true });
    void this.#read();
  }

  update(): void {
    // The list is read on `assets` events; the per-second tick changes nothing here.
  }

  assets(_data: AssetsEventData): void {
    void this.#read();
  }

  destroy(): void {
    this.#destroyed = true;
    window.removeEventListener("scroll", this.#onScroll);
    window.removeEventListener("resize", this.#onResize);
  }

  /** One read at a time; an event during a read asks for one more after it. */
  async #read(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    const list = await readJson<WireAsset[]>(API_PATHS.assets);
    this.#reading = false;
    if (this.#destroyed) return;
    if (list !== null) {
      // An asset whose answer is the same keeps its entry, so its row is not filled again.
      const before = new Map(this.#entries.map((e) => [e.a.id, e]));
      this.#entries = list.map((a) => {
        const old = before.get(a.id);
        return old !== undefined && JSON.stringify(old.a) === JSON.stringify(a) ? old : entryOf(a);
      });
      this.#loaded = true;
      this.#recompute();
    } else if (!this.#loaded)
      setText(this.#summary, "The assets could not be read; retrying with the next change.");
    if (this.#again) {
      this.#again = false;
      void this.#read();
    }
  }

  #recompute(): void {
    const terms = prefs.text.toLowerCase().split(/\s+/).filter(Boolean);
    this.#order = this.#entries
      .filter((e) => inFilter(e.a, prefs.filter) && terms.every((t) => e.search.includes(t)))
      .sort(compare);
    setAttr(this.#table, "aria-rowcount", String(this.#order.length + 1));
    for (const [i, c] of COLUMNS.entries()) {
      const sort =
        c.key !== null && prefs.sort === c.key ? (prefs.descending ? "descending" : "ascending") : null;
      setAttr(this.#headers[i]!, "aria-sort", sort);
    }
    this.#empty.hidden = this.#order.length > 0 || !this.#loaded;
    setText(
      this.#empty,
      this.#entries.length === 0
        ? "No asset is configured (Assets in the configuration)."
        : "No asset matches.",
    );
    setText(this.#announce, `${this.#order.length} of ${this.#entries.length} assets shown`);
    const n = new Map<FilterName, number>(FILTERS.map((f) => [f, 0]));
    let power = 0;
    for (const e of this.#entries) {
      for (const f of FILTERS) if (inFilter(e.a, f)) n.set(f, (n.get(f) ?? 0) + 1);
      power += e.a.power ?? 0;
    }
    for (const [f, el] of this.#counts) setText(el, String(n.get(f) ?? 0));
    setText(
      this.#summary,
      `${this.#entries.length} assets · ${watts(power)} in all · ${n.get("lost") ?? 0} with redundancy lost`,
    );
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      if (this.#destroyed) return;
      this.#rows.render(this.#order, this.#rows.element.getBoundingClientRect().top, (r, e) => {
        if (r.shown !== e.a) fill(r, e.a);
      });
      if (!firstRenderMarked && this.#order.length > 0) {
        firstRenderMarked = true;
        performance.mark("pdu-bridge:assets-first-render");
      }
    });
  }
}

export function assetsView(main: HTMLElement): View {
  return new AssetsListView(main);
}

const focusKey = (el: Element): string =>
  `${el.tagName}|${el.getAttribute("href") ?? ""}|${el.getAttribute("data-action") ?? ""}|${el.textContent ?? ""}`;

/**
 * Runs `rebuild` (which replaces what `container` holds) and puts the focus back on the link or
 * button of the same target and text when it was inside: a live update never takes the keyboard's
 * place away.
 */
export function keepingFocus(container: HTMLElement, rebuild: () => void): void {
  const active = document.activeElement;
  const key = active !== null && active !== container && container.contains(active) ? focusKey(active) : null;
  rebuild();
  if (key === null) return;
  for (const el of container.querySelectorAll<HTMLElement>("a, button")) {
    if (focusKey(el) !== key) continue;
    el.focus({ preventScroll: true });
    return;
  }
}
