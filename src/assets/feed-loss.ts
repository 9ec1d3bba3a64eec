/**
 * The feed-loss projection (docs/assets.md), pure: for each feed F, what every entity (inlet, phase,
 * breaker, bank, line, cord, total) of the devices on the other feeds would carry if F failed.
 *
 * - Each such entity starts from its measured current (its point in the instance's load report,
 *   with the rating that report resolved).
 * - Each asset with live cords on F and live cords on other feeds moves its current on F (the sum
 *   over its live cords on F) to its live cords elsewhere, shared evenly; each share is added to the
 *   entities its cord draws through (below).
 * - The projected current against the entity's rating gives a load state with the thresholds and
 *   hysteresis of the load alarms (docs/alarms.md) ({@link FeedLossTracker}), and an alarm `feed-loss` at warning or
 *   critical.
 * - Assets whose live cords are all on F would go dark (`dark`); assets whose only other live
 *   cords are on devices of no configured feed are listed apart (`atRisk`): whether they survive F
 *   is not known, and their current is not moved.
 *
 * Which entities a cord draws through, on its own device: the entity its outlet names
 * (`Outlet.feedsFrom`), and of every other kind the device has (inlet, phase, bank, ...), the one
 * entity of that kind when the device has exactly one of it and every outlet draws through it (an
 * inlet, cord, total, phase or line). Where a device has several of a kind and the outlet names
 * none of them (three phases, breakers without `feedsFrom`), which one carries the share is not
 * known: none is given it, each is marked `exact: false`, and the device's `unplaced` current
 * says how much is missing. Devices of no feed, and entities on F itself, are not projected. An
 * instance on another feed whose last poll failed, or that has no reading, is listed in `unseen`.
 */
import { entityKind, nextLoadState, type LoadThresholds } from "../pdu/load.js";
import type { Device, LoadPoint, LoadState } from "../pdu/model.js";
import {
  alarmChange,
  compareFleetAlarms,
  FEEDS_SCOPE,
  type FleetAlarm,
  type FleetAlarmChange,
} from "./alarms.js";
import type { AssetState, InstanceReading } from "./state.js";
import { feedOf, type AssetModel } from "./types.js";

/** Kinds an outlet draws through when its device has exactly one entity of the kind. */
const CARRY_ALL: ReadonlySet<string> = new Set(["inlet", "cord", "total", "phase", "line"]);

export interface ProjectedEntity {
  readonly instance: string;
  readonly deviceId: string;
  readonly key: string;
  readonly name: string;
  /** Amps measured now. */
  readonly measured: number;
  /** Amps moved onto it from F. */
  readonly added: number;
  readonly projected: number;
  /** From the load report (the PDU's, else the configuration's), or null. */
  readonly rating: number | null;
  /** projected / rating, or null without a rating. */
  readonly ratio: number | null;
  /** False when some current moved from F may also flow through it but was given to none. */
  readonly exact: boolean;
}

export interface FeedProjection {
  readonly feed: string;
  /** The other feeds' entities, by instance, device and key. */
  readonly entities: readonly ProjectedEntity[];
  /** Assets that would go dark (every live cord on F), in id order. */
  readonly dark: readonly string[];
  /** Assets whose other live cords are on devices of no feed, in id order. */
  readonly atRisk: readonly string[];
  /** Current moved from F that could not be given to an entity of the kinds its device has. */
  readonly unplaced: readonly {
    readonly instance: string;
    readonly deviceId: string;
    readonly amps: number;
  }[];
  /** Instances on the other feeds without a current reading (never polled, or the last poll failed). */
  readonly unseen: readonly string[];
}

interface Working {
  readonly entity: Omit<ProjectedEntity, "added" | "projected" | "ratio" | "exact">;
  added: number;
  exact: boolean;
}

/** The entities of one kind of a device, each with its working record where it reads a current. */
interface KindWork {
  readonly keys: readonly string[];
  readonly works: readonly (Working | undefined)[];
  /** The entity every outlet draws through (one of a kind in {@link CARRY_ALL}), else -1. */
  readonly carryAll: number;
}

/** A device on another feed than the projected one, during one projection. */
interface DeviceWork {
  readonly instance: string;
  readonly device: Device;
  /** Its kinds of which some entity reads a current (a kind with none is no path to place on). */
  readonly kinds: readonly KindWork[];
  /** Current that could not be given to an entity of each kind (see {@link addShare}). */
  unplaced: number;
}

/** The projection for every configured feed, in feed order. */
export function projectFeedLoss(
  model: AssetModel,
  assets: Iterable<AssetState>,
  readings: ReadonlyMap<string, InstanceReading>,
): readonly FeedProjection[] {
  const states = [...assets];
  return [...model.feeds.keys()].map((feed) => projectFeed(model, feed, states, readings));
}

/**
 * The projection for feed `feed`. One pass over the assets, with the devices looked up by instance
 * and id and their entities by kind: no key is built per asset or cord.
 */
export function projectFeed(
  model: AssetModel,
  feed: string,
  assets: readonly AssetState[],
  readings: ReadonlyMap<string, InstanceReading>,
): FeedProjection {
  const { entities, devices, unseen } = measuredEntities(model, feed, readings);
  const dark: string[] = [];
  const atRisk: string[] = [];
  const unplaced: DeviceWork[] = [];
  for (const asset of assets) {
    const readings = asset.readings;
    let onF = 0;
    let elsewhere = 0;
    let noFeed = 0;
    let moved = 0;
    for (let i = 0; i < readings.length; i++) {
      const r = readings[i]!;
      if (r.status !== "live") continue;
      if (r.feed === feed) {
        onF++;
        moved += r.current ?? 0;
      } else if (r.feed === null) noFeed++;
      else elsewhere++;
    }
    if (onF === 0) continue;
    if (elsewhere === 0) {
      (noFeed > 0 ? atRisk : dark).push(asset.id);
      continue;
    }
    const share = moved / elsewhere;
    if (share <= 0) continue;
    for (let i = 0; i < readings.length; i++) {
      const cord = readings[i]!;
      if (cord.status !== "live" || cord.feed === feed || cord.feed === null) continue;
      const work = devices.get(cord.instance)?.get(cord.deviceId ?? "");
      if (work === undefined || addShare(work, cord.feedsFrom, share)) continue;
      if (work.unplaced === 0) unplaced.push(work);
      work.unplaced += share;
    }
  }
  return Object.freeze({
    feed,
    entities: Object.freeze(entities.map(finish)),
    dark: Object.freeze(dark.sort()),
    atRisk: Object.freeze(atRisk.sort()),
    unplaced: Object.freeze(
      unplaced.map((w) => Object.freeze({ instance: w.instance, deviceId: w.device.id, amps: w.unplaced })),
    ),
    unseen: Object.freeze(unseen),
  });
}

function finish(w: Working): ProjectedEntity {
  const e = w.entity;
  const projected = e.measured + w.added;
  return Object.freeze({
    instance: e.instance,
    deviceId: e.deviceId,
    key: e.key,
    name: e.name,
    measured: e.measured,
    added: w.added,
    projected,
    rating: e.rating,
    ratio: e.rating === null ? null : projected / e.rating,
    exact: w.exact,
  });
}

/**
 * The measured entities of the devices on feeds other than `feed` (by instance, device and entity),
 * and those devices by instance and id.
 */
function measuredEntities(
  model: AssetModel,
  feed: string,
  readings: ReadonlyMap<string, InstanceReading>,
): { entities: Working[]; devices: Map<string, Map<string, DeviceWork>>; unseen: string[] } {
  const entities: Working[] = [];
  const devices = new Map<string, Map<string, DeviceWork>>();
  const unseen: string[] = [];
  for (const instance of instancesOffFeed(model, feed)) {
    const reading = readings.get(instance);
    if (reading?.snapshot === null || reading?.snapshot === undefined || !reading.online) {
      unseen.push(instance);
      continue;
    }
    const points = entityPoints(reading.load?.points ?? []);
    const works = new Map<string, DeviceWork>();
    for (const device of reading.snapshot.devices) {
      const f = feedOf(model, instance, device.id);
      if (f === null || f === feed) continue;
      const byKey = points.get(device.id);
      const work = new Map<string, Working>();
      for (const e of device.entities) {
        const p = byKey?.get(e.key);
        if (p === undefined || p.current === null) continue;
        const w: Working = {
          entity: {
            instance,
            deviceId: device.id,
            key: e.key,
            name: p.name,
            measured: p.current,
            rating: p.rating,
          },
          added: 0,
          exact: true,
        };
        work.set(e.key, w);
        entities.push(w);
      }
      works.set(device.id, { instance, device, kinds: kindWorks(device, work), unplaced: 0 });
    }
    devices.set(instance, works);
  }
  return { entities, devices, unseen: unseen.sort() };
}

/** A load report's entity points by device and entity key. */
function entityPoints(points: readonly LoadPoint[]): Map<string, Map<string, LoadPoint>> {
  const out = new Map<string, Map<string, LoadPoint>>();
  for (let i = 0; i < points.length; i++) {
    const p = points[i]!;
    if (p.target.kind !== "entity") continue;
    let byKey = out.get(p.deviceId);
    if (byKey === undefined) out.set(p.deviceId, (byKey = new Map<string, LoadPoint>()));
    byKey.set(p.target.key, p);
  }
  return out;
}

/** The device's kinds of which some entity reads a current, each with its working records. */
function kindWorks(device: Device, work: ReadonlyMap<string, Working>): KindWork[] {
  const out: KindWork[] = [];
  for (const [kind, keys] of kindsOf(device)) {
    const works = keys.map((key) => work.get(key));
    if (works.every((w) => w === undefined)) continue;
    out.push({ keys, works, carryAll: keys.length === 1 && CARRY_ALL.has(kind) ? 0 : -1 });
  }
  return out;
}

/** Instances with a device that may be on a feed other than `feed`, in id order. */
function instancesOffFeed(model: AssetModel, feed: string): string[] {
  const out = new Set<string>();
  for (const [instance, f] of model.instanceFeeds) if (f !== feed) out.add(instance);
  for (const [instance, devices] of model.deviceFeeds)
    for (const f of devices.values()) if (f !== feed) out.add(instance);
  return [...out].sort();
}

/** A device's entity keys by kind, kept per device object (snapshots are frozen). */
const kinds = new WeakMap<Device, ReadonlyMap<string, readonly string[]>>();

function kindsOf(device: Device): ReadonlyMap<string, readonly string[]> {
  let byKind = kinds.get(device);
  if (byKind === undefined) {
    const built = new Map<string, string[]>();
    for (const e of device.entities) {
      const kind = entityKind(e.key);
      const list = built.get(kind);
      if (list === undefined) built.set(kind, [e.key]);
      else list.push(e.key);
    }
    kinds.set(device, (byKind = built));
  }
  return byKind;
}

/**
 * Adds `share` to the entities a cord whose outlet draws through `named` (its `feedsFrom`, or null)
 * draws through (see the file's comment): of the named entity's kind that one, of every other kind
 * the one entity every outlet draws through; marks the others of a kind where which one is not known
 * inexact. False when some kind was such (the share is then unplaced there).
 */
function addShare(work: DeviceWork, named: string | null, share: number): boolean {
  let placed = true;
  for (const kind of work.kinds) {
    const at = named === null ? -1 : kind.keys.indexOf(named);
    const target = at >= 0 ? at : kind.carryAll;
    if (target >= 0) {
      const w = kind.works[target];
      if (w !== undefined) w.added += share;
      continue;
    }
    placed = false;
    for (const w of kind.works) if (w !== undefined) w.exact = false;
  }
  return placed;
}

/**
 * The feed-loss alarms over successive projections: each entity's projected load state with the
 * hysteresis of the load alarms (docs/alarms.md), per feed, forgotten with the entity; raised at warning or critical.
 */
export class FeedLossTracker {
  readonly #thresholds: LoadThresholds;
  /** The entities whose projected state is not normal, by alarm id (an entity not here: normal). */
  #states = new Map<string, LoadState>();
  #alarms = new Map<string, FleetAlarm>();
  #list: readonly FleetAlarm[] = Object.freeze([]);

  constructor(thresholds: LoadThresholds) {
    this.#thresholds = thresholds;
  }

  /** The alarms of these projections and what they raised, changed or cleared since the last. */
  assess(
    projections: readonly FeedProjection[],
    at: number,
  ): { readonly alarms: readonly FleetAlarm[]; readonly changes: readonly FleetAlarmChange[] } {
    const states = new Map<string, LoadState>();
    const alarms = new Map<string, FleetAlarm>();
    for (const p of projections) {
      for (const e of p.entities) {
        if (e.ratio === null) continue;
        const percent = e.ratio * 100;
        // Normal whatever the state before (even critical's hysteresis): no id is built for it,
        // and, as every normal state, it is not kept (not kept: normal).
        if (nextLoadState(percent, "critical", this.#thresholds) === "normal") continue;
        const id = `${p.feed}/${e.instance}/${e.deviceId}/entity/${e.key}/feed-loss`;
        const state = nextLoadState(percent, this.#states.get(id) ?? "normal", this.#thresholds);
        if (state === "normal") continue;
        states.set(id, state);
        alarms.set(id, this.#alarm(id, p.feed, e, state, at));
      }
    }
    this.#keepUnseen(projections, states, alarms);
    const changes: FleetAlarmChange[] = [];
    for (const [id, alarm] of alarms) {
      const change = alarmChange(this.#alarms.get(id) ?? null, alarm, at);
      if (change !== null) changes.push(change);
    }
    for (const [id, alarm] of this.#alarms)
      if (!alarms.has(id)) changes.push({ change: "cleared", alarm, at });
    this.#states = states;
    this.#alarms = alarms;
    const list = [...alarms.values()].sort(compareFleetAlarms);
    if (!sameList(list, this.#list)) this.#list = Object.freeze(list);
    return { alarms: this.#list, changes };
  }

  /**
   * Keeps the alarms (and load states) of entities whose instance has no current reading now: an
   * instance whose polls fail keeps the alarms of its last good snapshot (docs/alarms.md), and a
   * projection about it is not cleared by a failing PDU.
   */
  #keepUnseen(
    projections: readonly FeedProjection[],
    states: Map<string, LoadState>,
    alarms: Map<string, FleetAlarm>,
  ): void {
    const unseen = new Map(projections.map((p) => [p.feed, new Set(p.unseen)]));
    for (const [id, alarm] of this.#alarms) {
      if (alarms.has(id) || alarm.feed === undefined || alarm.instanceId === undefined) continue;
      if (unseen.get(alarm.feed)?.has(alarm.instanceId) !== true) continue;
      alarms.set(id, alarm);
      const state = this.#states.get(id);
      if (state !== undefined) states.set(id, state);
    }
  }

  #alarm(
    id: string,
    feed: string,
    e: ProjectedEntity,
    severity: Exclude<LoadState, "normal">,
    at: number,
  ): FleetAlarm {
    return Object.freeze({
      scope: FEEDS_SCOPE,
      id,
      deviceId: e.deviceId,
      target: Object.freeze({ kind: "entity" as const, key: e.key }),
      name: e.name,
      source: "feed-loss" as const,
      severity,
      percent: e.ratio === null ? null : Math.round(e.ratio * 100),
      reported: `if feed ${feed} failed`,
      since: this.#alarms.get(id)?.since ?? at,
      instanceId: e.instance,
      feed,
    });
  }
}

/** Whether two alarm lists say the same (ids, severities, percents, starts, in order). */
function sameList(a: readonly FleetAlarm[], b: readonly FleetAlarm[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i]!;
    return x.id === y.id && x.severity === y.severity && x.percent === y.percent && x.since === y.since;
  });
}
