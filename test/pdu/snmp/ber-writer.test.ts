/**
 * The BER writer net-snmp builds each request with (src/pdu/snmp/ber-writer.ts): whatever is
 * written, a pooled writer gives exactly the bytes asn1-ber's own gives (growing past its first
 * kilobyte too), with options it is asn1-ber's own writer, and once the transport is loaded every
 * writer net-snmp makes is a pooled one. The sockets' lookup answers an IP literal of their family
 * at once and leaves anything else to DNS.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { netSnmpBer, type BerWriter, type BerWriterConstructor } from "../../../src/pdu/snmp/ber-oids.js";
import { pooledWriter } from "../../../src/pdu/snmp/ber-writer.js";
import { literalFirstLookup } from "../../../src/pdu/snmp/transport.js";

interface Writer extends BerWriter {
  readonly buffer: Buffer;
  startSequence(tag?: number): void;
  endSequence(): void;
  writeInt(i: number, tag?: number): void;
  writeString(s: string, tag?: number): void;
  writeNull(): void;
  writeBuffer(b: Buffer, tag: number): void;
}

type Op =
  | { readonly kind: "int"; readonly value: number }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "oid"; readonly value: string }
  | { readonly kind: "null" }
  | { readonly kind: "bytes"; readonly value: Uint8Array }
  | { readonly kind: "sequence"; readonly tag: number; readonly inner: readonly Op[] };

const leaf: fc.Arbitrary<Op> = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((value) => ({ kind: "int" as const, value })),
  fc.string({ maxLength: 300 }).map((value) => ({ kind: "string" as const, value })),
  fc
    .array(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { minLength: 1, maxLength: 40 })
    .map((arcs) => ({ kind: "oid" as const, value: `1.3.${arcs.join(".")}` })),
  fc.constant({ kind: "null" as const }),
  fc.uint8Array({ maxLength: 700 }).map((value) => ({ kind: "bytes" as const, value })),
);

const ops: fc.Arbitrary<Op[]> = fc.letrec<{ op: Op; ops: Op[] }>((tie) => ({
  op: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.record({
      kind: fc.constant("sequence" as const),
      tag: fc.constantFrom(0x30, 0xa5, 0xa2),
      inner: tie("ops"),
    }),
  ),
  ops: fc.array(tie("op"), { maxLength: 12 }),
})).ops;

function write(w: Writer, list: readonly Op[]): void {
  for (const op of list) {
    if (op.kind === "int") w.writeInt(op.value);
    else if (op.kind === "string") w.writeString(op.value);
    else if (op.kind === "oid") w.writeOID(op.value);
    else if (op.kind === "null") w.writeNull();
    else if (op.kind === "bytes") w.writeBuffer(Buffer.from(op.value), 0x04);
    else {
      w.startSequence(op.tag);
      write(w, op.inner);
      w.endSequence();
    }
  }
}

/** The bytes `Ctor` writes for `list` inside one outer sequence, as net-snmp writes a message. */
function encode(Ctor: BerWriterConstructor, list: readonly Op[], options?: object): Buffer {
  const w = new Ctor(options) as Writer;
  w.startSequence();
  write(w, list);
  w.endSequence();
  return w.buffer;
}

describe("net-snmp's BER writer on a pooled buffer", () => {
  const Original = netSnmpBer().Writer;
  const Pooled = pooledWriter(Original);

  it("writes exactly the bytes asn1-ber's own writer writes, small messages and large", () => {
    fc.assert(
      fc.property(ops, (list) => {
        assert.deepEqual(encode(Pooled, list), encode(Original, list));
      }),
      { numRuns: 300 },
    );
  });

  it("grows past its first kilobyte as asn1-ber's does", () => {
    const list: Op[] = Array.from({ length: 200 }, (_, i) => ({
      kind: "oid",
      value: `1.3.6.1.4.1.318.1.1.26.9.4.3.1.${i}`,
    }));
    const bytes = encode(Pooled, list);
    assert.ok(bytes.length > 1024, `${bytes.length} bytes`);
    assert.deepEqual(bytes, encode(Original, list));
  });

  it("takes its buffer from Node's pool, and is asn1-ber's own when given options", () => {
    const pooled = new Pooled() as Writer;
    // A buffer of its own would be an ArrayBuffer of exactly 1024 bytes.
    assert.ok(pooled._buf.buffer.byteLength > 1024, `${pooled._buf.buffer.byteLength}`);
    assert.ok(
      pooled._buf.every((b) => b === 0),
      "zeroed",
    );
    const sized = new Pooled({ size: 64 }) as Writer;
    assert.equal(sized._buf.length, 64);
    assert.ok(sized instanceof Original);
    assert.deepEqual(
      encode(Pooled, [{ kind: "int", value: 7 }], { size: 4 }),
      encode(Original, [{ kind: "int", value: 7 }]),
    );
  });

  it("is the writer net-snmp makes once the transport is loaded", () => {
    const made = new (netSnmpBer().Writer)() as Writer;
    assert.ok(made._buf.buffer.byteLength > 1024, "net-snmp's writer allocates a kilobyte of its own");
  });
});

describe("the SNMP sockets' lookup", () => {
  it("answers an IP literal of the socket's family at once", () => {
    const answers: unknown[][] = [];
    literalFirstLookup(4)("127.0.0.1", { family: 4 }, (...a) => answers.push(a));
    literalFirstLookup(6)("::1", { family: 6 }, (...a) => answers.push(a));
    assert.deepEqual(answers, [
      [null, "127.0.0.1", 4],
      [null, "::1", 6],
    ]);
  });

  it("leaves a name, or a literal of the other family, to DNS (answered later, as dns.lookup answers)", async () => {
    const ask = (family: 4 | 6, host: string) =>
      new Promise<{ sync: boolean; error: unknown; address: string; family: number }>((resolve) => {
        let returned = false;
        literalFirstLookup(family)(host, { family }, (error, address, got) =>
          resolve({ sync: !returned, error, address, family: got }),
        );
        returned = true;
      });
    const name = await ask(4, "localhost");
    assert.equal(name.sync, false);
    assert.equal(name.error, null);
    assert.equal(name.family, 4);
    const other = await ask(4, "::1");
    assert.deepEqual(other, { sync: false, error: null, address: "::1", family: 6 });
  });
});
