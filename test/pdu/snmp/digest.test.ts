/**
 * The digest the SNMP driver compares to tell an unchanged answer: the same varbinds (as other
 * objects, other buffers) give the same digest, and any one change of an OID, a type, a value or
 * where a list ends gives another, each change a digest of its own.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { digestOf } from "../../../src/pdu/snmp/digest.js";
import type { WalkedVarbind } from "../../../src/pdu/snmp/parse.js";

const ENTRY = "1.3.6.1.4.1.318.1.1.26.9.4.3.1";

/** Two tables' lists and the scalars of an answer: numbers of every size and sign, text, holes. */
function answer(): WalkedVarbind[][] {
  const outlets: WalkedVarbind[] = [];
  for (let row = 1; row <= 6; row++) {
    outlets.push({ oid: `${ENTRY}.3.${row}`, type: "OctetString", value: Buffer.from(`Outlet ${row}`) });
    outlets.push({ oid: `${ENTRY}.5.${row}`, type: "Integer", value: row % 2 });
    outlets.push({ oid: `${ENTRY}.6.${row}`, type: "Gauge", value: row * 13 });
    outlets.push({ oid: `${ENTRY}.7.${row}`, type: "Counter", value: 2 ** 32 - row });
  }
  const banks: WalkedVarbind[] = [
    { oid: `${ENTRY}.9.1`, type: "Integer", value: -5 },
    { oid: `${ENTRY}.9.2`, type: "Other", value: null },
    { oid: `${ENTRY}.10.1`, type: "ObjectIdentifier", value: Buffer.from("1.3.6.1.2.1") },
  ];
  const scalars: WalkedVarbind[] = [
    { oid: "1.3.6.1.4.1.318.1.1.12.1.1.0", type: "OctetString", value: Buffer.from([0, 0xff, 7]) },
    { oid: "1.3.6.1.4.1.318.1.1.12.1.7.0", type: "Integer", value: 2 ** 40 + 3 },
  ];
  return [outlets, banks, scalars];
}

/** Every answer one change away from {@link answer}. */
function changed(): { what: string; lists: WalkedVarbind[][] }[] {
  const out: { what: string; lists: WalkedVarbind[][] }[] = [];
  const base = answer();
  base.forEach((list, l) =>
    list.forEach((vb, i) => {
      const one = (what: string, to: WalkedVarbind) => {
        const lists = answer();
        lists[l]![i] = to;
        out.push({ what: `${l}/${i} ${what}`, lists });
      };
      one("OID one more digit", { ...vb, oid: `${vb.oid}1` });
      one("OID last digit", { ...vb, oid: vb.oid.replace(/\d$/, (d) => String((Number(d) + 1) % 10)) });
      one("type", { ...vb, type: vb.type === "Gauge" ? "Unsigned" : "Gauge" });
      one("null", { ...vb, value: vb.value === null ? 0 : null });
      const v = vb.value;
      if (typeof v === "number") {
        one("plus one", { ...vb, value: v + 1 });
        one("plus 2^32", { ...vb, value: v + 2 ** 32 });
        one("negated", { ...vb, value: -v - 1 });
        one("as text", { ...vb, value: Buffer.from(String(v)) });
      } else if (v !== null) {
        const flipped = Buffer.from(v);
        flipped[flipped.length - 1]! ^= 1;
        one("last byte", { ...vb, value: flipped });
        one("one byte more", { ...vb, value: Buffer.concat([v, Buffer.from([0])]) });
        one("one byte less", { ...vb, value: v.subarray(0, v.length - 1) });
      }
    }),
  );
  const moved = answer();
  moved[1]!.unshift(moved[0]!.pop()!);
  out.push({ what: "the last outlet varbind in the banks' list", lists: moved });
  const swapped = answer();
  const [x, y] = [swapped[0]![0]!, swapped[0]![1]!];
  swapped[0]![0] = y;
  swapped[0]![1] = x;
  out.push({ what: "two varbinds swapped", lists: swapped });
  out.push({ what: "an empty list more", lists: [...answer(), []] });
  out.push({ what: "a float", lists: [[{ oid: "1.3", type: "Integer", value: 0.5 }]] });
  out.push({ what: "another float", lists: [[{ oid: "1.3", type: "Integer", value: 0.25 }]] });
  out.push({ what: "a non-ASCII OID", lists: [[{ oid: "1.\u0663", type: "Integer", value: 1 }]] });
  return out;
}

describe("the SNMP answer digest", () => {
  it("is the same for the same varbinds, in other objects and buffers", () => {
    const a = digestOf(answer());
    const b = digestOf(answer().map((list) => list.map((vb) => ({ ...vb }))));
    assert.equal(a, b);
    assert.match(a, /^[0-9a-f]{16}$/);
  });

  it("differs for any one change, each change its own digest", () => {
    const seen = new Map<string, string>([[digestOf(answer()), "the answer itself"]]);
    const cases = changed();
    assert.ok(cases.length > 200, `${cases.length} changes`);
    for (const { what, lists } of cases) {
      const d = digestOf(lists);
      assert.equal(seen.get(d), undefined, `${what}: the digest of ${seen.get(d) ?? ""}`);
      seen.set(d, what);
    }
  });
});
