/**
 * A bench-only SNMP v2c responder: many simulated units in one process, each on its own UDP port,
 * answering GET, GETNEXT and GETBULK from pre-encoded varbinds, so that a thousand units cost the
 * machine little and the pollers measured beside them are not starved.
 *
 * What it serves is the project's simulator unit (src/simulator/snmp/units.ts, `SimUnit`): the same
 * tables, columns, types, index structure and living values (currents wander, energy accrues). The
 * walk's shape (the sorted OIDs, their encodings and types) is the same for every unit of one
 * profile and outlet count, so it is encoded once; each unit holds its values as one buffer of
 * encoded varbinds, re-encoded from `SimUnit.content()` when a request arrives and the values are
 * older than `refreshMs` (at most once per poll at the bench's intervals, and never while idle).
 * An answer is the header (the request's own request-id bytes copied in) and the encoded varbinds
 * copied out of that buffer. Each unit can report a serial number of its own, as real units do.
 *
 * Not the project's simulator: no writes (SET is not answered), no SNMPv3, no hostile modes; the
 * tests use `pdu-bridge simulate --snmp` (src/simulator/snmp/agent.ts) and snmpsim.
 */
import { createSocket, type Socket } from "node:dgram";
import {
  SimUnit,
  type SimContent,
  type SimProfile,
  type SimType,
  type SimValue,
} from "../../src/simulator/snmp/units.js";

export interface ResponderOptions {
  readonly profile: SimProfile;
  readonly outlets: number;
  readonly units: number;
  /** Seed of the first unit; unit i has seed `seed + i`. */
  readonly seed: number;
  readonly community: string;
  readonly host?: string;
  /**
   * An OctetString cell (its instance OID) in which each unit answers a serial number of its own
   * (`<prefix><seed, 8 digits>`), as real units do; absent: every unit answers the simulator's.
   */
  readonly serial?: { readonly oid: string; readonly prefix: string };
  /** Values older than this are re-read from the unit when a request arrives (default 1000 ms). */
  readonly refreshMs?: number;
  /** Most varbinds in one answer: a GETBULK asking for more gets this many (default 256). */
  readonly maxAnswerVarbinds?: number;
  /** An answer of more varbinds than this is refused with tooBig instead (default: never). */
  readonly tooBigAbove?: number;
  /** Called for every datagram with its source and the unit it went to (benchmarks count polls by it). */
  readonly onRequest?: (address: string, port: number, unit: number) => void;
}

export interface Responder {
  /** The UDP port of each unit, in unit order. */
  readonly ports: readonly number[];
  /** Varbinds in one unit's walk. */
  readonly varbinds: number;
  close(): Promise<void>;
}

/** ASN.1 / SNMP tags. */
const TAG = {
  integer: 0x02,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  sequence: 0x30,
  ipAddress: 0x40,
  counter: 0x41,
  gauge: 0x42,
  timeTicks: 0x43,
  noSuchInstance: 0x81,
  endOfMibView: 0x82,
  get: 0xa0,
  getNext: 0xa1,
  response: 0xa2,
  getBulk: 0xa5,
} as const;

const VALUE_TAG: Readonly<Record<SimType, number>> = {
  Integer: TAG.integer,
  OctetString: TAG.octetString,
  Gauge: TAG.gauge,
  Counter: TAG.counter,
  IpAddress: TAG.ipAddress,
  OID: TAG.oid,
  TimeTicks: TAG.timeTicks,
};

/** Most varbinds in one answer by default (a GETBULK asking for more gets this many). */
const MAX_ANSWER_VARBINDS = 256;

// --- BER ------------------------------------------------------------------------------------

function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

function tlv(tag: number, content: Buffer | readonly number[]): Buffer {
  const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
  return Buffer.concat([Buffer.from([tag, ...lengthBytes(body.length)]), body]);
}

function signedBytes(n: number): number[] {
  const out: number[] = [];
  let v = Math.trunc(n);
  for (;;) {
    const byte = v & 0xff;
    out.unshift(byte);
    v = Math.floor(v / 256);
    if ((v === 0 && (byte & 0x80) === 0) || (v === -1 && (byte & 0x80) !== 0)) return out;
  }
}

function unsignedBytes(n: number): number[] {
  const out: number[] = [];
  let v = Math.max(0, Math.trunc(n)) % 2 ** 32;
  do {
    out.unshift(v & 0xff);
    v = Math.floor(v / 256);
  } while (v > 0);
  if ((out[0] ?? 0) & 0x80) out.unshift(0);
  return out;
}

function oidContent(parts: readonly number[]): number[] {
  const out = [(parts[0] ?? 0) * 40 + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const chunk = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return out;
}

function oidOf(content: Buffer): number[] {
  const first = content[0] ?? 0;
  const parts = [Math.floor(first / 40), first % 40];
  let v = 0;
  for (let i = 1; i < content.length; i++) {
    const b = content[i] ?? 0;
    v = v * 128 + (b & 0x7f);
    if ((b & 0x80) === 0) {
      parts.push(v);
      v = 0;
    }
  }
  return parts;
}

function valueTlv(type: SimType, value: SimValue): Buffer {
  const tag = VALUE_TAG[type];
  switch (type) {
    case "Integer":
      return tlv(tag, signedBytes(typeof value === "number" ? value : 0));
    case "Gauge":
    case "Counter":
    case "TimeTicks":
      return tlv(tag, unsignedBytes(typeof value === "number" ? value : 0));
    case "OID":
      return tlv(tag, oidContent(String(value).split(".").map(Number)));
    case "IpAddress":
      return tlv(tag, Buffer.isBuffer(value) ? value : String(value).split(".").map(Number));
    case "OctetString":
      return tlv(tag, Buffer.isBuffer(value) ? value : Buffer.from(String(value), "utf8"));
  }
}

/** Reads a tag and length at `pos`: the content's start and end, or null when malformed. */
function header(buf: Buffer, pos: number): { tag: number; start: number; end: number } | null {
  if (pos + 2 > buf.length) return null;
  const tag = buf[pos]!;
  let len = buf[pos + 1]!;
  let start = pos + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 3 || start + n > buf.length) return null;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[start + i]!;
    start += n;
  }
  const end = start + len;
  return end > buf.length ? null : { tag, start, end };
}

function intAt(buf: Buffer, h: { start: number; end: number }): number {
  let v = 0;
  for (let i = h.start; i < h.end; i++) v = v * 256 + buf[i]!;
  return v;
}

function compareOids(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

// --- The walk's shape, shared by every unit ----------------------------------------------------

interface Cell {
  readonly oid: readonly number[];
  readonly type: SimType;
}

/** Every cell of a unit's content in content order (scalars, then each table column by column). */
function cellsOf(content: SimContent): { cell: Cell; value: SimValue }[] {
  const out: { cell: Cell; value: SimValue }[] = [];
  for (const s of content.scalars) {
    out.push({ cell: { oid: s.oid.split(".").map(Number), type: s.type }, value: s.value });
  }
  for (const table of content.tables) {
    const entry = table.entry.split(".").map(Number);
    for (const c of table.columns) {
      for (const row of table.rows) {
        const value = row.cells.get(c.id);
        if (value === undefined) continue;
        out.push({ cell: { oid: [...entry, c.id, ...row.index], type: c.type }, value });
      }
    }
  }
  return out;
}

class Shape {
  /** Sorted OIDs. */
  readonly oids: (readonly number[])[];
  readonly types: SimType[];
  /** The encoded OID (tag, length, content) of each sorted position. */
  readonly oidTlvs: Buffer[];
  /** Content order → sorted position. */
  readonly order: Int32Array;
  /** Requested OID (its content bytes as latin1) → [exact position or -1, next position]. */
  readonly #lookups = new Map<string, readonly [number, number]>();

  constructor(content: SimContent) {
    const cells = cellsOf(content);
    const sorted = cells.map((c, i) => ({ oid: c.cell.oid, type: c.cell.type, i }));
    sorted.sort((a, b) => compareOids(a.oid, b.oid));
    this.oids = sorted.map((c) => c.oid);
    this.types = sorted.map((c) => c.type);
    this.oidTlvs = sorted.map((c) => tlv(TAG.oid, oidContent(c.oid)));
    this.order = new Int32Array(cells.length);
    sorted.forEach((c, position) => (this.order[c.i] = position));
  }

  /** Whether a unit's content has this shape (the same cells in the same order). */
  fits(cells: readonly { cell: Cell }[]): boolean {
    return (
      cells.length === this.order.length &&
      cells.every((c, i) => compareOids(c.cell.oid, this.oids[this.order[i]!]!) === 0)
    );
  }

  /** The exact position of a requested OID (-1: none) and the position of the first OID after it. */
  lookup(content: Buffer): readonly [number, number] {
    const key = content.toString("latin1");
    let found = this.#lookups.get(key);
    if (found === undefined) {
      const oid = oidOf(content);
      let lo = 0;
      let hi = this.oids.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (compareOids(this.oids[mid]!, oid) < 0) lo = mid + 1;
        else hi = mid;
      }
      const exact = lo < this.oids.length && compareOids(this.oids[lo]!, oid) === 0;
      found = [exact ? lo : -1, exact ? lo + 1 : lo];
      if (this.#lookups.size < 100_000) this.#lookups.set(key, found);
    }
    return found;
  }
}

// --- One unit ----------------------------------------------------------------------------------

/** A unit's values in content order (the order of {@link cellsOf}), without their OIDs. */
function valuesOf(content: SimContent): SimValue[] {
  const out: SimValue[] = [];
  for (const s of content.scalars) out.push(s.value);
  for (const table of content.tables) {
    for (const c of table.columns) {
      for (const row of table.rows) {
        const value = row.cells.get(c.id);
        if (value !== undefined) out.push(value);
      }
    }
  }
  return out;
}

class ServedUnit {
  readonly sim: SimUnit;
  /** Encoded varbinds (SEQUENCE of OID and value), in content order. */
  #arena = Buffer.alloc(4096);
  /** Where each sorted position's varbind starts and ends in the arena. */
  readonly #starts: Int32Array;
  readonly #ends: Int32Array;
  #refreshed = -Infinity;

  constructor(
    readonly shape: Shape,
    profile: SimProfile,
    outlets: number,
    seed: number,
    /** Content position and value of the unit's own serial number, if any. */
    readonly serial: { readonly at: number; readonly value: string } | null,
  ) {
    this.sim = new SimUnit({ profile, outlets, seed });
    this.#starts = new Int32Array(shape.order.length);
    this.#ends = new Int32Array(shape.order.length);
  }

  /** Re-encodes the unit's values when they are older than `refreshMs`. */
  refresh(now: number, refreshMs: number): void {
    if (now - this.#refreshed < refreshMs) return;
    this.#refreshed = now;
    const values = valuesOf(this.sim.content(now));
    const order = this.shape.order;
    if (values.length !== order.length) throw new Error("a unit's walk changed its shape");
    let at = 0;
    for (let i = 0; i < values.length; i++) {
      const position = order[i]!;
      const value = this.serial?.at === i ? this.serial.value : values[i]!;
      const oid = this.shape.oidTlvs[position]!;
      const v = valueTlv(this.shape.types[position]!, value);
      const head = lengthBytes(oid.length + v.length);
      const size = 1 + head.length + oid.length + v.length;
      if (at + size > this.#arena.length) {
        const bigger = Buffer.alloc(Math.max(this.#arena.length * 2, at + size));
        this.#arena.copy(bigger, 0, 0, at);
        this.#arena = bigger;
      }
      this.#starts[position] = at;
      this.#arena[at++] = TAG.sequence;
      for (const b of head) this.#arena[at++] = b;
      at += oid.copy(this.#arena, at);
      at += v.copy(this.#arena, at);
      this.#ends[position] = at;
    }
  }

  /** Copies the varbind at `position` into `out` at `at`; returns the new offset. */
  copy(position: number, out: Buffer, at: number): number {
    return at + this.#arena.copy(out, at, this.#starts[position], this.#ends[position]);
  }

  size(position: number): number {
    return this.#ends[position]! - this.#starts[position]!;
  }
}

// --- Answers -----------------------------------------------------------------------------------

/** What one request asks, as positions in the unit's walk; null: not answered (malformed, wrong community, SET). */
function answer(
  unit: ServedUnit,
  request: Buffer,
  community: Buffer,
  refreshMs: number,
  limits: { readonly most: number; readonly tooBigAbove: number },
): Buffer | null {
  const msg = header(request, 0);
  if (msg?.tag !== TAG.sequence) return null;
  const version = header(request, msg.start);
  if (version?.tag !== TAG.integer || intAt(request, version) !== 1) return null;
  const comm = header(request, version.end);
  if (comm?.tag !== TAG.octetString || !request.subarray(comm.start, comm.end).equals(community)) return null;
  const pdu = header(request, comm.end);
  if (pdu === null || (pdu.tag !== TAG.get && pdu.tag !== TAG.getNext && pdu.tag !== TAG.getBulk))
    return null;
  const requestId = header(request, pdu.start);
  if (requestId?.tag !== TAG.integer) return null;
  const second = header(request, requestId.end);
  const third = second === null ? null : header(request, second.end);
  const list = third === null ? null : header(request, third.end);
  if (second === null || third === null || list?.tag !== TAG.sequence) return null;
  const asked: Buffer[] = [];
  for (let at = list.start; at < list.end;) {
    const vb = header(request, at);
    if (vb?.tag !== TAG.sequence) return null;
    const oid = header(request, vb.start);
    if (oid?.tag !== TAG.oid || oid.end === oid.start) return null;
    asked.push(request.subarray(oid.start, oid.end));
    at = vb.end;
  }
  unit.refresh(Date.now(), refreshMs);
  const shape = unit.shape;
  const count = shape.oids.length;
  // Each answer varbind: a position in the walk, or an exception with the OID it names.
  const positions: number[] = [];
  const exceptions: Buffer[] = [];
  const exception = (tag: number, oid: Buffer) => {
    positions.push(-1 - exceptions.length);
    exceptions.push(tlv(TAG.sequence, Buffer.concat([tlv(TAG.oid, oid), Buffer.from([tag, 0])])));
  };
  const next = (oid: Buffer, step: number) => {
    const p = shape.lookup(oid)[1] + step;
    if (p < count) positions.push(p);
    else exception(TAG.endOfMibView, oid);
  };
  if (pdu.tag === TAG.get) {
    for (const oid of asked) {
      const exact = shape.lookup(oid)[0];
      if (exact >= 0) positions.push(exact);
      else exception(TAG.noSuchInstance, oid);
    }
  } else if (pdu.tag === TAG.getNext) {
    for (const oid of asked) next(oid, 0);
  } else {
    const nonRepeaters = Math.min(asked.length, intAt(request, second));
    const reps = intAt(request, third);
    for (let i = 0; i < nonRepeaters; i++) next(asked[i]!, 0);
    const repeaters = asked.slice(nonRepeaters);
    // An answer over `most` varbinds is cut after its first `most` (RFC 3416 lets an agent send fewer).
    reps: for (let r = 0; r < reps && repeaters.length > 0; r++) {
      if (positions.length + repeaters.length > limits.tooBigAbove)
        return tooBig(request, version, comm, requestId);
      for (const oid of repeaters) {
        if (positions.length >= limits.most) break reps;
        next(oid, r);
      }
      // Every repeater past the end: nothing more to say.
      if (repeaters.every((oid) => shape.lookup(oid)[1] + r >= count)) break;
    }
  }
  let varbindBytes = 0;
  for (const p of positions) varbindBytes += p >= 0 ? unit.size(p) : exceptions[-1 - p]!.length;
  const reqId = request.subarray(pdu.start, requestId.end);
  const status = [TAG.integer, 1, 0, TAG.integer, 1, 0];
  const listHead = [TAG.sequence, ...lengthBytes(varbindBytes)];
  const pduLen = reqId.length + status.length + listHead.length + varbindBytes;
  const pduHead = [TAG.response, ...lengthBytes(pduLen)];
  const commTlv = request.subarray(version.end, comm.end);
  const versionTlv = [TAG.integer, 1, 1];
  const msgLen = versionTlv.length + commTlv.length + pduHead.length + pduLen;
  const msgHead = [TAG.sequence, ...lengthBytes(msgLen)];
  const out = Buffer.allocUnsafe(msgHead.length + msgLen);
  let at = 0;
  for (const b of [...msgHead, ...versionTlv]) out[at++] = b;
  at += commTlv.copy(out, at);
  for (const b of pduHead) out[at++] = b;
  at += reqId.copy(out, at);
  for (const b of [...status, ...listHead]) out[at++] = b;
  for (const p of positions) at = p >= 0 ? unit.copy(p, out, at) : at + exceptions[-1 - p]!.copy(out, at);
  return out;
}

/** A Response with error-status tooBig (1) and no varbinds, for the request's request-id. */
function tooBig(
  request: Buffer,
  version: { end: number },
  comm: { end: number },
  requestId: { start: number; end: number },
): Buffer {
  const pdu = Buffer.concat([
    request.subarray(requestId.start - 2, requestId.end),
    Buffer.from([TAG.integer, 1, 1, TAG.integer, 1, 0, TAG.sequence, 0]),
  ]);
  return tlv(
    TAG.sequence,
    Buffer.concat([
      Buffer.from([TAG.integer, 1, 1]),
      request.subarray(version.end, comm.end),
      tlv(TAG.response, pdu),
    ]),
  );
}

/** Starts `units` units, each on its own UDP port on `host` (127.0.0.1 by default). */
export async function startResponder(o: ResponderOptions): Promise<Responder> {
  const host = o.host ?? "127.0.0.1";
  const refreshMs = o.refreshMs ?? 1000;
  const community = Buffer.from(o.community, "utf8");
  const limits = { most: o.maxAnswerVarbinds ?? MAX_ANSWER_VARBINDS, tooBigAbove: o.tooBigAbove ?? Infinity };
  const first = new SimUnit({ profile: o.profile, outlets: o.outlets, seed: o.seed }).content();
  const shape = new Shape(first);
  const serialAt =
    o.serial === undefined ? -1 : cellsOf(first).findIndex((c) => c.cell.oid.join(".") === o.serial?.oid);
  const sockets: Socket[] = [];
  const ports: number[] = [];
  for (let i = 0; i < o.units; i++) {
    const seed = o.seed + i;
    const serial =
      o.serial === undefined || serialAt < 0
        ? null
        : { at: serialAt, value: `${o.serial.prefix}${String(seed).padStart(8, "0")}` };
    const unit = new ServedUnit(shape, o.profile, o.outlets, seed, serial);
    if (!shape.fits(cellsOf(unit.sim.content()))) throw new Error(`unit ${seed} has another shape`);
    const socket = createSocket("udp4");
    socket.on("message", (message, rinfo) => {
      o.onRequest?.(rinfo.address, rinfo.port, i);
      let reply: Buffer | null;
      try {
        reply = answer(unit, message, community, refreshMs, limits);
      } catch {
        reply = null; // a datagram it cannot read goes unanswered, as with a real agent
      }
      if (reply !== null) socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, host, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    sockets.push(socket);
    ports.push(socket.address().port);
  }
  return {
    ports,
    varbinds: shape.oids.length,
    close: () =>
      Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(
        () => undefined,
      ),
  };
}
