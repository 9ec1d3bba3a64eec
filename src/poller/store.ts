/**
 * The latest snapshot and poll status of every configured instance, and the one place that
 * decides what the "current" state of an outlet is. The store keeps state; it tells what changed
 * through the bus it is given (src/bus.ts): `snapshot`, `alarms`, `pollFailed` and `instanceStatus`.
 *
 * A failed poll never replaces a snapshot: it only records the error, so downstream keeps the
 * last good values (aging) instead of seeing every outlet drop to 0 W.
 *
 * Latches: a real PDU keeps reporting the old outlet state for up to a minute after a switch, so
 * after an on/off command the commanded state is what the store reports until a poll agrees or the
 * latch expires. Every consumer (MQTT, REST readings, control checks) reads the latched view, with
 * the instance's overrides applied last ({@link SnapshotStore.setView}).
 *
 * Load and alarms: each snapshot the store keeps is assessed once by the instance's
 * {@link LoadTracker} (src/pdu/load.ts), after the overrides; the report stays beside the snapshot
 * and each `snapshot` event carries the alarms it raised, changed or cleared, which an `alarms`
 * event right before it tells on their own. A poll whose content is unchanged keeps the report it
 * had and changes nothing.
 */
import type { BusEvents, EventBus, PollFailedEvent, SnapshotEvent } from "../bus.js";
import { describeError } from "../pdu/errors.js";
import { DEFAULT_THRESHOLDS, EMPTY_REPORT, LoadTracker } from "../pdu/load.js";
import {
  sameContent,
  type AlarmChange,
  type LoadReport,
  type Outlet,
  type OutletState,
  type Snapshot,
} from "../pdu/model.js";

/** How long a commanded state overrides what the PDU reports (pdu-protocol.md §3). */
export const LATCH_MS = 120_000;

export interface InstanceStatus {
  readonly id: string;
  /** Latest good snapshot with latches applied, or null before the first successful poll. */
  readonly snapshot: Snapshot | null;
  /** When the last poll attempt finished (success or failure), epoch ms. */
  readonly lastPollUtc: number | null;
  /** When the last successful poll finished, epoch ms. */
  readonly lastSuccessUtc: number | null;
  /** Readable message of the last failure, cleared by the next success. */
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
  /** Loads and active alarms of {@link snapshot} (empty before the first successful poll). */
  readonly load: LoadReport;
}

/** What the store emits about an instance's snapshot: the bus's `snapshot` and `pollFailed` events. */
export type StoreEvent = SnapshotEvent | PollFailedEvent;

export interface SnapshotStoreOptions {
  /** Where the store's events go. */
  readonly bus: EventBus;
  readonly now?: () => number;
}

interface Latch {
  readonly state: "on" | "off";
  readonly until: number;
}

interface Entry {
  status: InstanceStatus;
  /** The snapshot exactly as polled, before latches. */
  polled: Snapshot | null;
  /** deviceId + "\u0000" + index -> latch */
  latches: Map<string, Latch>;
  latchTimer: NodeJS.Timeout | null;
  /** The overrides seam (src/pdu/overrides.ts) applied after latches; null: none. */
  view: SnapshotView | null;
  /** Whether the last snapshot event came from a poll (not a latch or view change). */
  lastFromPoll: boolean;
  /** Assesses each snapshot kept: loads against ratings, and alarms (src/pdu/load.ts). */
  load: LoadTracker;
}

/** Turns the latched snapshot into the one every consumer reads (the configured overrides). */
export type SnapshotView = (snapshot: Snapshot) => Snapshot;

const latchKey = (deviceId: string, index: number) => `${deviceId}\u0000${index}`;

const NO_CHANGES: readonly AlarmChange[] = Object.freeze([]);

export class SnapshotStore {
  readonly #entries = new Map<string, Entry>();
  readonly #bus: EventBus;
  readonly #now: () => number;
  /** What {@link list} returns until a status changes (the HTTP bodies are cached against it). */
  #list: readonly InstanceStatus[] | null = null;

  constructor(instanceIds: readonly string[], options: SnapshotStoreOptions) {
    this.#bus = options.bus;
    this.#now = options.now ?? Date.now;
    for (const id of instanceIds) {
      this.#entries.set(id, {
        status: {
          id,
          snapshot: null,
          lastPollUtc: null,
          lastSuccessUtc: null,
          lastError: null,
          consecutiveFailures: 0,
          load: EMPTY_REPORT,
        },
        polled: null,
        latches: new Map(),
        latchTimer: null,
        view: null,
        lastFromPoll: false,
        load: new LoadTracker({}, DEFAULT_THRESHOLDS),
      });
    }
  }

  /** Status of one instance (exact id), or undefined when it is not configured. */
  get(id: string): InstanceStatus | undefined {
    return this.#entries.get(id)?.status;
  }

  /** The latest snapshot exactly as polled (no latches), or null before the first poll. */
  polled(id: string): Snapshot | null {
    return this.#entries.get(id)?.polled ?? null;
  }

  /**
   * All instances in configuration order. The same array is returned until any status changes, so
   * callers may cache what they derive from it by its identity.
   */
  list(): readonly InstanceStatus[] {
    this.#list ??= Object.freeze([...this.#entries.values()].map((e) => e.status));
    return this.#list;
  }

  ids(): string[] {
    return [...this.#entries.keys()];
  }

  recordSuccess(id: string, snapshot: Snapshot): void {
    const entry = this.#require(id);
    entry.polled = snapshot;
    this.#dropSettledLatches(entry, snapshot);
    const effective = this.#applyLatches(entry);
    const previous = entry.status.snapshot;
    const unchanged = entry.lastFromPoll && previous !== null && sameContent(previous, effective);
    const cameOnline = entry.status.consecutiveFailures > 0 || entry.status.lastSuccessUtc === null;
    entry.lastFromPoll = true;
    const { report, changes } = unchanged
      ? { report: entry.status.load, changes: NO_CHANGES }
      : entry.load.assess(effective);
    entry.status = {
      ...entry.status,
      snapshot: effective,
      lastPollUtc: snapshot.timestamp,
      lastSuccessUtc: snapshot.timestamp,
      lastError: null,
      consecutiveFailures: 0,
      load: report,
    };
    if (changes.length > 0) this.#emit("alarms", { instanceId: id, changes });
    this.#emit("snapshot", {
      kind: "snapshot",
      instanceId: id,
      snapshot: effective,
      fromPoll: true,
      unchanged,
      load: report,
      alarmChanges: changes,
    });
    if (cameOnline) this.#emit("instanceStatus", { instanceId: id, online: true, snapshot: effective });
  }

  recordFailure(id: string, error: unknown): void {
    const entry = this.#require(id);
    const wasOnline = entry.status.consecutiveFailures === 0 && entry.status.lastSuccessUtc !== null;
    const message = describeError(error);
    entry.status = {
      ...entry.status,
      lastPollUtc: this.#now(),
      lastError: message,
      consecutiveFailures: entry.status.consecutiveFailures + 1,
    };
    this.#emit("pollFailed", { kind: "failure", instanceId: id, error: message, wasOnline });
    if (wasOnline) this.#emit("instanceStatus", { instanceId: id, online: false, error: message });
  }

  /**
   * Report `state` for this outlet until a poll agrees or LATCH_MS pass. No-op before the first
   * snapshot (a command cannot have been validated then).
   */
  latch(id: string, deviceId: string, index: number, state: "on" | "off"): void {
    const entry = this.#require(id);
    entry.latches.set(latchKey(deviceId, index), { state, until: this.#now() + LATCH_MS });
    this.#refresh(entry);
  }

  /** Drop latches (all of the instance, or one outlet's), e.g. when a command failed. */
  unlatch(id: string, deviceId?: string, index?: number): void {
    const entry = this.#require(id);
    if (deviceId === undefined || index === undefined) entry.latches.clear();
    else entry.latches.delete(latchKey(deviceId, index));
    this.#refresh(entry);
  }

  /**
   * Sets the instance's view (the overrides seam) and, when it has a snapshot, re-derives it and
   * tells listeners (`fromPoll: false`), so a live configuration change shows at once.
   */
  setView(id: string, view: SnapshotView | null): void {
    const entry = this.#require(id);
    entry.view = view;
    this.#refresh(entry);
  }

  /**
   * Sets how the instance's snapshots are assessed (its ratings and the alarm thresholds); the next
   * snapshot kept is assessed with it.
   */
  setLoad(id: string, tracker: LoadTracker): void {
    this.#require(id).load = tracker;
  }

  /** Stop latch timers (on shutdown). */
  close(): void {
    for (const entry of this.#entries.values()) {
      if (entry.latchTimer) clearTimeout(entry.latchTimer);
      entry.latchTimer = null;
    }
  }

  #require(id: string): Entry {
    const entry = this.#entries.get(id);
    if (!entry) throw new Error(`unknown instance ${id}`);
    return entry;
  }

  #emit<K extends "snapshot" | "alarms" | "pollFailed" | "instanceStatus">(
    name: K,
    event: BusEvents[K],
  ): void {
    this.#list = null; // every event follows a status change
    this.#bus.emit(name, event);
  }

  /** Re-derive the latched view after a latch change and tell listeners. */
  #refresh(entry: Entry): void {
    if (!entry.polled) return;
    const effective = this.#applyLatches(entry);
    // Names and hidden things may have changed (overrides); the states do not move on the same values.
    const { report, changes } = entry.load.assess(effective);
    entry.status = { ...entry.status, snapshot: effective, load: report };
    entry.lastFromPoll = false;
    if (changes.length > 0) this.#emit("alarms", { instanceId: entry.status.id, changes });
    this.#emit("snapshot", {
      kind: "snapshot",
      instanceId: entry.status.id,
      snapshot: effective,
      fromPoll: false,
      unchanged: false,
      load: report,
      alarmChanges: changes,
    });
  }

  #dropSettledLatches(entry: Entry, polled: Snapshot): void {
    if (entry.latches.size === 0) return;
    const now = this.#now();
    for (const device of polled.devices) {
      for (const outlet of device.outlets) {
        const key = latchKey(device.id, outlet.index);
        const latch = entry.latches.get(key);
        if (latch && (latch.state === outlet.state || latch.until <= now)) entry.latches.delete(key);
      }
    }
    for (const [key, latch] of entry.latches) if (latch.until <= now) entry.latches.delete(key);
  }

  #applyLatches(entry: Entry): Snapshot {
    const polled = entry.polled;
    if (!polled) throw new Error("no snapshot to latch");
    const now = this.#now();
    for (const [key, latch] of entry.latches) if (latch.until <= now) entry.latches.delete(key);
    this.#scheduleExpiry(entry);
    const view = entry.view ?? ((s: Snapshot) => s);
    if (entry.latches.size === 0) return view(polled);
    const devices = polled.devices.map((device) => {
      let changed = false;
      const outlets = device.outlets.map((outlet): Outlet => {
        const latch = entry.latches.get(latchKey(device.id, outlet.index));
        if (!latch || latch.state === outlet.state) return outlet;
        changed = true;
        return { ...outlet, state: latch.state satisfies OutletState };
      });
      return changed ? { ...device, outlets: Object.freeze(outlets) } : device;
    });
    return view(Object.freeze({ ...polled, devices: Object.freeze(devices) }));
  }

  /** One timer per instance, for the earliest latch: when it fires the PDU's state shows again. */
  #scheduleExpiry(entry: Entry): void {
    if (entry.latchTimer) clearTimeout(entry.latchTimer);
    entry.latchTimer = null;
    if (entry.latches.size === 0) return;
    const earliest = Math.min(...[...entry.latches.values()].map((l) => l.until));
    entry.latchTimer = setTimeout(() => this.#refresh(entry), Math.max(0, earliest - this.#now()) + 1);
    entry.latchTimer.unref();
  }
}
