/**
 * The SNMP parser on answers no well-behaved agent sends: values at the top of Counter32/Gauge32,
 * exceptions in varbinds, strings that are not UTF-8, rows without a number, an outlet table with
 * no row. Nothing throws but the one essential failure, which names the table's OID.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ParseError } from "../../../src/pdu/errors.js";
import { decodeText, parsePoll, type WalkedVarbind } from "../../../src/pdu/snmp/parse.js";
import { PROFILES } from "../../../src/pdu/snmp/profiles.js";
import { RARITAN_PX } from "../../../src/pdu/snmp/profiles/raritan-px.js";

const VENDOR = { manufacturer: "Raritan", groupModel: "Group" };
const OUTLETS = "1.3.6.1.4.1.13742.4.1.2.2.1";

function poll(outlets: WalkedVarbind[], scalars: WalkedVarbind[] = []) {
  return parsePoll(
    RARITAN_PX,
    { tables: new Map([["outletEntry", outlets]]), scalars: new Map(scalars.map((s) => [s.oid, s])) },
    "px",
    1,
    VENDOR,
  );
}

describe("SNMP parser", () => {
  it("numbers at the top of Counter32/Gauge32 are taken as they are", () => {
    const { snapshot } = poll([
      { oid: `${OUTLETS}.3.1`, type: "Integer", value: 1 },
      { oid: `${OUTLETS}.31.1`, type: "Gauge", value: 4294967295 },
      { oid: `${OUTLETS}.4.1`, type: "Counter", value: 0 },
    ]);
    const outlet = snapshot.devices[0]?.outlets[0];
    assert.equal(outlet?.measurements.find((m) => m.type === "energy")?.value, 4294967.295);
    assert.equal(outlet?.measurements.find((m) => m.type === "current")?.value, 0);
  });

  it("exceptions are holes, wrong types are left out with one warning per column", () => {
    const { snapshot } = poll([
      { oid: `${OUTLETS}.3.1`, type: "Integer", value: 1 },
      { oid: `${OUTLETS}.3.2`, type: "Integer", value: 0 },
      { oid: `${OUTLETS}.4.1`, type: "Other", value: null },
      { oid: `${OUTLETS}.4.2`, type: "OctetString", value: Buffer.from("12 A") },
      { oid: `${OUTLETS}.7.1`, type: "OctetString", value: Buffer.from("x") },
      { oid: `${OUTLETS}.7.2`, type: "OctetString", value: Buffer.from("y") },
    ]);
    const [a, b] = snapshot.devices[0]?.outlets ?? [];
    assert.equal(a?.state, "on");
    assert.equal(b?.state, "off");
    assert.deepEqual(a?.measurements, []);
    assert.deepEqual(b?.measurements, []);
    assert.equal(snapshot.warnings?.filter((w) => w.path === "outletEntry.outletCurrent").length, 1);
    assert.equal(snapshot.warnings?.filter((w) => w.path === "outletEntry.outletActivePower").length, 1);
  });

  it("a name that is not UTF-8, with control characters, is decoded safely and bounded", () => {
    assert.equal(decodeText(Buffer.from([0x41, 0xff, 0x1b, 0x42])), "A\ufffd\ufffdB");
    assert.equal([...decodeText(Buffer.alloc(4000, 0x61))].length, 128);
    const { snapshot } = poll([
      { oid: `${OUTLETS}.2.1`, type: "OctetString", value: Buffer.from([0xc3, 0x28, 0x00, 0x41]) },
      { oid: `${OUTLETS}.3.1`, type: "Integer", value: 1 },
    ]);
    assert.equal(snapshot.devices[0]?.outlets[0]?.label, "\ufffd(\ufffdA");
  });

  it("the device id is the serial, else the MAC, else the instance id", () => {
    const row = [{ oid: `${OUTLETS}.3.1`, type: "Integer" as const, value: 1 }];
    const mac: WalkedVarbind = {
      oid: "1.3.6.1.4.1.13742.4.1.1.6.0",
      type: "OctetString",
      value: Buffer.from("000d5d012345", "hex"),
    };
    const serial: WalkedVarbind = {
      oid: "1.3.6.1.4.1.13742.4.1.1.2.0",
      type: "OctetString",
      value: Buffer.from("PKL1"),
    };
    assert.equal(poll(row).snapshot.devices[0]?.id, "px");
    assert.equal(poll(row, [mac]).snapshot.devices[0]?.id, "00:0D:5D:01:23:45");
    assert.equal(poll(row, [mac, serial]).snapshot.devices[0]?.id, "PKL1");
  });

  it("rows with an absurd number or index shape are skipped; no outlet row fails naming the OID", () => {
    const { snapshot } = poll([
      { oid: `${OUTLETS}.3.1`, type: "Integer", value: 1 },
      { oid: `${OUTLETS}.3.99999`, type: "Integer", value: 1 },
      { oid: `${OUTLETS}.3.1.2`, type: "Integer", value: 1 },
    ]);
    assert.equal(snapshot.devices[0]?.outlets.length, 1);
    assert.ok((snapshot.warnings?.length ?? 0) >= 2);
    assert.throws(
      () => poll([]),
      (e) => e instanceof ParseError && e.path.includes(OUTLETS),
    );
  });

  it("a poll that finds no unit names the tables it tried, in words that read right for every family", () => {
    const empty = { tables: new Map(), scalars: new Map() };
    for (const profile of PROFILES) {
      assert.throws(
        () => parsePoll(profile, empty, "none", 1, VENDOR),
        (e) => {
          assert.ok(e instanceof ParseError, String(e));
          assert.ok(e.path.includes(profile.outlets.table), e.path);
          assert.match(
            e.message,
            new RegExp(`serves no unit of the family ${profile.family.replace(/[()/]/g, ".")}`),
          );
          assert.doesNotMatch(e.message, /\ba [AEIOU]/);
          return true;
        },
      );
    }
  });
});
