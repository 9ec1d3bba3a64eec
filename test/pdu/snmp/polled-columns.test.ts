/**
 * A poll reads only the columns a profile maps (src/pdu/snmp/profile.ts `polledColumnIds`): for
 * every profile the simulator serves, the snapshot of a walk of every column of every table and
 * that of the same walk without the columns left out are the same, and the columns left out are
 * those only ever written or never mapped (Eaton's second and third command columns).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startResponder, type Responder } from "../../../bench/lib/snmp-responder.js";
import { parsePoll, type WalkedVarbind } from "../../../src/pdu/snmp/parse.js";
import { polledColumnIds } from "../../../src/pdu/snmp/profile.js";
import { profileById } from "../../../src/pdu/snmp/profiles.js";
import { SnmpTransport } from "../../../src/pdu/snmp/transport.js";
import { SIM_PROFILES } from "../../../src/simulator/snmp/units.js";

const VENDOR = { manufacturer: "Test", groupModel: "Group" };

describe("the columns a poll reads", () => {
  const responders: Responder[] = [];
  const transports: SnmpTransport[] = [];
  after(async () => {
    for (const t of transports) t.close();
    for (const r of responders) await r.close();
  });

  for (const id of SIM_PROFILES) {
    it(`${id}: leaving out the columns not read changes nothing in the snapshot`, async () => {
      const profile = profileById(id);
      assert.ok(profile !== undefined);
      const responder = await startResponder({
        profile: id,
        outlets: 24,
        units: 1,
        seed: 3,
        community: "cols",
      });
      responders.push(responder);
      const transport = new SnmpTransport({
        host: "127.0.0.1",
        port: responder.ports[0]!,
        timeout: 2,
        auth: { version: "2c", community: "cols" },
        maxRepetitions: 64,
        maxRows: 2048,
      });
      transports.push(transport);
      const walked = await transport.walkTables(
        profile.tables.map((t) => ({ entry: t.oid, columnIds: Object.values(t.columns).map((c) => c.id) })),
      );
      const scalars = new Map(
        (await transport.get(Object.keys(profile.scalars ?? {}))).map((vb) => [vb.oid, vb] as const),
      );
      const polled = polledColumnIds(profile);
      const all = new Map<string, WalkedVarbind[]>();
      const read = new Map<string, WalkedVarbind[]>();
      profile.tables.forEach((t, i) => {
        const varbinds = walked[i]?.varbinds ?? [];
        all.set(t.name, varbinds);
        const prefixes = (polled.get(t.name) ?? []).map((c) => `${t.oid}.${c}.`);
        read.set(
          t.name,
          varbinds.filter((vb) => prefixes.some((p) => vb.oid.startsWith(p))),
        );
      });
      const whole = parsePoll(profile, { tables: all, scalars }, "cols", 1, VENDOR);
      const part = parsePoll(profile, { tables: read, scalars }, "cols", 1, VENDOR);
      assert.ok(whole.snapshot.devices.length > 0);
      assert.deepEqual(part.snapshot, whole.snapshot);
      assert.deepEqual(part.addressing, whole.addressing);
    });
  }

  it("leaves out Eaton's off and reboot command columns and keeps the one the control rows are read by", () => {
    const eaton = profileById("eaton-epdu");
    assert.ok(eaton !== undefined);
    const control = eaton.tables.find((t) => t.name === "outletControlEntry");
    assert.ok(control !== undefined);
    const ids = polledColumnIds(eaton).get("outletControlEntry");
    assert.deepEqual(
      Object.entries(control.columns)
        .filter(([, c]) => ids?.includes(c.id))
        .map(([name]) => name),
      [
        "outletControlStatus",
        "outletControlOnCmd",
        "outletControlSequenceDelay",
        "outletControlRebootOffTime",
      ],
    );
  });

  it("reads every column of every other table of the APC rPDU2 profile", () => {
    const apc = profileById("apc-rpdu2");
    assert.ok(apc !== undefined);
    for (const t of apc.tables)
      assert.deepEqual(
        polledColumnIds(apc).get(t.name),
        Object.values(t.columns).map((c) => c.id),
        t.name,
      );
  });
});
