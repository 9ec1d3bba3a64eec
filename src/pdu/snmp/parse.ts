/**
 * SNMP walk results → the vendor-neutral snapshot, driven by a profile (./profile.ts). Pure: no I/O.
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
  type ParseWarning,
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
  type ColumnType,
  type FeedsFromDef,
  type IdentityRef,
  type MeasurementDef,
  type Part,
  type Presence,
  type RatingDef,
  type SnmpProfile,
  type Source,
  type StateDef,
  type TableDef,
} from "./profile.js";

/** A value as the transport hands it over: a number (integer types), bytes (strings), or null (an exception or another type). */
export type Cell = number | Buffer;

/** One varbind, reduced: its OID, the SNMP type name it came with, its value. */
export interface WalkedVarbind {
  readonly oid: string;
  readonly type: ColumnType | "Other";
  readonly value: Cell | null;
}

/** What one poll read: every walked varbind per table entry name, and the scalars by OID. */
export interface PollData {
  readonly tables: ReadonlyMap<string, readonly WalkedVarbind[]>;
  readonly scalars: ReadonlyMap<string, WalkedVarbind>;
}

/** Most warnings kept per snapshot (the last one says how many more there were). */
export const MAX_WARNINGS = 20;
/** Longest name kept, in characters. */
export const MAX_NAME_CHARS = 128;
/** Highest unit, outlet or entity number accepted from an agent. */
export const MAX_NUMBER = 1024;
/** Most outlets per device. */
export const MAX_OUTLETS = 512;

const NO_ALARM: Alarm = Object.freeze({ state: "none", severity: "", raised: false });

interface Row {
  readonly index: readonly number[];
  readonly cells: Map<string, Cell>;
}

/** A table's rows by key `unit:number` (or `unit:number:sensor`), first row wins. */
type Rows = Map<string, Row>;

class Warnings {
  readonly list: ParseWarning[] = [];
  #more = 0;
  readonly #seen = new Set<string>();
  add(path: string, problem: string): void {
    if (this.#seen.has(path)) return;
    this.#seen.add(path);
    if (this.list.length < MAX_WARNINGS - 1) this.list.push(Object.freeze({ path, problem }));
    else this.#more++;
  }
  done(): readonly ParseWarning[] | undefined {
    if (this.#more > 0)
      this.list.push(Object.freeze({ path: "", problem: `${this.#more} more warnings not shown` }));
    return this.list.length === 0 ? undefined : Object.freeze(this.list);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** Bytes from an agent as a bounded, printable string: invalid UTF-8 and control characters become U+FFFD. */
export function decodeText(bytes: Buffer): string {
  const head = bytes.length > MAX_NAME_CHARS * 4 ? bytes.subarray(0, MAX_NAME_CHARS * 4) : bytes;
  // eslint-disable-next-line no-control-regex -- control characters are what it replaces
  const text = utf8.decode(head).replace(/[\u0000-\u001f\u007f-\u009f]/g, "\ufffd");
  const chars = [...text];
  return (chars.length > MAX_NAME_CHARS ? chars.slice(0, MAX_NAME_CHARS).join("") : text).trim();
}

/** Six bytes as `00:C0:B7:12:34:56`; other strings as text. */
function macText(cell: Cell | undefined): string {
  if (cell === undefined || typeof cell === "number") return "";
  if (cell.length === 6) return [...cell].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
  return decodeText(cell);
}

const NUMERIC: ReadonlySet<string> = new Set(["Integer", "Gauge", "Counter", "Unsigned"]);

function partValue(part: Part, index: readonly number[], cells: Map<string, Cell>): number | undefined {
  if ("constant" in part) return part.constant;
  if ("index" in part) return index[part.index];
  const v = cells.get(part.column);
  return typeof v === "number" ? v : undefined;
}

function validNumber(n: number | undefined): n is number {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= MAX_NUMBER;
}

/** The parts of the OID last read by {@link decimalParts}. */
const PARTS: number[] = [];

/**
 * Reads `oid` from `start` as dot-separated decimals into {@link PARTS}: false when a part is empty,
 * not a decimal, written with a leading zero or beyond 2^53 (such an OID takes the general path).
 */
function decimalParts(oid: string, start: number): boolean {
  PARTS.length = 0;
  let n = 0;
  let digits = 0;
  for (let i = start; i <= oid.length; i++) {
    const ch = i === oid.length ? 46 : oid.charCodeAt(i);
    if (ch === 46) {
      if (digits === 0 || !Number.isSafeInteger(n)) return false;
      PARTS.push(n);
      n = 0;
      digits = 0;
    } else if (ch < 48 || ch > 57 || (digits === 1 && n === 0)) {
      return false;
    } else {
      n = n * 10 + (ch - 48);
      digits++;
    }
  }
  return true;
}

function shapeProblem(table: TableDef): string {
  return `a row index of another shape than (${table.index.join(", ")}) was skipped`;
}

/**
 * Rows of one table from its walk. A varbind outside a known column, with another index length,
 * or of another type than the column's is skipped (one warning per column).
 */
function rowsOf(table: TableDef, varbinds: readonly WalkedVarbind[], warnings: Warnings): Rows {
  const byIndex = new Map<string, Row>();
  const prefix = `${table.oid}.`;
  const columns = new Map<number, [string, ColumnType]>();
  for (const [name, c] of Object.entries(table.columns)) columns.set(c.id, [name, c.type]);
  for (const vb of varbinds) {
    const oid = vb.oid;
    if (!oid.startsWith(prefix)) continue;
    let column: [string, ColumnType] | undefined;
    let index: number[] | null = null;
    let key: string;
    if (decimalParts(oid, prefix.length)) {
      // The usual OID: canonical decimals, parsed without splitting; the index key is its text.
      column = columns.get(PARTS[0]!);
      if (column === undefined) continue;
      if (PARTS.length - 1 !== table.index.length) {
        warnings.add(`${table.name}.${column[0]}`, shapeProblem(table));
        continue;
      }
      key = PARTS.length > 1 ? oid.slice(oid.indexOf(".", prefix.length) + 1) : "";
    } else {
      const parts = oid.slice(prefix.length).split(".");
      column = columns.get(Number(parts[0]));
      if (column === undefined) continue;
      index = parts.slice(1).map(Number);
      if (index.length !== table.index.length || index.some((n) => !Number.isSafeInteger(n) || n < 0)) {
        warnings.add(`${table.name}.${column[0]}`, shapeProblem(table));
        continue;
      }
      key = index.join(".");
    }
    const [name, type] = column;
    if (vb.value === null) continue; // noSuchInstance / noSuchObject / endOfMibView: a hole
    const numeric = NUMERIC.has(type);
    const text = type === "ObjectIdentifier" ? "ObjectIdentifier" : "OctetString";
    if (numeric !== (typeof vb.value === "number") || (!numeric && vb.type !== text)) {
      warnings.add(
        `${table.name}.${name}`,
        `a value of type ${vb.type} where the MIB has ${type} was left out`,
      );
      continue;
    }
    let row = byIndex.get(key);
    if (row === undefined) {
      row = { index: index ?? PARTS.slice(1), cells: new Map() };
      byIndex.set(key, row);
    }
    row.cells.set(name, vb.value);
  }
  const rows: Rows = new Map();
  for (const row of byIndex.values()) {
    const unit = table.unit === undefined ? 1 : partValue(table.unit, row.index, row.cells);
    let number = partValue(table.number, row.index, row.cells);
    if (table.sub !== undefined && validNumber(number)) {
      const sub = partValue(table.sub.part, row.index, row.cells);
      number =
        validNumber(sub) && sub >= 1 && number <= table.sub.span
          ? (sub - 1) * table.sub.span + number
          : undefined;
    }
    if (!validNumber(unit) || !validNumber(number)) {
      warnings.add(
        `${table.name}[${row.index.join(".")}]`,
        "a row without a usable unit or number was skipped",
      );
      continue;
    }
    let key = `${unit}:${number}`;
    if (table.sensor !== undefined) {
      const sensor = partValue(table.sensor, row.index, row.cells);
      if (sensor === undefined) continue;
      key += `:${sensor}`;
    }
    const first = rows.get(key);
    if (first === undefined) rows.set(key, row);
    else duplicate(table, first, row, unit, number, warnings);
  }
  return rows;
}

/**
 * Two rows of a table claiming one unit and number (two control rows for one outlet): the first
 * in the agent's order is used, and a warning names both rows (the poller logs it once per
 * instance).
 */
function duplicate(table: TableDef, kept: Row, other: Row, unit: number, number: number, w: Warnings): void {
  w.add(
    `${table.name}[${other.index.join(".")}]`,
    `rows ${kept.index.join(".")} and ${other.index.join(".")} both claim number ${number} of unit ${unit}: row ${kept.index.join(".")} is used, row ${other.index.join(".")} ignored`,
  );
}

/** The parsed tables of one poll, and lookups into them. */
class Tables {
  readonly #rows = new Map<string, Rows>();
  /** Tables of one row per unit (their number a constant): the constant, by table name. */
  readonly #perUnit = new Map<string, number>();
  constructor(
    readonly profile: SnmpProfile,
    readonly data: PollData,
    readonly warnings: Warnings,
  ) {
    for (const t of profile.tables) {
      this.#rows.set(t.name, rowsOf(t, data.tables.get(t.name) ?? [], warnings));
      if ("constant" in t.number) this.#perUnit.set(t.name, t.number.constant);
    }
  }
  rows(table: string): Rows {
    return this.#rows.get(table) ?? new Map<string, Row>();
  }
  /**
   * The cell of `ref` for the row (unit, number); undefined when absent. A table of one row per
   * unit answers for every row of its unit (an Eaton unit's communicationStatus for its outlets).
   */
  cell(ref: Source, unit: number, number: number): Cell | undefined {
    if (isScalar(ref)) return this.data.scalars.get(ref.scalar)?.value ?? undefined;
    number = this.#perUnit.get(ref.table) ?? number;
    const key = ref.sensorType === undefined ? `${unit}:${number}` : `${unit}:${number}:${ref.sensorType}`;
    return this.rows(ref.table).get(key)?.cells.get(ref.column);
  }
  /** The first row (lowest number) of `unit` in `table`. */
  firstOfUnit(table: string, unit: number): number | undefined {
    let best: number | undefined;
    for (const key of this.rows(table).keys()) {
      const [u, n] = key.split(":").map(Number);
      if (u === unit && n !== undefined && (best === undefined || n < best)) best = n;
    }
    return best;
  }
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
  if (isScalar(def)) return undefined;
  const column = t.profile.tables.find((x) => x.name === def.table)?.columns[def.column];
  return column !== undefined && UNSIGNED_32.has(column.type) ? 2 ** 32 * step * def.scale : undefined;
}

function measurements(
  t: Tables,
  defs: readonly MeasurementDef[],
  unit: number,
  number: number,
): readonly Measurement[] {
  const out: Measurement[] = [];
  for (const def of defs) {
    const m = measurement(t, def, unit, number);
    if (m !== null) out.push(m);
  }
  out.sort((a, b) =>
    a.type.toLowerCase() < b.type.toLowerCase() ? -1 : a.type.toLowerCase() > b.type.toLowerCase() ? 1 : 0,
  );
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
  const rows = t.rows(table);
  for (const [index, number] of outletNumbers) {
    const row = rows.get(`${unit}:${number}`);
    if (row !== undefined) out.set(index, row.index);
  }
  return out;
}

/**
 * The outlet rows of a poll (keys `unit:number`, in the agent's order): the rows of the outlets
 * table, then those of its `alsoFrom` tables that it lacks.
 */
function outletKeys(t: Tables, profile: SnmpProfile): { keys(): Iterable<string> } {
  const main = t.rows(profile.outlets.table);
  const also = profile.outlets.alsoFrom;
  if (also === undefined) return main;
  const keys = new Set(main.keys());
  for (const table of also) for (const key of t.rows(table).keys()) keys.add(key);
  return keys;
}

/** The unit numbers of a poll: those of the outlet rows, and (metered-only units) those `withoutOutlets` finds. */
function unitsOf(t: Tables, profile: SnmpProfile, keys: { keys(): Iterable<string> }): number[] {
  const units = new Set<number>();
  for (const key of keys.keys()) units.add(Number(key.slice(0, key.indexOf(":"))));
  const alone = profile.outlets.withoutOutlets?.units;
  if (alone !== undefined) {
    if (isScalar(alone)) {
      if (t.cell(alone, 1, 1) !== undefined) units.add(1);
    } else {
      for (const [key, row] of t.rows(alone.table))
        if (row.cells.has(alone.column)) units.add(Number(key.slice(0, key.indexOf(":"))));
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
  for (const [key, row] of t.rows(control.table)) {
    if (need !== undefined) {
      const bits = row.cells.get(need.column);
      const octet = Buffer.isBuffer(bits) ? bits[need.bit >> 3] : undefined;
      if (octet === undefined || (octet & (0x80 >> (need.bit & 7))) === 0) continue;
    }
    units.add(Number(key.slice(0, key.indexOf(":"))));
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
  const keys = outletKeys(t, profile);
  const units = unitsOf(t, profile, keys);
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
    const { outlets, numbers } = unitOutlets(t, profile, { unit, canSwitch, entityKeys }, keys, warnings);

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
  rowKeys: { keys(): Iterable<string> },
  warnings: Warnings,
): { outlets: Outlet[]; numbers: Map<number, number> } {
  const unit = of.unit;
  const numbers = new Map<number, number>(); // outlet index → MIB number
  const outlets: Outlet[] = [];
  for (const key of rowKeys.keys()) {
    const [u, n] = key.split(":").map(Number);
    if (u !== unit || n === undefined || n < 1) continue;
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
  for (const [key, row] of t.rows(match.table)) {
    const cell = row.cells.get(match.column);
    if (!Buffer.isBuffer(cell) || decodeText(cell) !== id) continue;
    const [u, n] = key.split(":").map(Number);
    if (u === unit && n !== undefined && n >= 1) return n;
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
  for (const [key, row] of t.rows(def.table)) {
    const [u, n] = key.split(":").map(Number);
    if (u !== unit || n === undefined) continue;
    if (def.where !== undefined) {
      const v = t.cell(def.where, unit, n);
      const match = typeof v === "number" && def.where.values.includes(v);
      if (match === (def.where.not === true)) continue;
    }
    const entityNumber = def.number === undefined ? n : partValue(def.number, row.index, row.cells);
    if (!validNumber(entityNumber) || entityNumber < 1 || seen.has(entityNumber)) continue;
    seen.add(entityNumber);
    const e = make(n, entityNumber);
    if (e !== null) out.push(e);
  }
  return out;
}
