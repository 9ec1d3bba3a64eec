/**
 * A table's rows windowed over the page's scroll, for lists of thousands (the fleet and the assets):
 * an element per row in view (plus {@link OVERSCAN} above and below), reused as the window moves.
 * Each row is placed with a transform and carries its `aria-rowindex` (the header row is 1).
 */
import { h } from "../dom.js";

/** Rows rendered above and below the window. */
export const OVERSCAN = 6;

/** One row element, reused for whichever item scrolls into its place. */
export interface WindowRow {
  readonly row: HTMLElement;
  /** The key of the item it shows ("" while spare). */
  id: string;
  /** Its offset from the top of the rows, in pixels (-1: not placed yet). */
  top: number;
}

export interface WindowedRowsOptions<E, R extends WindowRow> {
  /** A new, empty row element. */
  readonly make: () => R;
  /** The key of an item (its row follows it through reordering). */
  readonly key: (item: E) => string;
  /** The height of a row before one could be measured. */
  readonly fallbackHeight: number;
}

export class WindowedRows<E, R extends WindowRow> {
  readonly element = h("div", { class: "rows", role: "rowgroup" });
  readonly #visible = new Map<string, R>();
  readonly #spare: R[] = [];
  readonly #options: WindowedRowsOptions<E, R>;
  #rowHeight = 0;
  #height = "";

  constructor(options: WindowedRowsOptions<E, R>) {
    this.#options = options;
  }

  /** The keys of the items on screen. */
  ids(): IterableIterator<string> {
    return this.#visible.keys();
  }

  /** The row height changes with the layout (a phone's rows are taller): measured again. */
  remeasure(): void {
    this.#rowHeight = 0;
  }

  /**
   * Renders the window of `order` on screen; `top` is the rows' top on screen, read before any
   * write. `fill(row, item, fresh)` fills a row: `fresh` when the row has just come to show that
   * item, otherwise it decides itself whether the item changed.
   */
  render(order: readonly E[], top: number, fill: (r: R, item: E, fresh: boolean) => void): void {
    const { key, make } = this.#options;
    const height = this.#measure();
    const total = `${order.length * height}px`;
    if (total !== this.#height) {
      this.#height = total;
      this.element.style.setProperty("height", total);
    }
    const first = Math.max(0, Math.floor(-top / height) - OVERSCAN);
    const last = Math.min(order.length, Math.ceil((window.innerHeight - top) / height) + OVERSCAN);
    const wanted = new Set<string>();
    for (let i = first; i < last; i++) wanted.add(key(order[i]!));
    for (const [id, r] of this.#visible) {
      if (wanted.has(id)) continue;
      this.#visible.delete(id);
      r.row.remove();
      this.#spare.push(r);
    }
    for (let i = first; i < last; i++) {
      const item = order[i]!;
      const id = key(item);
      let r = this.#visible.get(id);
      if (r === undefined) {
        r = this.#spare.pop() ?? make();
        r.id = id;
        this.#visible.set(id, r);
        fill(r, item, true);
        this.element.appendChild(r.row);
      } else fill(r, item, false);
      const y = i * height;
      if (r.top !== y) {
        r.top = y;
        r.row.style.setProperty("transform", `translateY(${y}px)`);
        r.row.setAttribute("aria-rowindex", String(i + 2));
      }
    }
  }

  /** The height of a row, from one in the page (once per layout). */
  #measure(): number {
    if (this.#rowHeight > 0) return this.#rowHeight;
    const probe = this.#visible.values().next().value ?? this.#spare[0] ?? this.#options.make();
    if (!probe.row.isConnected) this.element.appendChild(probe.row);
    this.#rowHeight = probe.row.getBoundingClientRect().height || this.#options.fallbackHeight;
    if (!this.#visible.has(probe.id)) {
      probe.row.remove();
      if (!this.#spare.includes(probe)) this.#spare.push(probe);
    }
    for (const r of this.#visible.values()) r.top = -1;
    return this.#rowHeight;
  }
}
