/**
 * Units without outlet switching, against the project's agent serving them as such models answer
 * (`switched: false`): a Raritan PXE (no switch table; states from its outlets' onOff sensors,
 * following the unit), an APC AP88xx (outlets from the metered outlet table only) and an AP78xx
 * (no outlet table: phases, banks and total). None offers switching, and a switching command is
 * refused naming the model with nothing sent. A switched PX2's off outlet has its power factor
 * sensor unavailable: no power factor, never 0.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isPduError } from "../../../src/pdu/errors.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../../src/simulator/snmp/agent.js";
import type { SimProfile } from "../../../src/simulator/snmp/units.js";
import { snmpInstance } from "../../../testkit/snmpsim.js";
import { waitFor } from "../../../testkit/wait.js";

async function withUnit(
  profile: SimProfile,
  switched: boolean,
  run: (sim: SnmpSimulator, driver: SnmpDriver) => Promise<void>,
): Promise<void> {
  const sim = await startSnmpSimulator({ profile, port: 0, switched, refreshMs: 100 });
  const driver = new SnmpDriver(
    snmpInstance(`unswitched-${profile}`, sim.port, { Community: "public", WriteCommunity: "private" }),
  );
  try {
    await run(sim, driver);
  } finally {
    await driver.close();
    await sim.close();
  }
}

async function refusesSwitching(driver: SnmpDriver, sim: SnmpSimulator, deviceId: string, model: RegExp) {
  for (const action of ["on", "off", "reboot"] as const) {
    await assert.rejects(driver.controlOutlet({ deviceId, index: 0, route: null }, action), (e) => {
      assert.ok(isPduError(e) && e.kind === "refused", String(e));
      assert.match(e.message, model);
      assert.match(e.message, /has no outlet switching over SNMP.*nothing was sent/);
      return true;
    });
  }
  assert.deepEqual(sim.sets, []);
}

describe("SNMP units without outlet switching (the project's agent)", () => {
  it("a Raritan PXE: every outlet's state from its onOff sensor, following the unit; no switching", async () => {
    await withUnit("raritan-px2", false, async (sim, driver) => {
      const s = await driver.poll();
      const device = s.devices[0];
      assert.ok(device !== undefined);
      assert.equal(device.canSwitchOutlets, false);
      assert.deepEqual(
        device.outlets.map((o) => o.state),
        sim.unit.outlets.map((o) => (o.on ? "on" : "off")),
      );
      assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
      await refusesSwitching(driver, sim, device.id, /Raritan PX2\/PX3 \(PDU2-MIB\) model PX2-1486/);
      // The unit's outlet 1 goes off by itself (its own buttons): the next polls see it.
      sim.unit.switch(1, "off");
      await waitFor(
        async () => (await driver.poll()).devices[0]?.outlets[0]?.state === "off",
        "outlet 1 off",
      );
    });
  });

  it("an APC AP88xx: outlets from the metered outlet table, with names and readings, state unknown", async () => {
    await withUnit("apc-rpdu2", false, async (sim, driver) => {
      const s = await driver.poll();
      const device = s.devices[0];
      assert.ok(device !== undefined);
      assert.equal(device.outlets.length, 8);
      assert.equal(device.outlets[2]?.label, "db-01");
      assert.ok(device.outlets.every((o) => o.state === "unknown"));
      assert.ok(device.outlets.every((o) => o.measurements.some((m) => m.type === "current")));
      assert.equal(device.canSwitchOutlets, false);
      assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
      await refusesSwitching(driver, sim, device.id, /APC rPDU2 \(AP8xxx\) model/);
    });
  });

  it("an APC AP78xx: no outlet invented; phase, banks and total; no switching", async () => {
    await withUnit("apc-rpdu", false, async (sim, driver) => {
      const s = await driver.poll();
      const device = s.devices[0];
      assert.ok(device !== undefined);
      assert.deepEqual(device.outlets, []);
      assert.ok(device.entities.some((e) => e.key === "phase0"));
      assert.ok(device.entities.some((e) => e.key === "total0"));
      assert.equal(device.canSwitchOutlets, false);
      await refusesSwitching(driver, sim, device.id, /APC rPDU \(AP78xx\/AP79xx\) model/);
    });
  });

  it("a switched PX2: an off outlet's power factor sensor is unavailable, so it has no power factor", async () => {
    await withUnit("raritan-px2", true, async (sim, driver) => {
      const s = await driver.poll();
      const outlets = s.devices[0]?.outlets ?? [];
      assert.equal(s.devices[0]?.canSwitchOutlets, true);
      sim.unit.outlets.forEach((o, i) => {
        const pf = outlets[i]?.measurements.find((m) => m.type === "powerFactor");
        if (o.on) assert.ok(pf !== undefined, `outlet ${i + 1}`);
        else assert.equal(pf, undefined, `outlet ${i + 1}`);
      });
      assert.ok(sim.unit.outlets.some((o) => !o.on));
    });
  });
});
