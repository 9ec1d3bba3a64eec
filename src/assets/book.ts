/**
 * Every asset's state, kept up to date one instance at a time (docs/assets.md: "computed on each
 * snapshot of a cord's instance, without a second pass over the fleet per poll"). An index from
 * each instance to the cords on it makes a snapshot of one instance re-read only those cords and
 * recompute only their assets; the cost of an update is the cords on that instance plus the other
 * cords of their assets, whatever the size of the fleet.
 *
 * The book also knows which asset each resolved outlet feeds (the protected-asset rule starts from
 * outlets: ./protect.ts) and keeps each instance's latest reading (the feed-loss projection reads
 * the load reports: ./feed-loss.ts). The redundancy alarms it raises, changes and clears are
 * returned by the update that moved them.
 */
import { compareFleetAlarms, alarmChange, type FleetAlarm, type FleetAlarmChange } from "./alarms.js";
import { sameContent, type LoadReport, type Snapshot } from "../pdu/model.js";
import { RedundancyTracker, redundancyAlarm } from "./redundancy.js";
import {
  AssetSlot,
  MOVED_NOTHING,
  readCord,
  readCordInto,
  refreshAssetState,
  type AssetState,
  type CordSlot,
  type InstanceReading,
} from "./state.js";
import type { AssetDef, AssetModel } from "./types.js";

/**
 * One asset's book entry. Its state and its cords' readings are one object each for the life of
 * the book, written in place by each update (what a poll stored in new objects would outlive the
 * young generation and die in the old one); `version` is another at each update that moved anything
 * of them, so a reader that keeps what it last did with the asset knows whether to do it again.
 */
interface Entry {
  readonly def: AssetDef;
  readonly readings: CordSlot[];
  tracker: RedundancyTracker;
  readonly state: AssetSlot;
  alarm: FleetAlarm | null;
  version: number;
}

/** A cord of an asset, as the outlet index finds it. */
export interface CordRef {
  readonly asset: AssetDef;
  readonly cord: number;
}

/** What one update moved. */
export interface AssetUpdate {
  /**
   * The states of the assets with a cord on the instance, each as now (changed or not), in id
   * order. The book writes them in place at its next update: read them now, never keep them.
   */
  readonly states: readonly AssetState[];
  /** The ids of those whose state moved (a figure included), in id order. */
  readonly moved: readonly string[];
  readonly alarmChanges: readonly FleetAlarmChange[];
}

const outletKey = (instance: string, deviceId: string, index: number): string =>
  `${instance}\u0000${deviceId}\u0000${index}`;

const NO_REFS: readonly CordRef[] = Object.freeze([]);

/** The last version given to a state: versions are unique across books, so a new book's never repeat an old one's. */
let versions = 0;

export class AssetBook {
  readonly model: AssetModel;
  readonly #entries = new Map<string, Entry>();
  /**
   * instance → the assets with a cord on it, in id order (each once), and for each the cords on it
   * (bit `i` for cord `i`: an update reads no cord of another instance, nor compares their names).
   */
  readonly #byInstance = new Map<string, { readonly entries: Entry[]; readonly cords: number[] }>();
  /** outlet key → the cords resolved to it (one, unless the configuration names it twice). */
  readonly #outlets = new Map<string, CordRef[]>();
  readonly #readings = new Map<string, KeptReading>();
  /** The alarm list as last built, or null when an update changed it since. */
  #alarms: readonly FleetAlarm[] | null = null;

  constructor(model: AssetModel) {
    this.model = model;
    for (const def of model.assets.values()) {
      const readings = def.cords.map((cord, i) => readCord(model, cord, i, undefined));
      const tracker = new RedundancyTracker(def.cords.length);
      const entry: Entry = {
        def,
        readings,
        tracker,
        state: new AssetSlot(def, readings, tracker.redundancy(def.cords.length)),
        alarm: null,
        version: ++versions,
      };
      this.#entries.set(def.id, entry);
      for (const instance of new Set(def.cords.map((c) => c.instance))) {
        let on = this.#byInstance.get(instance);
        if (on === undefined) this.#byInstance.set(instance, (on = { entries: [], cords: [] }));
        on.entries.push(entry);
        on.cords.push(
          def.cords.reduce((bits, c, i) => (c.instance === instance ? bits | (1 << i) : bits), 0),
        );
      }
    }
  }

  /**
   * The book of a new configuration (a live change of assets or feeds), with what the previous one
   * knew: every instance's latest reading is read again, and an asset whose cords are the same keeps
   * its count of polls and its alarm (a change of its label or protection moves nothing else). The
   * alarms of assets gone or whose cords changed are cleared (a changed asset starts its count
   * afresh).
   */
  static reconfigure(
    previous: AssetBook,
    model: AssetModel,
    at: number,
  ): { readonly book: AssetBook; readonly alarmChanges: readonly FleetAlarmChange[] } {
    const book = new AssetBook(model);
    const changes: FleetAlarmChange[] = [];
    for (const [id, old] of previous.#entries) {
      const entry = book.#entries.get(id);
      if (entry !== undefined && sameCords(old.def, entry.def)) {
        entry.tracker = old.tracker;
        entry.alarm = old.alarm;
      } else if (old.alarm !== null) changes.push({ change: "cleared", alarm: old.alarm, at });
    }
    for (const reading of previous.#readings.values())
      changes.push(...book.update(reading, false, at).alarmChanges);
    book.#alarms = null;
    return { book, alarmChanges: changes };
  }

  /**
   * An instance's new reading: a snapshot kept by the store, or a failed poll (`online` false).
   * `poll` says whether it comes from a poll (a snapshot a latch or a live change made is not one:
   * it moves states, not the redundancy's count of polls).
   */
  update(reading: InstanceReading, poll: boolean, at: number): AssetUpdate {
    let kept = this.#readings.get(reading.id);
    // A poll whose answer was the last one (restamped by its driver) reads the same cords: only the
    // count of polls moves.
    const same =
      kept !== undefined &&
      kept.online === reading.online &&
      kept.snapshot !== null &&
      reading.snapshot !== null &&
      sameContent(kept.snapshot, reading.snapshot);
    if (kept === undefined) this.#readings.set(reading.id, (kept = new KeptReading(reading.id)));
    kept.set(reading);
    const on = this.#byInstance.get(reading.id);
    if (on === undefined) return { states: [], moved: [], alarmChanges: [] };
    const states: AssetState[] = [];
    const moved: string[] = [];
    const changes: FleetAlarmChange[] = [];
    for (let k = 0; k < on.entries.length; k++) {
      const entry = on.entries[k]!;
      const onInstance = on.cords[k]!;
      const cords = same ? MOVED_NOTHING : this.#reread(entry, kept, onInstance);
      if (poll) entry.tracker.poll(entry.readings, onInstance);
      const redundancy = entry.tracker.redundancy(entry.readings.length);
      if (refreshAssetState(entry.state, cords, redundancy)) {
        entry.version = ++versions;
        moved.push(entry.state.id);
      }
      states.push(entry.state);
      // Without redundancy lost now or an alarm before, there is no alarm to raise, change or clear.
      if (redundancy !== "lost" && entry.alarm === null) continue;
      const alarm = redundancyAlarm(entry.def, entry.tracker, entry.alarm, at);
      const change = alarmChange(entry.alarm, alarm, at);
      if (change !== null) {
        changes.push(change);
        this.#alarms = null;
        entry.alarm = alarm;
      }
    }
    return { states, moved, alarmChanges: changes };
  }

  /**
   * Reads the entry's cords on the reading's instance (bit `i` of `onInstance` for cord `i`) again,
   * in place, keeping the outlet index right; answers what moved (the most of the cords').
   */
  #reread(entry: Entry, reading: InstanceReading, onInstance: number): number {
    // The slots carry their cords: the definition is touched only when an outlet index moves.
    const slots = entry.readings;
    let moved = MOVED_NOTHING;
    for (let i = 0; i < slots.length; i++) {
      if ((onInstance & (1 << i)) === 0) continue;
      const slot = slots[i]!;
      const wasResolved = slot.resolved;
      const wasDevice = slot.deviceId;
      moved |= readCordInto(slot, this.model, reading);
      if (wasResolved === slot.resolved && wasDevice === slot.deviceId) continue;
      if (wasResolved) this.#unindex(outletKey(slot.instance, wasDevice ?? "", slot.outlet), entry.def, i);
      if (slot.resolved)
        this.#index(outletKey(slot.instance, slot.deviceId ?? "", slot.outlet), entry.def, i);
    }
    return moved;
  }

  #index(key: string, asset: AssetDef, cord: number): void {
    const refs = this.#outlets.get(key);
    if (refs === undefined) this.#outlets.set(key, [{ asset, cord }]);
    else refs.push({ asset, cord });
  }

  #unindex(key: string, asset: AssetDef, cord: number): void {
    const refs = this.#outlets.get(key)?.filter((r) => r.asset !== asset || r.cord !== cord);
    if (refs === undefined || refs.length === 0) this.#outlets.delete(key);
    else this.#outlets.set(key, refs);
  }

  /**
   * An asset's state, or undefined for an id that is not configured. The book writes it in place
   * at the updates that move it: read it now (or keep its {@link version}), never keep it.
   */
  get(id: string): AssetState | undefined {
    return this.#entries.get(id)?.state;
  }

  /**
   * The version of an asset's state: another at each update that moved it (a figure included), and
   * never one an earlier state of any book had; -1 for an id that is not configured.
   */
  version(id: string): number {
    return this.#entries.get(id)?.version ?? -1;
  }

  /** Every asset's state, in id order. */
  *states(): IterableIterator<AssetState> {
    for (const entry of this.#entries.values()) yield entry.state;
  }

  /** The cords resolved to an outlet (empty when it feeds no asset). */
  cordsAt(instance: string, deviceId: string, index: number): readonly CordRef[] {
    return this.#outlets.get(outletKey(instance, deviceId, index)) ?? NO_REFS;
  }

  /** The ids of the assets with a cord on an instance, in id order. */
  assetsOn(instance: string): readonly string[] {
    return (this.#byInstance.get(instance)?.entries ?? []).map((e) => e.def.id);
  }

  /**
   * The latest reading of every instance the book was given, by id. Each is written in place by the
   * next update of its instance: read it now, never keep it.
   */
  readings(): ReadonlyMap<string, InstanceReading> {
    return this.#readings;
  }

  /** The active redundancy alarms, worst first; the same array until an update changes one. */
  alarms(): readonly FleetAlarm[] {
    if (this.#alarms === null) {
      const list: FleetAlarm[] = [];
      for (const entry of this.#entries.values()) if (entry.alarm !== null) list.push(entry.alarm);
      this.#alarms = Object.freeze(list.sort(compareFleetAlarms));
    }
    return this.#alarms;
  }
}

/**
 * An instance's latest reading as the book keeps it: one object per instance for the life of the
 * book, written in place by each update (a reading kept until the next poll would outlive the young
 * generation). Readers of {@link AssetBook.readings} read it at each use, never keep it.
 */
class KeptReading implements InstanceReading {
  readonly id: string;
  snapshot: Snapshot | null = null;
  online = false;
  load: LoadReport | undefined = undefined;
  elsewhere: true | undefined = undefined;
  lifetimeWh: ((deviceId: string, index: number) => number | null) | undefined = undefined;

  constructor(id: string) {
    this.id = id;
  }

  set(reading: InstanceReading): void {
    this.snapshot = reading.snapshot;
    this.online = reading.online;
    this.load = reading.load;
    this.elsewhere = reading.elsewhere;
    this.lifetimeWh = reading.lifetimeWh;
  }
}

function sameCords(a: AssetDef, b: AssetDef): boolean {
  return (
    a.cords.length === b.cords.length &&
    a.cords.every((c, i) => {
      const d = b.cords[i]!;
      return c.instance === d.instance && c.device === d.device && c.outlet === d.outlet;
    })
  );
}
