/**
 * The feed-loss projection (docs/assets.md): for each feed F, what every entity (inlet, phase,
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
import type { Device, LoadState } from "../pdu/model.js";
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

/**
 * An entity of a device on another feed, kept from one projection to the next and written in place
 * (the projection runs over the whole fleet; new objects each time would outlive the young
 * generation and die in the old one). Its figures are numbers only (NaN: none), read through getters.
 */
class EntityWork implements ProjectedEntity {
  readonly instance: string;
  readonly deviceId: string;
  readonly key: string;
  name = "";
  exact = true;
  /** Amps measured now; NaN: no current this projection (the entity is then not projected). */
  #measured = NaN;
  #added = 0;
  /** NaN: no rating. */
  #rating = NaN;

  constructor(instance: string, deviceId: string, key: string) {
    this.instance = instance;
    this.deviceId = deviceId;
    this.key = key;
  }

  get measured(): number {
    return this.#measured;
  }
  get added(): number {
    return this.#added;
  }
  get projected(): number {
    return this.#measured + this.#added;
  }
  get rating(): number | null {
    return Number.isNaN(this.#rating) ? null : this.#rating;
  }
  get ratio(): number | null {
    return Number.isNaN(this.#rating) ? null : (this.#measured + this.#added) / this.#rating;
  }
  /** Whether it reads a current this projection. */
  get active(): boolean {
    return !Number.isNaN(this.#measured);
  }

  clear(): void {
    this.#measured = NaN;
    this.#added = 0;
    this.exact = true;
  }

  /** Its point of the load report; the name kept when the text is the same. */
  measure(name: string, current: number, rating: number | null): void {
    if (this.name !== name) this.name = name;
    this.#measured = current;
    this.#rating = rating ?? NaN;
  }

  add(share: number): void {
    this.#added += share;
  }
}

/** The entities of one kind of a device, and how many of them read a current this projection. */
interface KindWork {
  readonly keys: readonly string[];
  readonly works: readonly EntityWork[];
  /** The entity every outlet draws through (one of a kind in {@link CARRY_ALL}), else -1. */
  readonly carryAll: number;
  active: number;
}

/** A device on another feed than the projected one: its entities, kept while its shape holds. */
interface DeviceWork {
  readonly deviceId: string;
  /** Its entities in the device's order. */
  readonly entities: readonly EntityWork[];
  readonly byKey: ReadonlyMap<string, EntityWork>;
  readonly kinds: readonly KindWork[];
  /** Current that could not be given to an entity of each kind (see {@link addShare}). */
  readonly unplaced: { readonly instance: string; readonly deviceId: string; amps: number };
}

/** An instance with a device that may be on another feed than the projected one. */
interface InstanceWork {
  readonly id: string;
  /** Every device id of the snapshot its devices were made from, in order (its shape). */
  ids: readonly string[];
  /** The devices on another feed (of some feed), in the snapshot's order, and by id. */
  devices: readonly DeviceWork[];
  byId: ReadonlyMap<string, DeviceWork>;
  /** Whether it has a current reading this projection (else it is listed `unseen`). */
  seen: boolean;
}

/** One feed's projection, written in place at each projection. */
interface FeedWork {
  /** In id order. */
  readonly instances: readonly InstanceWork[];
  readonly byId: ReadonlyMap<string, InstanceWork>;
  readonly out: {
    readonly feed: string;
    readonly entities: EntityWork[];
    readonly dark: string[];
    readonly atRisk: string[];
    readonly unplaced: DeviceWork["unplaced"][];
    readonly unseen: string[];
  };
}

/**
 * The projection for every configured feed, made again and again: what it worked out of a device
 * (its entities by kind) is kept while the device's shape holds, and its result is written in place,
 * so a projection of a fleet whose devices keep their shape makes no objects. The result is the
 * same objects each time: read it, never keep it past the next {@link project}.
 */
export class FeedLossProjector {
  #model: AssetModel | null = null;
  #feeds: readonly FeedWork[] = [];
  #out: readonly FeedProjection[] = [];
  readonly #assets: AssetState[] = [];

  /** The projection of every configured feed, in feed order. */
  project(
    model: AssetModel,
    assets: Iterable<AssetState>,
    readings: ReadonlyMap<string, InstanceReading>,
  ): readonly FeedProjection[] {
    if (model !== this.#model) {
      this.#model = model;
      this.#feeds = [...model.feeds.keys()].map((feed) => feedWork(model, feed));
      this.#out = this.#feeds.map((f) => f.out);
    }
    const states = this.#assets;
    states.length = 0;
    for (const a of assets) states.push(a);
    for (const work of this.#feeds) projectInto(model, work, states, readings);
    states.length = 0;
    return this.#out;
  }
}

/** The projection for every configured feed, in feed order (a projector of its own). */
export function projectFeedLoss(
  model: AssetModel,
  assets: Iterable<AssetState>,
  readings: ReadonlyMap<string, InstanceReading>,
): readonly FeedProjection[] {
  return new FeedLossProjector().project(model, assets, readings);
}

/** The projection for feed `feed` alone (a work of its own). */
export function projectFeed(
  model: AssetModel,
  feed: string,
  assets: readonly AssetState[],
  readings: ReadonlyMap<string, InstanceReading>,
): FeedProjection {
  const work = feedWork(model, feed);
  projectInto(model, work, assets, readings);
  return work.out;
}

function feedWork(model: AssetModel, feed: string): FeedWork {
  const instances = instancesOffFeed(model, feed).map((id): InstanceWork => ({
    id,
    ids: [],
    devices: [],
    byId: new Map(),
    seen: false,
  }));
  return {
    instances,
    byId: new Map(instances.map((i) => [i.id, i])),
    out: { feed, entities: [], dark: [], atRisk: [], unplaced: [], unseen: [] },
  };
}

/**
 * The projection for the work's feed, written into its `out`. One pass over the assets, with the
 * devices looked up by instance and id and their entities by kind: no key is built per asset or cord.
 */
function projectInto(
  model: AssetModel,
  work: FeedWork,
  assets: readonly AssetState[],
  readings: ReadonlyMap<string, InstanceReading>,
): void {
  const { feed, entities, dark, atRisk, unplaced, unseen } = work.out;
  entities.length = dark.length = atRisk.length = unplaced.length = unseen.length = 0;
  measure(model, work, readings);
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
      const instance = work.byId.get(cord.instance);
      const device = instance?.seen === true ? instance.byId.get(cord.deviceId ?? "") : undefined;
      if (device === undefined || addShare(device, cord.feedsFrom, share)) continue;
      if (device.unplaced.amps === 0) unplaced.push(device.unplaced);
      device.unplaced.amps += share;
    }
  }
  for (const instance of work.instances)
    if (instance.seen)
      for (const device of instance.devices) for (const e of device.entities) if (e.active) entities.push(e);
  dark.sort();
  atRisk.sort();
}

/**
 * Each instance's devices' entities measured afresh from its reading; an instance without a current
 * reading is not seen, and listed in `unseen`.
 */
function measure(model: AssetModel, work: FeedWork, readings: ReadonlyMap<string, InstanceReading>): void {
  for (const instance of work.instances) {
    const reading = readings.get(instance.id);
    const snapshot = reading?.snapshot;
    const seen = snapshot !== null && snapshot !== undefined && reading?.online === true;
    instance.seen = seen;
    if (!seen) {
      work.out.unseen.push(instance.id);
      continue;
    }
    if (!sameShape(instance, snapshot.devices)) reshape(model, work.out.feed, instance, snapshot.devices);
    for (const device of instance.devices) {
      device.unplaced.amps = 0;
      for (const e of device.entities) e.clear();
    }
    const points = reading.load?.points ?? [];
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      if (p.target.kind !== "entity" || p.current === null) continue;
      instance.byId.get(p.deviceId)?.byKey.get(p.target.key)?.measure(p.name, p.current, p.rating);
    }
    for (const device of instance.devices)
      for (const kind of device.kinds) {
        kind.active = 0;
        for (const w of kind.works) if (w.active) kind.active++;
      }
  }
}

/** Whether the snapshot's devices are those the instance's work was made from (ids and entity keys, in order). */
function sameShape(instance: InstanceWork, devices: readonly Device[]): boolean {
  if (devices.length !== instance.ids.length) return false;
  for (let i = 0; i < devices.length; i++) {
    const device = devices[i]!;
    if (device.id !== instance.ids[i]) return false;
    const work = instance.byId.get(device.id);
    if (work === undefined) continue;
    const entities = device.entities;
    if (entities.length !== work.entities.length) return false;
    for (let j = 0; j < entities.length; j++) if (entities[j]!.key !== work.entities[j]!.key) return false;
  }
  return true;
}

/** The instance's devices on another feed worked out again from the snapshot's (its shape moved). */
function reshape(model: AssetModel, feed: string, instance: InstanceWork, devices: readonly Device[]): void {
  const out: DeviceWork[] = [];
  for (const device of devices) {
    const f = feedOf(model, instance.id, device.id);
    if (f === null || f === feed) continue;
    const entities = device.entities.map((e) => new EntityWork(instance.id, device.id, e.key));
    out.push({
      deviceId: device.id,
      entities,
      byKey: new Map(entities.map((e) => [e.key, e])),
      kinds: kindWorks(entities),
      unplaced: { instance: instance.id, deviceId: device.id, amps: 0 },
    });
  }
  instance.ids = devices.map((d) => d.id);
  instance.devices = out;
  instance.byId = new Map(out.map((d) => [d.deviceId, d]));
}

/** A device's entities by kind. */
function kindWorks(entities: readonly EntityWork[]): KindWork[] {
  const byKind = new Map<string, EntityWork[]>();
  for (const e of entities) {
    const kind = entityKind(e.key);
    const list = byKind.get(kind);
    if (list === undefined) byKind.set(kind, [e]);
    else list.push(e);
  }
  return [...byKind].map(([kind, works]) => ({
    keys: works.map((w) => w.key),
    works,
    carryAll: works.length === 1 && CARRY_ALL.has(kind) ? 0 : -1,
    active: 0,
  }));
}

/** Instances with a device that may be on a feed other than `feed`, in id order. */
function instancesOffFeed(model: AssetModel, feed: string): string[] {
  const out = new Set<string>();
  for (const [instance, f] of model.instanceFeeds) if (f !== feed) out.add(instance);
  for (const [instance, devices] of model.deviceFeeds)
    for (const f of devices.values()) if (f !== feed) out.add(instance);
  return [...out].sort();
}

/**
 * Adds `share` to the entities a cord whose outlet draws through `named` (its `feedsFrom`, or null)
 * draws through (see the file's comment): of the named entity's kind that one, of every other kind
 * the one entity every outlet draws through; marks the others of a kind where which one is not known
 * inexact. A kind of which no entity reads a current is no path to place on. False when some kind
 * was such (the share is then unplaced there).
 */
function addShare(work: DeviceWork, named: string | null, share: number): boolean {
  let placed = true;
  for (const kind of work.kinds) {
    if (kind.active === 0) continue;
    const at = named === null ? -1 : kind.keys.indexOf(named);
    const target = at >= 0 ? at : kind.carryAll;
    if (target >= 0) {
      const w = kind.works[target]!;
      if (w.active) w.add(share);
      continue;
    }
    placed = false;
    for (const w of kind.works) if (w.active) w.exact = false;
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
