/**
 * Inferred breaker trips (docs/events.md, "Inferred breaker trips"): where a PDU does not report a
 * tripped breaker itself, a breaker or bank whose current falls to 0 while outlets it feeds
 * (`Outlet.feedsFrom`) are on and drew current in the poll before is suspected tripped. Vendor-
 * neutral: it reads the model only; the load tracker (./load.ts) raises the alarm
 * `breaker-trip-suspected` for what it returns, on every surface the load alarms have.
 *
 * The rules, per entity that feeds at least one outlet:
 * - **raised** when its current was above 0 in the poll before and is 0 now, and an outlet it
 *   feeds that was on and drew current then (above 0 A; an outlet that measures no current at all
 *   counts by the entity's own current) is still on now. A PDU reads its tables one after the
 *   other, so the poll before may show the outlets at 0 A already while the breaker still carried
 *   them: an outlet that drew in the poll before that one counts too;
 * - **kept** while its current stays 0 (or is not reported: an absent value neither raises nor
 *   clears) and an outlet it feeds is on;
 * - **cleared** when its current returns above 0, or when none of its outlets is on any more (an
 *   operator switched them off: nothing is left to show the trip), or when the entity goes.
 * - never for an entity whose trip state the PDU reports (`Entity.reportsTrip`), nor on a device
 *   where the PDU reports a trip itself in the same snapshot: the reported one is the alarm.
 *
 * An absent value (null: `n/a`, a cell marked not there) is never read as 0: a fall needs two
 * readings that are numbers, and an outlet whose current is absent did not draw.
 */
import type { Device, Entity, Measurement } from "./model.js";

/** What one entity that feeds outlets showed in the last assessment. */
interface EntityMemory {
  /** Its amps, or null when not reported. */
  readonly amps: number | null;
  /** Indexes of the outlets it feeds that were on and drew current. */
  readonly drew: readonly number[];
  /** The same of the assessment before (a PDU's readings of one poll need not be of one instant). */
  readonly drewBefore: readonly number[];
  /** A trip is suspected now. */
  readonly suspected: boolean;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Amps of the first `current` measurement (`A`, blank or `mA`): null when absent or in other units;
 * undefined when the thing measures no current at all.
 */
function ampsOf(measurements: readonly Measurement[]): number | null | undefined {
  for (const m of measurements) {
    if (m.type.toLowerCase() !== "current") continue;
    if (m.value === null || !Number.isFinite(m.value)) return null;
    if (m.units === "A" || m.units === "") return m.value;
    if (m.units === "mA") return m.value / 1000;
    return null;
  }
  return undefined;
}

/** What the outlets of one entity show now. */
interface Fed {
  /** Indexes of those that are on. */
  readonly on: number[];
  /** Indexes of those that are on and drew current (or measure none, counted later). */
  readonly drew: number[];
  /** Indexes of those that are on and measure no current at all. */
  readonly unmetered: number[];
}

/** The outlets of a device by the entity they draw through; null when none says. */
function fedByEntity(device: Device): Map<string, Fed> | null {
  let out: Map<string, Fed> | null = null;
  for (const o of device.outlets) {
    const key = o.feedsFrom;
    if (key === undefined) continue;
    out ??= new Map();
    let fed = out.get(key);
    if (fed === undefined) {
      fed = { on: [], drew: [], unmetered: [] };
      out.set(key, fed);
    }
    if (o.state !== "on") continue;
    fed.on.push(o.index);
    const amps = ampsOf(o.measurements);
    if (amps === undefined) fed.unmetered.push(o.index);
    else if (amps !== null && amps > 0) fed.drew.push(o.index);
  }
  return out;
}

/** Whether the device reports a trip of its own now (an entity or outlet whose state says tripped). */
export type ReportsTripNow = (device: Device) => boolean;

/** The inferred trips of one instance across its snapshots. */
export class TripWatch {
  /** By device id, then entity key: what the last assessment saw. */
  #memory = new Map<string, Map<string, EntityMemory>>();

  /**
   * The keys of the entities of `device` suspected tripped now; call once per device of each
   * snapshot assessed, then {@link endSnapshot} with the snapshot's devices.
   */
  device(device: Device, reportsTripNow: ReportsTripNow): ReadonlySet<string> {
    const fed = fedByEntity(device);
    if (fed === null) {
      this.#memory.delete(device.id);
      return NONE;
    }
    const before = this.#memory.get(device.id);
    const now = new Map<string, EntityMemory>();
    let suspected: Set<string> | null = null;
    // Computed once, and only when a fall asks for it.
    let reported: boolean | undefined;
    for (const entity of device.entities) {
      const outlets = fed.get(entity.key);
      if (outlets === undefined) continue;
      const last = before?.get(entity.key);
      const next = nextMemory(entity, outlets, last, () => (reported ??= reportsTripNow(device)));
      now.set(entity.key, next);
      if (next.suspected) (suspected ??= new Set()).add(entity.key);
    }
    this.#memory.set(device.id, now);
    return suspected ?? NONE;
  }

  /** Forgets the devices a snapshot no longer has. */
  endSnapshot(devices: readonly Device[]): void {
    if (this.#memory.size === 0) return;
    const seen = new Set(devices.map((d) => d.id));
    for (const id of this.#memory.keys()) if (!seen.has(id)) this.#memory.delete(id);
  }
}

/** One entity's memory after this snapshot (the rules in the file's comment). */
function nextMemory(
  entity: Entity,
  fed: Fed,
  last: EntityMemory | undefined,
  reportsTripNow: () => boolean,
): EntityMemory {
  const amps = ampsOf(entity.measurements) ?? null;
  // Unmetered outlets that are on drew what the entity carried.
  const drew = amps !== null && amps > 0 ? [...fed.drew, ...fed.unmetered] : fed.drew;
  const drewBefore = last?.drew ?? [];
  const keep = (suspected: boolean): EntityMemory => ({ amps, drew, drewBefore, suspected });
  if (entity.reportsTrip === true || fed.on.length === 0) return keep(false);
  if (amps === null) {
    const suspected = last?.suspected === true && !reportsTripNow();
    return { amps, drew: [], drewBefore: [], suspected };
  }
  if (amps !== 0) return keep(false);
  if (last?.suspected === true) return keep(!reportsTripNow());
  const fell = last !== undefined && last.amps !== null && last.amps > 0;
  const stillOn = (i: number) => fed.on.includes(i);
  if (!fell || !(last.drew.some(stillOn) || last.drewBefore.some(stillOn))) return keep(false);
  return keep(!reportsTripNow());
}
