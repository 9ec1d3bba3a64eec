/**
 * OBJECT IDENTIFIERs of SNMP messages converted once per distinct encoding: the BER reader and
 * writer net-snmp uses (asn1-ber) turn every OID of every message into an array of numbers and a
 * string again (decoding) or a string into an array of bytes (encoding), although a unit answers
 * the same OIDs at every poll and units of one family answer the same OIDs as each other. With
 * {@link cacheBerOids} installed, an OID whose bytes (decoding) or text (encoding) were converted
 * before takes the earlier result: the same string, the same bytes, no new objects.
 *
 * The results are those of asn1-ber's own functions (a miss runs them, and only their results are
 * kept), so every message reads and writes as it did; only OBJECT IDENTIFIERs of the default tag
 * are cached, anything unusual (another tag, a length that does not fit, an empty OID) goes
 * straight to asn1-ber. Bounded: two generations of at most {@link MAX_CACHED_OIDS} entries each
 * (the older dropped when the newer fills, an entry used from the older moved to the newer), and at
 * most {@link MAX_SAME_HASH} encodings per hash, so an agent that sends endless distinct or
 * colliding OIDs costs bounded memory and time, and only its own misses.
 */
import { createRequire } from "node:module";

/** The asn1-ber reader's state and methods used here (its own field names). */
export interface BerReader {
  _buf: Buffer;
  _size: number;
  _offset: number;
  _len: number;
  readLength(offset: number): number | null;
  readOID: (this: BerReader, tag?: number) => string | null;
}

export interface BerWriter {
  _buf: Buffer;
  _offset: number;
  _ensure(len: number): void;
  writeOID: (this: BerWriter, s: string, tag?: number) => void;
}

/** asn1-ber's writer constructor: `options` (`size`, `growthFactor`) are optional. */
export interface BerWriterConstructor {
  new (options?: object): BerWriter;
  prototype: BerWriter;
}

export interface Ber {
  Reader: { prototype: BerReader };
  Writer: BerWriterConstructor;
}

/** ASN.1 OBJECT IDENTIFIER tag. */
const OID_TAG = 6;

/** Entries per generation of each cache (a mixed fleet's distinct OIDs: a few thousand). */
export const MAX_CACHED_OIDS = 8192;
/** Most encodings kept under one hash. */
export const MAX_SAME_HASH = 4;

/** One decoded OID: its content bytes and its text; `next`: another encoding of the same hash. */
interface Decoded {
  readonly bytes: Uint8Array;
  readonly oid: string;
  next: Decoded | undefined;
}

/**
 * FNV-1a over `buf[start, end)`, with the length mixed in, cut to 30 bits: a key V8 keeps as a
 * small integer (a wider one would be a heap number, made for every lookup).
 */
function hashOf(buf: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5 ^ (end - start);
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  return (h ^ (h >>> 30)) & 0x3fffffff;
}

function sameBytes(a: Uint8Array, buf: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== buf[start + i]) return false;
  return true;
}

/** Two generations of entries by key: bounded, and what is in use stays. */
class Generations<K, V> {
  #young = new Map<K, V>();
  #old = new Map<K, V>();
  get(key: K): V | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    if (old !== undefined) {
      this.#old.delete(key);
      this.set(key, old);
    }
    return old;
  }
  set(key: K, value: V): void {
    if (!this.#young.has(key) && this.#young.size >= MAX_CACHED_OIDS) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, value);
  }
}

/** Decoded OIDs by the hash of their content bytes. */
export class DecodedOids {
  readonly #byHash = new Generations<number, Decoded>();

  /** The text of the OID encoded in `buf[start, end)`, when it was decoded before. */
  find(buf: Uint8Array, start: number, end: number, hash: number): string | undefined {
    for (let d = this.#byHash.get(hash); d !== undefined; d = d.next)
      if (sameBytes(d.bytes, buf, start, end)) return d.oid;
    return undefined;
  }

  add(buf: Uint8Array, start: number, end: number, hash: number, oid: string): void {
    const first = this.#byHash.get(hash);
    let count = 0;
    for (let d = first; d !== undefined; d = d.next) count++;
    if (count >= MAX_SAME_HASH) return;
    this.#byHash.set(hash, { bytes: Uint8Array.prototype.slice.call(buf, start, end), oid, next: first });
  }
}

/** asn1-ber as net-snmp loads it (the same module instance, whatever the layout of node_modules). */
export function netSnmpBer(): Ber {
  const here = createRequire(import.meta.url);
  const fromNetSnmp = createRequire(here.resolve("net-snmp"));
  return (fromNetSnmp("asn1-ber") as { Ber: Ber }).Ber;
}

/** The readOID that looks `cache` up first; `original` decodes what it has not seen. */
export function cachedReadOid(
  original: BerReader["readOID"],
  cache: DecodedOids,
): (this: BerReader, tag?: number) => string | null {
  return function readOID(this: BerReader, tag?: number): string | null {
    // asn1-ber takes a missing or zero tag as OBJECT IDENTIFIER.
    if (tag !== undefined && tag !== 0 && tag !== OID_TAG) return original.call(this, tag);
    const buf = this._buf;
    const at = this._offset;
    if (at >= this._size || buf[at] !== OID_TAG) return original.call(this, tag);
    const start = this.readLength(at + 1);
    if (start === null) return original.call(this, tag);
    const end = start + this._len;
    if (end === start || this._len > this._size - start) return original.call(this, tag);
    const hash = hashOf(buf, start, end);
    const known = cache.find(buf, start, end, hash);
    if (known !== undefined) {
      this._offset = end;
      return known;
    }
    const oid = original.call(this, tag);
    if (typeof oid === "string" && this._offset === end) cache.add(buf, start, end, hash, oid);
    return oid;
  };
}

/** The writeOID that copies the bytes it wrote before for the same text; `original` writes the rest. */
export function cachedWriteOid(
  original: BerWriter["writeOID"],
): (this: BerWriter, s: string, tag?: number) => void {
  const written = new Generations<string, Uint8Array>();
  return function writeOID(this: BerWriter, s: string, tag?: number): void {
    // asn1-ber takes a tag that is not a number as OBJECT IDENTIFIER.
    if (typeof s !== "string" || (typeof tag === "number" && tag !== OID_TAG)) {
      original.call(this, s, tag);
      return;
    }
    const bytes = written.get(s);
    if (bytes !== undefined) {
      this._ensure(bytes.length);
      this._buf.set(bytes, this._offset);
      this._offset += bytes.length;
      return;
    }
    const from = this._offset;
    original.call(this, s, tag);
    written.set(s, Uint8Array.prototype.slice.call(this._buf, from, this._offset));
  };
}

let installed = false;

/** Installs the caches on net-snmp's asn1-ber, once per process. */
export function cacheBerOids(): void {
  if (installed) return;
  installed = true;
  const ber = netSnmpBer();
  const reader = ber.Reader.prototype;
  const writer = ber.Writer.prototype;
  reader.readOID = cachedReadOid(reader.readOID, new DecodedOids());
  writer.writeOID = cachedWriteOid(writer.writeOID);
}
