/**
 * The SNMP driver against a third-party agent: Debian's snmpsimd serving the project's recordings
 * (testkit/snmprec/), one per profile, over real UDP on loopback. Readings must equal the recorded
 * values after the MIB's scaling; switching and names must reach the agent (snmpsim's writecache,
 * read back with snmpget); what a MIB cannot do is refused; snmpwalk cross-checks the recordings.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { isPduError } from "../../../src/pdu/errors.js";
import type { Snapshot } from "../../../src/pdu/model.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { readRecording, snmpInstance, startSnmpsim, type Snmpsim } from "../../../testkit/snmpsim.js";

interface Check {
  /** Outlet index (0-based) or entity key. */
  readonly at: number | string;
  readonly type: string;
  readonly oid: string;
  readonly scale: number;
  /** OID of the decimal digits (Raritan). */
  readonly digits?: string;
}

interface Case {
  readonly profile: string;
  readonly serial: string;
  readonly checks: readonly Check[];
  /** Control object of outlet index 1 and the values of on, off, reboot. */
  readonly control: {
    readonly oid: string;
    readonly on: number;
    readonly off: number;
    readonly reboot: number;
  };
  /** Name object of outlet index 1. */
  readonly name: string;
  /** The column of the outlets' user-set names (snmpwalk cross-check with the outlets' labels). */
  readonly outletNames: string;
  readonly resetStats: "refused" | { readonly oid: string };
  /** A read-only INTEGER object of outlet 1. */
  readonly readOnly: string;
  /** The on and reboot delay objects of outlet index 1, where the MIB has them. */
  readonly delays?: { readonly on: string; readonly reboot: string };
}

const R2 = "1.3.6.1.4.1.318.1.1.26";
const R1 = "1.3.6.1.4.1.318.1.1.12";
const P2 = "1.3.6.1.4.1.13742.6";
const P1 = "1.3.6.1.4.1.13742.4";
const S4 = "1.3.6.1.4.1.1718.4.1";

const CASES: readonly Case[] = [
  {
    profile: "apc-rpdu2",
    serial: "3F1734A01234",
    checks: [
      { at: 2, type: "current", oid: `${R2}.9.4.3.1.6.3`, scale: 0.1 },
      { at: 2, type: "realPower", oid: `${R2}.9.4.3.1.7.3`, scale: 1 },
      { at: 7, type: "energy", oid: `${R2}.9.4.3.1.11.8`, scale: 0.1 },
      { at: "phase0", type: "current", oid: `${R2}.6.3.1.5.1`, scale: 0.1 },
      { at: "phase0", type: "voltage", oid: `${R2}.6.3.1.6.1`, scale: 1 },
      { at: "total0", type: "realPower", oid: `${R2}.4.3.1.5.1`, scale: 10 },
      { at: "total0", type: "energy", oid: `${R2}.4.3.1.9.1`, scale: 0.1 },
      { at: "sensor0", type: "temperature", oid: `${R2}.10.2.2.1.8.1`, scale: 0.1 },
    ],
    control: { oid: `${R2}.9.2.4.1.5.2`, on: 1, off: 2, reboot: 3 },
    name: `${R2}.9.2.1.1.3.2`,
    outletNames: `${R2}.9.2.3.1.3`,
    resetStats: "refused",
    readOnly: `${R2}.9.2.3.1.5.1`,
    delays: { on: `${R2}.9.2.1.1.5.2`, reboot: `${R2}.9.2.1.1.7.2` },
  },
  {
    profile: "apc-rpdu",
    serial: "ZA1012345678",
    checks: [{ at: "phase0", type: "current", oid: `${R1}.2.3.1.1.2.1`, scale: 0.1 }],
    control: { oid: `${R1}.3.3.1.1.4.2`, on: 1, off: 2, reboot: 3 },
    name: `${R1}.3.4.1.1.2.2`,
    outletNames: `${R1}.3.5.1.1.2`,
    resetStats: "refused",
    readOnly: `${R1}.3.5.1.1.4.1`,
    delays: { on: `${R1}.3.4.1.1.4.2`, reboot: `${R1}.3.4.1.1.6.2` },
  },
  {
    profile: "raritan-px2",
    serial: "PKE0954001",
    checks: [
      { at: 2, type: "current", oid: `${P2}.5.4.3.1.4.1.3.1`, scale: 1, digits: `${P2}.3.5.4.1.7.1.3.1` },
      { at: 2, type: "realPower", oid: `${P2}.5.4.3.1.4.1.3.5`, scale: 1, digits: `${P2}.3.5.4.1.7.1.3.5` },
      {
        at: 2,
        type: "powerFactor",
        oid: `${P2}.5.4.3.1.4.1.3.7`,
        scale: 100,
        digits: `${P2}.3.5.4.1.7.1.3.7`,
      },
      { at: 4, type: "energy", oid: `${P2}.5.4.3.1.4.1.5.8`, scale: 0.001, digits: `${P2}.3.5.4.1.7.1.5.8` },
      {
        at: "inlet0",
        type: "current",
        oid: `${P2}.5.2.3.1.4.1.1.1`,
        scale: 1,
        digits: `${P2}.3.3.4.1.7.1.1.1`,
      },
      {
        at: "breaker1",
        type: "current",
        oid: `${P2}.5.3.3.1.4.1.2.1`,
        scale: 1,
        digits: `${P2}.3.4.4.1.7.1.2.1`,
      },
    ],
    control: { oid: `${P2}.4.1.2.1.2.1.2`, on: 1, off: 0, reboot: 2 },
    name: `${P2}.3.5.3.1.3.1.2`,
    outletNames: `${P2}.3.5.3.1.3`,
    resetStats: { oid: `${P2}.4.7.1.1.1.1.2.8` },
    readOnly: `${P2}.4.1.2.1.3.1.1`,
  },
  {
    profile: "raritan-px",
    serial: "PKL8A00123",
    checks: [
      { at: 2, type: "current", oid: `${P1}.1.2.2.1.4.3`, scale: 0.001 },
      { at: 2, type: "voltage", oid: `${P1}.1.2.2.1.6.3`, scale: 0.001 },
      { at: 2, type: "energy", oid: `${P1}.1.2.2.1.31.3`, scale: 0.001 },
      { at: "breaker0", type: "current", oid: `${P1}.1.5.2.1.5.1`, scale: 0.001 },
      { at: "inlet0", type: "realPower", oid: `${P1}.1.20.2.1.9.1`, scale: 1 },
    ],
    control: { oid: `${P1}.1.2.2.1.3.2`, on: 1, off: 0, reboot: 2 },
    name: `${P1}.1.2.2.1.2.2`,
    outletNames: `${P1}.1.2.2.1.2`,
    resetStats: "refused",
    readOnly: `${P1}.1.2.2.1.4.1`,
  },
  {
    profile: "servertech-sentry4",
    serial: "ABEF0001234",
    checks: [
      { at: 2, type: "current", oid: `${S4}.8.3.1.3.1.1.3`, scale: 0.01 },
      { at: 2, type: "voltage", oid: `${S4}.8.3.1.6.1.1.3`, scale: 0.1 },
      { at: 2, type: "energy", oid: `${S4}.8.3.1.14.1.1.3`, scale: 0.001 },
      { at: "line2", type: "current", oid: `${S4}.4.3.1.3.1.1.3`, scale: 0.01 },
      { at: "cord0", type: "energy", oid: `${S4}.3.3.1.10.1.1`, scale: 0.1 },
    ],
    control: { oid: `${S4}.8.5.1.2.1.1.2`, on: 1, off: 2, reboot: 3 },
    name: `${S4}.8.2.1.3.1.1.2`,
    outletNames: `${S4}.8.2.1.3`,
    resetStats: "refused",
    readOnly: `${S4}.8.3.1.1.1.1.1`,
  },
];

function reading(s: Snapshot, at: number | string, type: string): number | null | undefined {
  const d = s.devices[0];
  const parent =
    typeof at === "number" ? d?.outlets.find((o) => o.index === at) : d?.entities.find((e) => e.key === at);
  return parent?.measurements.find((m) => m.type === type)?.value;
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;

describe("SNMP driver against snmpsimd serving the recordings", () => {
  let sim: Snmpsim;
  before(async () => {
    sim = await startSnmpsim();
  });
  after(async () => {
    await sim.close();
  });

  for (const c of CASES) {
    describe(c.profile, () => {
      let driver: SnmpDriver;
      let snapshot: Snapshot;
      before(async () => {
        driver = new SnmpDriver(
          snmpInstance(`t-${c.profile}`, sim.port, { Community: c.profile, WriteCommunity: c.profile }),
        );
        snapshot = await driver.poll();
      });
      after(async () => {
        await driver.close();
      });

      it("detects the profile from sysObjectID and the tables that answer; the device id is the serial", () => {
        assert.equal(driver.profile?.id, c.profile);
        assert.equal(snapshot.devices.length, 1);
        assert.equal(snapshot.devices[0]?.id, c.serial);
        assert.equal(snapshot.devices[0]?.outlets.length, 8);
        assert.equal(snapshot.warnings, undefined, JSON.stringify(snapshot.warnings));
      });

      it("reads every checked value as the recording holds it, after the MIB's scaling", async () => {
        const rec = await readRecording(c.profile);
        for (const check of c.checks) {
          const raw = Number(rec.get(check.oid)?.value);
          assert.ok(Number.isFinite(raw), `the recording has ${check.oid}`);
          const digits = check.digits === undefined ? 0 : Number(rec.get(check.digits)?.value);
          const expected = round((raw / 10 ** digits) * check.scale);
          assert.equal(
            reading(snapshot, check.at, check.type),
            expected,
            `${check.at} ${check.type} (${check.oid})`,
          );
        }
      });

      it("outlet names and states match snmpwalk of the agent", async () => {
        const lines = await sim.walk(c.profile, c.outletNames);
        assert.equal(lines.length, 8);
        const names = lines.map((l) => /= STRING: "?(.*?)"?$/.exec(l)?.[1] ?? "");
        const outlets = snapshot.devices[0]?.outlets ?? [];
        assert.deepEqual(
          outlets.map((o) => o.label),
          names,
        );
        assert.ok(outlets.every((o) => o.state === "on" || o.state === "off"));
      });

      it("an unchanged answer is the previous snapshot restamped", async () => {
        const again = await driver.poll();
        assert.equal(again.devices, snapshot.devices);
        assert.ok(again.timestamp >= snapshot.timestamp);
      });

      it("on, off and reboot SET the control object with the MIB's values", async () => {
        const target = { deviceId: c.serial, index: 1, route: null };
        for (const action of ["off", "on", "reboot"] as const) {
          await driver.controlOutlet(target, action);
          assert.equal(await sim.get(c.profile, c.control.oid), String(c.control[action]), action);
        }
      });

      it("an outlet name write reaches the agent; delays only where the MIB has them", async () => {
        const target = { deviceId: c.serial, index: 1, route: null };
        await driver.setOutletSettings(target, { label: "web-07" });
        assert.equal(await sim.get(c.profile, c.name), '"web-07"');
        await assert.rejects(
          driver.setOutletSettings(target, { poaAction: "on" }),
          (e) => isPduError(e) && e.kind === "refused",
        );
        if (c.delays === undefined) {
          await assert.rejects(
            driver.setOutletSettings(target, { onDelay: 5 }),
            (e) => isPduError(e) && e.kind === "refused",
          );
        } else {
          await driver.setOutletSettings(target, { onDelay: 7, rebootDelay: 9 });
          assert.equal(await sim.get(c.profile, c.delays.on), "7");
          assert.equal(await sim.get(c.profile, c.delays.reboot), "9");
        }
      });

      it(
        c.resetStats === "refused" ? "refuses resetStats naming the model" : "resets one outlet's energy",
        async () => {
          const target = { deviceId: c.serial, index: 1, route: null };
          if (c.resetStats === "refused") {
            await assert.rejects(driver.resetOutletEnergy(target), (e) => {
              assert.ok(isPduError(e) && e.kind === "refused", String(e));
              assert.match(e.message, new RegExp((driver.profile?.family ?? "").replace(/[()]/g, ".")));
              return true;
            });
          } else {
            await driver.resetOutletEnergy(target);
            assert.equal(await sim.get(c.profile, c.resetStats.oid), "0");
          }
        },
      );

      it("a read-only object refuses a SET: the PduError is kind refused (409)", async () => {
        // A status column is read-only: the agent refuses the SET.
        const { SnmpTransport } = await import("../../../src/pdu/snmp/transport.js");
        const t = new SnmpTransport({
          host: "127.0.0.1",
          port: sim.port,
          timeout: 2,
          auth: { version: "2c", community: c.profile, writeCommunity: c.profile },
          maxRepetitions: 10,
          maxRows: 100,
        });
        try {
          await assert.rejects(t.set({ oid: c.readOnly, type: "Integer", value: 1 }, "test", false), (e) => {
            assert.ok(isPduError(e), String(e));
            assert.equal(e.kind, "refused", e.message);
            return true;
          });
        } finally {
          t.close();
        }
      });
    });
  }

  it("an agent of another vendor is an error naming its sysObjectID, never a guess", async () => {
    const driver = new SnmpDriver(
      snmpInstance("t-unknown", sim.port, { Community: "apc-rpdu2", Profile: "auto" }),
    );
    try {
      // The Raritan PX2 recording with the APC profile forced: its outlet table does not answer.
      const forced = new SnmpDriver(
        snmpInstance("t-forced", sim.port, { Community: "raritan-px2", Profile: "apc-rpdu2" }),
      );
      await assert.rejects(
        forced.poll(),
        /rPDU2OutletSwitchedStatusEntry \(1\.3\.6\.1\.4\.1\.318\.1\.1\.26\.9\.2\.3\.1\)/,
      );
      await forced.close();
    } finally {
      await driver.close();
    }
  });

  it("a wrong community gets no answer: a timeout naming the agent and the variable to fix, never a crash", async () => {
    const driver = new SnmpDriver(snmpInstance("t-wrong", sim.port, { Community: "no-such-community" }, 1));
    try {
      await assert.rejects(driver.poll(), (e) => {
        assert.ok(isPduError(e) && e.kind === "timeout", String(e));
        assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${sim.port}`));
        assert.match(
          e.message,
          /check SERVICE_PDU_T_WRONG_COMMUNITY\)/,
          "the variable of the instance's community",
        );
        return true;
      });
    } finally {
      await driver.close();
    }
  });
});
