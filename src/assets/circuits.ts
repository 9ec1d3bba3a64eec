/**
 * `Pdus.<id>.OutletCircuits`: which entity (breaker, bank, phase) each outlet draws through, where
 * the PDU does not say. `{ "0-11": breaker0, "12-23": breaker1 }` for every device of the instance,
 * `{ "<deviceId>/0-11": breaker0 }` for one device (which wins over a row for every device). The
 * ranges are 0-based outlet indexes, inclusive, as in the REST API.
 *
 * Applying them fills {@link Outlet.feedsFrom} where the driver left it absent and the device has
 * the entity named; what the PDU reports always wins. The applier keeps what it built per devices
 * array, so a snapshot restamped by its driver gets the same devices array back and stays the same
 * content (src/pdu/model.ts `sameContent`) for every consumer after it.
 */
import type { Device, Outlet, Snapshot } from "../pdu/model.js";
import { rangeKey, type CircuitRange } from "../config/outlet-circuits.js";

export { parseCircuits, type CircuitProblem } from "../config/outlet-circuits.js";

/** The entity `ranges` give outlet `index` of `deviceId`, or undefined. */
export function circuitOf(
  ranges: readonly CircuitRange[],
  deviceId: string,
  index: number,
): string | undefined {
  let every: string | undefined;
  for (const r of ranges) {
    if (index < r.from || index > r.to) continue;
    if (r.device === deviceId) return r.entity;
    if (r.device === null) every ??= r.entity;
  }
  return every;
}

/** Applies one instance's ranges to its snapshots (see the file's comment). */
export class CircuitApplier {
  readonly #ranges: readonly CircuitRange[];
  /** Devices array as polled → the same with `feedsFrom` filled in. */
  #cache = new WeakMap<readonly Device[], readonly Device[]>();

  constructor(ranges: readonly CircuitRange[]) {
    this.#ranges = ranges;
  }

  /** The snapshot with `feedsFrom` filled in; the same object when no outlet gains one. */
  apply(snapshot: Snapshot): Snapshot {
    if (this.#ranges.length === 0) return snapshot;
    let devices = this.#cache.get(snapshot.devices);
    if (devices === undefined) {
      devices = this.#devices(snapshot.devices);
      this.#cache.set(snapshot.devices, devices);
    }
    return devices === snapshot.devices ? snapshot : Object.freeze({ ...snapshot, devices });
  }

  #devices(devices: readonly Device[]): readonly Device[] {
    let out: Device[] | null = null;
    for (let i = 0; i < devices.length; i++) {
      const device = devices[i]!;
      const next = this.#device(device);
      if (out === null && next !== device) out = devices.slice(0, i);
      if (out !== null) out.push(next);
    }
    return out === null ? devices : Object.freeze(out);
  }

  #device(device: Device): Device {
    let outlets: Outlet[] | null = null;
    for (let i = 0; i < device.outlets.length; i++) {
      const outlet = device.outlets[i]!;
      let next = outlet;
      if (outlet.feedsFrom === undefined) {
        const entity = circuitOf(this.#ranges, device.id, outlet.index);
        if (entity !== undefined && device.entities.some((e) => e.key === entity))
          next = Object.freeze({ ...outlet, feedsFrom: entity });
      }
      if (outlets === null && next !== outlet) outlets = device.outlets.slice(0, i);
      if (outlets !== null) outlets.push(next);
    }
    return outlets === null ? device : Object.freeze({ ...device, outlets: Object.freeze(outlets) });
  }
}

/** One snapshot with `ranges` applied (see {@link CircuitApplier}, which also keeps what it built). */
export function applyCircuits(snapshot: Snapshot, ranges: readonly CircuitRange[]): Snapshot {
  return new CircuitApplier(ranges).apply(snapshot);
}

/**
 * The `OutletCircuits` rows that name an entity a device of the snapshot does not report (each
 * once, as `key → entity`), for one warning per row after a poll, as for overrides that name
 * nothing.
 */
export function unmatchedCircuits(ranges: readonly CircuitRange[], snapshot: Snapshot): readonly string[] {
  const out: string[] = [];
  for (const r of ranges) {
    const devices = r.device === null ? snapshot.devices : snapshot.devices.filter((d) => d.id === r.device);
    if (devices.length === 0 || devices.some((d) => !d.entities.some((e) => e.key === r.entity)))
      out.push(`${rangeKey(r)} → ${r.entity}`);
  }
  return out;
}

/**
 * The outlets of a device that draw through entity `key` (their `feedsFrom`): what a breaker that
 * falls to 0 A while they are on would have cut (an inferred breaker trip).
 */
export function outletsThrough(device: Device, key: string): readonly Outlet[] {
  return device.outlets.filter((o) => o.feedsFrom === key);
}
