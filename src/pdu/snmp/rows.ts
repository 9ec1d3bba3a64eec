/**
 * A poll's walked tables as rows, and the cell lookups parse.ts maps them into the model with. Pure:
 * no I/O.
 *
 * A varbind outside a known column, with another index length, or of another type than the
 * column's is skipped (one warning per column); a row without a usable unit or number too. What
 * depends only on the profile (each table's columns by sub-identifier and by name, each cell
 * reference's table and column) is worked out once per profile and kept beside it, so that a poll
 * spends its time on its own varbinds: a row holds its cells by column position, and a table's rows
 * are found by a number made of the row's unit, number and sensor type.
 */
import {
  isScalar,
  type CellRef,
  type ColumnType,
  type Part,
  type SnmpProfile,
  type Source,
  type TableDef,
} from "./profile.js";
import type { ParseWarning } from "../model.js";

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
/** Highest unit, outlet or entity number accepted from an agent. */
export const MAX_NUMBER = 1024;

export class Warnings {
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

/** One row of a table: its index, its unit and number (each 0 to {@link MAX_NUMBER}), its cells by column position. */
export interface Row {
  readonly index: readonly number[];
  readonly unit: number;
  readonly number: number;
  readonly cells: readonly (Cell | undefined)[];
}

/** A table's rows by {@link rowKey}, in the agent's order; the first row of a key wins. */
export type Rows = ReadonlyMap<number, Row>;

/** Keys: unit × SPAN + number (both at most MAX_NUMBER), plus sensor × SPAN² in a table of sensors. */
const SPAN = MAX_NUMBER + 1;
const SENSOR_SPAN = SPAN * SPAN;
/** Largest sensor type (either sign) a row may have: its key stays an exact integer. */
const MAX_SENSOR = 2 ** 32;

function rowKey(unit: number, number: number): number {
  return unit * SPAN + number;
}

/** A column of a table as a poll reads it. */
interface Column {
  readonly name: string;
  readonly type: ColumnType;
  readonly position: number;
  readonly numeric: boolean;
  /** The varbind type a value of a non-numeric column must come with. */
  readonly wire: "ObjectIdentifier" | "OctetString";
}

/** A table as a poll reads it: its columns by sub-identifier and by name. */
interface TablePlan {
  readonly def: TableDef;
  /** The entry's OID and a dot. */
  readonly prefix: string;
  readonly byId: ReadonlyMap<number, Column>;
  readonly byName: ReadonlyMap<string, Column>;
  readonly width: number;
}

/**
 * A reference resolved: a scalar's OID, or a cell's table position, column position, the fixed
 * number of a table of one row per unit and the sensor type.
 */
type Resolved =
  | { readonly scalar: string }
  | {
      readonly scalar: undefined;
      readonly table: number;
      readonly column: number;
      readonly perUnit: number | undefined;
      readonly sensor: number;
    };

/** A profile as a poll reads it; made once per profile. */
interface ProfilePlan {
  readonly tables: readonly TablePlan[];
  /** Table positions by entry name (the last of a name, as a name's lookups always found). */
  readonly byName: ReadonlyMap<string, number>;
  /** Cell references resolved (null: the profile has no such cell), by the reference object. */
  readonly refs: WeakMap<object, Resolved | null>;
}

const NUMERIC: ReadonlySet<string> = new Set(["Integer", "Gauge", "Counter", "Unsigned"]);

function tablePlan(def: TableDef): TablePlan {
  const byId = new Map<number, Column>();
  const byName = new Map<string, Column>();
  Object.entries(def.columns).forEach(([name, c], position) => {
    const column: Column = {
      name,
      type: c.type,
      position,
      numeric: NUMERIC.has(c.type),
      wire: c.type === "ObjectIdentifier" ? "ObjectIdentifier" : "OctetString",
    };
    byId.set(c.id, column);
    byName.set(name, column);
  });
  return { def, prefix: `${def.oid}.`, byId, byName, width: byName.size };
}

const plans = new WeakMap<SnmpProfile, ProfilePlan>();

function planOf(profile: SnmpProfile): ProfilePlan {
  let plan = plans.get(profile);
  if (plan === undefined) {
    const byName = new Map<string, number>();
    profile.tables.forEach((t, i) => byName.set(t.name, i));
    plan = { tables: profile.tables.map(tablePlan), byName, refs: new WeakMap() };
    plans.set(profile, plan);
  }
  return plan;
}

/** `ref`'s scalar, or its table and column in `plan`; null where the profile has none (a lookup that finds nothing). */
function resolve(plan: ProfilePlan, ref: Source): Resolved | null {
  let r = plan.refs.get(ref);
  if (r !== undefined) return r;
  r = isScalar(ref) ? { scalar: ref.scalar } : resolveCell(plan, ref);
  plan.refs.set(ref, r);
  return r;
}

function resolveCell(plan: ProfilePlan, ref: CellRef): Resolved | null {
  const table = plan.byName.get(ref.table);
  const t = table === undefined ? undefined : plan.tables[table];
  const column = t?.byName.get(ref.column);
  // A sensor type names a row only in a table of sensors, and a row there only with one.
  if (table !== undefined && t !== undefined && column !== undefined) {
    if ((t.def.sensor !== undefined) === (ref.sensorType !== undefined)) {
      const number = t.def.number;
      return {
        scalar: undefined,
        table,
        column: column.position,
        perUnit: "constant" in number ? number.constant : undefined,
        sensor: ref.sensorType ?? 0,
      };
    }
  }
  return null;
}

function validNumber(n: number | undefined): n is number {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= MAX_NUMBER;
}

function partValue(
  plan: TablePlan,
  part: Part,
  index: readonly number[],
  cells: readonly (Cell | undefined)[],
): number | undefined {
  if ("constant" in part) return part.constant;
  if ("index" in part) return index[part.index];
  const column = plan.byName.get(part.column);
  const v = column === undefined ? undefined : cells[column.position];
  return typeof v === "number" ? v : undefined;
}

/** The parts of the OID last read by {@link decimalParts} (its first `count`). */
const PARTS: number[] = [];

/**
 * Reads `oid` from `start` as dot-separated decimals into {@link PARTS}: their count, or -1 when a
 * part is empty, not a decimal, written with a leading zero or beyond 2^53 (such an OID takes the
 * general path).
 */
function decimalParts(oid: string, start: number): number {
  let count = 0;
  let n = 0;
  let digits = 0;
  for (let i = start; i <= oid.length; i++) {
    const ch = i === oid.length ? 46 : oid.charCodeAt(i);
    if (ch === 46) {
      if (digits === 0 || !Number.isSafeInteger(n)) return -1;
      PARTS[count++] = n;
      n = 0;
      digits = 0;
    } else if (ch < 48 || ch > 57 || (digits === 1 && n === 0)) {
      return -1;
    } else {
      n = n * 10 + (ch - 48);
      digits++;
    }
  }
  return count;
}

/** Whether `index` is the first `count` PARTS after the column. */
function isParts(index: readonly number[], count: number): boolean {
  if (index.length !== count - 1) return false;
  for (let i = 0; i < index.length; i++) if (index[i] !== PARTS[i + 1]) return false;
  return true;
}

function shapeProblem(table: TableDef): string {
  return `a row index of another shape than (${table.index.join(", ")}) was skipped`;
}

/** A row while its table is read: its unit and number are set once every cell is in. */
interface Building {
  readonly index: readonly number[];
  readonly cells: (Cell | undefined)[];
  /** Its place in the table's order. */
  readonly at: number;
  unit: number;
  number: number;
}

/**
 * The rows of one table's walk, by index, in the agent's order. Each column's rows mostly come in
 * the order of the first column's, so a row is looked for at the place after the last one found
 * before its index text is made.
 */
function cellsOf(plan: TablePlan, varbinds: readonly WalkedVarbind[], warnings: Warnings): Building[] {
  const table = plan.def;
  const prefix = plan.prefix;
  const byIndex = new Map<string, Building>();
  const order: Building[] = [];
  let next = 0;
  for (const vb of varbinds) {
    const oid = vb.oid;
    // lastIndexOf(…, 0): startsWith's test, which V8 runs several times slower.
    if (oid.lastIndexOf(prefix, 0) !== 0) continue;
    let column: Column | undefined;
    let index: number[] | null = null;
    const count = decimalParts(oid, prefix.length);
    if (count > 0) {
      // The usual OID: canonical decimals, parsed without splitting.
      column = plan.byId.get(PARTS[0]!);
      if (column === undefined) continue;
      if (count - 1 !== table.index.length) {
        warnings.add(`${table.name}.${column.name}`, shapeProblem(table));
        continue;
      }
    } else {
      const parts = oid.slice(prefix.length).split(".");
      column = plan.byId.get(Number(parts[0]));
      if (column === undefined) continue;
      index = parts.slice(1).map(Number);
      if (index.length !== table.index.length || index.some((n) => !Number.isSafeInteger(n) || n < 0)) {
        warnings.add(`${table.name}.${column.name}`, shapeProblem(table));
        continue;
      }
    }
    if (vb.value === null) continue; // noSuchInstance / noSuchObject / endOfMibView: a hole
    if (column.numeric !== (typeof vb.value === "number") || (!column.numeric && vb.type !== column.wire)) {
      warnings.add(
        `${table.name}.${column.name}`,
        `a value of type ${vb.type} where the MIB has ${column.type} was left out`,
      );
      continue;
    }
    let row =
      index === null && next < order.length && isParts(order[next]!.index, count) ? order[next] : undefined;
    if (row === undefined) {
      // The index as text, canonical decimals either way: the key of its row.
      const key =
        index !== null ? index.join(".") : count > 1 ? oid.slice(oid.indexOf(".", prefix.length) + 1) : "";
      row = byIndex.get(key);
      if (row === undefined) {
        const cells = new Array<Cell | undefined>(plan.width);
        row = { index: index ?? PARTS.slice(1, count), cells, at: order.length, unit: 0, number: 0 };
        byIndex.set(key, row);
        order.push(row);
      }
    }
    next = row.at + 1;
    row.cells[column.position] = vb.value;
  }
  return order;
}

/**
 * Rows of one table from its walk, by key. A row whose unit or number is not usable is skipped
 * (one warning), and one without a sensor type in a table of sensors silently; of two rows of one
 * key the first is kept (a warning names both).
 */
function rowsOf(plan: TablePlan, varbinds: readonly WalkedVarbind[], warnings: Warnings): Map<number, Row> {
  const table = plan.def;
  const rows = new Map<number, Row>();
  for (const row of cellsOf(plan, varbinds, warnings)) {
    const unit = table.unit === undefined ? 1 : partValue(plan, table.unit, row.index, row.cells);
    let number = partValue(plan, table.number, row.index, row.cells);
    if (table.sub !== undefined && validNumber(number)) {
      const sub = partValue(plan, table.sub.part, row.index, row.cells);
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
    row.unit = unit;
    row.number = number;
    let key = rowKey(unit, number);
    if (table.sensor !== undefined) {
      const sensor = partValue(plan, table.sensor, row.index, row.cells);
      // A sensor type no profile could name (beyond ±2^32) is no row either: its key would not be exact.
      if (sensor === undefined || !Number.isInteger(sensor) || Math.abs(sensor) > MAX_SENSOR) continue;
      key += sensor * SENSOR_SPAN;
    }
    const first = rows.get(key);
    if (first === undefined) rows.set(key, row);
    else duplicate(table, first, row, warnings);
  }
  return rows;
}

/**
 * Two rows of a table claiming one unit and number (two control rows for one outlet): the first
 * in the agent's order is used, and a warning names both rows (the poller logs it once per
 * instance).
 */
function duplicate(table: TableDef, kept: Row, other: Row, w: Warnings): void {
  w.add(
    `${table.name}[${other.index.join(".")}]`,
    `rows ${kept.index.join(".")} and ${other.index.join(".")} both claim number ${other.number} of unit ${other.unit}: row ${kept.index.join(".")} is used, row ${other.index.join(".")} ignored`,
  );
}

const NO_ROWS: Rows = new Map<number, Row>();

/** The parsed tables of one poll, and lookups into them. */
export class Tables {
  readonly #plan: ProfilePlan;
  readonly #rows: readonly Rows[];
  constructor(
    readonly profile: SnmpProfile,
    readonly data: PollData,
    readonly warnings: Warnings,
  ) {
    this.#plan = planOf(profile);
    this.#rows = this.#plan.tables.map((t) => rowsOf(t, data.tables.get(t.def.name) ?? [], warnings));
  }
  /** The rows of `table` (by entry name), by key in the agent's order. */
  rows(table: string): Rows {
    const i = this.#plan.byName.get(table);
    return i === undefined ? NO_ROWS : (this.#rows[i] ?? NO_ROWS);
  }
  /** The row (unit, number) of a table without sensors. */
  row(table: string, unit: number, number: number): Row | undefined {
    const i = this.#plan.byName.get(table);
    if (i === undefined || this.#plan.tables[i]?.def.sensor !== undefined) return undefined;
    return validNumber(unit) && validNumber(number) ? this.#rows[i]?.get(rowKey(unit, number)) : undefined;
  }
  /** The cell of `row` (a row of `table`) in `column`, by names. */
  valueOf(table: string, row: Row, column: string): Cell | undefined {
    const i = this.#plan.byName.get(table);
    const c = i === undefined ? undefined : this.#plan.tables[i]?.byName.get(column);
    return c === undefined ? undefined : row.cells[c.position];
  }
  /** `part` of `row` (a row of `table`): an index position, a column or a constant. */
  partOf(table: string, part: Part, row: Row): number | undefined {
    const i = this.#plan.byName.get(table);
    const plan = i === undefined ? undefined : this.#plan.tables[i];
    if (plan === undefined) return "constant" in part ? part.constant : undefined;
    return partValue(plan, part, row.index, row.cells);
  }
  /** The SNMP type of a cell reference's column (undefined for a scalar, or one the profile lacks). */
  columnType(ref: Source): ColumnType | undefined {
    if (isScalar(ref)) return undefined;
    const i = this.#plan.byName.get(ref.table);
    return i === undefined ? undefined : this.#plan.tables[i]?.byName.get(ref.column)?.type;
  }
  /**
   * The cell of `ref` for the row (unit, number); undefined when absent. A table of one row per
   * unit answers for every row of its unit (an Eaton unit's communicationStatus for its outlets).
   */
  cell(ref: Source, unit: number, number: number): Cell | undefined {
    const r = resolve(this.#plan, ref);
    if (r === null) return undefined;
    if (r.scalar !== undefined) return this.data.scalars.get(r.scalar)?.value ?? undefined;
    const n = r.perUnit ?? number;
    if (!validNumber(unit) || !validNumber(n)) return undefined;
    return this.#rows[r.table]?.get(rowKey(unit, n) + r.sensor * SENSOR_SPAN)?.cells[r.column];
  }
  /** The first row (lowest number) of `unit` in `table`. */
  firstOfUnit(table: string, unit: number): number | undefined {
    let best: number | undefined;
    for (const row of this.rows(table).values())
      if (row.unit === unit && (best === undefined || row.number < best)) best = row.number;
    return best;
  }
}
