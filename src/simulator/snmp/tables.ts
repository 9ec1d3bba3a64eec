/**
 * The shapes every simulated SNMP unit answers in (tables of typed cells, scalars, write roles) and
 * the builder of a table: shared by the units of ./units.ts and the families in files of their own
 * (./families.ts).
 */
export type SimType = "Integer" | "OctetString" | "Gauge" | "Counter" | "IpAddress" | "OID" | "TimeTicks";

/** What a write to a column does. */
export type WriteRole = "control" | "name" | "reset" | "plain";

export interface SimColumn {
  readonly id: number;
  readonly type: SimType;
  readonly write?: WriteRole;
}

export type SimValue = number | string | Buffer;

export interface SimRow {
  readonly index: readonly number[];
  /** The outlet (1-based) a row of an outlet table belongs to. */
  readonly outlet?: number;
  readonly cells: ReadonlyMap<number, SimValue>;
}

export interface SimTable {
  /** Entry OID. */
  readonly entry: string;
  readonly indexLength: number;
  readonly columns: readonly SimColumn[];
  readonly rows: readonly SimRow[];
}

export interface SimScalar {
  readonly oid: string;
  readonly type: SimType;
  readonly value: SimValue;
  readonly write?: WriteRole;
}

export interface SimContent {
  readonly scalars: readonly SimScalar[];
  readonly tables: readonly SimTable[];
}

/** An outlet of a simulated unit, as a family's tables read it. */
export interface SimOutletView {
  readonly on: boolean;
  readonly name: string;
  /** Accrued energy in watt-hours. */
  readonly energyWh: number;
}

/** What a family simulated in a file of its own builds its tables from (SimUnit.view). */
export interface FamilyView {
  readonly outlets: readonly SimOutletView[];
  /** false: a model without outlet switching (UnitOptions.switched). */
  readonly switched: boolean;
  /** Outlet i's (0-based) current in tenths of amps now. */
  tenths(i: number): number;
  /** The sum of every outlet's tenths of amps. */
  totalTenths(): number;
  /** An outlet's name as served: text, or raw bytes in the bad-names hostile mode. */
  name(outlet: number, text: string): SimValue;
  /** sysDescr, sysObjectID, sysUpTime and sysName. */
  system(descr: string, objectId: string, name: string): SimScalar[];
  /** Units put in this one's place (SimUnit.replace): a family that serves it adds it to its serial. */
  readonly generation: number;
}

/** A switch an agent executed (a SET of an outlet's control object it accepted). */
export interface SnmpControl {
  /** Epoch ms (the unit's clock). */
  readonly time: number;
  /** 0-based outlet index. */
  readonly outlet: number;
  readonly action: "on" | "off" | "reboot";
}

export type Cell = readonly [number, SimType, SimValue, WriteRole?];

export class TableBuilder {
  readonly columns = new Map<number, SimColumn>();
  readonly rows: SimRow[] = [];
  constructor(
    readonly entry: string,
    readonly indexLength: number,
  ) {}
  row(index: readonly number[], cells: readonly Cell[], outlet?: number): this {
    const map = new Map<number, SimValue>();
    for (const [id, type, value, write] of cells) {
      if (!this.columns.has(id))
        this.columns.set(id, { id, type, ...(write === undefined ? {} : { write }) });
      map.set(id, value);
    }
    this.rows.push({ index, cells: map, ...(outlet === undefined ? {} : { outlet }) });
    return this;
  }
  done(): SimTable {
    return {
      entry: this.entry,
      indexLength: this.indexLength,
      columns: [...this.columns.values()].sort((a, b) => a.id - b.id),
      rows: this.rows,
    };
  }
}
