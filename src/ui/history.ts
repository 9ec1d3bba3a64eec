/**
 * Power over the last hour of every outlet, for the console's outlet chart, kept in memory at poll
 * resolution in compact ring buffers: per instance one Float64Array of poll times, per outlet one
 * Float32Array of watts (NaN where the outlet reported no number or was absent). Capacity is fixed
 * at the first poll: one hour at the instance's poll interval (at 5 s: 721 samples, 2.9 KB per
 * outlet; docs/http.md states the budget per 1,000 PDUs). Outlets unseen for a whole window are
 * dropped, so a PDU that renames its devices cannot grow it.
 */
import type { Snapshot } from "../pdu/model.js";

export const HISTORY_WINDOW_MS = 3_600_000;
/** Upper bound on samples per outlet (a poll interval of 1 s). */
const MAX_CAPACITY = 3601;
export const HISTORY_TYPE = "realPower";

interface Series {
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
    for (const [key, series] of ring.series) {
      if (ring.seq - series.lastSeen >= ring.capacity) ring.series.delete(key);
      else series.values[slot] = NaN;
    }
    for (const device of snapshot.devices) {
      for (const outlet of device.outlets) {
        const key = seriesKey(device.id, outlet.index);
        let series = ring.series.get(key);
        if (!series) {
          series = { values: new Float32Array(ring.capacity).fill(NaN), lastSeen: ring.seq };
          ring.series.set(key, series);
        }
        series.lastSeen = ring.seq;
        const value = outlet.measurements.find((m) => m.type === HISTORY_TYPE)?.value;
        series.values[slot] = value ?? NaN;
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
