/**
 * The protected-asset rule (docs/assets.md), pure: given the assets' states and the outlets a request
 * would leave off (an `off` of outlets or of a group's members, an asset's `off`, a setting that
 * leaves an outlet off), which protected assets it would leave with no live cord. The control core
 * asks it among its checks, before anything is sent, and refuses the whole request (409) naming
 * each asset and its other cords' states.
 *
 * A cord is live only when its PDU is online and reports the outlet on; a cord whose state is
 * unknown (its PDU offline or never polled, the outlet's state unknown, not resolved) is not. A
 * request is refused when it touches a cord of a protected asset that is not known to be off and
 * leaves no cord of that asset live: an outlet whose state is unknown may be what keeps the asset
 * running, so cutting it is refused too. Writing off to cords that are all known to be off already
 * changes nothing and is not refused. `reboot` is the caller's to allow (it comes back).
 *
 * Offs already let through and still in flight (or whose outcome is not known yet) are the caller's
 * to pass as `inFlight`: their cords do not count as live, so two offs of an asset's two cords sent
 * at once cannot both pass. They never make a request refused for an asset it does not touch.
 */
import type { AssetBook } from "./book.js";
import { plainReading, type CordReading } from "./state.js";
import type { AssetDef } from "./types.js";

/** An outlet a request would leave off. */
export interface OutletOff {
  readonly instance: string;
  readonly deviceId: string;
  readonly index: number;
}

/** A cord of a refused asset as the 409 names it. */
export interface GuardedCord {
  readonly reading: CordReading;
  /** Whether the request would leave this cord off. */
  readonly targeted: boolean;
  /** Whether an off of this cord let through before is still in flight (or its outcome unknown). */
  readonly inFlight?: boolean;
}

/** A protected asset the request would leave with no live cord. */
export interface ProtectedConflict {
  readonly asset: AssetDef;
  readonly cords: readonly GuardedCord[];
}

/** The protected assets `offs` would leave with no live cord, in id order (empty: allowed). */
export function protectedConflicts(
  book: Pick<AssetBook, "cordsAt" | "get">,
  offs: readonly OutletOff[],
  inFlight: readonly OutletOff[] = [],
): readonly ProtectedConflict[] {
  /** asset id → the asset and the positions of its cords the request touches. */
  const touched = cordsTouched(book, offs);
  const pending = cordsTouched(book, inFlight);
  const conflicts: ProtectedConflict[] = [];
  for (const { asset, cords } of touched.values()) {
    const state = book.get(asset.id);
    if (state === undefined) continue;
    const readings = state.readings;
    const going = pending.get(asset.id)?.cords ?? new Set<number>();
    const liveLeft = readings.some((r, i) => r.status === "live" && !cords.has(i) && !going.has(i));
    const cutsSomething = [...cords].some((i) => readings[i]?.status !== "off");
    if (liveLeft || !cutsSomething) continue;
    conflicts.push({
      asset,
      cords: readings.map((reading, i) => ({
        // A copy: the book writes its readings in place at its next update.
        reading: plainReading(reading),
        targeted: cords.has(i),
        ...(going.has(i) && !cords.has(i) ? { inFlight: true } : {}),
      })),
    });
  }
  return conflicts.sort((a, b) => (a.asset.id < b.asset.id ? -1 : a.asset.id > b.asset.id ? 1 : 0));
}

/** The protected assets the outlets are cords of, with the positions of those cords. */
function cordsTouched(
  book: Pick<AssetBook, "cordsAt">,
  offs: readonly OutletOff[],
): Map<string, { asset: AssetDef; cords: Set<number> }> {
  const touched = new Map<string, { asset: AssetDef; cords: Set<number> }>();
  for (const off of offs) {
    for (const ref of book.cordsAt(off.instance, off.deviceId, off.index)) {
      if (!ref.asset.protected) continue;
      let t = touched.get(ref.asset.id);
      if (t === undefined) touched.set(ref.asset.id, (t = { asset: ref.asset, cords: new Set() }));
      t.cords.add(ref.cord);
    }
  }
  return touched;
}

/** How a cord's state reads in the 409: `on`, `off`, or `unknown (why)`. */
function cordText(c: GuardedCord): string {
  const r = c.reading;
  const where = `${r.instance}${r.deviceId === null ? "" : `/${r.deviceId}`} outlet ${r.index}`;
  const state =
    r.status === "live" ? "on" : r.status === "off" ? "off" : `unknown (${r.detail ?? "not known"})`;
  if (c.targeted) return `${where} (this request)`;
  return c.inFlight === true ? `${where} ${state}, an off of it in flight` : `${where} ${state}`;
}

/** The 409's detail: each asset and its other cords' states, and that nothing was sent. */
export function protectedDetail(action: string, conflicts: readonly ProtectedConflict[]): string {
  const each = conflicts.map((c) => {
    const others = c.cords.filter((x) => !x.targeted);
    const rest =
      others.length === 0 ? "it has no other cord" : `its other cords: ${others.map(cordText).join(", ")}`;
    return `protected asset ${c.asset.id} would be left with no live cord (${rest})`;
  });
  return `${action} was refused: ${each.join("; ")}; a cord whose state is unknown does not count as live; nothing was sent`;
}
