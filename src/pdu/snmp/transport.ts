/**
 * SNMP requests for one PDU over net-snmp: v2c (communities) or v3 (USM, authNoPriv or authPriv),
 * GETBULK walks of table columns (bounded maxRepetitions and rows, stopping at each column's end),
 * scalar GETs and SETs. Every failure is a PduError; a caller's abort rejects with its reason at
 * once (the request's late answer is ignored).
 *
 * Reads go over one session kept for the driver's life (one UDP socket), with the per-request
 * timeout and one retry from Connection.Timeout. Writes go over a session of their own with no
 * retry, so that an unanswered reboot is never sent a second time by the library.
 */
import dgram from "node:dgram";
import { lookup as dnsLookup } from "node:dns";
import { setMaxListeners } from "node:events";
import { isIP, isIPv6 } from "node:net";
import snmp from "net-snmp";
import { PduError, refusedUnsent } from "../errors.js";
import { instanceVariablePrefix, SNMP_SECRET_VARIABLES } from "../../config/secrets.js";
import type { ColumnType } from "./profile.js";
import type { Cell, WalkedVarbind } from "./parse.js";
import { cacheBerOids } from "./ber-oids.js";
import { pooledBerWriters } from "./ber-writer.js";

// A unit answers the same OIDs at every poll: each is converted once (./ber-oids.ts); a request's
// writer takes its buffer from the pool (./ber-writer.ts).
cacheBerOids();
pooledBerWriters();

/**
 * How net-snmp's sockets resolve a target. Node's dgram resolves the target address before every
 * datagram, through dns.lookup and a tick, even when it is an IP literal; here a literal of the
 * socket's `family` is its own answer at once (what dns.lookup answers for it), and only anything
 * else is looked up.
 */
export function literalFirstLookup(family: 4 | 6): NonNullable<dgram.SocketOptions["lookup"]> {
  return (host, options, callback) => {
    if (isIP(host) === family) callback(null, host, family);
    else dnsLookup(host, options, callback);
  };
}

/** The sockets of net-snmp's sessions (its `dgramModule`), resolving by {@link literalFirstLookup}. */
const udp = {
  createSocket(type: "udp4" | "udp6"): dgram.Socket {
    return dgram.createSocket({ type, lookup: literalFirstLookup(type === "udp6" ? 6 : 4) });
  },
};

export type SnmpVersion = "2c" | "3";

export interface SnmpAuth {
  readonly version: SnmpVersion;
  /** v2c: the read community. */
  readonly community?: string;
  /** v2c: the write community (control, labels); absent: writes are refused before sending. */
  readonly writeCommunity?: string;
  /** v3 */
  readonly username?: string;
  readonly authProtocol?: "sha" | "sha256";
  readonly authKey?: string;
  readonly privProtocol?: "aes" | "none";
  readonly privKey?: string;
}

export interface TransportOptions {
  /** The configured instance, named in messages. */
  readonly instanceId?: string;
  readonly host: string;
  readonly port: number;
  /** Seconds per request (both tries together). */
  readonly timeout: number;
  readonly auth: SnmpAuth;
  /** Largest GETBULK repetition count. */
  readonly maxRepetitions: number;
  /** Most rows read of one table column; more is left out (a huge table). */
  readonly maxRows: number;
}

/** What a SET sends: the OID and an INTEGER or OCTET STRING value. */
export interface SetVarbind {
  readonly oid: string;
  readonly type: "Integer" | "Gauge" | "OctetString";
  readonly value: number | Buffer;
}

/**
 * ASN.1 tags (RFC 2578): INTEGER 2, OCTET STRING 4, OBJECT IDENTIFIER 6, IpAddress 64, Counter32 65,
 * Gauge32/Unsigned32 66.
 */
const TYPE_NAMES: Readonly<Record<number, ColumnType>> = {
  2: "Integer",
  4: "OctetString",
  6: "ObjectIdentifier",
  64: "IpAddress",
  65: "Counter",
  66: "Gauge",
};

/**
 * A varbind from net-snmp as plain data: exceptions (noSuchInstance, ...) and unknown types as null
 * values. Made of net-snmp's own object, which nothing else holds once its answer is taken (a poll
 * reads hundreds of varbinds: one object each instead of two).
 */
function reduce(vb: snmp.Varbind): WalkedVarbind {
  const type = (vb.type === undefined ? undefined : TYPE_NAMES[vb.type]) ?? "Other";
  let value: Cell | null = null;
  if (type === "OctetString" && Buffer.isBuffer(vb.value)) value = vb.value;
  else if ((type === "IpAddress" || type === "ObjectIdentifier") && typeof vb.value === "string")
    value = Buffer.from(vb.value);
  else if (type !== "Other" && typeof vb.value === "number" && Number.isFinite(vb.value)) value = vb.value;
  const reduced = vb as unknown as { oid: string; type: WalkedVarbind["type"]; value: Cell | null };
  reduced.type = type === "IpAddress" ? "OctetString" : type;
  reduced.value = value;
  return reduced;
}

const REFUSED_STATUS: ReadonlySet<number> = new Set([
  snmp.ErrorStatus.NoAccess,
  snmp.ErrorStatus.NotWritable,
  snmp.ErrorStatus.AuthorizationError,
  snmp.ErrorStatus.ReadOnly,
  snmp.ErrorStatus.NoSuchName,
  snmp.ErrorStatus.NoCreation,
]);

const STATUS_NAMES: Readonly<Record<number, string>> = {
  1: "tooBig",
  2: "noSuchName",
  3: "badValue",
  4: "readOnly",
  5: "genErr",
  6: "noAccess",
  7: "wrongType",
  8: "wrongLength",
  9: "wrongEncoding",
  10: "wrongValue",
  11: "noCreation",
  12: "inconsistentValue",
  13: "resourceUnavailable",
  14: "commitFailed",
  15: "undoFailed",
  16: "authorizationError",
  17: "notWritable",
  18: "inconsistentName",
};

/** A rejection reason as an Error (an abort's reason, a library's error, are already one). */
function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

/** Whether a varbind is an exception (noSuchObject, noSuchInstance, endOfMibView). */
function isException(vb: snmp.Varbind): boolean {
  return snmp.isVarbindError(vb);
}

/**
 * Takes a GETBULK answer into the cursors asked (in request order): each column's varbinds until
 * it leaves its subtree, ends or reaches `maxRows` (its table then marked cut short). Returns
 * whether any column was in the answer at all.
 */
function takeAnswer(
  asked: readonly Cursor[],
  answer: readonly (snmp.Varbind | snmp.Varbind[])[],
  maxRows: number,
  out: readonly { truncated: boolean }[],
): boolean {
  let moved = false;
  asked.forEach((c, i) => {
    const column = answer[i];
    // Not in the answer at all: the agent cut it short before this column; asked again.
    if (column === undefined) return;
    const list = Array.isArray(column) ? column : [column];
    let advanced = false;
    for (const vb of list) {
      // lastIndexOf(…, 0): startsWith's test, which V8 runs several times slower.
      if (isException(vb) || typeof vb.oid !== "string" || vb.oid.lastIndexOf(c.prefix, 0) !== 0) {
        c.done = true;
        break;
      }
      if (c.rows >= maxRows) {
        c.done = true;
        out[c.table]!.truncated = true;
        break;
      }
      c.varbinds.push(reduce(vb));
      c.rows++;
      c.next = vb.oid;
      advanced = true;
    }
    // An agent that answers nothing new for a column ends that column (no endless loop).
    if (!advanced) c.done = true;
    moved = true;
  });
  return moved;
}

/**
 * The columns of one GETBULK, from `active` (the columns wanting the most rows first), within
 * `budget` varbinds: those wanting `reps` rows or fewer as repeaters, and, when `reps` is more than
 * one, those wanting a single row (a column read up to its last known row, which only needs to see
 * its end) as non-repeaters, one varbind each, first in the request as GETBULK puts them (RFC 3416
 * §4.2.3). Without them each such column would be sent `reps` repetitions, or a request of its own.
 */
function packRequest(
  active: readonly Cursor[],
  want: (c: Cursor) => number,
  reps: number,
  budget: number,
): { asked: Cursor[]; single: number; varbinds: number } {
  const singles: Cursor[] = [];
  const repeaters: Cursor[] = [];
  let varbinds = 0;
  for (const c of active) {
    const one = reps > 1 && want(c) === 1;
    const cost = one ? 1 : reps;
    // The first column always fits (no column wants more than the budget).
    if (varbinds + cost > budget && varbinds > 0) continue;
    (one ? singles : repeaters).push(c);
    varbinds += cost;
  }
  return { asked: [...singles, ...repeaters], single: singles.length, varbinds };
}

/**
 * The requests of one operation (a walk's, one after another) under a caller's abort signal,
 * listened to once for them all: an abort rejects the request in flight at once with its reason,
 * and its late answer is ignored. `close` stops listening.
 */
class Requests {
  readonly #signal: AbortSignal | undefined;
  /** Rejects the request in flight; null between requests. */
  #fail: ((reason: Error) => void) | null = null;
  readonly #onAbort = (): void => {
    this.#fail?.(asError(this.#signal?.reason));
  };

  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal;
    if (signal !== undefined) {
      // A long-lived signal (the scheduler's) carries one listener per walk in flight (one per
      // unit polling at once): more than EventTarget's default of 10 is expected, and each is
      // removed again.
      setMaxListeners(0, signal);
      signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  run<T>(start: (done: (error: unknown, value?: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#signal?.aborted === true) {
        reject(asError(this.#signal.reason));
        return;
      }
      let settled = false;
      const fail = (reason: Error): void => {
        if (settled) return;
        settled = true;
        if (this.#fail === fail) this.#fail = null;
        reject(reason);
      };
      this.#fail = fail;
      try {
        start((error, value) => {
          if (settled) return;
          if (error !== null && error !== undefined) {
            fail(asError(error));
            return;
          }
          settled = true;
          if (this.#fail === fail) this.#fail = null;
          resolve(value as T);
        });
      } catch (e) {
        fail(asError(e));
      }
    });
  }

  close(): void {
    this.#fail = null;
    this.#signal?.removeEventListener("abort", this.#onAbort);
  }
}

/** Most varbinds asked for in one GETBULK (columns × repetitions): answers of a few kilobytes. */
export const MAX_VARBINDS_PER_REQUEST = 128;
/**
 * Most read requests of one poll (its detection, walk and scalar GET together). A 24-outlet APC
 * unit takes 5; the most rows read of every column (2048) of a profile of 48 columns, from an
 * agent that answers no more than 24 varbinds a request, about 4100. An agent that makes a poll
 * send more (it answers one varbind at a time) fails the poll with a clear error instead of being
 * sent requests without end.
 */
export const MAX_REQUESTS_PER_POLL = 4096;
/**
 * `tooBig` answers taken in one poll: each halves what is asked (varbinds and repetitions); past
 * these, the poll fails naming the agent (from 128 varbinds, 5 halvings ask for 4).
 */
export const MAX_TOO_BIG_PER_POLL = 5;
/** Columns whose row counts a transport remembers (a profile reads a few dozen). */
const MAX_COLUMNS_REMEMBERED = 512;

/** One column being walked. */
interface Cursor {
  /** Position of its table in the walk. */
  readonly table: number;
  /** The column's OID (`entry.<id>`) and that plus a dot. */
  readonly column: string;
  readonly prefix: string;
  /** The OID to ask the next varbind after. */
  next: string;
  rows: number;
  /** What it read, in order. */
  readonly varbinds: WalkedVarbind[];
  /** Rows the column had in the previous walk (or the most asked at once when not walked yet). */
  readonly expected: number;
  done: boolean;
}

export class SnmpTransport {
  readonly where: string;
  readonly #options: TransportOptions;
  /** Varbinds asked for per GETBULK (and so repetitions at most); halved when an agent answers tooBig. */
  #budget = MAX_VARBINDS_PER_REQUEST;
  /** Read requests and tooBig answers of the current poll (see {@link beginPoll}). */
  #requests = 0;
  #tooBig = 0;
  /** Rows each column had when last walked, by column OID: the next walk's repetitions. */
  readonly #rowsSeen = new Map<string, number>();
  #reader: snmp.Session | null = null;
  #closed = false;
  readonly #timeoutText: string;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.where = isIPv6(options.host)
      ? `[${options.host}]:${options.port}`
      : `${options.host}:${options.port}`;
    this.#timeoutText = `${options.timeout}s`;
  }

  /** Starts a poll's count of read requests and tooBig answers (the budget of one poll). */
  beginPoll(): void {
    this.#requests = 0;
    this.#tooBig = 0;
  }

  /** Read requests sent since {@link beginPoll}. */
  get requestsThisPoll(): number {
    return this.#requests;
  }

  /** Counts one read request against the poll's budget; past it, the poll fails. */
  #spend(what: string): void {
    if (this.#requests >= MAX_REQUESTS_PER_POLL) {
      throw new PduError(
        "malformed",
        `${this.#pdu()}the agent at ${this.where} needed more than ${MAX_REQUESTS_PER_POLL} requests for one poll (the most one poll sends; next: ${what}): it answers too little per request; the poll was stopped`,
      );
    }
    this.#requests++;
  }

  /** `PDU <instance>: ` for messages, or "". */
  #pdu(): string {
    return this.#options.instanceId === undefined ? "" : `PDU ${this.#options.instanceId}: `;
  }

  get canWrite(): boolean {
    const a = this.#options.auth;
    return a.version === "3" || (a.writeCommunity !== undefined && a.writeCommunity !== "");
  }

  #session(write: boolean): snmp.Session {
    const o = this.#options;
    const common = {
      port: o.port,
      transport: isIPv6(o.host) ? "udp6" : "udp4",
      dgramModule: udp,
      // Reads: two tries within Timeout. Writes: one try, never re-sent by the library.
      retries: write ? 0 : 1,
      timeout: Math.max(1, Math.round((o.timeout * 1000) / (write ? 1 : 2))),
      backoff: 1,
    } as const;
    const a = o.auth;
    if (a.version === "3") {
      const priv = a.privProtocol !== "none";
      const user: snmp.User = {
        name: a.username ?? "",
        level: priv ? snmp.SecurityLevel.authPriv : snmp.SecurityLevel.authNoPriv,
        authProtocol: a.authProtocol === "sha256" ? snmp.AuthProtocols.sha256 : snmp.AuthProtocols.sha,
        authKey: a.authKey ?? "",
        ...(priv ? { privProtocol: snmp.PrivProtocols.aes, privKey: a.privKey ?? "" } : {}),
      };
      return snmp.createV3Session(o.host, user, { ...common, version: snmp.Version3 });
    }
    const community = write ? (a.writeCommunity ?? "") : (a.community ?? "");
    return snmp.createSession(o.host, community, { ...common, version: snmp.Version2c });
  }

  #readSession(): snmp.Session {
    if (this.#closed) throw new PduError("unreachable", `cannot reach ${this.where}: closed`);
    if (this.#reader === null) {
      const s = this.#session(false);
      s.on("error", () => {
        // A socket error (an ICMP port unreachable, for one) fails the requests in flight through
        // their callbacks; the session is made again for the next poll.
        if (this.#reader === s) this.#reader = null;
        s.close();
      });
      this.#reader = s;
    }
    return this.#reader;
  }

  /**
   * Where the community of a read (or a write) comes from, for a message: the instance's variable
   * (`SERVICE_PDU_<ID>_COMMUNITY`, `…_WRITE_COMMUNITY`), or the pattern when the instance is unknown.
   */
  #communityVariable(write: boolean): string {
    const id = this.#options.instanceId;
    const prefix = id === undefined ? "SERVICE_PDU_<ID>" : instanceVariablePrefix(id);
    return `${prefix}_${SNMP_SECRET_VARIABLES[write ? "WriteCommunity" : "Community"]}`;
  }

  /** The error of a failed request as a PduError naming the agent and what was asked (`write`: a SET). */
  error(e: unknown, what: string, once: boolean, write = false): PduError {
    const name = (e as { name?: unknown } | null)?.name;
    const message = e instanceof Error ? e.message : String(e);
    if (name === "RequestTimedOutError") {
      if (once) {
        return new PduError(
          "outcome-unknown",
          `${what} on ${this.where}: no answer within ${this.#timeoutText}; the request may have reached the PDU, so it was not sent again`,
          { cause: e },
        );
      }
      const hint =
        this.#options.auth.version === "2c"
          ? ` (a wrong community gets no answer at all: check ${this.#communityVariable(write)})`
          : " (an SNMPv3 agent may not answer a user, key or protocol it does not accept)";
      const pdu = this.#options.instanceId === undefined ? "" : ` (PDU ${this.#options.instanceId})`;
      return new PduError(
        "timeout",
        `no answer from ${this.where}${pdu} within ${this.#timeoutText} to ${what}${hint}`,
        {
          cause: e,
        },
      );
    }
    if (name === "RequestFailedError") {
      const status = (e as { status?: unknown }).status;
      const code = typeof status === "number" ? status : -1;
      const text = STATUS_NAMES[code] ?? `error-status ${code}`;
      if (REFUSED_STATUS.has(code)) {
        return new PduError(
          "refused",
          `the PDU at ${this.where} refused ${what}: ${text} (read-only object, or no write access for this community or user)`,
          { cause: e },
        );
      }
      return new PduError("ret-code", `the PDU at ${this.where} answered ${text} to ${what}`, { cause: e });
    }
    if (name === "ResponseInvalidError") {
      const code = (e as { code?: unknown }).code;
      // EAuthFailure (5), ECouldNotDecrypt (4), ENotInTimeWindow (14)
      if (code === 5 || code === 4 || code === 14) {
        const user = this.#options.auth.username ?? "";
        const instance = this.#options.instanceId === undefined ? "" : ` of PDU ${this.#options.instanceId}`;
        return new PduError(
          "ret-code",
          `SNMPv3 authentication with ${this.where}${instance} as user "${user}" failed (${message}): check the user name, the protocols and the keys`,
          { cause: e },
        );
      }
      return new PduError("malformed", `invalid SNMP answer from ${this.where} to ${what}: ${message}`, {
        cause: e,
      });
    }
    return new PduError("unreachable", `cannot reach ${this.where} for ${what}: ${message}`, { cause: e });
  }

  /** Runs one net-snmp request as a promise that a caller's abort rejects at once. */
  #request<T>(
    start: (done: (error: unknown, value?: T) => void) => void,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const requests = new Requests(signal);
    return requests.run(start).finally(() => requests.close());
  }

  /** GET of scalars: each OID's varbind (an exception as a null value). */
  async get(oids: readonly string[], signal?: AbortSignal): Promise<WalkedVarbind[]> {
    if (oids.length === 0) return [];
    this.#spend("GET of the scalars");
    const session = this.#readSession();
    try {
      const varbinds = await this.#request<snmp.Varbind[]>((done) => session.get([...oids], done), signal);
      return varbinds.map(reduce);
    } catch (e) {
      if (signal?.aborted === true) throw signal.reason;
      throw this.error(e, `GET ${oids.join(", ")}`, false);
    }
  }

  /** sysObjectID.0 and sysDescr.0 (a bounded, printable text), "" for what is not there. */
  async identify(signal?: AbortSignal): Promise<{ objectId: string; descr: string }> {
    this.#spend("GET sysObjectID.0");
    const session = this.#readSession();
    let varbinds: snmp.Varbind[];
    try {
      varbinds = await this.#request<snmp.Varbind[]>(
        (done) => session.get(["1.3.6.1.2.1.1.2.0", "1.3.6.1.2.1.1.1.0"], done),
        signal,
      );
    } catch (e) {
      if (signal?.aborted === true) throw signal.reason;
      throw this.error(e, "GET sysObjectID.0", false);
    }
    const [id, descr] = varbinds;
    const objectId =
      id !== undefined &&
      (id.type as number) === 6 &&
      typeof id.value === "string" &&
      /^[0-9.]{1,256}$/.test(id.value)
        ? id.value
        : "";
    const text =
      descr !== undefined && Buffer.isBuffer(descr.value)
        ? descr.value
            .toString("latin1")
            .replace(/[^\x20-\x7e]/g, "?")
            .slice(0, 80)
        : "";
    return { objectId, descr: text };
  }

  /**
   * Walks the columns `entry.<id>` of one table with GETBULK (see {@link walkTables}). Returns the
   * varbinds and whether the table was cut short.
   */
  async walkColumns(
    entry: string,
    columnIds: readonly number[],
    signal?: AbortSignal,
  ): Promise<{ varbinds: WalkedVarbind[]; truncated: boolean }> {
    const [walked] = await this.walkTables([{ entry, columnIds }], signal);
    return walked ?? { varbinds: [], truncated: false };
  }

  /**
   * Walks the columns `entry.<id>` of several tables with GETBULK, each column until it leaves its
   * subtree (or endOfMibView), at most `maxRows` rows. A request asks for the columns of any of the
   * tables together, at most {@link MAX_VARBINDS_PER_REQUEST} varbinds (columns × repetitions);
   * the repetitions are fitted to the rows each column had in this transport's previous walk plus
   * one, to see its end in the same answer (at most `maxRepetitions`; a column not walked before
   * asks for `maxRepetitions`), a column wanting one row more (its end) as a non-repeater (see
   * {@link packRequest}). A 24-outlet APC unit's tables take five requests. An answer
   * cut short by the agent (fewer varbinds than asked) is continued from where it ended, and a
   * `tooBig` answer halves the varbinds (and so the repetitions) asked per request for the rest of
   * the transport's life; past {@link MAX_TOO_BIG_PER_POLL} of them in one poll, or
   * {@link MAX_REQUESTS_PER_POLL} requests, the walk fails naming the agent.
   * Returns each table's varbinds (column by column, each column's rows in the agent's order: the
   * same whatever the requests were) and whether it was cut short.
   */
  async walkTables(
    tables: readonly { readonly entry: string; readonly columnIds: readonly number[] }[],
    signal?: AbortSignal,
  ): Promise<{ varbinds: WalkedVarbind[]; truncated: boolean }[]> {
    const o = this.#options;
    const session = this.#readSession();
    const out = tables.map(() => ({ varbinds: [] as WalkedVarbind[], truncated: false }));
    const cursors = this.#cursors(tables);
    // Repetitions: the rows each column still wants (one more than the last walk had, to see its
    // end), or a full batch for a column longer than last time; never more than the varbinds a
    // request may ask.
    const want = (c: Cursor) =>
      Math.max(
        1,
        Math.min(
          o.maxRepetitions,
          this.#budget,
          c.rows > c.expected ? o.maxRepetitions : c.expected - c.rows + 1,
        ),
      );
    // Every round moves a column on or ends it: this bound is never reached by a working agent.
    const rounds = cursors.length * (o.maxRows + 1);
    const requests = new Requests(signal);
    try {
      for (let round = 0; round < rounds; round++) {
        // The columns wanting the most rows first (a stable sort keeps the tables' column order).
        const active = cursors.filter((c) => !c.done).sort((a, b) => want(b) - want(a));
        const first = active[0];
        if (first === undefined) break;
        const reps = want(first);
        const { asked, single, varbinds } = packRequest(active, want, reps, this.#budget);
        this.#spend(`GETBULK of ${single} + ${asked.length - single} columns × ${reps}`);
        let answer: (snmp.Varbind | snmp.Varbind[])[];
        try {
          answer = await requests.run<(snmp.Varbind | snmp.Varbind[])[]>((done) =>
            session.getBulk(
              asked.map((c) => c.next),
              single,
              reps,
              done,
            ),
          );
        } catch (e) {
          if (signal?.aborted === true) throw signal.reason;
          // tooBig: the agent cannot send that much in one answer; ask for half (varbinds and so
          // repetitions) from now on, a few times in one poll at most.
          if ((e as { status?: unknown }).status === 1) {
            this.#tooBigAnswer(varbinds, tables);
            continue;
          }
          throw this.error(e, `GETBULK of ${tables.map((t) => t.entry).join(", ")}`, false);
        }
        const moved = takeAnswer(asked, answer, o.maxRows, out);
        // An answer with nothing for any column asked: the walk ends there.
        if (!moved) for (const c of asked) c.done = true;
      }
    } finally {
      requests.close();
    }
    for (const c of cursors) {
      for (const vb of c.varbinds) out[c.table]!.varbinds.push(vb);
      if (this.#rowsSeen.size < MAX_COLUMNS_REMEMBERED || this.#rowsSeen.has(c.column))
        this.#rowsSeen.set(c.column, c.rows);
    }
    return out;
  }

  /** A cursor at the start of each column of `tables`, in order. */
  #cursors(tables: readonly { readonly entry: string; readonly columnIds: readonly number[] }[]): Cursor[] {
    const cursors: Cursor[] = [];
    tables.forEach((t, table) => {
      for (const id of t.columnIds) {
        const column = `${t.entry}.${id}`;
        cursors.push({
          table,
          column,
          prefix: `${column}.`,
          next: column,
          rows: 0,
          varbinds: [],
          expected: this.#rowsSeen.get(column) ?? this.#options.maxRepetitions,
          done: false,
        });
      }
    });
    return cursors;
  }

  /** Takes a tooBig answer to a request of `varbinds`: halves the budget, or fails the poll. */
  #tooBigAnswer(varbinds: number, tables: readonly { readonly entry: string }[]): void {
    this.#tooBig++;
    if (varbinds <= 1 || this.#tooBig > MAX_TOO_BIG_PER_POLL) {
      // The next poll starts from the full size again: an agent that recovers is read as usual.
      this.#budget = MAX_VARBINDS_PER_REQUEST;
      throw new PduError(
        "ret-code",
        `${this.#pdu()}the agent at ${this.where} answered tooBig ${this.#tooBig} times in one poll, the last to a GETBULK of ${varbinds} varbind${varbinds === 1 ? "" : "s"} (${tables.map((t) => t.entry).join(", ")}): its answers cannot hold the tables' rows; the poll was stopped`,
      );
    }
    this.#budget = Math.max(1, Math.floor(varbinds / 2));
  }

  /**
   * One SET over a session of its own, never re-sent. `once`: the write must not run twice (a
   * reboot): a lost answer is then `outcome-unknown`.
   */
  async set(varbind: SetVarbind, what: string, once: boolean, signal?: AbortSignal): Promise<void> {
    if (this.#closed) throw new PduError("unreachable", `cannot reach ${this.where}: closed`);
    if (!this.canWrite) {
      throw refusedUnsent(
        `${what} on ${this.where} needs a write community: set ${this.#communityVariable(true)}`,
      );
    }
    const session = this.#session(true);
    session.on("error", () => {
      // reported through the request's callback
    });
    const type =
      varbind.type === "Integer"
        ? snmp.ObjectType.Integer
        : varbind.type === "Gauge"
          ? snmp.ObjectType.Gauge
          : snmp.ObjectType.OctetString;
    try {
      const answer = await this.#request<snmp.Varbind[]>(
        (done) => session.set([{ oid: varbind.oid, type, value: varbind.value }], done),
        signal,
      );
      const vb = answer[0];
      if (vb !== undefined && isException(vb)) {
        throw new PduError("refused", `the PDU at ${this.where} has no ${varbind.oid} for ${what}`);
      }
    } catch (e) {
      if (e instanceof PduError) throw e;
      if (signal?.aborted === true) throw signal.reason;
      throw this.error(e, what, once, true);
    } finally {
      session.close();
    }
  }

  close(): void {
    this.#closed = true;
    this.#reader?.close();
    this.#reader = null;
  }
}
