/**
 * The whole bridge against walks recorded from real PDUs (../shared/recordings/snmp/, served in
 * place by Debian's snmpsimd): what it publishes over REST, MQTT and Home Assistant discovery is
 * exactly what each walk reports under its MIB's scaling, read by the test itself
 * (testkit/snmp-expect.ts), and nothing the unit marks as not there: no probe of an AP8641/AP8932
 * without one, no reading of a Raritan sensor in state unavailable. A metered AP7853 (no outlet
 * table) is polled for its phases, banks and totals, has no outlets, and control of it is refused
 * naming the model; Raritan units without switching show their outlets' onOff state (or none) and
 * offer no switch.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { expectApcRpdu, expectApcRpdu2, expectRaritanPx2 } from "../../testkit/snmp-expect.js";
import {
  checkDiscovery,
  checkMqtt,
  checkRestReadings,
  recordingsMissing,
  startRecordingsRig,
  type RecordingCase,
  type RecordingsRig,
} from "../../testkit/snmp-recordings.js";

const KEY = "snmp-recordings-test-key-7d2e41";
const withKey = { "x-api-key": KEY };

/** Every recording but CyberPower's (its family's own test adds it), and the AP8641 read as an rPDU unit. */
const CASES: readonly RecordingCase[] = [
  { instance: "ap7902b", file: "apc-ap7902b.snmprec", profile: "auto", expect: expectApcRpdu2 },
  { instance: "ap8641", file: "apc-ap8641.snmprec", profile: "auto", expect: expectApcRpdu2 },
  { instance: "ap8932", file: "apc-ap8932.snmprec", profile: "auto", expect: expectApcRpdu2 },
  // The legacy rPDU outlet column holds the unit's real states (the rPDU2 one is varied by snmpsim).
  { instance: "ap8641-rpdu", file: "apc-ap8641.snmprec", profile: "apc-rpdu", expect: expectApcRpdu },
  // The NAV and Centreon walks have no system group: the profile is named.
  { instance: "ap7853", file: "apc-ap7853.snmprec", profile: "apc-rpdu", expect: expectApcRpdu },
  { instance: "pxe1847", file: "raritan-pxe1847.snmprec", profile: "raritan-px2", expect: expectRaritanPx2 },
  {
    instance: "px-anon12",
    file: "raritan-px-anon12.snmpwalk",
    profile: "raritan-px2",
    expect: expectRaritanPx2,
  },
];

describe("SNMP recordings of real units through the bridge", { skip: recordingsMissing }, () => {
  let rig: RecordingsRig;
  before(async () => {
    rig = await startRecordingsRig(CASES, KEY);
  });
  after(async () => {
    await rig?.close();
  });

  for (const c of CASES) {
    describe(c.instance, () => {
      it("REST readings are exactly the walk's values under the MIB's scaling", async () => {
        await checkRestReadings(rig, c.instance);
      });
      it("MQTT carries the same values, the outlets the unit has, their labels and states", async () => {
        await checkMqtt(rig, c.instance);
      });
      it("Home Assistant discovery announces exactly those sensors, and switches only where the unit switches", async () => {
        await checkDiscovery(rig, c.instance);
      });
    });
  }

  it("the walks' own 'not there' is honoured: no probe at -0.1 °C, no 0 % power factor of an unavailable sensor", () => {
    for (const id of ["ap8641", "ap8932"]) {
      const device = rig.h.app.store.get(id)?.snapshot?.devices[0];
      assert.ok(device !== undefined, id);
      assert.equal(device.outlets.length, 24, id);
      assert.deepEqual(
        device.entities.filter((e) => e.key.startsWith("sensor")),
        [],
        `${id}: its probe row says notInstalled`,
      );
    }
    const px = rig.h.app.store.get("px-anon12")?.snapshot?.devices[0];
    // Outlets 4 and 8 to 11 have their power factor sensor in state unavailable (-1), value 0.
    for (const index of [3, 7, 8, 9, 10]) {
      const outlet = px?.outlets.find((o) => o.index === index);
      assert.ok(outlet !== undefined);
      assert.equal(
        outlet.measurements.find((m) => m.type === "powerFactor"),
        undefined,
        `outlet ${index}`,
      );
    }
    assert.ok(px?.outlets[0]?.measurements.some((m) => m.type === "powerFactor"));
  });

  it("the AP7853 is polled: identity, phase, banks and total; no outlet invented; online", async () => {
    const snapshot = rig.h.app.store.get("ap7853")?.snapshot;
    const device = snapshot?.devices[0];
    assert.equal(device?.id, "ZA1320014895");
    assert.equal(device?.system.model, "AP7853");
    assert.deepEqual(device?.outlets, []);
    assert.deepEqual(
      device?.entities.map((e) => e.key),
      ["bank0", "bank1", "phase0", "total0"],
    );
    assert.equal(device?.canSwitchOutlets, false);
    await rig.h.mqtt.waitFor(`${rig.h.parent}/ap7853/status`, (m) => m.payload === "online");
  });

  it("control of the AP7853 is refused naming the model, over REST (409 problem+json) and MQTT", async () => {
    const res = await rig.h.api.post(
      `/api/v1/instances/ap7853/outlets/ZA1320014895/0/control`,
      { action: "off" },
      withKey,
    );
    assert.equal(res.status, 409, res.text);
    assert.match(res.headers["content-type"] ?? "", /application\/problem\+json/);
    assert.match(res.text, /model AP7853 has no outlet switching/);
    assert.match(res.text, /nothing was sent/);
    await rig.h.commandsReady("ap7853");
    for (const [level, payload] of [
      ["set", "on"],
      ["reboot", ""],
    ] as const) {
      const audit = await rig.h.publishCommand(
        `${rig.h.parent}/ap7853/ZA1320014895/outlets/0/${level}`,
        payload,
      );
      assert.equal(audit.status, 409, JSON.stringify(audit));
      assert.match(String(audit.detail), /model AP7853 has no outlet switching/);
    }
  });

  it("a Raritan unit without switching: states from onOff sensors, control refused naming the family", async () => {
    const px = rig.h.app.store.get("px-anon12")?.snapshot?.devices[0];
    assert.deepEqual(
      px?.outlets.map((o) => o.state),
      ["on", "on", "on", "on", "on", "on", "on", "off", "off", "off", "off", "on"],
    );
    const pxe = rig.h.app.store.get("pxe1847")?.snapshot?.devices[0];
    assert.equal(pxe?.outlets.length, 42);
    assert.ok(pxe?.outlets.every((o) => o.state === "unknown"));
    for (const [instance, device] of [
      ["px-anon12", "px-anon12"],
      ["pxe1847", "PA66360082"],
    ] as const) {
      const res = await rig.h.api.post(
        `/api/v1/instances/${instance}/outlets/${device}/0/control`,
        { action: "on" },
        withKey,
      );
      assert.equal(res.status, 409, res.text);
      assert.match(res.text, /Raritan PX2\/PX3 \(PDU2-MIB\).* has no outlet switching over SNMP/);
    }
  });
});

describe("an AP7853 alone: the bridge is READY once it is polled", { skip: recordingsMissing }, () => {
  let rig: RecordingsRig;
  before(async () => {
    rig = await startRecordingsRig(
      CASES.filter((c) => c.instance === "ap7853"),
      KEY,
    );
  });
  after(async () => {
    await rig?.close();
  });

  it("/readyz answers READY: its polls succeed", async () => {
    const res = await rig.h.health.get("/readyz");
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /^READY/);
  });
});
