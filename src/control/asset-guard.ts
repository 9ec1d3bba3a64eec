/**
 * The protected-asset rule in the control core's checks (docs/assets.md): an off that
 * would leave a protected asset with no live cord is refused, 409 naming the asset and its other
 * cords' states, before anything is sent, whatever asked for it: an outlet's or a group's `off` or
 * `reboot`, an asset's command (each cord's write comes through the core too), or a setting that
 * holds an outlet off. The rule itself is the assets core's (src/assets/protect.ts); this file
 * says which outlets a request would leave off and turns a conflict into the core's refusal.
 *
 * The book reads what the PDUs last reported, so offs the core let through and has not seen the
 * end of are kept here ({@link OffsInFlight}) and do not count as live cords: two offs of a
 * protected asset's two cords sent at once cannot both pass. An off whose outcome is not known
 * (the PDU may have acted) stays counted until a poll of its instance has ended after it.
 *
 * The book is what the assets part keeps (src/assets/book.ts), handed to the core as a function by
 * the composition root; without one (no assets configured, or not built yet) nothing is guarded.
 */
import { protectedConflicts, protectedDetail, type OutletOff } from "../assets/protect.js";
import type { AssetBook } from "../assets/book.js";
import { refuse, type Refusal, type Written } from "./outcomes.js";

/** What control reads of the assets: the book's state, its cord index and its model. */
export type AssetBookView = Pick<AssetBook, "cordsAt" | "get" | "model" | "readings">;

/** Where the core finds the book now: null while there is none (no assets configured). */
export type AssetBookSource = () => AssetBookView | null;

/**
 * 409 when leaving `outlets` off would leave a protected asset with no live cord, else null.
 * `what` names the request in the detail (`off on outlet A1/0 of instance rack-a1`); `cycling`
 * is an asset whose own confirmed reboot this is, which the rule leaves out; `inFlight` the offs
 * let through before whose end the book has not seen.
 */
export function assetProtection(
  book: AssetBookView | null,
  instance: string,
  outlets: readonly { readonly deviceId: string; readonly index: number }[],
  what: string,
  options: { readonly cycling?: string | undefined; readonly inFlight?: readonly OutletOff[] } = {},
): Refusal | null {
  if (book === null) return null;
  const offs: OutletOff[] = outlets.map((o) => ({ instance, deviceId: o.deviceId, index: o.index }));
  const conflicts = protectedConflicts(book, offs, options.inFlight ?? []).filter(
    (c) => c.asset.id !== options.cycling,
  );
  if (conflicts.length === 0) return null;
  return refuse(409, "Protected asset", protectedDetail(what, conflicts), { problem: "protected" });
}

/** A poll that ended this soon after an off may have been asked before it: not taken as its end. */
const POLL_MARGIN_MS = 2000;

interface Entry extends OutletOff {
  /** Writes of it in flight now. */
  writing: number;
  /** When the last write whose outcome is not known ended (epoch ms), else null. */
  unsettledAt: number | null;
}

/**
 * Offs (and reboots) the core let through whose end the book has not seen yet, per outlet: bounded
 * by the outlets configured. An off done is latched in the store (the book reads it off at once)
 * and an off not sent changes nothing, so both are forgotten at their end; one whose outcome is not
 * known is kept until its instance's last good poll ended after it.
 */
export class OffsInFlight {
  readonly #entries = new Map<string, Entry>();
  /** When the instance's last good poll ended (epoch ms), or null. */
  readonly #lastGoodPoll: (instance: string) => number | null;

  constructor(lastGoodPoll: (instance: string) => number | null) {
    this.#lastGoodPoll = lastGoodPoll;
  }

  /** The outlets whose off is in flight or not known yet. */
  offs(): OutletOff[] {
    const out: OutletOff[] = [];
    for (const [key, e] of this.#entries) {
      const seen = this.#lastGoodPoll(e.instance) ?? 0;
      if (e.writing === 0 && e.unsettledAt !== null && seen > e.unsettledAt + POLL_MARGIN_MS) {
        this.#entries.delete(key);
        continue;
      }
      out.push({ instance: e.instance, deviceId: e.deviceId, index: e.index });
    }
    return out;
  }

  /** Offs about to be written (right after the check let them through, before any await). */
  begin(instance: string, outlets: readonly { readonly deviceId: string; readonly index: number }[]): void {
    for (const o of outlets) {
      const key = `${instance}\u0000${o.deviceId}\u0000${o.index}`;
      const entry = this.#entries.get(key);
      if (entry === undefined)
        this.#entries.set(key, {
          instance,
          deviceId: o.deviceId,
          index: o.index,
          writing: 1,
          unsettledAt: null,
        });
      else entry.writing++;
    }
  }

  /**
   * Their end: each outlet forgotten, or kept until a poll when the PDU may have acted unseen.
   * `offMs` is how long a write done keeps the outlet off beyond its answer (a reboot's delay: the
   * PDU switches it back on later), 0 for an off (latched: the book reads it off at once).
   */
  end(instance: string, written: readonly Written[], offMs: (w: Written) => number = () => 0): void {
    const now = Date.now();
    for (const w of written) {
      const key = `${instance}\u0000${w.target.deviceId}\u0000${w.target.index}`;
      const entry = this.#entries.get(key);
      if (entry === undefined) continue;
      entry.writing = Math.max(0, entry.writing - 1);
      const unseen = w.ok ? offMs(w) : w.kind === "unknown" || w.kind === "timeout" ? 0 : null;
      if (unseen !== null && (!w.ok || unseen > 0))
        entry.unsettledAt = Math.max(entry.unsettledAt ?? 0, now + unseen);
      if (entry.writing === 0 && entry.unsettledAt === null) this.#entries.delete(key);
    }
  }
}
