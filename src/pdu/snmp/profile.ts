/**
 * What an SNMP PDU family is, as data: the vendor MIB's tables the bridge walks (entry OIDs, index
 * structure, column numbers and SNMP types) and how their cells become the vendor-neutral snapshot
 * (devices, outlets, entities, measurements with scale and units, alarms from enumerations, ratings),
 * plus the writes the MIB allows (outlet switching, outlet names). One file per family under
 * ./profiles/; docs/snmp.md has the recipe for adding one.
 *
 * Every OID, type, scale and enumeration in a profile comes from the vendor's MIB text; the profile
 * names the MIB object in a comment or in the `name` fields.
 */

/** The SNMP type of a column as the agent sends it (and as a SET must send it). */
export type ColumnType =
  "Integer" | "OctetString" | "Gauge" | "Counter" | "Unsigned" | "IpAddress" | "ObjectIdentifier";

export interface ColumnDef {
  /** Sub-identifier under the table's entry OID. */
  readonly id: number;
  readonly type: ColumnType;
  /** read-write in the MIB. */
  readonly writable?: true;
}

/**
 * Where a row's unit, number, sub-number or sensor type comes from: a position in the row's index
 * (0-based), or a column of the row (APC's tables carry `Module` and `Number` columns).
 */
export type Part =
  | { readonly index: number }
  | { readonly column: string }
  /** Every row has this value (a table with one row per unit). */
  | { readonly constant: number };

export interface TableDef {
  /** The MIB name of the table's entry (`rPDU2OutletSwitchedStatusEntry`). */
  readonly name: string;
  /** OID of the entry (the table OID plus `.1`). */
  readonly oid: string;
  /** MIB names of the index objects, in index order (each one sub-identifier: every index here is an integer). */
  readonly index: readonly string[];
  /** Columns read, by MIB name. */
  readonly columns: Readonly<Record<string, ColumnDef>>;
  /** The unit (a daisy-chained PDU) a row belongs to; absent: every row is of the one unit (1). */
  readonly unit?: Part;
  /** The row's number (outlet number, phase number, ...); 1-based as in the MIB. */
  readonly number: Part;
  /**
   * A second level above the number (ServerTech's input cord): the row's model number is then
   * (sub − 1) × `subSpan` + number, so that the numbers of every cord of a unit stay distinct.
   */
  readonly sub?: { readonly part: Part; readonly span: number };
  /** The sensor type of a row, for tables with one row per sensor (Raritan's measurement tables). */
  readonly sensor?: Part;
  /**
   * The table says how the unit is built (which bank an outlet hangs on), which does not change
   * while it runs: walked at the driver's first poll, after a failed poll and every
   * `STATIC_TABLE_POLLS`th poll (driver.ts), its rows kept in between.
   */
  readonly static?: true;
}

/** A cell of a table: the table (by its entry's MIB name) and the column (by its MIB name). */
export interface CellRef {
  readonly table: string;
  readonly column: string;
  /** For tables with a `sensor` part: which sensor type's row. */
  readonly sensorType?: number;
}

/** A scalar (its instance OID, `….0`), declared in the profile's `scalars`. */
export interface ScalarRef {
  readonly scalar: string;
}

/** Where a value comes from: a cell of the row, or a scalar (entities of a table-less unit). */
export type Source = CellRef | ScalarRef;

/**
 * A cell of the same row (the same unit and number), or a scalar, whose listed values say that
 * something is not there: INTEGER values (a sensor's status `notInstalled`, `notPresent`,
 * `unavailable`, a probe type `notInstalled`) or texts of a DisplayString (PDU-MIB's
 * `outletEnergySupport` "No").
 */
export type AbsentWhen = Source & { readonly values: readonly (number | string)[] };

/**
 * How the MIB marks a value as not there, as a profile declares it. A value so marked is absent
 * from the snapshot (never a number, never zero), silently: it is what the unit reports.
 */
export interface Presence {
  /** Values of the cell itself that mean "not there" (the -1 "not supported" of PowerNet-MIB). */
  readonly absentIf?: readonly number[];
  /**
   * Every value of the cell below this one means "not there" (EATON-EPDU-MIB and Sentry3-MIB: "a
   * negative value indicates that this object is not available": 0).
   */
  readonly absentBelow?: number;
  /** Other cells of the row whose listed values mean "not there" (a status or type column). */
  readonly absentWhen?: readonly AbsentWhen[];
}

export type MeasurementDef = Source &
  Presence & {
    /** The model's measurement type (`current`, `realPower`, `energy`, ...), as for every family. */
    readonly type: string;
    /** Units the bridge publishes (`A`, `W`, `VA`, `V`, `kWh`, `%`, `°C`). */
    readonly units: string;
    /** Multiplier from the MIB's integer to `units` (tenths of amps: 0.1). */
    readonly scale: number;
    /** Decimal digits held in another cell (Raritan's `…SensorDecimalDigits`): value ÷ 10^digits, then `scale`. */
    readonly decimals?: CellRef;
  };

/** One state of an enumeration that becomes an alarm. */
export interface AlarmState {
  /** The MIB's enumeration name (`nearOverload`, `tripped`, ...): the alarm's `state`. */
  readonly name: string;
  /** `warning` or `alarm` while raised; "" when normal. */
  readonly severity: "" | "warning" | "alarm";
  readonly raised: boolean;
}

/** An alarm from an enumeration; a value marked absent (`Presence`) is no alarm at all. */
export type AlarmDef = Source &
  Presence & {
    /** By the enumeration's integer; a value not listed is reported as `unknown(<n>)`, not raised. */
    readonly states: Readonly<Record<number, AlarmState>>;
    /**
     * The enumeration is a breaker's own trip state (a trip sensor, a breaker status): an entity
     * whose value is there carries `reportsTrip`, and no trip is inferred for it.
     */
    readonly reportsTrip?: true;
  };

/** A rated current (amps) in a cell: an integer times `scale`, or a DisplayString such as `16A`. */
export type RatingDef = Source &
  Presence & {
    readonly scale: number;
    readonly text?: true;
  };

/**
 * An outlet's on/off state: the cell and its enumeration (a value not listed, or marked absent, is
 * `unknown`); `fallback` is read where this cell gives no state (a Raritan unit without switching
 * reports the state through its outlets' `onOff` sensors).
 */
export type StateDef = CellRef &
  Presence & {
    readonly values: Readonly<Record<number, "on" | "off">>;
    readonly fallback?: StateDef;
  };

/**
 * Where the MIB says which entity of the unit an outlet draws through (`Outlet.feedsFrom`), one of:
 * - `number`: a cell holding the entity's number (APC's outlet bank): the key `<prefix><n−1>`;
 * - `pointer`: a RowPointer cell (PDU2-MIB's outletPowerSource) holding the OID of a cell of the
 *   entity's row: the first target whose column OID it lies under, the row's last index the
 *   entity's number and the one before it the unit's;
 * - `id`: a cell holding the entity's ID string (Sentry4's st4OutletPhaseID), matched against the
 *   `match` column of the entity table's rows of the unit: the matching row's number.
 * The key found counts only when the unit reports an entity of that key (a number or ID naming
 * nothing the unit reports is no `feedsFrom`).
 */
export type FeedsFromDef =
  | { readonly number: CellRef; readonly prefix: string }
  | {
      readonly pointer: CellRef;
      readonly targets: readonly { readonly oid: string; readonly prefix: string }[];
    }
  | { readonly id: CellRef; readonly match: CellRef; readonly prefix: string };

export interface OutletsDef {
  /** The table whose rows are the outlets (essential unless `withoutOutlets` says how else a unit shows). */
  readonly table: string;
  /**
   * Tables whose rows are outlets too (an AP88xx has metered outlets and no switched outlet table):
   * an outlet is a row of `table` or of one of these, by its unit and number.
   */
  readonly alsoFrom?: readonly string[];
  /**
   * The family has models without any outlet row (an AP7853 has no outlet status table): a unit is
   * then found by `units` (a table whose rows are the units, or a scalar such a unit answers), is
   * polled for its identity and entities, and has no outlets. Absent: a poll whose outlet tables
   * answer no row fails naming them.
   */
  readonly withoutOutlets?: { readonly units: Source };
  /** The outlet's fixed name (Raritan's printed label, ServerTech's outlet ID); absent: `Outlet <n>`. */
  readonly name?: CellRef;
  /** The user-set name (what `outletLabel` writes); `fallback` where this cell is absent. */
  readonly label?: CellRef & { readonly fallback?: CellRef };
  /** On/off (see {@link StateDef}). */
  readonly state: StateDef;
  readonly measurements: readonly MeasurementDef[];
  readonly alarm?: AlarmDef;
  readonly rating?: RatingDef;
  /** Delays in seconds (power on, power off, reboot), where the MIB has them. */
  readonly delays?: { readonly on?: CellRef; readonly off?: CellRef; readonly reboot?: CellRef };
  /** The entity each outlet draws through, tried in order (see {@link FeedsFromDef}). */
  readonly feedsFrom?: readonly FeedsFromDef[];
}

export interface EntityDef {
  /** Key prefix: the entity of number n is `<prefix><n−1>` (`phase0`, `bank1`, `breaker0`, `total0`). */
  readonly prefix: string;
  /** Rows of this table are the entities; absent: one entity per unit from scalars (a single-unit agent). */
  readonly table?: string;
  /** The entity's number, when not the table's own `number`. */
  readonly number?: Part;
  readonly name?: CellRef;
  /** Name when the MIB has none: `<fallback> <n>` (`Phase 1`). */
  readonly fallbackName: string;
  readonly measurements: readonly MeasurementDef[];
  readonly alarm?: AlarmDef;
  readonly rating?: RatingDef;
  /** Rows to keep: a cell's value must be one of these (APC's rPDULoadStatusTable mixes phases and banks). */
  readonly where?: CellRef & { readonly values: readonly number[]; readonly not?: true };
  /** The whole entity is not there when one of these cells holds one of its values (a probe not installed). */
  readonly absentWhen?: readonly AbsentWhen[];
}

/** A scalar or a cell of the unit's row in an identity table. */
export type IdentityRef = Source;

export interface IdentityDef {
  readonly serial?: IdentityRef;
  readonly model?: IdentityRef;
  readonly name?: IdentityRef;
  readonly firmware?: IdentityRef;
  readonly hardware?: IdentityRef;
  readonly mac?: IdentityRef;
  readonly manufacturer?: IdentityRef;
}

/** A write to one outlet's cell: an INTEGER command. */
export interface OutletCommandDef extends CellRef {
  readonly on: number;
  readonly off: number;
  readonly reboot: number;
  /**
   * Columns of the same table for actions that have an object of their own (EATON-EPDU-MIB's
   * outletControlOnCmd, …OffCmd, …RebootCmd); an action not listed writes `column`.
   */
  readonly columns?: { readonly on?: string; readonly off?: string; readonly reboot?: string };
  /**
   * A BITS cell of the control table's rows that says whether the outlet can switch at all
   * (Sentry3-MIB outletCapabilities powerControl(2): without it the actions "have no effect"): a
   * unit whose rows all lack the bit cannot switch. Bit n is octet n ÷ 8, mask 0x80 >> n mod 8.
   */
  readonly requires?: { readonly column: string; readonly bit: number };
}

export interface SnmpProfile {
  /** `Snmp.Profile` value (`apc-rpdu2`). */
  readonly id: string;
  /** Family name in messages and docs (`APC rPDU2 (AP8xxx)`). */
  readonly family: string;
  /** Home Assistant manufacturer. */
  readonly manufacturer: string;
  /** The MIB module(s) read. */
  readonly mibs: readonly string[];
  /** sysObjectID prefixes of the vendor (enterprise subtree or product OIDs). */
  readonly sysObjectIds: readonly string[];
  /**
   * Tried in order among the vendor's profiles: the first of whose `probe` tables one answers a
   * row wins (several where models of the family differ in the tables they have).
   */
  readonly probe: string | readonly string[];
  readonly tables: readonly TableDef[];
  /** Scalars read with one GET (besides sysObjectID); by OID, with their type. */
  readonly scalars?: Readonly<Record<string, { readonly name: string; readonly type: ColumnType }>>;
  readonly identity: IdentityDef;
  readonly outlets: OutletsDef;
  readonly entities: readonly EntityDef[];
  /**
   * Outlet switching; absent: the MIB has no control and every switching command is refused. A unit
   * whose control table answers no row (a metered or non-switched model) cannot switch either:
   * its devices' `canSwitchOutlets` is false and the command is refused naming the model.
   */
  readonly control?: OutletCommandDef;
  /** Outlet name writes; absent: refused. `maxLength` in bytes, from the MIB's SIZE. */
  readonly outletLabel?: CellRef & { readonly maxLength: number };
  /**
   * A per-outlet energy reset: SET `oid`.<the outlet's row index in the outlets table>[.`suffix`] to
   * the INTEGER `value`. Absent: the devices' `canResetOutletEnergy` is false (no reset button in
   * the console or Home Assistant) and the command is refused with `resetStatsRefusal`.
   */
  readonly resetEnergy?: {
    readonly name: string;
    readonly oid: string;
    readonly suffix: readonly number[];
    readonly value: number;
    /** The object's SNMP type when not INTEGER (EATON-EPDU-MIB's outletWh is an Unsigned32). */
    readonly type?: "Gauge";
  };
  /** Why a per-outlet statistics reset is refused (shown in the 409), when the MIB has none. */
  readonly resetStatsRefusal?: string;
}

/** `1.3.6.1` → [1, 3, 6, 1]. */
export function oidParts(oid: string): number[] {
  return oid.split(".").map(Number);
}

/** The table of a profile by its entry's MIB name (a programming error when missing). */
export function tableOf(profile: SnmpProfile, name: string): TableDef {
  const t = profile.tables.find((x) => x.name === name);
  if (t === undefined) throw new Error(`profile ${profile.id} has no table ${name}`);
  return t;
}

/** The column definition of a cell reference (a programming error when missing). */
export function isScalar(ref: Source): ref is ScalarRef {
  return "scalar" in ref;
}

export function columnOf(profile: SnmpProfile, ref: CellRef): ColumnDef {
  const c = tableOf(profile, ref.table).columns[ref.column];
  if (c === undefined)
    throw new Error(`profile ${profile.id}: table ${ref.table} has no column ${ref.column}`);
  return c;
}

/** Part of a row (unit, number, sub-number, sensor type) read from a column. */
function partColumn(part: Part | undefined): string | undefined {
  return part !== undefined && "column" in part ? part.column : undefined;
}

/** Every cell reference (`{ table, column }`) in a part of a profile, at any depth. */
function collectRefs(value: unknown, out: Set<string>): void {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const v of value as unknown[]) collectRefs(v, out);
    return;
  }
  const o = value as Record<string, unknown>;
  if (typeof o.table === "string" && typeof o.column === "string") out.add(`${o.table}\u0000${o.column}`);
  for (const v of Object.values(o)) collectRefs(v, out);
}

const readColumns = new WeakMap<SnmpProfile, ReadonlyMap<string, readonly number[]>>();

/**
 * The sub-identifiers of the columns of each table that a poll reads (by entry name, in the table's
 * column order): those the mapping refers to (identity, outlets, entities, parts of rows, the
 * control table's command column and the column it `requires`, names, delays), not the columns
 * only ever written (a second or third command column). A table none of whose columns is referred
 * to is read whole. Worked out once per profile.
 */
export function polledColumnIds(profile: SnmpProfile): ReadonlyMap<string, readonly number[]> {
  let byTable = readColumns.get(profile);
  if (byTable !== undefined) return byTable;
  const refs = new Set<string>();
  const { tables: _tables, ...mapping } = profile;
  collectRefs(mapping, refs);
  const need = profile.control?.requires;
  if (profile.control !== undefined && need !== undefined)
    refs.add(`${profile.control.table}\u0000${need.column}`);
  for (const e of profile.entities) {
    const c = partColumn(e.number);
    if (e.table !== undefined && c !== undefined) refs.add(`${e.table}\u0000${c}`);
  }
  const made = new Map<string, readonly number[]>();
  for (const t of profile.tables) {
    for (const c of [t.unit, t.number, t.sub?.part, t.sensor].map(partColumn))
      if (c !== undefined) refs.add(`${t.name}\u0000${c}`);
    const all = Object.entries(t.columns);
    const read = all.filter(([name]) => refs.has(`${t.name}\u0000${name}`));
    made.set(
      t.name,
      (read.length > 0 ? read : all).map(([, c]) => c.id),
    );
  }
  byTable = made;
  readColumns.set(profile, byTable);
  return byTable;
}
