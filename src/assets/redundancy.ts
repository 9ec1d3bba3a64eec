/**
 * Redundancy of an asset over polls (docs/assets.md): `single` with one cord configured; `lost` when a
 * cord has been down for {@link POLLS_IN_A_ROW} polls in a row of its own instance, and back to `ok`
 * once it has been up for as many (a cord that flaps raises one alarm, not one per poll).
 *
 * A cord is down at a poll when it is not live (off, its PDU offline or never polled, not resolved,
 * its state unknown), or when it draws under {@link SHARE_FLOOR} of the asset's current while the
 * others carry it (a failed power supply on an outlet that is on). An asset whose every cord is off
 * has been switched off: none of its cords is down, and it raises nothing.
 *
 * Polls are counted per cord on its instance's polls (a snapshot from a poll, or a failed poll); a
 * snapshot that only a latch or a live change made does not count.
 */
import { ASSETS_SCOPE, type FleetAlarm } from "./alarms.js";
import type { CordReading, Redundancy } from "./state.js";
import type { AssetDef } from "./types.js";

/** Polls in a row a cord must be down (or up) before redundancy is lost (or whole again). */
export const POLLS_IN_A_ROW = 2;
/** A live cord drawing under this share of the asset's current while the others carry it is down. */
export const SHARE_FLOOR = 0.05;
/**
 * The share rule applies from this asset current (A) on: below it a PDU's meter resolution (0.1 A
 * on many units) cannot tell a 5 % share from none.
 */
export const SHARE_MIN_AMPS = 0.5;

/** Without the figures: the alarm's text changes only when what is wrong changes (one string, kept). */
const SHARE_REASON = `draws under ${SHARE_FLOOR * 100} % of the asset's current`;

/** Why a cord counts against redundancy now, or null (before the polls-in-a-row rule). */
export function downReason(readings: readonly CordReading[], i: number): string | null {
  const r = readings[i]!;
  let allOff = true;
  for (let k = 0; k < readings.length && allOff; k++) allOff = readings[k]!.status === "off";
  if (allOff) return null;
  if (r.status === "off") return "off";
  if (r.status === "unknown") return r.detail ?? "its state is unknown";
  let total = 0;
  for (let k = 0; k < readings.length; k++) {
    const x = readings[k]!;
    if (x.status !== "live") continue;
    if (x.current === null) return null;
    total += x.current;
  }
  if (r.current === null || total < SHARE_MIN_AMPS || r.current >= SHARE_FLOOR * total) return null;
  return SHARE_REASON;
}

/** One cord's count of polls in a row. */
interface Streak {
  bad: number;
  good: number;
  down: boolean;
  reason: string | null;
}

/** The redundancy of one asset across its cords' polls. */
export class RedundancyTracker {
  readonly #streaks: Streak[];

  constructor(cords: number) {
    this.#streaks = Array.from({ length: cords }, () => ({ bad: 0, good: 0, down: false, reason: null }));
  }

  /**
   * Counts one poll of an instance for each cord of the asset on it, with the readings after it:
   * `onInstance` has bit `i` set for cord `i` on it.
   */
  poll(readings: readonly CordReading[], onInstance: number): void {
    for (let i = 0; i < this.#streaks.length; i++) {
      if ((onInstance & (1 << i)) === 0) continue;
      const s = this.#streaks[i]!;
      const reason = downReason(readings, i);
      if (reason !== null) {
        s.bad++;
        s.good = 0;
        s.reason = reason;
        if (s.bad >= POLLS_IN_A_ROW) s.down = true;
      } else {
        s.good++;
        s.bad = 0;
        if (s.good >= POLLS_IN_A_ROW) s.down = false;
      }
    }
  }

  redundancy(cords: number): Redundancy {
    if (cords === 1) return "single";
    for (let i = 0; i < this.#streaks.length; i++) if (this.#streaks[i]!.down) return "lost";
    return "ok";
  }

  /** The cords down, by position, with the reason of the last poll that found each down. */
  down(): readonly { readonly cord: number; readonly reason: string }[] {
    const out: { cord: number; reason: string }[] = [];
    this.#streaks.forEach((s, cord) => {
      if (s.down) out.push({ cord, reason: s.reason ?? "down" });
    });
    return out;
  }
}

/** How a cord is named in an alarm: its position from 1, its instance and outlet. */
export function cordName(asset: AssetDef, cord: number): string {
  const c = asset.cords[cord]!;
  return `cord ${cord + 1} (${c.instance}${c.device === null ? "" : ` ${c.device}`} outlet ${c.outlet})`;
}

/**
 * The asset's redundancy alarm now, or null: `critical` for a protected asset (it runs on its last
 * cords and may not be cut), `warning` otherwise; `reported` names the cords down and why.
 */
export function redundancyAlarm(
  asset: AssetDef,
  tracker: RedundancyTracker,
  before: FleetAlarm | null,
  at: number,
): FleetAlarm | null {
  if (tracker.redundancy(asset.cords.length) !== "lost") return null;
  const reported = tracker
    .down()
    .map((d) => `${cordName(asset, d.cord)}: ${d.reason}`)
    .join("; ");
  return Object.freeze({
    scope: ASSETS_SCOPE,
    id: `${asset.id}/asset/redundancy`,
    deviceId: asset.id,
    target: { kind: "device" } as const,
    name: asset.label,
    source: "redundancy",
    severity: asset.protected ? "critical" : "warning",
    percent: null,
    reported,
    since: before?.since ?? at,
  });
}
