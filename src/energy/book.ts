/**
 * The lifetime counters of one instance: one {@link Counter} per outlet and entity that reports
 * energy, kept by device, updated from each polled snapshot (docs/energy.md).
 *
 * A device that is no longer reported keeps its counters as an orphan; a device id never seen
 * before takes over an orphan's counters (a replaced unit reports another serial, and the device
 * id is the serial): the one with the same `order` where both report one, else the first. Its
 * first readings are then read as a reset (./counter.ts).
 */
import type { Device, Measurement, Outlet, Snapshot } from "../pdu/model.js";
import { apply, newCounter, restart, type Counter, type Outcome } from "./counter.js";

/** The rated current assumed where the PDU reports none (A). */
export const DEFAULT_AMPS = 63;
/** The voltage assumed where the PDU reports none (V): the highest of the usual mains. */
export const DEFAULT_VOLTS = 250;
/** An entity (a phase, an inlet, a unit's total) may carry three phases. */
const ENTITY_PHASES = 3;

/** Watt-hours per unit of an energy measurement, by its units as the PDU reports them. */
const WH_PER_UNIT: ReadonlyMap<string, number> = new Map([
  ["wh", 1],
  ["kwh", 1000],
  ["mwh", 1_000_000],
]);

export interface DeviceCounters {
  id: string;
  order: number | null;
  readonly outlets: Map<number, Counter>;
  readonly entities: Map<string, Counter>;
  /** Counters whose next reading is read as a reset (the device took over an orphan's counters). */
  readonly replaced: Set<Counter>;
}

/** What the book tells about a reading that was not simply counted (logged by the part). */
export interface Noted {
  readonly deviceId: string;
  /** `outlet 3` or `entity phase0`. */
  readonly what: string;
  readonly outcome: Outcome;
  readonly readingWh: number;
  readonly lifetimeWh: number;
}

/** An energy measurement's reading in Wh and where it wraps (0: does not), or null. */
export function readingOf(measurements: readonly Measurement[]): { wh: number; wrapsAtWh: number } | null {
  for (const m of measurements) {
    if (m.type !== "energy") continue;
    const value = m.value;
    const factor = WH_PER_UNIT.get(m.units.toLowerCase());
    if (value === null || factor === undefined || !Number.isFinite(value) || value < 0) return null;
    const wraps = m.wrapsAt;
    return { wh: value * factor, wrapsAtWh: wraps !== undefined && wraps > 0 ? wraps * factor : 0 };
  }
  return null;
}

const volts = (measurements: readonly Measurement[]): number | null => {
  const v = measurements.find((m) => m.type === "voltage")?.value;
  return typeof v === "number" && v > 0 && v < 1000 ? v : null;
};

const amps = (rated: number | undefined): number =>
  rated !== undefined && Number.isFinite(rated) && rated > 0 ? rated : DEFAULT_AMPS;

/** The highest voltage any entity of the device reports, or the default. */
function deviceVolts(device: Device): number {
  let best: number | null = null;
  for (const e of device.entities) {
    const v = volts(e.measurements);
    if (v !== null && (best === null || v > best)) best = v;
  }
  return best ?? DEFAULT_VOLTS;
}

/** The most an outlet can draw (W): its rated current (else 63 A) at its voltage (else the device's). */
export function outletMaxWatts(outlet: Outlet, fallbackVolts: number): number {
  return amps(outlet.ratedCurrent) * (volts(outlet.measurements) ?? fallbackVolts);
}

export class InstanceBook {
  readonly devices = new Map<string, DeviceCounters>();
  /** Changed since the last checkpoint. */
  dirty = false;
  /**
   * Changed in a way a rise from the last checkpoint would not make good since it: a counter
   * started, a reset, a wrap, a rebase, a replaced unit. A restart (or a new holder) continuing from
   * the checkpoint before it would count less than was published, so it is written soon.
   */
  urgent = false;
  /** When the last snapshot applied was taken (epoch ms); 0: none. */
  seenAt = 0;

  /** Applies a polled snapshot; `note` hears every reading that was not simply counted. */
  update(snapshot: Snapshot, note: (noted: Noted) => void): void {
    const at = snapshot.timestamp;
    this.#adopt(snapshot.devices);
    for (const device of snapshot.devices) {
      const counters = this.devices.get(device.id);
      if (counters === undefined) continue;
      const fallbackVolts = deviceVolts(device);
      for (const outlet of device.outlets) {
        const reading = readingOf(outlet.measurements);
        if (reading === null) continue;
        const counter = counterOf(counters.outlets, outlet.index, reading.wh);
        const max = outletMaxWatts(outlet, fallbackVolts);
        this.#apply(counters, counter, reading, at, max, `outlet ${outlet.index + 1}`, note);
      }
      for (const entity of device.entities) {
        const reading = readingOf(entity.measurements);
        if (reading === null) continue;
        const counter = counterOf(counters.entities, entity.key, reading.wh);
        const max = amps(entity.ratedCurrent) * (volts(entity.measurements) ?? fallbackVolts) * ENTITY_PHASES;
        this.#apply(counters, counter, reading, at, max, `entity ${entity.key}`, note);
      }
    }
    this.seenAt = Math.max(this.seenAt, at);
  }

  #apply(
    counters: DeviceCounters,
    counter: Counter,
    reading: { wh: number; wrapsAtWh: number },
    at: number,
    maxWatts: number,
    what: string,
    note: (noted: Noted) => void,
  ): void {
    const before = counter.baseWh;
    const replaced = counters.replaced.delete(counter);
    let outcome: Outcome;
    if (replaced) {
      outcome = restart(counter, reading.wh, at, counter.seenAt, maxWatts);
      counter.seenAt = Math.max(counter.seenAt, at);
    } else outcome = apply(counter, reading.wh, at, maxWatts, reading.wrapsAtWh);
    if (outcome !== "same" || before !== counter.baseWh) this.dirty = true;
    if (outcome === "first") this.urgent = true;
    if (outcome === "rise" || outcome === "same" || outcome === "first" || outcome === "rejected-again")
      return;
    if (outcome !== "rejected") this.urgent = true;
    note({ deviceId: counters.id, what, outcome, readingWh: reading.wh, lifetimeWh: counter.lifetimeWh });
  }

  /** New device ids take over the counters of devices no longer reported (a replaced unit). */
  #adopt(devices: readonly Device[]): void {
    // The usual poll: every device known (nothing allocated).
    let unknown = false;
    for (const device of devices) {
      const known = this.devices.get(device.id);
      if (known === undefined) unknown = true;
      else known.order = device.order;
    }
    if (!unknown) return;
    const present = new Set(devices.map((d) => d.id));
    const orphans = [...this.devices.values()].filter((d) => !present.has(d.id));
    for (const device of devices) {
      if (this.devices.has(device.id) || !reportsEnergy(device)) continue;
      const k = orphans.findIndex(
        (o) => o.order === null || device.order === null || o.order === device.order,
      );
      const orphan = k < 0 ? undefined : orphans.splice(k, 1)[0];
      if (orphan === undefined) {
        this.devices.set(device.id, emptyDevice(device.id, device.order));
        this.dirty = true;
        this.urgent = true;
        continue;
      }
      this.devices.delete(orphan.id);
      orphan.id = device.id;
      orphan.order = device.order;
      for (const c of orphan.outlets.values()) orphan.replaced.add(c);
      for (const c of orphan.entities.values()) orphan.replaced.add(c);
      this.devices.set(device.id, orphan);
      this.dirty = true;
      this.urgent = true;
    }
  }

  /** An outlet's lifetime (Wh), or null. */
  outletWh(deviceId: string, index: number): number | null {
    return this.devices.get(deviceId)?.outlets.get(index)?.lifetimeWh ?? null;
  }

  entityWh(deviceId: string, key: string): number | null {
    return this.devices.get(deviceId)?.entities.get(key)?.lifetimeWh ?? null;
  }
}

/** Whether a device has an outlet or entity with an energy reading. */
function reportsEnergy(device: Device): boolean {
  return (
    device.outlets.some((o) => readingOf(o.measurements) !== null) ||
    device.entities.some((e) => readingOf(e.measurements) !== null)
  );
}

export function emptyDevice(id: string, order: number | null): DeviceCounters {
  return { id, order, outlets: new Map(), entities: new Map(), replaced: new Set() };
}

/** The counter at `key`; a new one starts at the PDU's own reading (the lifetime so far). */
function counterOf<K>(map: Map<K, Counter>, key: K, readingWh: number): Counter {
  let counter = map.get(key);
  if (counter === undefined) {
    counter = newCounter(readingWh);
    map.set(key, counter);
  }
  return counter;
}
