/**
 * The SNMP families of CPS-MIB (CyberPower ePDU2 and ePDU), EATON-EPDU-MIB and Sentry3-MIB, and the
 * detection of Vertiv/Geist agents:
 * - a real CyberPower PDU44005's walk (../shared/recordings/snmp/, served in place by snmpsimd):
 *   identity, outlets, bank and phase readings compared with values this test reads from the walk
 *   under the MIB's scaling, never with the bridge's parser; `Profile: auto` picks it;
 * - the project's recordings of each family (testkit/snmprec/) served by snmpsimd: readings,
 *   daisy-chained units as devices, switching, names, delays and the energy reset reaching the agent
 *   (its writecache variation, read back with snmpget);
 * - the project's simulator of each family: a SET switches its outlet, the next poll shows it.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { isPduError } from "../../../src/pdu/errors.js";
import { RAISED_ALARM_STATES, type Device, type Snapshot } from "../../../src/pdu/model.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { parsePoll, type WalkedVarbind } from "../../../src/pdu/snmp/parse.js";
import { CYBERPOWER_EPDU2 } from "../../../src/pdu/snmp/profiles/cyberpower-epdu2.js";
import { EATON_EPDU } from "../../../src/pdu/snmp/profiles/eaton-epdu.js";
import { SERVERTECH_SENTRY3 } from "../../../src/pdu/snmp/profiles/servertech-sentry3.js";
import { PROFILES } from "../../../src/pdu/snmp/profiles.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../../src/simulator/snmp/agent.js";
import { recordingsMissing, SHARED_RECORDINGS } from "../../../testkit/snmp-recordings.js";
import { Walk } from "../../../testkit/snmp-walk.js";
import { readRecording, snmpInstance, startSnmpsim, type Snmpsim } from "../../../testkit/snmpsim.js";
import { waitFor } from "../../../testkit/wait.js";

const round = (x: number) => Math.round(x * 1e6) / 1e6;

function entity(d: Device | undefined, key: string, type: string): number | null | undefined {
  return d?.entities.find((e) => e.key === key)?.measurements.find((m) => m.type === type)?.value;
}

const E = "1.3.6.1.4.1.3808.1.1.3";
const E2 = "1.3.6.1.4.1.3808.1.1.6";

describe(
  "CyberPower PDU44005: a real unit's walk served in place by snmpsimd",
  { skip: recordingsMissing },
  () => {
    const community = "cyberpower-pdu44005";
    let agent: Snmpsim;
    let walk: Walk;
    const w = (oid: string): string => {
      const v = walk.text(oid);
      assert.ok(v !== undefined, `the walk has ${oid}`);
      return v;
    };
    const n = (oid: string): number => {
      const v = walk.int(oid);
      assert.ok(v !== undefined, `the walk has ${oid}`);
      return v;
    };
    before(async () => {
      const dir = SHARED_RECORDINGS ?? "";
      walk = await Walk.read(join(dir, `${community}.snmpwalk`));
      agent = await startSnmpsim({ dataDir: dir });
    });
    after(async () => {
      await agent?.close();
    });

    describe("Profile: auto", () => {
      let driver: SnmpDriver;
      let s: Snapshot;
      before(async () => {
        driver = new SnmpDriver(snmpInstance("cps-auto", agent.port, { Community: community }));
        s = await driver.poll();
      });
      after(async () => {
        await driver.close();
      });

      it("picks cyberpower-epdu2 from its sysObjectID and the ePDU2 tables that answer", () => {
        assert.equal(
          walk.get("1.3.6.1.2.1.1.2.0")?.bytes.toString().replace(/^\./, ""),
          "1.3.6.1.4.1.3808.1.1.6",
        );
        assert.equal(driver.profile?.id, "cyberpower-epdu2");
        assert.equal(s.vendor.manufacturer, "CyberPower");
        assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
      });

      it("identity: the ePDU2IdentTable row of the unit", () => {
        assert.equal(s.devices.length, 1);
        const d = s.devices[0];
        assert.equal(d?.id, w(`${E2}.2.2.1.10.1`));
        assert.equal(d?.system.serialNumber, w(`${E2}.2.2.1.10.1`));
        assert.equal(d?.system.model, w(`${E2}.2.2.1.9.1`));
        assert.equal(d?.system.model, "PDU44005");
        assert.equal(d?.name, w(`${E2}.2.2.1.3.1`));
        assert.equal(d?.system.firmwareVersion, w(`${E2}.2.2.1.7.1`));
        assert.equal(d?.system.hardwareVersion, w(`${E2}.2.2.1.6.1`));
      });

      it("10 outlets with their names and states; no reading on a unit that meters no outlet", () => {
        const outlets = s.devices[0]?.outlets ?? [];
        assert.equal(outlets.length, 10);
        assert.equal(n(`${E2}.3.3.1.7.1`), 0, "ePDU2DeviceInfoMeteredOutlets");
        for (let k = 1; k <= 10; k++) {
          const o = outlets[k - 1];
          assert.equal(o?.index, k - 1);
          assert.equal(o?.label, w(`${E2}.6.1.4.1.4.${k}`));
          const state = n(`${E2}.6.1.4.1.5.${k}`);
          assert.equal(o?.state, state === 1 ? "on" : state === 2 ? "off" : "unknown");
          assert.deepEqual(o?.measurements, [], `outlet ${k} has no readings`);
        }
      });

      it("bank, phase and unit readings in A, V, W, VA, % and kWh under the MIB's scaling", () => {
        const d = s.devices[0];
        assert.equal(entity(d, "bank0", "current"), round(n(`${E2}.5.4.1.5.1`) * 0.1));
        assert.equal(entity(d, "phase0", "current"), round(n(`${E2}.4.4.1.5.1`) * 0.1));
        assert.equal(entity(d, "phase0", "voltage"), round(n(`${E2}.4.4.1.6.1`) * 0.1));
        assert.equal(entity(d, "phase0", "realPower"), n(`${E2}.4.4.1.7.1`));
        assert.equal(entity(d, "phase0", "apparentPower"), n(`${E2}.4.4.1.8.1`));
        assert.equal(entity(d, "phase0", "powerFactor"), n(`${E2}.4.4.1.9.1`));
        assert.equal(entity(d, "total0", "current"), round(n(`${E2}.3.4.1.5.1`) * 0.1));
        assert.equal(entity(d, "total0", "realPower"), n(`${E2}.3.4.1.18.1`));
        assert.equal(entity(d, "total0", "energy"), round(n(`${E2}.3.4.1.9.1`) * 0.1));
        const units = Object.fromEntries(
          (d?.entities.find((e) => e.key === "phase0")?.measurements ?? []).map((m) => [m.type, m.units]),
        );
        assert.deepEqual(units, {
          apparentPower: "VA",
          current: "A",
          powerFactor: "%",
          realPower: "W",
          voltage: "V",
        });
      });
    });

    describe("Profile: cyberpower-epdu (the ePDU tables of the same unit)", () => {
      let s: Snapshot;
      before(async () => {
        const driver = new SnmpDriver(
          snmpInstance("cps-epdu", agent.port, { Community: community, Profile: "cyberpower-epdu" }),
        );
        try {
          s = await driver.poll();
        } finally {
          await driver.close();
        }
      });

      it("identity from the ePDUIdent scalars", () => {
        const d = s.devices[0];
        assert.equal(d?.system.serialNumber, w(`${E}.1.6.0`));
        assert.equal(d?.system.model, w(`${E}.1.5.0`));
        assert.equal(d?.name, w(`${E}.1.1.0`));
      });

      it("outlets' names and states; their readings are absent where no outlet is monitored", () => {
        const outlets = s.devices[0]?.outlets ?? [];
        assert.equal(outlets.length, 10);
        assert.equal(n(`${E}.3.1.5.0`), 0, "ePDUOutletDevMonitoredOutlets");
        for (let k = 1; k <= 10; k++) {
          assert.equal(outlets[k - 1]?.label, w(`${E}.3.5.1.1.2.${k}`));
          assert.equal(outlets[k - 1]?.state, n(`${E}.3.5.1.1.4.${k}`) === 1 ? "on" : "off");
          assert.deepEqual(outlets[k - 1]?.measurements, [], `outlet ${k}: the walk's 0s are not readings`);
        }
      });

      it("the phase row and the bank row of ePDULoadStatusTable: current and voltage in tenths", () => {
        const d = s.devices[0];
        // Row 1 is the phase (bank number 0), row 2 bank 1.
        assert.equal(n(`${E}.2.3.1.1.5.1`), 0);
        assert.equal(n(`${E}.2.3.1.1.5.2`), 1);
        assert.equal(entity(d, "phase0", "current"), round(n(`${E}.2.3.1.1.2.1`) * 0.1));
        assert.equal(entity(d, "phase0", "voltage"), round(n(`${E}.2.3.1.1.6.1`) * 0.1));
        assert.equal(entity(d, "phase0", "energy"), round(n(`${E}.2.3.1.1.10.1`) * 0.1));
        assert.equal(entity(d, "bank0", "current"), round(n(`${E}.2.3.1.1.2.2`) * 0.1));
        assert.equal(entity(d, "bank0", "voltage"), round(n(`${E}.2.3.1.1.6.2`) * 0.1));
        // The bank row's apparent power, power factor and energy are NULL in the walk: absent.
        assert.equal(walk.get(`${E}.2.3.1.1.8.2`)?.type, "Other");
        for (const type of ["apparentPower", "powerFactor", "energy"])
          assert.equal(entity(d, "bank0", type), undefined, type);
      });
    });
  },
);

interface Check {
  /** Device (serial), then an outlet index or an entity key. */
  readonly device: string;
  readonly at: number | string;
  readonly type: string;
  readonly oid: string;
  readonly scale: number;
}

interface Case {
  readonly profile: string;
  /** Serials of the units behind the address, in device order. */
  readonly serials: readonly string[];
  readonly outletsPerDevice: number;
  readonly checks: readonly Check[];
  /** Outlet index 1 of the first device: the objects written for on, off, reboot and the values. */
  readonly control: Readonly<Record<"on" | "off" | "reboot", { oid: string; value: string }>>;
  readonly name: string;
  readonly delays?: { readonly on: string; readonly reboot: string };
  readonly resetStats: "refused" | { readonly oid: string };
  /** Readings the recording holds as -1 ("not available"): absent from the snapshot. */
  readonly absent?: readonly Omit<Check, "scale">[];
  /** The second unit's outlet index 0 control object for off and its value (chained units). */
  readonly chained?: { readonly oid: string; readonly value: string };
}

const S3 = "1.3.6.1.4.1.1718.3";
const EP = "1.3.6.1.4.1.534.6.6.7";

const CASES: readonly Case[] = [
  {
    profile: "cyberpower-epdu2",
    serials: ["GD3N7E2000123"],
    outletsPerDevice: 8,
    checks: [
      { device: "GD3N7E2000123", at: 2, type: "current", oid: `${E2}.6.2.4.1.6.3`, scale: 0.1 },
      { device: "GD3N7E2000123", at: 2, type: "realPower", oid: `${E2}.6.2.4.1.7.3`, scale: 1 },
      { device: "GD3N7E2000123", at: 5, type: "energy", oid: `${E2}.6.2.4.1.11.6`, scale: 0.1 },
      { device: "GD3N7E2000123", at: "phase0", type: "voltage", oid: `${E2}.4.4.1.6.1`, scale: 0.1 },
      { device: "GD3N7E2000123", at: "bank0", type: "current", oid: `${E2}.5.4.1.5.1`, scale: 0.1 },
      { device: "GD3N7E2000123", at: "total0", type: "realPower", oid: `${E2}.3.4.1.18.1`, scale: 1 },
    ],
    control: {
      on: { oid: `${E2}.6.1.5.1.5.2`, value: "1" },
      off: { oid: `${E2}.6.1.5.1.5.2`, value: "2" },
      reboot: { oid: `${E2}.6.1.5.1.5.2`, value: "3" },
    },
    name: `${E2}.6.1.2.1.4.2`,
    delays: { on: `${E2}.6.1.2.1.5.2`, reboot: `${E2}.6.1.2.1.7.2` },
    resetStats: "refused",
  },
  {
    profile: "cyberpower-epdu",
    serials: ["GD3N7E2000123"],
    outletsPerDevice: 8,
    checks: [
      { device: "GD3N7E2000123", at: 2, type: "current", oid: `${E}.3.5.1.1.7.3`, scale: 0.1 },
      { device: "GD3N7E2000123", at: 5, type: "energy", oid: `${E}.3.5.1.1.13.6`, scale: 0.1 },
      { device: "GD3N7E2000123", at: "phase0", type: "voltage", oid: `${E}.2.3.1.1.6.1`, scale: 0.1 },
      { device: "GD3N7E2000123", at: "bank0", type: "current", oid: `${E}.2.3.1.1.2.2`, scale: 0.1 },
    ],
    control: {
      on: { oid: `${E}.3.3.1.1.4.2`, value: "1" },
      off: { oid: `${E}.3.3.1.1.4.2`, value: "2" },
      reboot: { oid: `${E}.3.3.1.1.4.2`, value: "3" },
    },
    name: `${E}.3.4.1.1.2.2`,
    delays: { on: `${E}.3.4.1.1.4.2`, reboot: `${E}.3.4.1.1.6.2` },
    resetStats: "refused",
  },
  {
    profile: "servertech-sentry3",
    serials: ["ADLH0001862", "ADLH0001863"],
    outletsPerDevice: 8,
    checks: [
      { device: "ADLH0001862", at: 2, type: "current", oid: `${S3}.2.3.1.7.1.1.3`, scale: 0.01 },
      { device: "ADLH0001862", at: 2, type: "voltage", oid: `${S3}.2.3.1.13.1.1.3`, scale: 0.1 },
      { device: "ADLH0001862", at: 2, type: "energy", oid: `${S3}.2.3.1.18.1.1.3`, scale: 0.001 },
      { device: "ADLH0001862", at: "infeed0", type: "current", oid: `${S3}.2.2.1.7.1.1`, scale: 0.01 },
      { device: "ADLH0001862", at: "infeed0", type: "energy", oid: `${S3}.2.2.1.16.1.1`, scale: 0.1 },
      { device: "ADLH0001863", at: 0, type: "current", oid: `${S3}.2.3.1.7.2.1.1`, scale: 0.01 },
      { device: "ADLH0001863", at: "total0", type: "energy", oid: `${S3}.2.1.1.14.2`, scale: 1 },
    ],
    control: {
      on: { oid: `${S3}.2.3.1.11.1.1.2`, value: "1" },
      off: { oid: `${S3}.2.3.1.11.1.1.2`, value: "2" },
      reboot: { oid: `${S3}.2.3.1.11.1.1.2`, value: "3" },
    },
    name: `${S3}.2.3.1.3.1.1.2`,
    resetStats: "refused",
    absent: [
      { device: "ADLH0001862", at: 1, type: "powerFactor", oid: `${S3}.2.3.1.16.1.1.2` },
      { device: "ADLH0001862", at: 4, type: "powerFactor", oid: `${S3}.2.3.1.16.1.1.5` },
    ],
    chained: { oid: `${S3}.2.3.1.11.2.1.1`, value: "2" },
  },
  {
    profile: "eaton-epdu",
    serials: ["G206N12345", "G206N12346"],
    outletsPerDevice: 8,
    checks: [
      { device: "G206N12345", at: 2, type: "current", oid: `${EP}.6.4.1.3.0.3`, scale: 0.001 },
      { device: "G206N12345", at: 2, type: "voltage", oid: `${EP}.6.3.1.2.0.3`, scale: 0.001 },
      { device: "G206N12345", at: 2, type: "powerFactor", oid: `${EP}.6.5.1.6.0.3`, scale: 0.1 },
      { device: "G206N12345", at: 2, type: "energy", oid: `${EP}.6.5.1.4.0.3`, scale: 0.001 },
      { device: "G206N12345", at: "inlet0", type: "realPower", oid: `${EP}.3.5.1.4.0.1`, scale: 1 },
      { device: "G206N12345", at: "line0", type: "current", oid: `${EP}.3.3.1.4.0.1.1`, scale: 0.001 },
      { device: "G206N12345", at: "phase0", type: "voltage", oid: `${EP}.3.2.1.3.0.1.1`, scale: 0.001 },
      { device: "G206N12345", at: "breaker0", type: "current", oid: `${EP}.5.4.1.3.0.1`, scale: 0.001 },
      { device: "G206N12346", at: 0, type: "realPower", oid: `${EP}.6.5.1.3.1.1`, scale: 1 },
    ],
    control: {
      on: { oid: `${EP}.6.6.1.4.0.2`, value: "0" },
      off: { oid: `${EP}.6.6.1.3.0.2`, value: "0" },
      reboot: { oid: `${EP}.6.6.1.5.0.2`, value: "0" },
    },
    name: `${EP}.6.1.1.3.0.2`,
    delays: { on: `${EP}.6.6.1.7.0.2`, reboot: `${EP}.6.6.1.8.0.2` },
    resetStats: { oid: `${EP}.6.5.1.4.0.2` },
    absent: [{ device: "G206N12345", at: 1, type: "powerFactor", oid: `${EP}.6.5.1.6.0.2` }],
    chained: { oid: `${EP}.6.6.1.3.1.1`, value: "0" },
  },
];

function reading(s: Snapshot, serial: string, at: number | string, type: string): number | null | undefined {
  const d = s.devices.find((x) => x.id === serial);
  const parent =
    typeof at === "number" ? d?.outlets.find((o) => o.index === at) : d?.entities.find((e) => e.key === at);
  return parent?.measurements.find((m) => m.type === type)?.value;
}

describe("the project's recordings of the new families served by snmpsimd", () => {
  let sim: Snmpsim;
  before(async () => {
    sim = await startSnmpsim({ only: [...CASES.map((c) => c.profile), "vertiv-geist"] });
  });
  after(async () => {
    await sim.close();
  });

  for (const c of CASES) {
    describe(c.profile, () => {
      let driver: SnmpDriver;
      let s: Snapshot;
      before(async () => {
        driver = new SnmpDriver(
          snmpInstance(`t-${c.profile}`, sim.port, { Community: c.profile, WriteCommunity: c.profile }),
        );
        s = await driver.poll();
      });
      after(async () => {
        await driver.close();
      });

      it("detects the profile; each unit behind the address is a device named by its serial", () => {
        assert.equal(driver.profile?.id, c.profile);
        assert.deepEqual(
          s.devices.map((d) => d.id),
          c.serials,
        );
        for (const d of s.devices) assert.equal(d.outlets.length, c.outletsPerDevice, d.id);
        assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
      });

      it("reads every checked value as the recording holds it, after the MIB's scaling", async () => {
        const rec = await readRecording(c.profile);
        for (const check of c.checks) {
          const raw = Number(rec.get(check.oid)?.value);
          assert.ok(Number.isFinite(raw), `the recording has ${check.oid}`);
          assert.equal(
            reading(s, check.device, check.at, check.type),
            round(raw * check.scale),
            `${check.device} ${check.at} ${check.type} (${check.oid})`,
          );
        }
      });

      it("a value the recording marks as not available (-1) is absent, never a number", async () => {
        const rec = await readRecording(c.profile);
        for (const a of c.absent ?? []) {
          assert.equal(rec.get(a.oid)?.value, "-1", `the recording has -1 at ${a.oid}`);
          assert.equal(reading(s, a.device, a.at, a.type), undefined, `${a.device} ${a.at} ${a.type}`);
        }
      });

      it("on, off and reboot reach the agent's objects with the MIB's values", async () => {
        const target = { deviceId: c.serials[0] ?? "", index: 1, route: null };
        for (const action of ["off", "on", "reboot"] as const) {
          await driver.controlOutlet(target, action);
          assert.equal(await sim.get(c.profile, c.control[action].oid), c.control[action].value, action);
        }
        if (c.chained !== undefined) {
          await driver.controlOutlet({ deviceId: c.serials[1] ?? "", index: 0, route: null }, "off");
          assert.equal(await sim.get(c.profile, c.chained.oid), c.chained.value, "the second unit's outlet");
        }
      });

      it("an outlet name write reaches the agent; delays only where the MIB has them", async () => {
        const target = { deviceId: c.serials[0] ?? "", index: 1, route: null };
        await driver.setOutletSettings(target, { label: "web-07" });
        assert.equal(await sim.get(c.profile, c.name), '"web-07"');
        if (c.delays === undefined) {
          await assert.rejects(
            driver.setOutletSettings(target, { rebootDelay: 9 }),
            (e) => isPduError(e) && e.kind === "refused",
          );
        } else {
          await driver.setOutletSettings(target, { onDelay: 7, rebootDelay: 9 });
          assert.equal(await sim.get(c.profile, c.delays.on), "7");
          assert.equal(await sim.get(c.profile, c.delays.reboot), "9");
        }
        await assert.rejects(
          driver.setOutletSettings(target, { label: "x".repeat(300) }),
          (e) => isPduError(e) && e.kind === "refused" && /at most \d+ bytes/.test(e.message),
        );
      });

      it(
        c.resetStats === "refused" ? "refuses resetStats naming the family" : "resets one outlet's energy",
        async () => {
          const target = { deviceId: c.serials[0] ?? "", index: 1, route: null };
          if (c.resetStats === "refused") {
            assert.equal(s.devices[0]?.canResetOutletEnergy, false);
            await assert.rejects(driver.resetOutletEnergy(target), (e) => {
              assert.ok(isPduError(e) && e.kind === "refused", String(e));
              assert.match(e.message, new RegExp(driver.profile?.family ?? "?"));
              return true;
            });
          } else {
            assert.equal(s.devices[0]?.canResetOutletEnergy, true);
            await driver.resetOutletEnergy(target);
            assert.equal(await sim.get(c.profile, c.resetStats.oid), "0");
          }
        },
      );
    });
  }

  it("a Vertiv/Geist agent is told to use Driver: geist, naming its sysObjectID", async () => {
    const driver = new SnmpDriver(snmpInstance("t-geist", sim.port, { Community: "vertiv-geist" }));
    try {
      await assert.rejects(driver.poll(), (e) => {
        assert.ok(isPduError(e), String(e));
        assert.match(e.message, /Driver: geist/);
        assert.match(e.message, /1\.3\.6\.1\.4\.1\.21239\.5\.2/);
        assert.match(e.message, /Vertiv\/Geist/);
        return true;
      });
      assert.equal(driver.profile, null);
    } finally {
      await driver.close();
    }
  });
});

describe("the project's simulator of the new families", () => {
  const driverFor = (sim: SnmpSimulator) =>
    new SnmpDriver(
      snmpInstance(`sim-${sim.profile}`, sim.port, {
        Community: sim.community,
        WriteCommunity: sim.writeCommunity,
      }),
    );

  it("Sentry3: an outlet of tower B is the second device's, and switching it switches that one", async () => {
    const sim = await startSnmpSimulator({ profile: "servertech-sentry3", port: 0 });
    const driver = driverFor(sim);
    try {
      const s = await driver.poll();
      assert.equal(s.devices.length, 2);
      const towerB = s.devices[1];
      assert.ok(towerB);
      assert.equal(towerB.outlets[2]?.name, "BA3");
      const before = sim.unit.outlets[8 + 2]?.on;
      await driver.controlOutlet(
        { deviceId: towerB.id, index: 2, route: null },
        before === true ? "off" : "on",
      );
      await waitFor(() => sim.unit.outlets[8 + 2]?.on === !before, "tower B's outlet 3 switched");
      assert.equal(sim.unit.outlets[2]?.on, true, "tower A's outlet 3 is untouched");
      await waitFor(
        async () => (await driver.poll()).devices[1]?.outlets[2]?.state === (before === true ? "off" : "on"),
        "the poll shows it",
      );
    } finally {
      await driver.close();
      await sim.close();
    }
  });

  it("Eaton: on, off and reboot each write their own object; the energy reset zeroes the outlet", async () => {
    const sim = await startSnmpSimulator({ profile: "eaton-epdu", port: 0, rebootSeconds: 1 });
    const driver = driverFor(sim);
    try {
      const s = await driver.poll();
      const first = s.devices[0];
      assert.ok(first);
      const target = { deviceId: first.id, index: 1, route: null };
      await driver.controlOutlet(target, "on");
      await waitFor(() => sim.unit.outlets[1]?.on === true, "outlet 2 on");
      await driver.controlOutlet(target, "off");
      await waitFor(() => sim.unit.outlets[1]?.on === false, "outlet 2 off");
      await driver.controlOutlet({ ...target, index: 0 }, "reboot");
      await waitFor(() => sim.unit.outlets[0]?.on === false, "outlet 1 off in the reboot");
      await waitFor(() => sim.unit.outlets[0]?.on === true, "outlet 1 back on", 10_000);
      assert.deepEqual(
        [...new Set(sim.sets.map((x) => x.oid.split(".").at(-3)))],
        ["4", "3", "5"],
        "outletControlOnCmd, …OffCmd, …RebootCmd",
      );
      await driver.resetOutletEnergy({ ...target, index: 2 });
      await waitFor(() => (sim.unit.outlets[2]?.energyWh ?? 1) < 1, "outlet 3's energy reset");
      const again = await driver.poll();
      const second = again.devices[1];
      assert.ok(second);
      await driver.controlOutlet({ deviceId: second.id, index: 0, route: null }, "off");
      await waitFor(() => sim.unit.outlets[8]?.on === false, "the second unit's outlet 1 off");
    } finally {
      await driver.close();
      await sim.close();
    }
  });

  for (const profile of ["cyberpower-epdu2", "cyberpower-epdu"] as const) {
    it(`${profile}: metered outlets read, switched, and shown switched by the next poll`, async () => {
      const sim = await startSnmpSimulator({ profile, port: 0 });
      const driver = driverFor(sim);
      try {
        const s = await driver.poll();
        assert.equal(driver.profile?.id, profile);
        const d = s.devices[0];
        assert.ok(d);
        assert.ok(d.outlets.every((o) => o.measurements.some((m) => m.type === "current")));
        await driver.controlOutlet({ deviceId: d.id, index: 1, route: null }, "on");
        await waitFor(() => sim.unit.outlets[1]?.on === true, "outlet 2 on");
        await waitFor(
          async () => (await driver.poll()).devices[0]?.outlets[1]?.state === "on",
          "the poll shows it",
        );
      } finally {
        await driver.close();
        await sim.close();
      }
    });
  }
});

describe("the new profiles' alarm states", () => {
  it("every raised state is one of RAISED_ALARM_STATES, every normal one is not", () => {
    for (const p of PROFILES) {
      const defs = [p.outlets.alarm, ...p.entities.map((e) => e.alarm)];
      for (const def of defs) {
        for (const s of Object.values(def?.states ?? {}))
          assert.equal(RAISED_ALARM_STATES.includes(s.name.toLowerCase()), s.raised, `${p.id} ${s.name}`);
      }
    }
  });
});

describe("Sentry3 outlets without the powerControl capability", () => {
  const OUTLET = "1.3.6.1.4.1.1718.3.2.3.1";
  const TOWER = "1.3.6.1.4.1.1718.3.2.1.1";
  const poll = (capabilities: readonly number[]) =>
    parsePoll(
      SERVERTECH_SENTRY3,
      {
        tables: new Map<string, WalkedVarbind[]>([
          ["towerEntry", [{ oid: `${TOWER}.6.1`, type: "OctetString", value: Buffer.from("ADLH0009999") }]],
          [
            "outletEntry",
            [1, 2].flatMap((k) => [
              { oid: `${OUTLET}.2.1.1.${k}`, type: "OctetString" as const, value: Buffer.from(`AA${k}`) },
              { oid: `${OUTLET}.4.1.1.${k}`, type: "OctetString" as const, value: Buffer.from(capabilities) },
              { oid: `${OUTLET}.5.1.1.${k}`, type: "Integer" as const, value: 1 },
              { oid: `${OUTLET}.11.1.1.${k}`, type: "Integer" as const, value: 0 },
            ]),
          ],
        ]),
        scalars: new Map(),
      },
      "smart",
      1,
      { manufacturer: "ServerTech", groupModel: "Group" },
    ).snapshot.devices[0];

  it("a tower whose outlets lack powerControl (a Smart CDU: actions 'have no effect') cannot switch", () => {
    // outletCapabilities BITS: onSense(0) and loadSense(1) set, powerControl(2) not.
    const smart = poll([0xc0]);
    assert.equal(smart?.canSwitchOutlets, false);
    assert.match(smart?.lacks?.canSwitchOutlets ?? "", /ServerTech Sentry3.*outletCapabilities bit 2/);
    assert.equal(smart?.outlets[0]?.state, "on", "its outlets still report their state");
    assert.equal(poll([0xe0])?.canSwitchOutlets, true, "with powerControl(2) set it can");
  });
});

describe("numbering of chained units and infeeds", () => {
  const vendor = { manufacturer: "x", groupModel: "Group" };
  const data = (tables: [string, WalkedVarbind[]][]) => ({ tables: new Map(tables), scalars: new Map() });
  const int = (oid: string, value: number): WalkedVarbind => ({ oid, type: "Integer", value });
  const str = (oid: string, value: string): WalkedVarbind => ({
    oid,
    type: "OctetString",
    value: Buffer.from(value),
  });

  it("CyberPower ePDU2: each ModuleIndex of the chain is a device, its rows keyed by Module and Number", () => {
    const ident = `${E2}.2.2.1`;
    const status = `${E2}.6.1.4.1`;
    // Rows 1-2 are module 1's outlets 1-2, rows 3-4 module 2's outlets 1-2 (the table's own index runs on).
    const rows = [
      [1, 1, 1, 1],
      [2, 1, 2, 2],
      [3, 2, 1, 2],
      [4, 2, 2, 1],
    ];
    const { snapshot } = parsePoll(
      CYBERPOWER_EPDU2,
      data([
        [
          "ePDU2IdentEntry",
          [
            int(`${ident}.2.1`, 1),
            str(`${ident}.10.1`, "HOST0001"),
            int(`${ident}.2.2`, 2),
            str(`${ident}.10.2`, "LINK0002"),
          ],
        ],
        [
          "ePDU2OutletSwitchedStatusEntry",
          rows.flatMap(([i, m, n, state]) => [
            int(`${status}.2.${i}`, m ?? 0),
            int(`${status}.3.${i}`, n ?? 0),
            str(`${status}.4.${i}`, `m${m}o${n}`),
            int(`${status}.5.${i}`, state ?? 0),
          ]),
        ],
      ]),
      "chain",
      1,
      vendor,
    );
    assert.deepEqual(
      snapshot.devices.map((d) => [d.id, d.outlets.map((o) => `${o.index}:${o.label}:${o.state}`)]),
      [
        ["HOST0001", ["0:m1o1:on", "1:m1o2:off"]],
        ["LINK0002", ["0:m2o1:off", "1:m2o2:on"]],
      ],
    );
  });

  it("Sentry3: a tower's outlets of its second infeed are numbered 64 on (AB3 is index 66)", () => {
    const outlet = "1.3.6.1.4.1.1718.3.2.3.1";
    const { snapshot } = parsePoll(
      SERVERTECH_SENTRY3,
      data([
        [
          "outletEntry",
          [
            str(`${outlet}.2.1.1.3`, "AA3"),
            int(`${outlet}.5.1.1.3`, 1),
            str(`${outlet}.2.1.2.3`, "AB3"),
            int(`${outlet}.5.1.2.3`, 0),
            str(`${outlet}.2.2.1.1`, "BA1"),
            int(`${outlet}.5.2.1.1`, 1),
          ],
        ],
      ]),
      "cdu",
      1,
      vendor,
    );
    assert.deepEqual(
      snapshot.devices.map((d) => d.outlets.map((o) => `${o.index}:${o.name}:${o.state}`)),
      [["2:AA3:on", "66:AB3:off"], ["0:BA1:on"]],
    );
  });
});

describe("an Eaton unit that lost communication", () => {
  it("has no readings and no outlet state while its unitTable says communicationLost; the others are read", () => {
    const unit = `${EP}.1.2.1`;
    const outlet = `${EP}.6.1.1`;
    const current = `${EP}.6.4.1`;
    const ctl = `${EP}.6.6.1`;
    const total = `${EP}.3.5.1`;
    const int = (oid: string, value: number): WalkedVarbind => ({ oid, type: "Integer", value });
    const str = (oid: string, value: string): WalkedVarbind => ({
      oid,
      type: "OctetString",
      value: Buffer.from(value),
    });
    const { snapshot } = parsePoll(
      EATON_EPDU,
      {
        tables: new Map<string, WalkedVarbind[]>([
          [
            "unitEntry",
            [
              str(`${unit}.4.0`, "G206N00001"),
              str(`${unit}.4.1`, "G206N00002"),
              int(`${unit}.30.0`, 0),
              int(`${unit}.30.1`, 1), // communicationLost
            ],
          ],
          ["outletEntry", [str(`${outlet}.2.0.1`, "A1"), str(`${outlet}.2.1.1`, "A1")]],
          ["outletCurrentEntry", [int(`${current}.3.0.1`, 1200), int(`${current}.3.1.1`, 0)]],
          ["outletControlEntry", [int(`${ctl}.2.0.1`, 1), int(`${ctl}.2.1.1`, 0)]],
          ["inputEntry", [int(`${EP}.3.1.1.2.0.1`, 1), int(`${EP}.3.1.1.2.1.1`, 1)]],
          ["inputTotalPowerEntry", [int(`${total}.4.0.1`, 250), int(`${total}.4.1.1`, 0)]],
        ]),
        scalars: new Map(),
      },
      "eaton",
      1,
      { manufacturer: "Eaton", groupModel: "Group" },
    );
    const [good, lost] = snapshot.devices;
    assert.equal(good?.id, "G206N00001");
    assert.equal(good?.outlets[0]?.state, "on");
    assert.equal(good?.outlets[0]?.measurements.find((m) => m.type === "current")?.value, 1.2);
    assert.equal(good?.entities.find((e) => e.key === "inlet0")?.measurements[0]?.value, 250);
    assert.equal(lost?.id, "G206N00002");
    assert.equal(lost?.outlets[0]?.state, "unknown", "its 0 (off) is not a state of it now");
    assert.deepEqual(lost?.outlets[0]?.measurements, [], "its 0 A is not a reading of it now");
    assert.deepEqual(lost?.entities, []);
  });
});

describe("the new families' models without switching, as the project's simulator serves them", () => {
  const cases = [
    { profile: "eaton-epdu", devices: 2, outlets: 8, family: /Eaton ePDU/ },
    { profile: "servertech-sentry3", devices: 2, outlets: 8, family: /ServerTech Sentry3/ },
    { profile: "cyberpower-epdu2", devices: 1, outlets: 8, family: /CyberPower ePDU2/ },
    // ePDU lists only controlled outlets: a metered unit shows its identity and loads, no outlet.
    { profile: "cyberpower-epdu", devices: 1, outlets: 0, family: /CyberPower ePDU/ },
  ] as const;
  for (const c of cases) {
    it(`${c.profile}: read, never switchable, a command refused naming the model with nothing sent`, async () => {
      const sim = await startSnmpSimulator({ profile: c.profile, port: 0, switched: false });
      const driver = new SnmpDriver(
        snmpInstance(`metered-${c.profile}`, sim.port, { Community: "public", WriteCommunity: "private" }),
      );
      try {
        const s = await driver.poll();
        assert.equal(driver.profile?.id, c.profile);
        assert.equal(s.devices.length, c.devices);
        assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
        for (const d of s.devices) {
          assert.equal(d.canSwitchOutlets, false, d.id);
          assert.match(d.lacks?.canSwitchOutlets ?? "", c.family);
          assert.equal(d.outlets.length, c.outlets, d.id);
          assert.ok(
            d.entities.some((e) => e.measurements.length > 0),
            `${d.id}: its loads are read`,
          );
          if (c.outlets > 0)
            assert.ok(
              d.outlets.some((o) => o.measurements.length > 0),
              `${d.id}: metered outlets`,
            );
        }
        if (c.outlets > 0) {
          const target = { deviceId: s.devices[0]?.id ?? "", index: 0, route: null };
          await assert.rejects(
            driver.controlOutlet(target, "off"),
            (e) => isPduError(e) && e.kind === "refused",
          );
        }
        assert.deepEqual(sim.sets, [], "nothing was sent");
      } finally {
        await driver.close();
        await sim.close();
      }
    });
  }
});
