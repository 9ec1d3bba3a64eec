/**
 * Power over the last hour of every outlet, for the console's outlet chart, kept in memory at poll
 * resolution in compact ring buffers: per instance one Float64Array of poll times, per outlet one
 * Float32Array of watts (NaN where the outlet reported no number or was absent). Capacity is fixed
 * at the first poll: one hour at the instance's poll interval (at 5 s: 721 samples, 2.9 KB per
 * outlet; docs/http.md states the budget per 1,000 PDUs).
 *
 * Bounded per instance, whatever the PDU answers: a device the latest poll does not have (renamed,
 * removed) loses its history at once; an outlet missing from a poll of a device still there keeps
 * its history (null there) until it has been missing for a whole window; and at most
 * {@link MAX_HISTORY_SERIES} outlets are kept, those seen longest ago dropped first.
 */
import { PDU_BOUNDS } from "../pdu/bounds.js";
import type { Snapshot } from "../pdu/model.js";

export const HISTORY_WINDOW_MS = 3_600_000;
/** Upper bound on samples per outlet (a poll interval of 1 s). */
const MAX_CAPACITY = 3601;
export const HISTORY_TYPE = "realPower";
/** Outlet rings per instance: as many outlets as one answer may have (src/pdu/bounds.ts). */
export const MAX_HISTORY_SERIES = PDU_BOUNDS.outlets;

interface Series {
  readonly deviceId: string;
  readonly values: Float32Array;
  /** Sequence number of the last poll that reported this outlet. */
  lastSeen: number;
}

interface Ring {
  readonly capacity: number;
  readonly times: Float64Array;
  /** Polls recorded so far; the next one goes to slot `seq % capacity`. */
  seq: number;
  readonly series: Map<string, Series>;
}

const seriesKey = (deviceId: string, index: number) => `${deviceId}\u0000${index}`;

/**
 * Makes room for `wanted` new rings within {@link MAX_HISTORY_SERIES}: drops rings of outlets not
 * seen in the poll being recorded, those seen longest ago first. Returns how many new rings fit.
 */
function makeRoom(ring: Ring, wanted: number): number {
  const over = ring.series.size + wanted - MAX_HISTORY_SERIES;
  if (over <= 0) return wanted;
  const unseen = [...ring.series].filter(([, series]) => series.lastSeen < ring.seq);
  unseen.sort((a, b) => a[1].lastSeen - b[1].lastSeen);
  for (const [key] of unseen.slice(0, over)) ring.series.delete(key);
  return Math.max(0, MAX_HISTORY_SERIES - ring.series.size);
}

export class PowerHistory {
  readonly #rings = new Map<string, Ring>();
  readonly #intervalSeconds: (instanceId: string) => number;

  constructor(intervalSeconds: (instanceId: string) => number) {
    this.#intervalSeconds = intervalSeconds;
  }

  /** Adds one poll's values (call for polled snapshots only). */
  record(snapshot: Snapshot): void {
    let ring = this.#rings.get(snapshot.instanceId);
    if (!ring) {
      const interval = Math.max(1, this.#intervalSeconds(snapshot.instanceId));
      const capacity = Math.min(MAX_CAPACITY, Math.ceil(HISTORY_WINDOW_MS / 1000 / interval) + 1);
      ring = { capacity, times: new Float64Array(capacity), seq: 0, series: new Map() };
      this.#rings.set(snapshot.instanceId, ring);
    }
    const slot = ring.seq % ring.capacity;
    ring.times[slot] = snapshot.timestamp;
    const devices = new Set<string>();
    for (const device of snapshot.devices) devices.add(device.id);
    for (const [key, series] of ring.series) {
      if (ring.seq - series.lastSeen >= ring.capacity || !devices.has(series.deviceId))
        ring.series.delete(key);
      else series.values[slot] = NaN;
    }
    let fresh: [key: string, deviceId: string, value: number][] | null = null;
    for (const device of snapshot.devices) {
      for (const outlet of device.outlets) {
        const key = seriesKey(device.id, outlet.index);
        const value = outlet.measurements.find((m) => m.type === HISTORY_TYPE)?.value ?? NaN;
        const series = ring.series.get(key);
        if (series === undefined) (fresh ??= []).push([key, device.id, value]);
        else {
          series.lastSeen = ring.seq;
          series.values[slot] = value;
        }
      }
    }
    if (fresh !== null) {
      const room = makeRoom(ring, fresh.length);
      for (const [key, deviceId, value] of fresh.slice(0, room)) {
        const values = new Float32Array(ring.capacity).fill(NaN);
        values[slot] = value;
        ring.series.set(key, { deviceId, values, lastSeen: ring.seq });
      }
    }
    ring.seq += 1;
  }

  /** The outlet's samples within the last hour before `now`, oldest first; null for an unknown outlet. */
  query(
    instanceId: string,
    deviceId: string,
    index: number,
    now: number,
  ): { times: number[]; values: (number | null)[] } | null {
    const ring = this.#rings.get(instanceId);
    const series = ring?.series.get(seriesKey(deviceId, index));
    if (!ring || !series) return null;
    const times: number[] = [];
    const values: (number | null)[] = [];
    const count = Math.min(ring.seq, ring.capacity);
    const since = now - HISTORY_WINDOW_MS;
    for (let i = ring.seq - count; i < ring.seq; i++) {
      const slot = i % ring.capacity;
      const at = ring.times[slot]!;
      if (at < since) continue;
      const value = series.values[slot]!;
      times.push(at);
      // Float32 keeps about 7 significant digits: round to what a PDU reports (hundredths).
      values.push(Number.isNaN(value) ? null : Math.round(value * 100) / 100);
    }
    return { times, values };
  }

  /** Bytes held by the ring buffers (for the docs' budget and the bench). */
  bytes(): number {
    let total = 0;
    for (const ring of this.#rings.values())
      total += ring.times.byteLength + ring.series.size * ring.capacity * 4;
    return total;
  }

  forget(instanceId: string): void {
    this.#rings.delete(instanceId);
  }
}
