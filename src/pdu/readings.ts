/**
 * Readings: the flat view of a snapshot that the REST API serves (docs/http.md). One reading per
 * numeric measurement of every outlet and entity; non-numeric values are skipped and OneView group
 * rollups are not readings (they are aggregates of outlet readings, published on MQTT only).
 */
import type { OutletState, Snapshot } from "./model.js";

export interface Reading {
  readonly instanceId: string;
  readonly deviceId: string;
  /** Display name of the device (label, else name). */
  readonly device: string;
  /** Display name of the outlet or entity. */
  readonly source: string;
  readonly sourceType: "outlet" | "entity";
  /** 0-based outlet index; null for entities. */
  readonly outletIndex: number | null;
  /** Entity key (`phase0`, `total0`, ...); null for outlets. */
  readonly entityKey: string | null;
  readonly type: string;
  readonly value: number;
  readonly units: string;
  /** The outlet's state (the commanded state while a switch is latched); null for entities. */
  readonly state: OutletState | null;
  /** ISO-8601 UTC time of the poll that produced the snapshot. */
  readonly timestampUtc: string;
  /** Present only when the outlet or entity is hidden by the overrides (no MQTT topics, no entities). */
  readonly hidden?: true;
}

/** `reading`, marked hidden when its outlet or entity is (overrides); most are not, and stay as built. */
function markHidden(reading: Reading, hidden: true | undefined): Reading {
  return hidden === true ? { ...reading, hidden } : reading;
}

/** Ordinal comparison (locale-independent, so the order never depends on the host). */
export function compareOrdinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Measurement types compare case-insensitively, ties broken ordinally. */
function compareTypes(a: string, b: string): number {
  return compareOrdinal(a.toLowerCase(), b.toLowerCase()) || compareOrdinal(a, b);
}

/**
 * Order of readings: instance, device id, outlets before entities, outlet index numerically,
 * entity key, then type.
 */
export function compareReadings(a: Reading, b: Reading): number {
  return (
    compareOrdinal(a.instanceId, b.instanceId) ||
    compareOrdinal(a.deviceId, b.deviceId) ||
    (a.sourceType === b.sourceType ? 0 : a.sourceType === "outlet" ? -1 : 1) ||
    (a.outletIndex ?? 0) - (b.outletIndex ?? 0) ||
    compareOrdinal(a.entityKey ?? "", b.entityKey ?? "") ||
    compareTypes(a.type, b.type)
  );
}

/**
 * Readings are derived once per snapshot: snapshots are immutable (a latch produces a new one), and
 * the REST API asks for the same snapshot's readings many times between two polls.
 */
const cache = new WeakMap<Snapshot, readonly Reading[]>();

const jsonCache = new WeakMap<Snapshot, string>();
/** Snapshots whose readings could not be serialised, with the error: thrown again at once. */
const jsonFailures = new WeakMap<Snapshot, unknown>();

/**
 * The readings of one snapshot as the members of a JSON array (no brackets; "" when there are none),
 * serialised once per snapshot, so that a busy REST API does not serialise the same values again on
 * every request. Should that fail (a string too long for the engine),
 * the same error is thrown for the snapshot from then on without trying again; callers answer it as
 * a server error.
 */
export function readingsJson(snapshot: Snapshot): string {
  let json = jsonCache.get(snapshot);
  if (json === undefined) {
    if (jsonFailures.has(snapshot)) throw jsonFailures.get(snapshot);
    try {
      json = readingsOf(snapshot)
        .map((r) => JSON.stringify(r))
        .join(",");
    } catch (error) {
      jsonFailures.set(snapshot, error);
      throw error;
    }
    jsonCache.set(snapshot, json);
  }
  return json;
}

/** Every numeric reading of one snapshot, sorted (see {@link compareReadings}). */
export function readingsOf(snapshot: Snapshot): readonly Reading[] {
  let readings = cache.get(snapshot);
  if (readings === undefined) {
    readings = Object.freeze(buildReadings(snapshot));
    cache.set(snapshot, readings);
  }
  return readings;
}

function buildReadings(snapshot: Snapshot): Reading[] {
  const { instanceId } = snapshot;
  const timestampUtc = new Date(snapshot.timestamp).toISOString();
  const readings: Reading[] = [];
  // Objects are written out in full rather than spread from a common base: on Node 20 a spread
  // followed by new properties takes V8's slow path, most of the endpoint's time
  // (docs/performance.md, "Measurements behind the code").
  for (const device of snapshot.devices) {
    for (const outlet of device.outlets) {
      for (const m of outlet.measurements) {
        if (m.value === null) continue;
        const reading: Reading = {
          instanceId,
          deviceId: device.id,
          device: device.displayName,
          source: outlet.displayName,
          sourceType: "outlet",
          outletIndex: outlet.index,
          entityKey: null,
          type: m.type,
          value: m.value,
          units: m.units,
          state: outlet.state,
          timestampUtc,
        };
        readings.push(markHidden(reading, outlet.hidden));
      }
    }
    for (const entity of device.entities) {
      for (const m of entity.measurements) {
        if (m.value === null) continue;
        const reading: Reading = {
          instanceId,
          deviceId: device.id,
          device: device.displayName,
          source: entity.displayName,
          sourceType: "entity",
          outletIndex: null,
          entityKey: entity.key,
          type: m.type,
          value: m.value,
          units: m.units,
          state: null,
          timestampUtc,
        };
        readings.push(markHidden(reading, entity.hidden));
      }
    }
  }
  return readings.sort(compareReadings);
}
