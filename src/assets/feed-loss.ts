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
import type { AssetState, CordReading, InstanceReading } from "./state.js";
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

const entityKey = (instance: string, deviceId: string, key: string): string =>
  `${instance}\u0000${deviceId}\u0000${key}`;

/** The projection for every configured feed, in feed order. */
export function projectFeedLoss(
  model: AssetModel,
  assets: Iterable<AssetState>,
  readings: ReadonlyMap<string, InstanceReading>,
): readonly FeedProjection[] {
  const states = [...assets];
  return [...model.feeds.keys()].map((feed) => projectFeed(model, feed, states, readings));
}

/** The projection for feed `feed`. */
export function projectFeed(
  model: AssetModel,
  feed: string,
  assets: readonly AssetState[],
  readings: ReadonlyMap<string, InstanceReading>,
): FeedProjection {
  const { entities, devices, unseen } = measuredEntities(model, feed, readings);
  const dark: string[] = [];
  const atRisk: string[] = [];
  const unplaced = new Map<string, { instance: string; deviceId: string; amps: number }>();
  for (const asset of assets) {
    const onF: CordReading[] = [];
    const elsewhere: CordReading[] = [];
    let noFeed = 0;
    for (const r of asset.readings) {
      if (r.status !== "live") continue;
      if (r.feed === feed) onF.push(r);
      else if (r.feed === null) noFeed++;
      else elsewhere.push(r);
    }
    if (onF.length === 0) continue;
    if (elsewhere.length === 0) {
      (noFeed > 0 ? atRisk : dark).push(asset.id);
      continue;
    }
    const moved = onF.reduce((s, r) => s + (r.current ?? 0), 0);
    const share = moved / elsewhere.length;
    if (share <= 0) continue;
    for (const cord of elsewhere) {
      const device = devices.get(`${cord.instance}\u0000${cord.deviceId ?? ""}`);
      if (device === undefined) continue;
      if (!addShare(entities, cord, device, share)) {
        const key = `${cord.instance}\u0000${device.id}`;
        const u = unplaced.get(key) ?? { instance: cord.instance, deviceId: device.id, amps: 0 };
        u.amps += share;
        unplaced.set(key, u);
      }
    }
  }
  return Object.freeze({
    feed,
    entities: Object.freeze([...entities.values()].map(finish)),
    dark: Object.freeze(dark.sort()),
    atRisk: Object.freeze(atRisk.sort()),
    unplaced: Object.freeze([...unplaced.values()].map((u) => Object.freeze(u))),
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

/** The measured entities of the devices on feeds other than `feed`, and those devices. */
function measuredEntities(
  model: AssetModel,
  feed: string,
  readings: ReadonlyMap<string, InstanceReading>,
): { entities: Map<string, Working>; devices: Map<string, Device>; unseen: string[] } {
  const entities = new Map<string, Working>();
  const devices = new Map<string, Device>();
  const unseen: string[] = [];
  for (const instance of instancesOffFeed(model, feed)) {
    const reading = readings.get(instance);
    if (reading?.snapshot === null || reading?.snapshot === undefined || !reading.online) {
      unseen.push(instance);
      continue;
    }
    const points = new Map<string, LoadPoint>();
    for (const p of reading.load?.points ?? [])
      if (p.target.kind === "entity") points.set(`${p.deviceId}\u0000${p.target.key}`, p);
    for (const device of reading.snapshot.devices) {
      const f = feedOf(model, instance, device.id);
      if (f === null || f === feed) continue;
      devices.set(`${instance}\u0000${device.id}`, device);
      for (const e of device.entities) {
        const p = points.get(`${device.id}\u0000${e.key}`);
        if (p === undefined || p.current === null) continue;
        entities.set(entityKey(instance, device.id, e.key), {
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
        });
      }
    }
  }
  return { entities, devices, unseen: unseen.sort() };
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
 * Adds `share` to the entities the cord draws through (see the file's comment); marks the others of
 * an uncertain kind inexact. False when some kind was uncertain (the share is then unplaced there).
 */
function addShare(entities: Map<string, Working>, cord: CordReading, device: Device, share: number): boolean {
  const byKind = kindsOf(device);
  const named = cord.feedsFrom;
  const namedKind = named === null ? null : entityKind(named);
  let placed = true;
  for (const [kind, keys] of byKind) {
    // A kind none of whose entities reads a current (a temperature sensor) is no path to place on.
    if (!keys.some((key) => entities.has(entityKey(cord.instance, device.id, key)))) continue;
    const target = kind === namedKind ? named : keys.length === 1 && CARRY_ALL.has(kind) ? keys[0]! : null;
    if (target !== null) {
      const w = entities.get(entityKey(cord.instance, device.id, target));
      if (w !== undefined) w.added += share;
      continue;
    }
    placed = false;
    for (const key of keys) {
      const w = entities.get(entityKey(cord.instance, device.id, key));
      if (w !== undefined) w.exact = false;
    }
  }
  return placed;
}

/**
 * The feed-loss alarms over successive projections: each entity's projected load state with the
 * hysteresis of the load alarms (docs/alarms.md), per feed, forgotten with the entity; raised at warning or critical.
 */
export class FeedLossTracker {
  readonly #thresholds: LoadThresholds;
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
        const id = `${p.feed}/${e.instance}/${e.deviceId}/entity/${e.key}/feed-loss`;
        const state = nextLoadState(e.ratio * 100, this.#states.get(id) ?? "normal", this.#thresholds);
        states.set(id, state);
        if (state === "normal") continue;
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
