/**
 * Asset state (docs/assets.md): each cord resolved against its instance's latest snapshot and
 * read, and the asset's state and sums from its cords, as new objects (the from-scratch way) or
 * written in place into the objects the book keeps (`readCordInto`, `refreshAssetState`). The
 * redundancy over polls is ./redundancy.ts; doing this for only the assets a snapshot touches is
 * ./book.ts.
 *
 * - A cord names an outlet by instance, device (optional) and 0-based index. Without a device the
 *   index must be on exactly one device of the instance. A cord that does not resolve is reported
 *   with the reason, never fatal.
 * - A cord is `live` when it resolves, its PDU is online (polled, its last poll good) and the outlet
 *   is on; `off` when it resolves, its PDU is online and the outlet is off; `unknown` otherwise
 *   (never polled here, its last poll failed, not resolved, the outlet's state unknown).
 * - The asset is `on` (every cord live), `off` (every cord off), `unknown` (a cord unknown), else
 *   `partial`. Power and current are the sums over its cords, counting a cord that is off and
 *   reports nothing as 0, and are null when any other cord reports none (an unknown cord reports
 *   none: a PDU that fails never turns into a low sum). Energy is the sum only when every cord
 *   reports it.
 */
import {
  findDevice,
  type Device,
  type LoadReport,
  type Measurement,
  type Outlet,
  type OutletState,
  type Snapshot,
} from "../pdu/model.js";
import { feedOf, type AssetDef, type AssetModel, type Cord } from "./types.js";

/** What the core reads of an instance: the store's status, as the wiring hands it over. */
export interface InstanceReading {
  readonly id: string;
  /**
   * The latest snapshot (latches, overrides and `OutletCircuits` applied), or null when the
   * instance has not been polled successfully (here, or by the replica whose readings these are).
   */
  readonly snapshot: Snapshot | null;
  /** False when its last poll failed: the snapshot is the last good one, its readings stale. */
  readonly online: boolean;
  /** The snapshot's load report (the feed-loss projection reads its entities' currents and ratings). */
  readonly load?: LoadReport;
  /**
   * Among several replicas: another replica polls the instance, and this one has no reading of it
   * (`snapshot` is then null). Its cords are unknown here, never shown from a reading gone stale.
   */
  readonly elsewhere?: true;
  /**
   * The outlets' lifetime energy counters (Wh) as the `energy` part keeps them (they are not in the
   * snapshot), or null where not known; absent: none.
   */
  readonly lifetimeWh?: (deviceId: string, index: number) => number | null;
}

export type CordProblem =
  "not-polled" | "not-held" | "offline" | "unknown-device" | "unknown-outlet" | "ambiguous" | "state-unknown";

export type CordStatus = "live" | "off" | "unknown";

/** One cord as last read. */
export interface CordReading {
  /** The cord's position in the asset's `Cords`. */
  readonly cord: number;
  readonly instance: string;
  /** The device it resolved to (or named), null while neither. */
  readonly deviceId: string | null;
  readonly index: number;
  /** Whether it resolved to an outlet of the instance's latest snapshot. */
  readonly resolved: boolean;
  readonly status: CordStatus;
  /** The outlet's state as the snapshot says (also for an offline PDU's last snapshot), or null. */
  readonly outletState: OutletState | null;
  /** Why the cord is not `live` or `off`, or null. */
  readonly problem: CordProblem | null;
  /** Readable detail of {@link problem}, or null. */
  readonly detail: string | null;
  /** W, A and kWh from an online PDU; null when not reported or not known now. */
  readonly power: number | null;
  readonly current: number | null;
  readonly energy: number | null;
  /**
   * The outlet's lifetime energy counter (kWh, which never decreases: docs/energy.md), from the
   * reading's `lifetimeWh` (else a measurement `energyLifetime` of the snapshot); kept while its PDU is
   * offline, so a sum of them never drops and comes back. Null when not known.
   */
  readonly energyLifetime: number | null;
  /** The entity the outlet draws through (`Outlet.feedsFrom`, when the device has it), or null. */
  readonly feedsFrom: string | null;
  /** The feed of the outlet's device (`DeviceFeeds`, else the instance's `Feed`), or null. */
  readonly feed: string | null;
}

export type AssetPowerState = "on" | "off" | "partial" | "unknown";
export type Redundancy = "ok" | "single" | "lost";

export interface AssetState {
  readonly id: string;
  readonly state: AssetPowerState;
  readonly power: number | null;
  readonly current: number | null;
  readonly energy: number | null;
  /** The sum of the cords' lifetime counters, only when every cord reports one (the asset's lifetime counter, docs/energy.md). */
  readonly energyLifetime: number | null;
  readonly cordsLive: number;
  readonly cords: number;
  readonly redundancy: Redundancy;
  /** In the order of the asset's cords. */
  readonly readings: readonly CordReading[];
  /**
   * Whether what the asset shows besides its figures moved since its state before (in the book: at
   * the update that last read it): its state, cordsLive, redundancy, or a cord's status, problem or
   * device; true for a first state. The figures (power, current, energies) are compared by whoever
   * publishes them.
   */
  readonly changed: boolean;
}

/** The outlet with `index` of a device (outlets are sorted by index; most are at their index). */
export function outletAt(device: Device, index: number): Outlet | undefined {
  const outlets = device.outlets;
  const guess = outlets[index];
  if (guess?.index === index) return guess;
  let lo = 0;
  let hi = outlets.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = outlets[mid]!.index;
    if (at === index) return outlets[mid];
    if (at < index) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

export type Resolution =
  | { readonly ok: true; readonly device: Device; readonly outlet: Outlet }
  | {
      readonly ok: false;
      readonly problem: CordProblem;
      readonly detail: string;
      readonly deviceId: string | null;
    };

/**
 * The device {@link locate} last found an outlet on, taken right after it by {@link takeLocated}
 * (a read is synchronous): finding a cord's outlet makes no object, and no device stays referenced.
 */
let located: Device | null = null;

function takeLocated(): Device {
  const device = located!;
  located = null;
  return device;
}

/**
 * The outlet a cord names in a snapshot, with its device in {@link located}; undefined when there
 * is none ({@link resolveCord} says why).
 */
function locate(cord: Cord, snapshot: Snapshot): Outlet | undefined {
  const devices = snapshot.devices;
  if (cord.device !== null) {
    for (let i = 0; i < devices.length; i++) {
      const device = devices[i]!;
      if (device.id !== cord.device) continue;
      const outlet = outletAt(device, cord.outlet);
      if (outlet !== undefined) located = device;
      return outlet;
    }
    return undefined;
  }
  let found: Outlet | undefined;
  for (let i = 0; i < devices.length; i++) {
    const device = devices[i]!;
    const outlet = outletAt(device, cord.outlet);
    if (outlet === undefined) continue;
    if (found !== undefined) {
      // On two devices: ambiguous.
      located = null;
      return undefined;
    }
    found = outlet;
    located = device;
  }
  return found;
}

/** The outlet a cord names in a snapshot, or why there is none. */
export function resolveCord(cord: Cord, snapshot: Snapshot | null): Resolution {
  const outlet = snapshot === null ? undefined : locate(cord, snapshot);
  return outlet === undefined ? unresolved(cord, snapshot) : { ok: true, device: takeLocated(), outlet };
}

type Unresolved = Extract<Resolution, { readonly ok: false }>;

/** Why a cord names no outlet of a snapshot, where {@link locate} found none. */
function unresolved(cord: Cord, snapshot: Snapshot | null): Unresolved {
  if (snapshot === null)
    return {
      ok: false,
      problem: "not-polled",
      detail: `instance ${cord.instance} has not been polled`,
      deviceId: cord.device,
    };
  if (cord.device !== null) {
    const device = findDevice(snapshot, cord.device);
    return device === undefined
      ? {
          ok: false,
          problem: "unknown-device",
          detail: `instance ${cord.instance} reports no device ${cord.device}`,
          deviceId: cord.device,
        }
      : { ok: false, problem: "unknown-outlet", detail: noOutlet(cord, device.id), deviceId: device.id };
  }
  const on = snapshot.devices.filter((d) => outletAt(d, cord.outlet) !== undefined);
  return on.length > 1
    ? {
        ok: false,
        problem: "ambiguous",
        detail: `outlet ${cord.outlet} is on devices ${on[0]!.id} and ${on[1]!.id} of instance ${cord.instance}: name the Device`,
        deviceId: null,
      }
    : { ok: false, problem: "unknown-outlet", detail: noOutlet(cord, null), deviceId: null };
}

const noOutlet = (cord: Cord, deviceId: string | null): string =>
  `${deviceId === null ? `no device of instance ${cord.instance}` : `device ${deviceId} of instance ${cord.instance}`} reports outlet ${cord.outlet} (indexes are 0-based)`;

/**
 * An outlet's or an asset's figures in W, A and kWh, NaN for none (absent, not a number, or in a
 * unit not known here). Numbers only: a field that may hold null keeps each figure written to it in
 * a number object of its own, a field that holds only numbers is written in place.
 */
interface Figures {
  power: number;
  current: number;
  energy: number;
  energyLifetime: number;
}

/** `value` in the unit `scales` maps its units to, or NaN. */
function scaled(value: number | null, units: string, scales: Readonly<Record<string, number>>): number {
  const scale = scales[units];
  return value === null || !Number.isFinite(value) || scale === undefined ? NaN : value * scale;
}

const WATTS: Readonly<Record<string, number>> = { W: 1, "": 1, kW: 1000 };
const AMPS: Readonly<Record<string, number>> = { A: 1, "": 1, mA: 0.001 };
const KWH: Readonly<Record<string, number>> = { kWh: 1, "": 1, Wh: 0.001 };

/** The one {@link Figures} every read fills (a read is synchronous: nothing keeps it between two). */
const FIGURES: Figures = { power: NaN, current: NaN, energy: NaN, energyLifetime: NaN };

/** The figures of an outlet's measurements, in one pass (the first of a type that has a figure), into {@link FIGURES}. */
function figuresOf(measurements: readonly Measurement[]): Figures {
  const f = FIGURES;
  f.power = f.current = f.energy = f.energyLifetime = NaN;
  // Indexed: the engine iterates the model's frozen arrays slowly otherwise.
  for (let i = 0; i < measurements.length; i++) {
    const m = measurements[i]!;
    if (m.type === "realPower") {
      if (Number.isNaN(f.power)) f.power = scaled(m.value, m.units, WATTS);
    } else if (m.type === "current") {
      if (Number.isNaN(f.current)) f.current = scaled(m.value, m.units, AMPS);
    } else if (m.type === "energy") {
      if (Number.isNaN(f.energy)) f.energy = scaled(m.value, m.units, KWH);
    } else if (m.type === "energyLifetime") {
      if (Number.isNaN(f.energyLifetime)) f.energyLifetime = scaled(m.value, m.units, KWH);
    }
  }
  return f;
}

/** What a read moved: nothing, a value only, or what the asset shows (status, problem, device). */
export const MOVED_NOTHING = 0;
export const MOVED_VALUE = 1;
export const MOVED_SHOWN = 3;

const orNull = (value: number): number | null => (Number.isNaN(value) ? null : value);
const sameFigure = (a: number, b: number): boolean => a === b || (Number.isNaN(a) && Number.isNaN(b));

/**
 * Four figures (W, A, kWh and lifetime kWh) held in place, NaN for none, read as null. A field that
 * may hold null keeps every new figure in a number object of its own, which the book keeps until
 * the next poll (old-generation garbage); a field that only ever holds numbers is written in place.
 */
class Figures4 {
  #power = NaN;
  #current = NaN;
  #energy = NaN;
  #energyLifetime = NaN;

  get power(): number | null {
    return orNull(this.#power);
  }
  get current(): number | null {
    return orNull(this.#current);
  }
  get energy(): number | null {
    return orNull(this.#energy);
  }
  get energyLifetime(): number | null {
    return orNull(this.#energyLifetime);
  }

  /** Writes the four (NaN: none); true when one differs. */
  setFigures(p: number, c: number, e: number, l: number): boolean {
    if (
      sameFigure(this.#power, p) &&
      sameFigure(this.#current, c) &&
      sameFigure(this.#energy, e) &&
      sameFigure(this.#energyLifetime, l)
    )
      return false;
    this.#power = p;
    this.#current = c;
    this.#energy = e;
    this.#energyLifetime = l;
    return true;
  }
}

/**
 * A cord's reading as the book keeps it: one object per cord for the life of the book, written in
 * place by {@link readCordInto} (what a poll stored in a new object would outlive the young
 * generation and die in the old one). Readers see it as a {@link CordReading}; its figures are
 * getters (a copy is {@link plainReading}, not a spread).
 */
export class CordSlot extends Figures4 implements CordReading, Cord {
  readonly cord: number;
  readonly instance: string;
  deviceId: string | null = null;
  readonly index: number;
  resolved = false;
  status: CordStatus = "unknown";
  outletState: OutletState | null = null;
  problem: CordProblem | null = null;
  detail: string | null = null;
  feedsFrom: string | null = null;
  feed: string | null = null;
  /**
   * The cord as configured (its `Device` or null, and its outlet), kept here so that a read touches
   * the slot alone, not the asset's definition (an update reads thousands of cords).
   */
  readonly device: string | null;
  readonly outlet: number;
  /** Whether {@link feed} is the feed of {@link deviceId} (it is, once a read wrote them). */
  fed = false;

  constructor(cord: Cord, position: number) {
    super();
    this.cord = position;
    this.instance = cord.instance;
    this.index = cord.outlet;
    this.device = cord.device;
    this.outlet = cord.outlet;
  }
}

/** A reading as a plain object of its own (every field, figures included). */
export function plainReading(r: CordReading): CordReading {
  return {
    cord: r.cord,
    instance: r.instance,
    deviceId: r.deviceId,
    index: r.index,
    resolved: r.resolved,
    status: r.status,
    outletState: r.outletState,
    problem: r.problem,
    detail: r.detail,
    power: r.power,
    current: r.current,
    energy: r.energy,
    energyLifetime: r.energyLifetime,
    feedsFrom: r.feedsFrom,
    feed: r.feed,
  };
}

/** One cord read from its instance's reading: a new object (the from-scratch way, and a book's first read). */
export function readCord(
  model: AssetModel,
  cord: Cord,
  position: number,
  reading: InstanceReading | undefined,
): CordSlot {
  const slot = new CordSlot(cord, position);
  readCordInto(slot, model, reading);
  return slot;
}

/**
 * Reads the slot's cord from its instance's reading into it, writing only the fields whose value
 * differs; answers what moved ({@link MOVED_NOTHING}, {@link MOVED_VALUE}, {@link MOVED_SHOWN}).
 */
export function readCordInto(
  into: CordSlot,
  model: AssetModel,
  reading: InstanceReading | undefined,
): number {
  const cord: Cord = into;
  const snapshot = reading?.snapshot ?? null;
  const elsewhere = reading?.elsewhere === true;
  const outlet = elsewhere || snapshot === null ? undefined : locate(cord, snapshot);
  if (outlet === undefined) {
    const resolution: Unresolved = elsewhere
      ? {
          ok: false,
          problem: "not-held",
          detail: `instance ${cord.instance} is polled by another replica`,
          deviceId: cord.device,
        }
      : unresolved(cord, snapshot);
    const { deviceId } = resolution;
    const feed = cordFeed(into, model, deviceId);
    return write(into, deviceId, false, "unknown", null, resolution.problem, resolution.detail, feed);
  }
  const device = takeLocated();
  const online = reading?.online === true;
  const status: CordStatus = !online
    ? "unknown"
    : outlet.state === "on"
      ? "live"
      : outlet.state === "off"
        ? "off"
        : "unknown";
  const problem: CordProblem | null = !online ? "offline" : status === "unknown" ? "state-unknown" : null;
  const detail =
    problem === null
      ? null
      : problem === "state-unknown"
        ? STATE_UNKNOWN
        : // The same text as before keeps the string before (no new one kept per poll).
          into.problem === "offline"
          ? (into.detail ?? offlineDetail(cord.instance))
          : offlineDetail(cord.instance);
  const moved = write(
    into,
    device.id,
    true,
    status,
    outlet.state,
    problem,
    detail,
    cordFeed(into, model, device.id),
  );
  return moved | writeFigures(into, device, outlet, online, lifetimeKwh(reading, device.id, cord.outlet));
}

/**
 * The feed of the cord on `deviceId`: the slot's own when it was worked out for that device (the
 * book's model does not change under its slots), else the device's (`feedOf`); without a device,
 * the instance's feed, which holds only where no device of it has a feed of its own.
 */
function cordFeed(into: CordSlot, model: AssetModel, deviceId: string | null): string | null {
  if (into.fed && into.deviceId === deviceId) return into.feed;
  if (deviceId !== null) return feedOf(model, into.instance, deviceId);
  return model.deviceFeeds.has(into.instance) ? null : (model.instanceFeeds.get(into.instance) ?? null);
}

/** Writes a resolved cord's figures and `feedsFrom`; answers what moved. */
function writeFigures(
  into: CordSlot,
  device: Device,
  outlet: Outlet,
  online: boolean,
  lifetime: number,
): number {
  const f = figuresOf(outlet.measurements);
  const power = online ? f.power : NaN;
  const current = online ? f.current : NaN;
  const energy = online ? f.energy : NaN;
  const energyLifetime = Number.isNaN(lifetime) ? f.energyLifetime : lifetime;
  const feedsFrom =
    outlet.feedsFrom !== undefined && hasEntity(device, outlet.feedsFrom) ? outlet.feedsFrom : null;
  const figures = into.setFigures(power, current, energy, energyLifetime);
  if (!figures && into.feedsFrom === feedsFrom) return MOVED_NOTHING;
  into.feedsFrom = feedsFrom;
  return MOVED_VALUE;
}

function hasEntity(device: Device, key: string): boolean {
  const entities = device.entities;
  for (let i = 0; i < entities.length; i++) if (entities[i]!.key === key) return true;
  return false;
}

/**
 * Writes what a read found besides the figures (an unresolved cord's figures and `feedsFrom` are
 * none); answers what moved.
 */
function write(
  into: CordSlot,
  deviceId: string | null,
  resolved: boolean,
  status: CordStatus,
  outletState: OutletState | null,
  problem: CordProblem | null,
  detail: string | null,
  feed: string | null,
): number {
  let moved = MOVED_NOTHING;
  into.fed = true;
  if (into.deviceId !== deviceId || into.status !== status || into.problem !== problem) {
    into.deviceId = deviceId;
    into.status = status;
    into.problem = problem;
    moved = MOVED_SHOWN;
  }
  if (
    into.resolved !== resolved ||
    into.outletState !== outletState ||
    into.detail !== detail ||
    into.feed !== feed
  ) {
    into.resolved = resolved;
    into.outletState = outletState;
    into.detail = detail;
    into.feed = feed;
    moved |= MOVED_VALUE;
  }
  if (!resolved) {
    const figures = into.setFigures(NaN, NaN, NaN, NaN);
    if (figures || into.feedsFrom !== null) moved |= MOVED_VALUE;
    into.feedsFrom = null;
  }
  return moved;
}

/** The outlet's lifetime counter (kWh) from the reading's `lifetimeWh`, or NaN. */
function lifetimeKwh(reading: InstanceReading | undefined, deviceId: string, index: number): number {
  const wh = reading?.lifetimeWh?.(deviceId, index) ?? null;
  return wh === null ? NaN : wh / 1000;
}

const offlineDetail = (instance: string): string => `the last poll of instance ${instance} failed`;
const STATE_UNKNOWN = "the PDU reports the outlet's state as unknown";

/**
 * The asset's power, current, energy and lifetime energy over its cords, in one pass, written into
 * `into`; true when one differs. Power and current count a cord that is off and reports none as 0,
 * and are none when another cord reports none; the energies are none unless every cord reports one.
 */
function sumsInto(into: Figures4, readings: readonly CordReading[]): boolean {
  let power = 0;
  let current = 0;
  let energy = 0;
  let lifetime = 0;
  for (let i = 0; i < readings.length; i++) {
    const r = readings[i]!;
    const off = r.status === "off";
    const p = r.power;
    if (p !== null) power += p;
    else if (!off) power = NaN;
    const c = r.current;
    if (c !== null) current += c;
    else if (!off) current = NaN;
    const e = r.energy;
    energy = e === null ? NaN : energy + e;
    const l = r.energyLifetime;
    lifetime = l === null ? NaN : lifetime + l;
  }
  return into.setFigures(power, current, energy, lifetime);
}

const POWER_STATES: readonly AssetPowerState[] = ["on", "off", "partial", "unknown"];

/**
 * The cords live and the asset's power state from its cords' statuses, as one number (the cords
 * live times 4, plus the state's place in {@link POWER_STATES}): {@link liveOf}, {@link stateOf}.
 */
function powerState(readings: readonly CordReading[]): number {
  let live = 0;
  let off = 0;
  let unknown = 0;
  for (let i = 0; i < readings.length; i++) {
    const status = readings[i]!.status;
    if (status === "live") live++;
    else if (status === "off") off++;
    else unknown++;
  }
  const n = readings.length;
  return live * 4 + (unknown > 0 ? 3 : live === n ? 0 : off === n ? 1 : 2);
}

const liveOf = (packed: number): number => packed >> 2;
const stateOf = (packed: number): AssetPowerState => POWER_STATES[packed & 3]!;

/**
 * The asset's state from its cords' readings (redundancy as given: ./redundancy.ts decides it);
 * `before` itself when nothing of it differs, so a reader that keeps the object it last wrote knows.
 * The from-scratch way: the book keeps one state per asset and writes it in place
 * ({@link refreshAssetState}).
 */
export function assetState(
  asset: AssetDef,
  readings: readonly CordReading[],
  redundancy: Redundancy,
  before: AssetState | null,
): AssetState {
  const packed = powerState(readings);
  const live = liveOf(packed);
  const state = stateOf(packed);
  const n = readings.length;
  const sums = new Figures4();
  sumsInto(sums, readings);
  const { power, current, energy, energyLifetime } = sums;
  const changed =
    before === null ||
    before.state !== state ||
    before.cordsLive !== live ||
    before.redundancy !== redundancy ||
    readings.some((r, i) => !sameCordShown(before.readings[i], r));
  if (
    before !== null &&
    !changed &&
    before.power === power &&
    before.current === current &&
    before.energy === energy &&
    before.energyLifetime === energyLifetime &&
    readings.every((r, i) => sameCordValues(before.readings[i]!, r))
  )
    return before.changed ? Object.freeze({ ...before, changed: false }) : before;
  return Object.freeze({
    id: asset.id,
    state,
    power,
    current,
    energy,
    energyLifetime,
    cordsLive: live,
    cords: n,
    redundancy,
    readings: Object.freeze(readings),
    changed,
  });
}

/**
 * An asset's state as the book keeps it: one object per asset, written in place
 * ({@link refreshAssetState}); its figures are getters, as a {@link CordSlot}'s.
 */
export class AssetSlot extends Figures4 implements AssetState {
  readonly id: string;
  state: AssetPowerState;
  cordsLive: number;
  readonly cords: number;
  redundancy: Redundancy;
  readonly readings: readonly CordSlot[];
  changed = true;

  /** A first state of the asset, from its cords' slots (kept: the state shows them as they move). */
  constructor(asset: AssetDef, readings: readonly CordSlot[], redundancy: Redundancy) {
    super();
    const packed = powerState(readings);
    this.id = asset.id;
    this.state = stateOf(packed);
    this.cordsLive = liveOf(packed);
    this.cords = readings.length;
    this.redundancy = redundancy;
    this.readings = readings;
    sumsInto(this, readings);
  }
}

/**
 * The state again, in place, after its cords' slots were read: `cords` is what their reads moved
 * (the most of {@link MOVED_NOTHING}, {@link MOVED_VALUE}, {@link MOVED_SHOWN}). Sets `changed`
 * (what it shows besides the figures moved) and answers whether anything of it moved.
 */
export function refreshAssetState(slot: AssetSlot, cords: number, redundancy: Redundancy): boolean {
  if (cords === MOVED_NOTHING && slot.redundancy === redundancy) {
    slot.changed = false;
    return false;
  }
  const readings = slot.readings;
  const packed = powerState(readings);
  const live = liveOf(packed);
  const state = stateOf(packed);
  const changed =
    cords === MOVED_SHOWN ||
    slot.state !== state ||
    slot.cordsLive !== live ||
    slot.redundancy !== redundancy;
  const moved = changed || cords !== MOVED_NOTHING;
  slot.changed = changed;
  slot.state = state;
  slot.cordsLive = live;
  slot.redundancy = redundancy;
  if (cords === MOVED_NOTHING) return moved;
  return sumsInto(slot, readings) || moved;
}

function sameCordShown(a: CordReading | undefined, b: CordReading): boolean {
  return a !== undefined && a.status === b.status && a.problem === b.problem && a.deviceId === b.deviceId;
}

function sameCordValues(a: CordReading, b: CordReading): boolean {
  return (
    a.power === b.power &&
    a.current === b.current &&
    a.energy === b.energy &&
    a.energyLifetime === b.energyLifetime &&
    a.outletState === b.outletState &&
    a.feedsFrom === b.feedsFrom &&
    a.feed === b.feed &&
    a.resolved === b.resolved &&
    a.detail === b.detail
  );
}

/** Every cord of an asset read from the readings by instance (the from-scratch way). */
export function readAsset(
  model: AssetModel,
  asset: AssetDef,
  readings: ReadonlyMap<string, InstanceReading>,
): CordReading[] {
  return asset.cords.map((cord, i) => readCord(model, cord, i, readings.get(cord.instance)));
}
