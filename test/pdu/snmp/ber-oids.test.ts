/**
 * The OID caches of net-snmp's BER reader and writer (src/pdu/snmp/ber-oids.ts): whatever the bytes
 * or the text, the cached functions give exactly what asn1-ber's own give (the same text, the same
 * bytes, the same offsets, the same errors), and an OID seen before is not converted again.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import {
  type BerReader,
  type BerWriter,
  cacheBerOids,
  cachedReadOid,
  cachedWriteOid,
  DecodedOids,
  MAX_CACHED_OIDS,
} from "../../../src/pdu/snmp/ber-oids.js";

type Reader = BerReader & { readonly offset: number };
type Writer = BerWriter & { readonly buffer: Buffer };
interface Ber {
  Reader: { new (b: Buffer): Reader; prototype: Reader };
  Writer: { new (): Writer; prototype: Writer };
}
const here = createRequire(import.meta.url);
const ber = (createRequire(here.resolve("net-snmp"))("asn1-ber") as { Ber: Ber }).Ber;
const ORIGINAL_READ = ber.Reader.prototype.readOID;
const ORIGINAL_WRITE = ber.Writer.prototype.writeOID;

/** A deterministic generator (the same cases every run). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** OIDs of every shape asn1-ber writes: short and long, arcs of one to five bytes. */
function oids(count: number): string[] {
  const next = random(42);
  const out = ["1.3.6.1.2.1.1.2.0", "0.0", "1.39", "2.5.4.3", "1.3.6.1.4.1.13742.6.5.4.3.1.4.1.24.8"];
  const sizes = [1, 127, 128, 16383, 16384, 2097151, 2097152, 268435455, 268435456, 4294967295];
  for (let i = 0; i < count; i++) {
    const arcs = [Math.floor(next() * 3), Math.floor(next() * 40)];
    const n = 1 + Math.floor(next() * 16);
    for (let k = 0; k < n; k++)
      arcs.push(next() < 0.2 ? sizes[Math.floor(next() * sizes.length)]! : Math.floor(next() * 300));
    out.push(arcs.join("."));
  }
  return out;
}

function encoded(list: readonly string[], write = ORIGINAL_WRITE): Buffer {
  const w = new ber.Writer();
  for (const oid of list) write.call(w, oid);
  return w.buffer;
}

/** Every OID of `buf` read one after another: each text (or error) and the offset after it. */
function readAll(buf: Buffer, read: Reader["readOID"], tag?: number): unknown[] {
  const r = new ber.Reader(buf);
  const out: unknown[] = [];
  for (let i = 0; i < 64 && r.offset < buf.length; i++) {
    try {
      out.push(read.call(r, tag), r.offset);
    } catch (e) {
      out.push(`throws ${(e as Error).message}`);
      break;
    }
  }
  return out;
}

function counted<F extends (...args: never[]) => unknown>(f: F): { f: F; calls: () => number } {
  let calls = 0;
  const wrapped = function (this: unknown, ...args: Parameters<F>) {
    calls++;
    return f.apply(this, args);
  } as F;
  return { f: wrapped, calls: () => calls };
}

describe("the OID cache of the BER reader", () => {
  it("reads every OID as asn1-ber does, the first time and again", () => {
    const list = oids(2000);
    const buf = encoded(list);
    const read = cachedReadOid(ORIGINAL_READ, new DecodedOids());
    const expected = readAll(buf, ORIGINAL_READ);
    assert.equal(expected.length, 64 * 2); // the first 64 OIDs and offsets
    assert.deepEqual(readAll(buf, read), expected);
    assert.deepEqual(readAll(buf, read), expected);
    // All of them, one reader each (asn1-ber's own text: an arc of 2^28 or more does not come back as written).
    for (const oid of list) {
      const b = encoded([oid]);
      assert.equal(read.call(new ber.Reader(b)), ORIGINAL_READ.call(new ber.Reader(b)));
    }
    assert.equal(read.call(new ber.Reader(encoded([list[4]!]))), list[4]);
  });

  it("decodes an OID seen before without asn1-ber, and a new one with it", () => {
    const original = counted(ORIGINAL_READ);
    const read = cachedReadOid(original.f, new DecodedOids());
    const buf = encoded(["1.3.6.1.4.1.318.1.1.26.9.4.3.1.5.1", "1.3.6.1.4.1.318.1.1.26.9.4.3.1.5.2"]);
    readAll(buf, read);
    assert.equal(original.calls(), 2);
    readAll(buf, read);
    assert.equal(original.calls(), 2);
    readAll(encoded(["1.3.6.1.4.1.318.1.1.26.9.4.3.1.5.3"]), read);
    assert.equal(original.calls(), 3);
  });

  it("gives what asn1-ber gives for any bytes: truncated, empty, unfinished arcs, other tags", () => {
    const next = random(7);
    const read = cachedReadOid(ORIGINAL_READ, new DecodedOids());
    const fixed = [
      Buffer.from([6, 0]), // empty OID
      Buffer.from([6, 3, 0x2b, 0x86]), // shorter than its length
      Buffer.from([6, 2, 0x2b, 0x86]), // an arc that never ends
      Buffer.from([6, 0x80, 1]), // indefinite length
      Buffer.from([6, 0x81]), // a long length cut short
      Buffer.from([6, 0x81, 2, 0x2b, 6]), // a long length
      Buffer.from([4, 2, 0x2b, 6]), // an OCTET STRING
      Buffer.from([6]),
    ];
    const cases = [...fixed];
    for (let i = 0; i < 3000; i++) {
      const len = Math.floor(next() * 24);
      const b = Buffer.alloc(len + 2);
      b[0] = next() < 0.9 ? 6 : Math.floor(next() * 256);
      b[1] = next() < 0.8 ? len : Math.floor(next() * 256);
      for (let k = 2; k < b.length; k++) b[k] = Math.floor(next() * 256);
      cases.push(b, Buffer.concat([b, b]));
    }
    for (const b of cases) {
      for (const tag of [undefined, 0, 6, 4]) {
        const expected = readAll(b, ORIGINAL_READ, tag);
        assert.deepEqual(readAll(b, read, tag), expected, `${b.toString("hex")} tag ${tag}`);
        assert.deepEqual(readAll(b, read, tag), expected, `${b.toString("hex")} tag ${tag}, again`);
      }
    }
  });

  it("stays right past its bounds (more distinct OIDs than both generations hold)", () => {
    const read = cachedReadOid(ORIGINAL_READ, new DecodedOids());
    const list = oids(MAX_CACHED_OIDS * 2 + 500);
    const same = (oid: string) => {
      const b = encoded([oid]);
      assert.equal(read.call(new ber.Reader(b)), ORIGINAL_READ.call(new ber.Reader(b)));
    };
    list.forEach(same);
    list.slice(0, 1000).forEach(same);
  });
});

describe("the OID cache of the BER writer", () => {
  it("writes every OID's bytes as asn1-ber does, the first time and again", () => {
    const list = oids(2000);
    const write = cachedWriteOid(ORIGINAL_WRITE);
    const expected = encoded(list);
    assert.deepEqual(encoded(list, write), expected);
    assert.deepEqual(encoded(list, write), expected);
  });

  it("encodes a text seen before without asn1-ber", () => {
    const original = counted(ORIGINAL_WRITE);
    const write = cachedWriteOid(original.f);
    encoded(["1.3.6.1.2.1.1.2.0", "1.3.6.1.2.1.1.1.0"], write);
    encoded(["1.3.6.1.2.1.1.2.0", "1.3.6.1.2.1.1.1.0"], write);
    assert.equal(original.calls(), 2);
  });

  it("refuses what asn1-ber refuses and writes other tags as asn1-ber does", () => {
    const write = cachedWriteOid(ORIGINAL_WRITE);
    for (const bad of ["", "1..3", "1.3.", "a.b", " 1.3"]) {
      assert.throws(() => encoded([bad], write), /not a valid OID string/);
      assert.throws(() => encoded([bad], write), /not a valid OID string/);
    }
    const tagged = (w: typeof ORIGINAL_WRITE) => {
      const x = new ber.Writer();
      w.call(x, "1.3.6.1", 0x80);
      w.call(x, "1.3.6.1");
      w.call(x, "1.3.6.1", 0x80);
      return x.buffer;
    };
    assert.deepEqual(tagged(write), tagged(ORIGINAL_WRITE));
  });
});

describe("cacheBerOids", () => {
  it("installs both on net-snmp's asn1-ber, once, and they round-trip", () => {
    cacheBerOids();
    const read = ber.Reader.prototype.readOID;
    const write = ber.Writer.prototype.writeOID;
    assert.notEqual(read, ORIGINAL_READ);
    assert.notEqual(write, ORIGINAL_WRITE);
    cacheBerOids();
    assert.equal(ber.Reader.prototype.readOID, read);
    const list = oids(300);
    const w = new ber.Writer();
    for (const oid of list) w.writeOID(oid);
    const r = new ber.Reader(w.buffer);
    const o = new ber.Reader(w.buffer);
    for (let i = 0; i < list.length; i++) assert.equal(r.readOID(), ORIGINAL_READ.call(o));
    assert.equal(new ber.Reader(encoded([list[0]!])).readOID(), list[0]);
  });
});
