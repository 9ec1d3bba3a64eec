/**
 * SNMP walk results → the vendor-neutral snapshot, driven by a profile (./profile.ts), over the rows
 * ./rows.ts makes of the walk. Pure: no I/O.
 *
 * Everything an agent sends is untrusted. Values arrive as they come (INTEGER, Gauge32, Counter32,
 * OCTET STRING of any bytes, exceptions such as noSuchInstance, a wrong type in a column); rows may
 * lack columns. None of that throws: the outlets table answering no row fails the poll naming its
 * OID (essential); anything else missing or malformed is left out with one warning per table
 * column (optional), like the Geist parser's warnings. Names are decoded as UTF-8 with invalid bytes
 * replaced, control characters replaced and the length bounded; numbers (outlet, unit) are bounded.
 */
import {
  compareKeys,
  type DeviceCapability,
  type Alarm,
  type Device,
  type Entity,
  type Measurement,
  type Outlet,
  type OutletState,
  type PduSystem,
  type Snapshot,
  type Vendor,
} from "../model.js";
import { ParseError } from "../errors.js";
import { nameProblem } from "../../names.js";
import {
  isScalar,
  type AbsentWhen,
  type AlarmDef,
  type CellRef,
  type FeedsFromDef,
  type IdentityRef,
  type MeasurementDef,
  type Presence,
  type RatingDef,
  type SnmpProfile,
  type Source,
  type StateDef,
} from "./profile.js";
import { MAX_NUMBER, Tables, Warnings, type Cell, type PollData, type Row } from "./rows.js";

export { MAX_NUMBER, MAX_WARNINGS, type Cell, type PollData, type WalkedVarbind } from "./rows.js";

/** Longest name kept, in characters. */
export const MAX_NAME_CHARS = 128;
/** Most outlets per device. */
export const MAX_OUTLETS = 512;

const NO_ALARM: Alarm = Object.freeze({ state: "none", severity: "", raised: false });

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** Bytes from an agent as a bounded, printable string: invalid UTF-8 and control characters become U+FFFD. */
export function decodeText(bytes: Buffer): string {
  if (bytes.length <= MAX_NAME_CHARS && isPrintableAscii(bytes)) return bytes.toString("latin1").trim();
  const head = bytes.length > MAX_NAME_CHARS * 4 ? bytes.subarray(0, MAX_NAME_CHARS * 4) : bytes;
  // eslint-disable-next-line no-control-regex -- control characters are what it replaces
  const text = utf8.decode(head).replace(/[\u0000-\u001f\u007f-\u009f]/g, "\ufffd");
  const chars = [...text];
  return (chars.length > MAX_NAME_CHARS ? chars.slice(0, MAX_NAME_CHARS).join("") : text).trim();
}

/** Whether every byte is printable ASCII (0x20–0x7e): text that decodes to itself, nothing replaced. */
function isPrintableAscii(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x20 || b > 0x7e) return false;
  }
  return true;
}

/** Six bytes as `00:C0:B7:12:34:56`; other strings as text. */
function macText(cell: Cell | undefined): string {
  if (cell === undefined || typeof cell === "number") return "";
  if (cell.length === 6) return [...cell].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
  return decodeText(cell);
}

function validNumber(n: number | undefined): n is number {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= MAX_NUMBER;
}

function where(ref: Source): string {
  return isScalar(ref) ? ref.scalar : `${ref.table}.${ref.column}`;
}

function text(t: Tables, ref: Source | undefined, unit: number, number: number): string {
  if (ref === undefined) return "";
  const v = t.cell(ref, unit, number);
  if (v === undefined) return "";
  if (typeof v === "number") return String(v);
  return decodeText(v);
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** Whether one of the cells of `when` (of the row unit, number) holds one of its values. */
function absentWhen(
  t: Tables,
  when: readonly AbsentWhen[] | undefined,
  unit: number,
  number: number,
): boolean {
  if (when === undefined) return false;
  for (const w of when) {
    const v = t.cell(w, unit, number);
    if (v !== undefined && w.values.includes(typeof v === "number" ? v : decodeText(v))) return true;
  }
  return false;
}

/** Whether the unit marks the value `raw` of a cell declared with `p` as not there. */
function absent(t: Tables, p: Presence, raw: number, unit: number, number: number): boolean {
  return (
    p.absentIf?.includes(raw) === true ||
    (p.absentBelow !== undefined && raw < p.absentBelow) ||
    absentWhen(t, p.absentWhen, unit, number)
  );
}

function measurement(t: Tables, def: MeasurementDef, unit: number, number: number): Measurement | null {
  const raw = t.cell(def, unit, number);
  if (raw === undefined) return null;
  if (typeof raw !== "number") return null;
  if (absent(t, def, raw, unit, number)) return null;
  let value = raw;
  let step = 1;
  if (def.decimals !== undefined) {
    const digits = t.cell(def.decimals, unit, number);
    if (typeof digits !== "number" || !Number.isInteger(digits) || digits < 0 || digits > 9) {
      t.warnings.add(
        where(def.decimals),
        `no usable decimal digits for ${def.type}: the reading was left out`,
      );
      return null;
    }
    step = 1 / 10 ** digits;
    value = raw / 10 ** digits;
  }
  const wrapsAt = def.type === "energy" ? wrapOf(t, def, step) : undefined;
  return Object.freeze({
    type: def.type,
    value: round(value * def.scale),
    units: def.units,
    alarm: null,
    ...(wrapsAt === undefined ? {} : { wrapsAt }),
  });
}

/** 32-bit unsigned columns (Counter32, Gauge32, Unsigned32): an energy counter kept in them wraps at 2^32. */
const UNSIGNED_32: ReadonlySet<string> = new Set(["Counter", "Gauge", "Unsigned"]);

/** Where an energy counter read from `def`'s cell wraps, in the measurement's units (`step`: ÷ decimals). */
function wrapOf(t: Tables, def: MeasurementDef, step: number): number | undefined {
  const type = t.columnType(def);
  return type !== undefined && UNSIGNED_32.has(type) ? 2 ** 32 * step * def.scale : undefined;
}

/** Measurement definitions in the order of their types (case-insensitive), ties in the profile's order. */
const inTypeOrder = new WeakMap<readonly MeasurementDef[], readonly MeasurementDef[]>();

function sortedDefs(defs: readonly MeasurementDef[]): readonly MeasurementDef[] {
  let sorted = inTypeOrder.get(defs);
  if (sorted === undefined) {
    const key = (d: MeasurementDef) => d.type.toLowerCase();
    sorted = [...defs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    inTypeOrder.set(defs, sorted);
  }
  return sorted;
}

function measurements(
  t: Tables,
  defs: readonly MeasurementDef[],
  unit: number,
  number: number,
): readonly Measurement[] {
  // Sorted by type: the definitions are, once per profile (a stable sort of those present is the same).
  const out: Measurement[] = [];
  for (const def of sortedDefs(defs)) {
    const m = measurement(t, def, unit, number);
    if (m !== null) out.push(m);
  }
  return Object.freeze(out);
}

function alarmOf(t: Tables, def: AlarmDef | undefined, unit: number, number: number): Alarm {
  if (def === undefined) return NO_ALARM;
  const v = t.cell(def, unit, number);
  if (typeof v !== "number" || absent(t, def, v, unit, number)) return NO_ALARM;
  const s = def.states[v];
  if (s === undefined) return Object.freeze({ state: `unknown(${v})`, severity: "", raised: false });
  return Object.freeze({ state: s.name, severity: s.severity, raised: s.raised });
}

function ratingOf(t: Tables, def: RatingDef | undefined, unit: number, number: number): number | undefined {
  if (def === undefined) return undefined;
  const v = t.cell(def, unit, number);
  if (v === undefined) return undefined;
  let n: number;
  if (typeof v === "number") {
    if (absent(t, def, v, unit, number)) return undefined;
    n = v;
  } else {
    if (absentWhen(t, def.absentWhen, unit, number)) return undefined;
    const m = /^\s*(\d+(?:\.\d+)?)/.exec(decodeText(v));
    if (m?.[1] === undefined) return undefined;
    n = Number(m[1]);
  }
  const amps = round(n * def.scale);
  return Number.isFinite(amps) && amps > 0 ? amps : undefined;
}

function delay(t: Tables, ref: CellRef | undefined, unit: number, number: number): number | null {
  if (ref === undefined) return null;
  const v = t.cell(ref, unit, number);
  return typeof v === "number" ? v : null;
}

/** Where a device's outlets' writes go: the row index of each outlet in a table, by outlet index. */
export type RowIndexes = ReadonlyMap<number, readonly number[]>;

/**
 * What the driver keeps of a poll besides the snapshot, to address writes: the row index of each
 * outlet in each table a write goes to (the outlets table, the control, label and delay tables).
 */
export interface Addressing {
  /** deviceId → table (entry name) → outlet index → row index. */
  readonly rows: ReadonlyMap<string, ReadonlyMap<string, RowIndexes>>;
  /** deviceId → model of the unit, for messages. */
  readonly models: ReadonlyMap<string, string>;
}

/** The tables writes go to: the outlets table and those of control, names and delays. */
export function writeTables(profile: SnmpProfile): string[] {
  const d = profile.outlets.delays;
  const names = [
    profile.outlets.table,
    profile.control?.table,
    profile.outletLabel?.table,
    d?.on?.table,
    d?.off?.table,
    d?.reboot?.table,
  ];
  return [...new Set(names.filter((n): n is string => n !== undefined))];
}

function rowIndexes(
  t: Tables,
  table: string,
  unit: number,
  outletNumbers: ReadonlyMap<number, number>,
): RowIndexes {
  const out = new Map<number, readonly number[]>();
  for (const [index, number] of outletNumbers) {
    const row = t.row(table, unit, number);
    if (row !== undefined) out.set(index, row.index);
  }
  return out;
}

/**
 * The outlet rows of a poll (in the agent's order): the rows of the outlets table, then those of
 * its `alsoFrom` tables whose unit and number it lacks.
 */
function outletRows(t: Tables, profile: SnmpProfile): readonly Row[] {
  const main = t.rows(profile.outlets.table);
  const also = profile.outlets.alsoFrom;
  if (also === undefined) return [...main.values()];
  const rows = new Map(main);
  for (const table of also) for (const [key, row] of t.rows(table)) if (!rows.has(key)) rows.set(key, row);
  return [...rows.values()];
}

/** The unit numbers of a poll: those of the outlet rows, and (metered-only units) those `withoutOutlets` finds. */
function unitsOf(t: Tables, profile: SnmpProfile, rows: readonly Row[]): number[] {
  const units = new Set<number>();
  for (const row of rows) units.add(row.unit);
  const alone = profile.outlets.withoutOutlets?.units;
  if (alone !== undefined) {
    if (isScalar(alone)) {
      if (t.cell(alone, 1, 1) !== undefined) units.add(1);
    } else {
      for (const row of t.rows(alone.table).values())
        if (t.valueOf(alone.table, row, alone.column) !== undefined) units.add(row.unit);
    }
  }
  return [...units].sort((a, b) => a - b);
}

/** The error of a poll that found no unit: the tables (and scalar) that answered nothing. */
function noUnit(profile: SnmpProfile): ParseError {
  const named = (table: string) => `${table} (${profile.tables.find((x) => x.name === table)?.oid ?? "?"})`;
  const parts = [profile.outlets.table, ...(profile.outlets.alsoFrom ?? [])].map(named);
  const alone = profile.outlets.withoutOutlets?.units;
  if (alone !== undefined) parts.push(isScalar(alone) ? alone.scalar : named(alone.table));
  const what = parts.length === 1 ? "the outlet table answered no row" : "none of them answered";
  return new ParseError(
    parts.join(", "),
    `${what}: the agent serves no unit of the family ${profile.family}, or not this table`,
  );
}

/** The units (by number) that answer a row of the profile's control table. */
function switchedUnits(t: Tables, profile: SnmpProfile): ReadonlySet<number> {
  const units = new Set<number>();
  const control = profile.control;
  if (control === undefined) return units;
  const need = control.requires;
  for (const row of t.rows(control.table).values()) {
    if (need !== undefined) {
      const bits = t.valueOf(control.table, row, need.column);
      const octet = Buffer.isBuffer(bits) ? bits[need.bit >> 3] : undefined;
      if (octet === undefined || (octet & (0x80 >> (need.bit & 7))) === 0) continue;
    }
    units.add(row.unit);
  }
  return units;
}

/**
 * The snapshot of one poll. `instanceId` names the snapshot and is the device id of a unit that
 * reports neither serial nor MAC. A poll that finds no unit (no outlet row, and nothing of
 * `withoutOutlets`) fails naming the tables.
 */
export function parsePoll(
  profile: SnmpProfile,
  data: PollData,
  instanceId: string,
  timestamp: number,
  vendor: Vendor,
): { snapshot: Snapshot; addressing: Addressing } {
  const warnings = new Warnings();
  const t = new Tables(profile, data, warnings);
  const rows = outletRows(t, profile);
  const units = unitsOf(t, profile, rows);
  if (units.length === 0) throw noUnit(profile);
  const switched = switchedUnits(t, profile);
  const devices: Device[] = [];
  const addressing = {
    rows: new Map<string, ReadonlyMap<string, RowIndexes>>(),
    models: new Map<string, string>(),
  };
  const writes = writeTables(profile);
  const usedIds = new Set<string>();
  for (const unit of units) {
    const id = identityOf(t, profile, unit);
    let deviceId =
      safeId(id.serialNumber) ??
      safeId(id.macAddress) ??
      (units.length > 1 ? `${instanceId}-${unit}` : instanceId);
    if (usedIds.has(deviceId)) deviceId = `${deviceId}-${unit}`;
    usedIds.add(deviceId);

    const canSwitch = switched.has(unit);
    const entities: Entity[] = [];
    for (const def of profile.entities) entities.push(...entitiesOf(t, def, unit, units.length));
    entities.sort((a, b) => compareKeys(a.key, b.key));
    const entityKeys = new Map(entities.map((e) => [e.key, e.key]));
    const { outlets, numbers } = unitOutlets(t, profile, { unit, canSwitch, entityKeys }, rows, warnings);

    const model = id.model !== "" ? `${profile.family} model ${id.model}` : profile.family;
    devices.push(deviceOf(profile, deviceId, id, outlets, entities, { model, canSwitch }));
    addressing.rows.set(
      deviceId,
      new Map(writes.map((table) => [table, rowIndexes(t, table, unit, numbers)])),
    );
    addressing.models.set(deviceId, model);
  }
  devices.sort((a, b) => compareKeys(a.id, b.id));
  const first = devices[0];
  const w = warnings.done();
  const snapshot: Snapshot = Object.freeze({
    instanceId,
    timestamp,
    mode: "single",
    vendor,
    system: first?.system ?? Object.freeze(identityOf(t, profile, 1)),
    devices: Object.freeze(devices),
    groups: Object.freeze([]),
    ...(w === undefined ? {} : { warnings: w }),
  });
  return { snapshot, addressing };
}

/** The outlets of one unit, in index order, and each one's number in the MIB (by outlet index). */
function unitOutlets(
  t: Tables,
  profile: SnmpProfile,
  of: OfUnit,
  rows: readonly Row[],
  warnings: Warnings,
): { outlets: Outlet[]; numbers: Map<number, number> } {
  const unit = of.unit;
  const numbers = new Map<number, number>(); // outlet index → MIB number
  const outlets: Outlet[] = [];
  for (const row of rows) {
    const n = row.number;
    if (row.unit !== unit || n < 1) continue;
    if (outlets.length >= MAX_OUTLETS) {
      warnings.add(profile.outlets.table, `more than ${MAX_OUTLETS} outlets: the rest were left out`);
      break;
    }
    numbers.set(n - 1, n);
    outlets.push(outletOf(t, profile, of, n));
  }
  outlets.sort((a, b) => a.index - b.index);
  return { outlets, numbers };
}

/** Why a device lacks its capabilities (the 409 of a command it cannot carry out), naming the model. */
function lacksOf(
  profile: SnmpProfile,
  model: string,
  canReset: boolean,
  canSwitch: boolean,
): Readonly<Partial<Record<DeviceCapability, string>>> {
  const out: Partial<Record<DeviceCapability, string>> = {};
  if (!canReset) {
    const why =
      profile.resetEnergy === undefined
        ? (profile.resetStatsRefusal ?? "the family has no energy reset")
        : "no outlet of the unit reports an energy counter";
    out.canResetOutletEnergy = `${model} cannot reset one outlet's statistics: ${why}; nothing was sent`;
  }
  if (!canSwitch) {
    const control = profile.control;
    const why =
      control === undefined
        ? `${profile.mibs.join(", ")} has no outlet control`
        : control.requires === undefined
          ? `the unit answers no row of ${control.table} (a metered or non-switched model)`
          : `no row of ${control.table} has ${control.requires.column} bit ${control.requires.bit} set (a metered or non-switched model)`;
    out.canSwitchOutlets = `${model} has no outlet switching over SNMP: ${why}; nothing was sent`;
  }
  return Object.freeze(out);
}

/** One unit as a device of the snapshot. */
function deviceOf(
  profile: SnmpProfile,
  deviceId: string,
  id: PduSystem & { label: string },
  outlets: Outlet[],
  entities: Entity[],
  can: { readonly model: string; readonly canSwitch: boolean },
): Device {
  const system = Object.freeze(id);
  const name = id.label;
  // A per-outlet energy reset where the family has one and the unit meters its outlets' energy.
  const canReset =
    profile.resetEnergy !== undefined && outlets.some((o) => o.measurements.some((m) => m.type === "energy"));
  return Object.freeze({
    id: deviceId,
    name,
    label: "",
    displayName: name !== "" ? name : deviceId,
    type: profile.id,
    state: "normal",
    alarm: NO_ALARM,
    order: null,
    outletControlEnabled: true,
    canResetOutletEnergy: canReset,
    canSwitchOutlets: can.canSwitch,
    ...(canReset && can.canSwitch ? {} : { lacks: lacksOf(profile, can.model, canReset, can.canSwitch) }),
    lifetimeEnergy: null,
    system,
    route: null,
    outlets: Object.freeze(outlets),
    entities: Object.freeze(entities),
  });
}

function safeId(s: string): string | undefined {
  const id = s.trim();
  return id !== "" && nameProblem(id) === null ? id : undefined;
}

function identityOf(t: Tables, profile: SnmpProfile, unit: number): PduSystem & { label: string } {
  const read = (ref: IdentityRef | undefined): string => {
    if (ref === undefined) return "";
    const number = isScalar(ref) ? 1 : (t.firstOfUnit(ref.table, unit) ?? 1);
    return text(t, ref, unit, number);
  };
  const macRef = profile.identity.mac;
  let mac = "";
  if (macRef !== undefined) {
    const number = isScalar(macRef) ? 1 : (t.firstOfUnit(macRef.table, unit) ?? 1);
    mac = macText(t.cell(macRef, unit, number));
  }
  const model = read(profile.identity.model);
  return {
    label: read(profile.identity.name),
    oem: read(profile.identity.manufacturer),
    model,
    modelNumber: model,
    serialNumber: read(profile.identity.serial),
    hardwareVersion: read(profile.identity.hardware),
    firmwareVersion: read(profile.identity.firmware),
    apiVersion: profile.mibs.join(", "),
    macAddress: mac,
    ipAddress: "",
  };
}

/** The on/off state of an outlet: `def`'s cell, else its fallback's; undefined when none says. */
function stateOf(t: Tables, def: StateDef, unit: number, number: number): "on" | "off" | undefined {
  const raw = t.cell(def, unit, number);
  if (typeof raw === "number" && !absent(t, def, raw, unit, number)) {
    const state = def.values[raw];
    if (state !== undefined) return state;
  }
  return def.fallback === undefined ? undefined : stateOf(t, def.fallback, unit, number);
}

/** A unit as its outlets are read: its number, whether it switches, its entities' keys (each key by itself). */
interface OfUnit {
  readonly unit: number;
  readonly canSwitch: boolean;
  readonly entityKeys: ReadonlyMap<string, string>;
}

/** Longest RowPointer read, in characters (an OID of a table cell is far shorter). */
const MAX_POINTER_CHARS = 256;

/** The entity's number a `pointer` names: the OID under one of the targets, its unit and number. */
function pointed(
  oid: string,
  targets: Extract<FeedsFromDef, { pointer: CellRef }>["targets"],
  unit: number,
): string | undefined {
  for (const target of targets) {
    if (!oid.startsWith(`${target.oid}.`)) continue;
    const rest = oid.slice(target.oid.length + 1).split(".");
    if (rest.length !== 2 || rest.some((p) => !/^(0|[1-9][0-9]{0,3})$/.test(p))) return undefined;
    const [u, n] = rest.map(Number) as [number, number];
    return u === unit && validNumber(n) && n >= 1 ? `${target.prefix}${n - 1}` : undefined;
  }
  return undefined;
}

/** The number of the row of `match`'s table (of the unit) whose `match` column holds `id`. */
function matchedNumber(t: Tables, match: CellRef, id: string, unit: number): number | undefined {
  for (const row of t.rows(match.table).values()) {
    const cell = t.valueOf(match.table, row, match.column);
    if (!Buffer.isBuffer(cell) || decodeText(cell) !== id) continue;
    if (row.unit === unit && row.number >= 1) return row.number;
  }
  return undefined;
}

/** The key of the entity the outlet draws through, where the MIB says and the unit reports it. */
function feedsFromOf(t: Tables, profile: SnmpProfile, of: OfUnit, number: number): string | undefined {
  for (const def of profile.outlets.feedsFrom ?? []) {
    let key: string | undefined;
    if ("number" in def) {
      const n = t.cell(def.number, of.unit, number);
      if (typeof n === "number" && validNumber(n) && n >= 1) key = `${def.prefix}${n - 1}`;
    } else if ("pointer" in def) {
      const v = t.cell(def.pointer, of.unit, number);
      if (Buffer.isBuffer(v) && v.length <= MAX_POINTER_CHARS)
        key = pointed(v.toString("latin1"), def.targets, of.unit);
    } else {
      const v = t.cell(def.id, of.unit, number);
      const id = Buffer.isBuffer(v) ? decodeText(v) : "";
      const n = id === "" ? undefined : matchedNumber(t, def.match, id, of.unit);
      if (n !== undefined) key = `${def.prefix}${n - 1}`;
    }
    const reported = key === undefined ? undefined : of.entityKeys.get(key);
    if (reported !== undefined) return reported;
  }
  return undefined;
}

function outletOf(t: Tables, profile: SnmpProfile, of: OfUnit, number: number): Outlet {
  const { unit, canSwitch } = of;
  const def = profile.outlets;
  const index = number - 1;
  let label = text(t, def.label, unit, number);
  if (label === "" && def.label?.fallback !== undefined) label = text(t, def.label.fallback, unit, number);
  const name = def.name === undefined ? `Outlet ${number}` : text(t, def.name, unit, number);
  const state: OutletState = stateOf(t, def.state, unit, number) ?? "unknown";
  // A unit that cannot switch may not report states at all; a switched one should.
  if (canSwitch && t.cell(def.state, unit, number) === undefined)
    t.warnings.add(`${def.state.table}.${def.state.column}`, "an outlet without a state is shown as unknown");
  const rating = ratingOf(t, def.rating, unit, number);
  const feedsFrom = feedsFromOf(t, profile, of, number);
  return Object.freeze({
    index,
    name,
    label,
    displayName: label !== "" ? label : name !== "" ? name : `Outlet ${number}`,
    state,
    alarm: alarmOf(t, def.alarm, unit, number),
    onDelay: delay(t, def.delays?.on, unit, number),
    offDelay: delay(t, def.delays?.off, unit, number),
    rebootDelay: delay(t, def.delays?.reboot, unit, number),
    poaAction: null,
    measurements: measurements(t, def.measurements, unit, number),
    ...(rating === undefined ? {} : { ratedCurrent: rating }),
    ...(feedsFrom === undefined ? {} : { feedsFrom }),
  });
}

function entitiesOf(
  t: Tables,
  def: SnmpProfile["entities"][number],
  unit: number,
  unitCount: number,
): Entity[] {
  const out: Entity[] = [];
  const make = (number: number, entityNumber: number): Entity | null => {
    if (absentWhen(t, def.absentWhen, unit, number)) return null;
    const ms = measurements(t, def.measurements, unit, number);
    const alarm = alarmOf(t, def.alarm, unit, number);
    const rating = ratingOf(t, def.rating, unit, number);
    // Nothing the unit reports of it (every value absent or marked not there): no entity.
    if (ms.length === 0 && alarm === NO_ALARM && rating === undefined) return null;
    const key = `${def.prefix}${entityNumber - 1}`;
    const name = def.name === undefined ? "" : text(t, def.name, unit, number);
    const fallback = `${def.fallbackName}${def.prefix === "total" ? "" : ` ${entityNumber}`}`;
    return Object.freeze({
      key,
      name: name !== "" ? name : fallback,
      label: "",
      displayName: name !== "" ? name : fallback,
      alarm,
      measurements: ms,
      ...(rating === undefined ? {} : { ratedCurrent: rating }),
      ...(def.alarm?.reportsTrip === true && alarm !== NO_ALARM ? { reportsTrip: true as const } : {}),
    });
  };
  if (def.table === undefined) {
    if (unit !== 1 || unitCount > 1) return out;
    const e = make(1, 1);
    if (e !== null) out.push(e);
    return out;
  }
  const seen = new Set<number>();
  for (const row of t.rows(def.table).values()) {
    const n = row.number;
    if (row.unit !== unit) continue;
    if (def.where !== undefined) {
      const v = t.cell(def.where, unit, n);
      const match = typeof v === "number" && def.where.values.includes(v);
      if (match === (def.where.not === true)) continue;
    }
    const entityNumber = def.number === undefined ? n : t.partOf(def.table, def.number, row);
    if (!validNumber(entityNumber) || entityNumber < 1 || seen.has(entityNumber)) continue;
    seen.add(entityNumber);
    const e = make(n, entityNumber);
    if (e !== null) out.push(e);
  }
  return out;
}
