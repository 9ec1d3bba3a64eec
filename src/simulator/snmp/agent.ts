/**
 * The built-in SNMP PDU simulator: an agent on net-snmp's agent side serving one simulated unit of a
 * profile (./units.ts) over UDP, with living values, writable control (a SET of the control object
 * switches the outlet, and the status tables follow), writable outlet names and, for Raritan PX2,
 * the energy reset. v2c with a read and a write community, and optionally an SNMPv3 user.
 *
 * Hostile modes, for tests of what the bridge does with a bad agent:
 * - `hang`: never answers.
 * - `wrong-types`: the outlet tables' numeric readings and states come as OCTET STRINGs.
 * - `missing-columns`: the outlet tables lack those columns altogether.
 * - `no-such-instance`: the unit's scalars (besides the system group) answer noSuchInstance, and
 *   every second outlet row has holes where its readings should be.
 * - `huge-tables`: 1500 outlets (the bridge keeps at most 512 per device).
 * - `bad-names`: outlet names that are not UTF-8 and hold control characters.
 * - `too-big`: answers tooBig to every GETBULK asking for more than 8 varbinds (columns ×
 *   repetitions), as an agent with a small message size; `too-big-always`: to every GETBULK.
 *   (`tooBigAbove` sets any other limit.)
 * - `duplicate-rows`: (apc-rpdu2, whose rows carry their outlet number in a column) an extra row
 *   of the outlet control table, after the others, claiming outlet 2 again.
 */
import { createSocket } from "node:dgram";
import snmp from "net-snmp";
import type { FleetMembership } from "../types.js";
import { familyChain } from "./families.js";
import { joinSnmpFleet } from "./fleet-unit.js";
import type { SnmpControl } from "./tables.js";
import { TrapSender, type TrapDestination } from "./traps.js";
import {
  SimUnit,
  type SimColumn,
  type SimProfile,
  type SimTable,
  type SimType,
  type SimValue,
  type WriteRole,
} from "./units.js";

export type { SnmpControl } from "./tables.js";
export type { TrapDestination } from "./traps.js";

export const SNMP_HOSTILE_MODES = [
  "hang",
  "wrong-types",
  "missing-columns",
  "no-such-instance",
  "huge-tables",
  "bad-names",
  "too-big",
  "too-big-always",
  "duplicate-rows",
] as const;
export type SnmpHostileMode = (typeof SNMP_HOSTILE_MODES)[number];

export interface SnmpSimulatorOptions {
  readonly profile: SimProfile;
  /** Outlets of the unit (default 8). */
  readonly outlets?: number;
  readonly host?: string;
  /** UDP port; 0 picks a free one. */
  readonly port?: number;
  readonly community?: string;
  readonly writeCommunity?: string;
  readonly v3?: {
    readonly user: string;
    readonly authProtocol: "sha" | "sha256";
    readonly authKey: string;
    /** Absent: authNoPriv. */
    readonly privKey?: string;
  };
  readonly hostile?: SnmpHostileMode;
  /** false: a model without outlet switching (see `UnitOptions.switched`). */
  readonly switched?: boolean;
  /** Answers tooBig to every GETBULK asking for more varbinds than this (overrides the too-big modes). */
  readonly tooBigAbove?: number;
  readonly seed?: number;
  /** Seconds a reboot keeps an outlet off (default 2). */
  readonly rebootSeconds?: number;
  /** Milliseconds between refreshes of the living values (default 1000). */
  readonly refreshMs?: number;
  readonly frozen?: boolean;
  /** Called for every datagram the agent receives, with its source (benchmarks count polls by it). */
  readonly onRequest?: (address: string, port: number) => void;
  /**
   * Join a fleet of loads (../fleet.ts): every outlet then draws what the loads plugged into it
   * draw, the unit runs on the fleet's clock, and stopping it in the fleet (its PDU or its feed)
   * makes it answer nothing until it is started again.
   */
  readonly fleet?: FleetMembership;
  /** The unit's clock outside a fleet (epoch ms; default Date.now): a test pauses it to hold the energy still. */
  readonly clock?: () => number;
  /** Where the unit sends its traps (./traps.ts); absent: it sends none. */
  readonly trapTo?: TrapDestination;
}

export interface SnmpSimulator {
  readonly host: string;
  readonly port: number;
  readonly profile: SimProfile;
  readonly community: string;
  readonly writeCommunity: string;
  /** The unit's state (outlets on or off, names): what tests check after a write. */
  readonly unit: SimUnit;
  /** SETs the agent accepted, in order (OID and value). */
  readonly sets: readonly { readonly oid: string; readonly value: SimValue }[];
  /** The switches it executed, in order: its write journal. */
  readonly controls: readonly SnmpControl[];
  /** Stops (false) or resumes answering anything, as a unit without power. */
  setAnswering(answering: boolean): void;
  /**
   * An outlet (1-based) switched at the unit's own panel: no SET, the state changes and the unit
   * sends its family's trap to `trapTo` (unless traps are lost).
   */
  panelSwitch(outlet: number, action: "on" | "off"): void;
  /** From now on the unit's traps are lost on the way (true) or arrive (false). */
  setTrapsLost(lost: boolean): void;
  /** Traps sent so far. */
  trapsSent(): number;
  close(): Promise<void>;
}

const TYPES: Readonly<Record<SimType, number>> = {
  Integer: snmp.ObjectType.Integer,
  OctetString: snmp.ObjectType.OctetString,
  Gauge: snmp.ObjectType.Gauge,
  Counter: snmp.ObjectType.Counter,
  IpAddress: 64,
  OID: 6,
  TimeTicks: 67,
};

/** What the simulator uses of net-snmp's agent-side Mib (its typings leave it untyped). */
interface Mib {
  registerProvider(definition: Record<string, unknown>): void;
  setScalarValue(name: string, value: unknown): void;
  addTableRow(name: string, row: unknown[]): void;
  setTableSingleCell(name: string, column: number, rowIndex: number[], value: unknown): void;
  lookup(oid: string): MibNode | null;
}
interface MibNode {
  readonly parent: { pruneUpwards(): void };
  delete(): void;
}
interface Agent {
  getAuthorizer(): {
    addCommunity(community: string): void;
    addUser(user: Record<string, unknown>): void;
    getAccessControlModel(): {
      setCommunityAccess(community: string, level: number): void;
      setUserAccess(user: string, level: number): void;
    };
  };
  close(callback: () => void): void;
  readonly listener?: {
    readonly sockets?: Record<
      string,
      {
        address(): { port: number };
        on(
          event: "message",
          listener: (message: Buffer, rinfo: { address: string; port: number }) => void,
        ): void;
      }
    >;
  };
}

/** Index columns get numbers past every real column; they are not-accessible, so never served. */
const INDEX_COLUMN_BASE = 900;

interface CellRole {
  readonly write: WriteRole | undefined;
  readonly outlet: number | undefined;
  /** The column's sub-identifier (a family with one control object per command tells them apart by it). */
  readonly column: number;
}

/** Whether a column of an outlet row is one the hostile column modes change: numeric readings and states. */
function hostileColumn(id: number, type: SimType, write: WriteRole | undefined): boolean {
  return id >= 5 && write === undefined && (type === "Integer" || type === "Gauge");
}

function unitOf(o: SnmpSimulatorOptions): SimUnit {
  return new SimUnit({
    profile: o.profile,
    outlets: o.hostile === "huge-tables" ? 1500 : (o.outlets ?? 8),
    ...(o.seed === undefined ? {} : { seed: o.seed }),
    ...(o.rebootSeconds === undefined ? {} : { rebootSeconds: o.rebootSeconds }),
    frozen: o.frozen === true,
    badNames: o.hostile === "bad-names",
    ...(o.switched === undefined ? {} : { switched: o.switched }),
    ...(o.fleet !== undefined
      ? { clock: o.fleet.fleet.clock }
      : o.clock !== undefined
        ? { clock: o.clock }
        : {}),
  });
}

/** Registers the unit's scalars and tables (shaped by the hostile mode) in the MIB. */
function serveContent(
  served: ServedMib,
  unit: SimUnit,
  hostile: SnmpHostileMode | undefined,
  handler: (request: ProviderRequest) => void,
): void {
  const content = hostile === "duplicate-rows" ? withDuplicateRow(unit.content()) : unit.content();
  content.scalars.forEach((s, i) => {
    const system = s.oid.startsWith("1.3.6.1.2.1.1.");
    if (hostile === "no-such-instance" && !system) return;
    const name = `s${i}`;
    served.mib.registerProvider({
      name,
      type: snmp.MibProviderType.Scalar,
      oid: s.oid.replace(/\.0$/, ""),
      scalarType: TYPES[s.type],
      maxAccess: snmp.MaxAccess["read-only"],
      handler,
    });
    served.mib.setScalarValue(name, serveValue(s.type, s.value));
  });
  served.tables.push(...content.tables.map((table, t) => registerTable(served, table, t, hostile, handler)));
}

export async function startSnmpSimulator(o: SnmpSimulatorOptions): Promise<SnmpSimulator> {
  const hostile = o.hostile;
  const unit = unitOf(o);
  const host = o.host ?? "127.0.0.1";
  const community = o.community ?? "public";
  const writeCommunity = o.writeCommunity ?? "private";
  const served: ServedMib = {
    mib: snmp.createMib() as Mib,
    roles: new Map(),
    values: new Map(),
    tables: [],
  };
  const sets: { oid: string; value: SimValue }[] = [];
  const controls: SnmpControl[] = [];
  const power = { answering: true };
  const refresh = () => refreshMib(served, unit);
  const handler = requestHandler({
    unit,
    sets,
    controls,
    power,
    roles: served.roles,
    hostile,
    profile: o.profile,
    refresh,
  });
  if (o.fleet !== undefined) {
    const setAnswering = (answering: boolean) => {
      power.answering = answering;
    };
    joinSnmpFleet(unit, o.fleet, { controls, setAnswering, refresh });
  }

  serveContent(served, unit, hostile, handler);

  // net-snmp's agent takes port 0 for its default (161): a free port is looked up first.
  const wanted = o.port ?? 0;
  const agent = snmp.createAgent(
    {
      port: wanted === 0 ? await freeUdpPort(host) : wanted,
      address: host,
      transport: host.includes(":") ? "udp6" : "udp4",
      accessControlModelType: snmp.AccessControlModelType.Simple,
    },
    () => {
      // errors of single requests (an unknown community, a bad packet) are answered or dropped by the agent
    },
    served.mib,
  ) as Agent;
  grantAccess(agent, community, writeCommunity, o.v3);
  const tooBigAbove =
    o.tooBigAbove ?? (hostile === "too-big" ? 8 : hostile === "too-big-always" ? 0 : undefined);
  if (tooBigAbove !== undefined) answerTooBig(agent, tooBigAbove);
  const onRequest = o.onRequest;
  if (onRequest !== undefined) {
    for (const socket of Object.values(agent.listener?.sockets ?? {})) {
      socket.on("message", (_message, rinfo) => onRequest(rinfo.address, rinfo.port));
    }
  }
  const port = await boundPort(agent);
  const timer = setInterval(refresh, o.refreshMs ?? 1000);
  timer.unref();
  const traps = o.trapTo === undefined ? null : new TrapSender(o.profile, o.trapTo, host);

  return {
    host,
    port,
    profile: o.profile,
    community,
    writeCommunity,
    unit,
    sets,
    controls,
    setAnswering: (answering) => {
      power.answering = answering;
    },
    ...panelOf(unit, refresh, traps),
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(timer);
        traps?.close();
        agent.close(() => resolve());
      }),
  };
}

/** Switching at the unit's own panel, and the traps it sends then. */
function panelOf(
  unit: SimUnit,
  refresh: () => void,
  traps: TrapSender | null,
): Pick<SnmpSimulator, "panelSwitch" | "setTrapsLost" | "trapsSent"> {
  return {
    panelSwitch: (outlet, action) => {
      unit.switch(outlet, action);
      refresh();
      const name = unit.outlets[outlet - 1]?.name ?? `Outlet ${outlet}`;
      traps?.outletSwitched(outlet, action === "on", name, unit.outlets.length / familyChain(unit.profile));
    },
    setTrapsLost: (lost) => traps?.setLost(lost),
    trapsSent: () => traps?.sent ?? 0,
  };
}

/** What the agent serves: the MIB, each cell's write role, the values last written to it, the tables. */
interface ServedMib {
  readonly mib: Mib;
  /** Cell OID → its write role and outlet. */
  readonly roles: Map<string, CellRole>;
  /** {@link cellKey} → the value the MIB holds. */
  readonly values: Map<string, SimValue>;
  readonly tables: ServedTable[];
}

interface ServedTable {
  readonly name: string;
  readonly table: SimTable;
  readonly columns: readonly (SimColumn & { readonly wrong: boolean })[];
}

/** A provider's request, as net-snmp hands it over. */
interface ProviderRequest {
  oid: string;
  operation: number;
  setValue?: unknown;
  /** Set while net-snmp's agent tests a SET, before it commits it. */
  testSet?: boolean;
  done: (error?: { errorStatus: number }) => void;
}

const cellKey = (provider: string, column: number, index: readonly number[]) =>
  `${provider}|${column}|${index.join(".")}`;

const serveValue = (type: SimType, value: SimValue): unknown =>
  type === "IpAddress" && Buffer.isBuffer(value) ? [...value].join(".") : value;

/** The handler of every provider: answers (or, hanging, never does), and carries out writes. */
function requestHandler(ctx: {
  readonly unit: SimUnit;
  readonly sets: { oid: string; value: SimValue }[];
  readonly controls: SnmpControl[];
  /** While false nothing is answered (a unit without power). */
  readonly power: { readonly answering: boolean };
  readonly roles: ReadonlyMap<string, CellRole>;
  readonly hostile: SnmpHostileMode | undefined;
  readonly profile: SimProfile;
  readonly refresh: () => void;
}): (request: ProviderRequest) => void {
  const { unit, sets, roles, hostile, refresh } = ctx;
  return (request) => {
    if (hostile === "hang" || !ctx.power.answering) return;
    if (request.operation !== snmp.PduType.SetRequest) {
      request.done();
      return;
    }
    const role = roles.get(request.oid);
    const value = request.setValue;
    if (role === undefined || role.write === undefined || role.outlet === undefined) {
      request.done();
      return;
    }
    const outlet = role.outlet;
    // net-snmp's agent calls the handler twice per SET: to test it (`testSet`), then to commit it.
    // Both check the value; only the commit is recorded and carried out (once).
    const testing = request.testSet === true; // done() clears it
    const commit = (recorded: SimValue, apply?: () => void) => {
      request.done();
      if (testing) return;
      sets.push({ oid: request.oid, value: recorded });
      if (apply !== undefined)
        setImmediate(() => {
          apply();
          refresh();
        });
    };
    switch (role.write) {
      case "control": {
        const action = typeof value === "number" ? unit.commandOf(value, role.column) : null;
        if (action === null) {
          request.done({ errorStatus: snmp.ErrorStatus.WrongValue });
          return;
        }
        commit(value as number, () => {
          unit.switch(outlet, action);
          ctx.controls.push({ time: unit.clock(), outlet: outlet - 1, action });
        });
        return;
      }
      case "name": {
        const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
        if (bytes.length > 32 && ctx.profile === "servertech-sentry4") {
          request.done({ errorStatus: snmp.ErrorStatus.WrongLength });
          return;
        }
        commit(bytes, () => unit.rename(outlet, bytes.toString("utf8")));
        return;
      }
      case "reset":
        if (value !== 0) {
          request.done({ errorStatus: snmp.ErrorStatus.WrongValue });
          return;
        }
        commit(0, () => unit.resetEnergy(outlet));
        return;
      case "plain":
        commit(value as SimValue);
    }
  };
}

/** Registers one table of the unit (shaped by the hostile column modes) and its rows. */
function registerTable(
  served: ServedMib,
  table: SimTable,
  t: number,
  hostile: SnmpHostileMode | undefined,
  handler: (request: ProviderRequest) => void,
): ServedTable {
  const { mib, roles } = served;
  const name = `t${t}`;
  const outletTable = table.rows.some((r) => r.outlet !== undefined);
  const columns = table.columns
    .filter((c) => !(outletTable && hostile === "missing-columns" && hostileColumn(c.id, c.type, c.write)))
    .map((c) => {
      const wrong = outletTable && hostile === "wrong-types" && hostileColumn(c.id, c.type, c.write);
      return { ...c, type: wrong ? ("OctetString" as const) : c.type, wrong };
    });
  const indexColumns = Array.from({ length: table.indexLength }, (_, k) => ({
    number: INDEX_COLUMN_BASE + k,
    name: `index${k}`,
    type: snmp.ObjectType.Integer,
    maxAccess: snmp.MaxAccess["not-accessible"],
  }));
  mib.registerProvider({
    name,
    type: snmp.MibProviderType.Table,
    oid: table.entry,
    maxAccess: snmp.MaxAccess["not-accessible"],
    tableColumns: [
      ...columns.map((c) => ({
        number: c.id,
        name: `c${c.id}`,
        type: TYPES[c.type],
        maxAccess: c.write === undefined ? snmp.MaxAccess["read-only"] : snmp.MaxAccess["read-write"],
      })),
      ...indexColumns,
    ],
    tableIndex: indexColumns.map((c) => ({ columnName: c.name })),
    handler,
  });
  table.rows.forEach((row, r) => {
    const values = columns.map((c) => {
      const v = row.cells.get(c.id) ?? (c.type === "OctetString" ? "" : 0);
      return c.wrong ? `${String(v)} units` : serveValue(c.type, v);
    });
    mib.addTableRow(name, [...values, ...row.index]);
    for (const c of columns) {
      const oid = `${table.entry}.${c.id}.${row.index.join(".")}`;
      roles.set(oid, { write: c.write, outlet: row.outlet, column: c.id });
      served.values.set(cellKey(name, c.id, row.index), row.cells.get(c.id) ?? 0);
    }
    // A cell the row does not have (a sensor without a reading), and in the no-such-instance mode
    // every second outlet row's readings: holes in the table.
    const holes = hostile === "no-such-instance" && row.outlet !== undefined && r % 2 === 1;
    for (const c of columns) {
      if (row.cells.has(c.id) && !(holes && hostileColumn(c.id, c.type, c.write))) continue;
      const node = mib.lookup(`${table.entry}.${c.id}.${row.index.join(".")}`);
      if (node === null) continue;
      const parent = node.parent;
      node.delete();
      parent.pruneUpwards();
      served.values.delete(cellKey(name, c.id, row.index));
    }
  });
  return { name, table, columns };
}

/** Writes the unit's current values into the MIB, cell by cell where they changed. */
function refreshMib(served: ServedMib, unit: SimUnit): void {
  const { mib, tables } = served;
  const now = unit.content();
  now.tables.forEach((table, t) => {
    const entry = tables[t];
    if (entry === undefined) return;
    for (const row of table.rows) {
      for (const c of entry.columns) {
        const key = cellKey(entry.name, c.id, row.index);
        if (!served.values.has(key)) continue;
        const v = row.cells.get(c.id);
        if (
          v === undefined ||
          v === served.values.get(key) ||
          (Buffer.isBuffer(v) && Buffer.isBuffer(served.values.get(key)))
        )
          continue;
        served.values.set(key, v);
        try {
          mib.setTableSingleCell(
            entry.name,
            c.id,
            [...row.index],
            c.wrong ? `${String(v)} units` : serveValue(c.type, v),
          );
        } catch {
          // a cell the hostile modes removed
        }
      }
    }
  });
}

/** The read and write communities and, when configured, the SNMPv3 user. */
function grantAccess(
  agent: Agent,
  community: string,
  writeCommunity: string,
  v3: SnmpSimulatorOptions["v3"],
): void {
  const authorizer = agent.getAuthorizer();
  authorizer.addCommunity(community);
  authorizer.addCommunity(writeCommunity);
  const acm = authorizer.getAccessControlModel();
  acm.setCommunityAccess(community, snmp.AccessLevel.ReadOnly);
  acm.setCommunityAccess(writeCommunity, snmp.AccessLevel.ReadWrite);
  if (v3 !== undefined) {
    const v = v3;
    authorizer.addUser({
      name: v.user,
      level: v.privKey === undefined ? snmp.SecurityLevel.authNoPriv : snmp.SecurityLevel.authPriv,
      authProtocol: v.authProtocol === "sha256" ? snmp.AuthProtocols.sha256 : snmp.AuthProtocols.sha,
      authKey: v.authKey,
      ...(v.privKey === undefined ? {} : { privProtocol: snmp.PrivProtocols.aes, privKey: v.privKey }),
    });
    acm.setUserAccess(v.user, snmp.AccessLevel.ReadWrite);
  }
}

/** What the too-big modes use of net-snmp's agent: its GETBULK handling and its answer. */
interface BulkAgent {
  getBulkRequest(socket: unknown, message: BulkMessage, rinfo: unknown): void;
  sendResponse(socket: unknown, rinfo: unknown, message: BulkMessage, pdu: unknown): void;
}
interface BulkMessage {
  readonly pdu: {
    readonly nonRepeaters: number;
    readonly maxRepetitions: number;
    readonly varbinds: readonly unknown[];
    getResponsePduForRequest(): { errorStatus: number; errorIndex: number; varbinds: unknown[] };
  };
}

/** Makes the agent answer tooBig to every GETBULK asking for more than `limit` varbinds. */
function answerTooBig(agent: Agent, limit: number): void {
  const bulk = agent as unknown as BulkAgent;
  const original = bulk.getBulkRequest.bind(bulk);
  bulk.getBulkRequest = (socket, message, rinfo) => {
    const pdu = message.pdu;
    const repeating = Math.max(0, pdu.varbinds.length - pdu.nonRepeaters);
    const asked = Math.min(pdu.nonRepeaters, pdu.varbinds.length) + repeating * pdu.maxRepetitions;
    if (asked <= limit) {
      original(socket, message, rinfo);
      return;
    }
    const response = pdu.getResponsePduForRequest();
    response.errorStatus = snmp.ErrorStatus.TooBig;
    response.errorIndex = 0;
    response.varbinds = [];
    bulk.sendResponse(socket, rinfo, message, response);
  };
}

/** The rPDU2 outlet control table's entry (`rPDU2OutletSwitchedControlEntry`). */
const RPDU2_CONTROL = "1.3.6.1.4.1.318.1.1.26.9.2.4.1";

/**
 * The unit's content with one more row of the rPDU2 control table, after the others, whose
 * Number (column 4) claims outlet 2 again; other profiles are left as they are.
 */
function withDuplicateRow(content: ReturnType<SimUnit["content"]>): ReturnType<SimUnit["content"]> {
  const tables = content.tables.map((table) => {
    const second = table.rows.find((r) => r.outlet === 2);
    if (table.entry !== RPDU2_CONTROL || second === undefined) return table;
    const index = table.rows.length + 1;
    const cells = new Map(second.cells);
    cells.set(1, index);
    cells.set(3, "Outlet 2 (again)");
    return { ...table, rows: [...table.rows, { index: [index], outlet: 2, cells }] };
  });
  return { ...content, tables };
}

/** A UDP port free on `host` now (bound and released). */
function freeUdpPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(host.includes(":") ? "udp6" : "udp4");
    socket.once("error", reject);
    socket.bind(0, host, () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

/** The UDP port the agent's socket is bound to. */
function boundPort(agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 5000;
    const look = () => {
      const sockets = agent.listener?.sockets ?? {};
      for (const s of Object.values(sockets)) {
        try {
          const port = s.address().port;
          if (port > 0) {
            resolve(port);
            return;
          }
        } catch {
          // not bound yet
        }
      }
      if (Date.now() > deadline) reject(new Error("the SNMP agent did not bind its socket"));
      else setTimeout(look, 10);
    };
    look();
  });
}
