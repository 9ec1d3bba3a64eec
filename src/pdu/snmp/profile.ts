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
export type ColumnType = "Integer" | "OctetString" | "Gauge" | "Counter" | "Unsigned" | "IpAddress";

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

export type MeasurementDef = Source & {
  /** The model's measurement type (`current`, `realPower`, `energy`, ...), as for every family. */
  readonly type: string;
  /** Units the bridge publishes (`A`, `W`, `VA`, `V`, `kWh`, `%`, `°C`). */
  readonly units: string;
  /** Multiplier from the MIB's integer to `units` (tenths of amps: 0.1). */
  readonly scale: number;
  /** Decimal digits held in another cell (Raritan's `…SensorDecimalDigits`): value ÷ 10^digits, then `scale`. */
  readonly decimals?: CellRef;
  /** Values the MIB defines as "not supported" / "invalid": the measurement is then absent. */
  readonly invalid?: readonly number[];
};

/** One state of an enumeration that becomes an alarm. */
export interface AlarmState {
  /** The MIB's enumeration name (`nearOverload`, `tripped`, ...): the alarm's `state`. */
  readonly name: string;
  /** `warning` or `alarm` while raised; "" when normal. */
  readonly severity: "" | "warning" | "alarm";
  readonly raised: boolean;
}

export type AlarmDef = Source & {
  /** By the enumeration's integer; a value not listed is reported as `unknown(<n>)`, not raised. */
  readonly states: Readonly<Record<number, AlarmState>>;
};

/** A rated current (amps) in a cell: an integer times `scale`, or a DisplayString such as `16A`. */
export type RatingDef = Source & {
  readonly scale: number;
  readonly text?: true;
};

export interface OutletsDef {
  /** The table whose rows are the outlets (essential: a poll without it fails). */
  readonly table: string;
  /** The outlet's fixed name (Raritan's printed label, ServerTech's outlet ID); absent: `Outlet <n>`. */
  readonly name?: CellRef;
  /** The user-set name (what `outletLabel` writes). */
  readonly label?: CellRef;
  /** On/off: the cell and its enumeration. A value not listed is `unknown`. */
  readonly state: CellRef & { readonly values: Readonly<Record<number, "on" | "off">> };
  readonly measurements: readonly MeasurementDef[];
  readonly alarm?: AlarmDef;
  readonly rating?: RatingDef;
  /** Delays in seconds (power on, power off, reboot), where the MIB has them. */
  readonly delays?: { readonly on?: CellRef; readonly off?: CellRef; readonly reboot?: CellRef };
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
  /** Tried in order among the vendor's profiles: the first whose `probe` table answers a row wins. */
  readonly probe: string;
  readonly tables: readonly TableDef[];
  /** Scalars read with one GET (besides sysObjectID); by OID, with their type. */
  readonly scalars?: Readonly<Record<string, { readonly name: string; readonly type: ColumnType }>>;
  readonly identity: IdentityDef;
  readonly outlets: OutletsDef;
  readonly entities: readonly EntityDef[];
  /** Outlet switching; absent: the MIB has no control and every switching command is refused. */
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
