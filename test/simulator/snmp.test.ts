/**
 * The built-in SNMP simulator (an agent on net-snmp's agent side) is held to the recordings: with
 * the recording's 8 outlets it serves exactly the recording's OIDs with the same types (snmpwalk
 * reads both). The bridge's driver reads it, switches it (the status follows the control object)
 * and survives every hostile mode without anything but a PduError coming out of a poll.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { isPduError } from "../../src/pdu/errors.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { SnmpDriver } from "../../src/pdu/snmp/driver.js";
import {
  SNMP_HOSTILE_MODES,
  startSnmpSimulator,
  type SnmpHostileMode,
  type SnmpSimulator,
} from "../../src/simulator/snmp/agent.js";
import { SIM_PROFILES } from "../../src/simulator/snmp/units.js";
import { readRecording, snmpInstance } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";

const run = promisify(execFile);

/** snmpwalk's type words → snmprec tags. */
const TAGS: Readonly<Record<string, string>> = {
  INTEGER: "2",
  STRING: "4",
  "Hex-STRING": "4",
  OID: "6",
  IpAddress: "64",
  Counter32: "65",
  Gauge32: "66",
  Timeticks: "67",
};

async function walkShape(port: number, community: string): Promise<Map<string, string>> {
  const { stdout } = await run(
    "snmpwalk",
    ["-v2c", "-c", community, "-On", "-t", "2", `127.0.0.1:${port}`, "1.3.6.1"],
    {
      maxBuffer: 32 * 1024 * 1024,
    },
  );
  const shape = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const m = /^\.([0-9.]+) = ([A-Za-z0-9-]+):/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) shape.set(m[1], TAGS[m[2]] ?? m[2]);
    else if (/^\.([0-9.]+) = ""$/.test(line)) shape.set(line.slice(1).split(" ")[0] ?? "", "4");
  }
  return shape;
}

const driverFor = (sim: SnmpSimulator, id = "simulated", timeout = 2, maxRows?: number) =>
  new SnmpDriver(
    snmpInstance(id, sim.port, { Community: sim.community, WriteCommunity: sim.writeCommunity }, timeout),
    maxRows === undefined ? {} : { maxRows },
  );

describe("SNMP simulator", () => {
  for (const profile of SIM_PROFILES) {
    describe(profile, () => {
      let sim: SnmpSimulator;
      before(async () => {
        sim = await startSnmpSimulator({ profile, port: 0 });
      });
      after(async () => {
        await sim.close();
      });

      it("serves the recording's OIDs with the recording's types", async () => {
        const recording = await readRecording(profile);
        const shape = await walkShape(sim.port, sim.community);
        const expected = new Map([...recording].map(([oid, r]) => [oid, r.tag]));
        const missing = [...expected.keys()].filter((oid) => !shape.has(oid));
        const extra = [...shape.keys()].filter((oid) => !expected.has(oid));
        assert.deepEqual({ missing, extra }, { missing: [], extra: [] });
        for (const [oid, tag] of expected) assert.equal(shape.get(oid), tag, oid);
      });

      it("the driver detects it, reads it and switches it; a reboot turns the outlet off and on again", async () => {
        const driver = driverFor(sim);
        try {
          const s = await driver.poll();
          assert.equal(driver.profile?.id, profile);
          const device = s.devices[0];
          assert.ok(device);
          assert.equal(device.outlets.length, 8);
          assert.equal(s.warnings, undefined, JSON.stringify(s.warnings));
          const target = { deviceId: device.id, index: 1, route: null };
          await driver.controlOutlet(target, "on");
          await waitFor(() => sim.unit.outlets[1]?.on === true, "outlet 2 on");
          await waitFor(
            async () => (await driver.poll()).devices[0]?.outlets[1]?.state === "on",
            "the poll shows it on",
          );
          await driver.controlOutlet(target, "off");
          await waitFor(() => sim.unit.outlets[1]?.on === false, "outlet 2 off");
          await driver.controlOutlet({ ...target, index: 0 }, "reboot");
          await waitFor(() => sim.unit.outlets[0]?.on === false, "outlet 1 off during the reboot");
          await waitFor(() => sim.unit.outlets[0]?.on === true, "outlet 1 back on", 10_000);
          await driver.setOutletSettings(target, { label: "web-07" });
          await waitFor(() => sim.unit.outlets[1]?.name === "web-07", "the new name");
          // Each SET is carried out once (net-snmp's agent tests a SET before it commits it).
          assert.deepEqual(
            sim.controls.map((c) => [c.outlet, c.action]),
            [
              [1, "on"],
              [1, "off"],
              [0, "reboot"],
            ],
          );
          assert.equal(sim.sets.length, 4, JSON.stringify(sim.sets));
        } finally {
          await driver.close();
        }
      });
    });
  }

  it("a SET with the read community is refused (noAccess → refused)", async () => {
    const sim = await startSnmpSimulator({ profile: "apc-rpdu2", port: 0 });
    const driver = new SnmpDriver(
      snmpInstance("ro", sim.port, { Community: sim.community, WriteCommunity: sim.community }),
    );
    try {
      const s = await driver.poll();
      await assert.rejects(
        driver.controlOutlet({ deviceId: s.devices[0]?.id ?? "", index: 0, route: null }, "off"),
        (e) => isPduError(e) && e.kind === "refused",
      );
      assert.equal(sim.unit.outlets[0]?.on, true);
    } finally {
      await driver.close();
      await sim.close();
    }
  });

  it("SNMPv3 authPriv against the simulator's user", async () => {
    const sim = await startSnmpSimulator({
      profile: "raritan-px2",
      port: 0,
      v3: { user: "bridge", authProtocol: "sha256", authKey: "auth-key-123", privKey: "priv-key-123" },
    });
    const driver = new SnmpDriver(
      snmpInstance("v3sim", sim.port, {
        Version: "3",
        Auth: { Username: "bridge", Protocol: "sha256", PrivProtocol: "aes" },
        AuthKey: "auth-key-123",
        PrivKey: "priv-key-123",
      }),
    );
    try {
      const s = await driver.poll();
      await driver.controlOutlet({ deviceId: s.devices[0]?.id ?? "", index: 1, route: null }, "on");
      await waitFor(() => sim.unit.outlets[1]?.on === true, "outlet 2 on");
      await driver.resetOutletEnergy({ deviceId: s.devices[0]?.id ?? "", index: 1, route: null });
      await waitFor(
        () => sim.unit.outlets[1]?.energyWh === 0 || (sim.unit.outlets[1]?.energyWh ?? 1) < 1,
        "energy reset",
      );
    } finally {
      await driver.close();
      await sim.close();
    }
  });

  describe("hostile agents: nothing but a PduError ever comes out of a poll", () => {
    const expectations: Readonly<Record<SnmpHostileMode, (r: PromiseSettledResult<Snapshot>) => void>> = {
      hang: (r) => {
        assert.equal(r.status, "rejected");
        const e: unknown = r.status === "rejected" ? r.reason : null;
        assert.ok(isPduError(e) && e.kind === "timeout", String(e));
      },
      "wrong-types": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        assert.ok(
          s?.warnings?.some((w) => /a value of type OctetString/.test(w.problem)),
          JSON.stringify(s?.warnings),
        );
      },
      "missing-columns": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        assert.ok(s?.devices[0]?.outlets.every((o) => o.state === "unknown" && o.measurements.length === 0));
        assert.ok((s?.warnings?.length ?? 0) > 0);
      },
      "no-such-instance": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        const outlets = s?.devices[0]?.outlets ?? [];
        assert.equal(outlets.length, 8);
        // Rows with holes have fewer readings; never zeros in their place.
        assert.ok(outlets[1] !== undefined && outlets[0] !== undefined);
        assert.ok(outlets[1].measurements.length < outlets[0].measurements.length);
      },
      "huge-tables": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        assert.ok((s?.devices[0]?.outlets.length ?? 0) <= 512);
        assert.ok(
          s?.warnings?.some((w) => /more than 600 rows/.test(w.problem)),
          JSON.stringify(s?.warnings),
        );
        assert.ok(
          s?.warnings?.some((w) => /more than 512 outlets/.test(w.problem)),
          JSON.stringify(s?.warnings),
        );
      },
      "too-big": (r) => {
        // Asked for less (varbinds and repetitions) after each tooBig: every outlet is read.
        assert.equal(r.status, "fulfilled", r.status === "rejected" ? String(r.reason) : "");
        assert.equal(r.status === "fulfilled" ? r.value.devices[0]?.outlets.length : 0, 8);
      },
      "too-big-always": (r) => {
        const e: unknown = r.status === "rejected" ? r.reason : null;
        assert.ok(isPduError(e) && e.kind === "ret-code" && /answered tooBig/.test(e.message), String(e));
      },
      "duplicate-rows": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        assert.ok(
          s?.warnings?.some((w) => /rows 2 and 9 both claim number 2 of unit 1/.test(w.problem)),
          JSON.stringify(s?.warnings),
        );
      },
      "bad-names": (r) => {
        assert.equal(r.status, "fulfilled");
        const s = r.status === "fulfilled" ? r.value : null;
        for (const o of s?.devices[0]?.outlets ?? []) {
          // eslint-disable-next-line no-control-regex -- what must not get through
          assert.doesNotMatch(o.name + o.label, /[\u0000-\u001f\u007f-\u009f]/);
          assert.ok((o.name + o.label).includes("\ufffd"));
        }
      },
    };
    for (const mode of SNMP_HOSTILE_MODES) {
      for (const profile of mode === "huge-tables" ? (["apc-rpdu2"] as const) : SIM_PROFILES) {
        it(`${mode}, ${profile}`, async () => {
          const sim = await startSnmpSimulator({ profile, port: 0, hostile: mode });
          // A huge table is cut at 600 rows here (2048 by default) to keep the test short.
          const driver = driverFor(
            sim,
            `hostile-${mode}`,
            mode === "huge-tables" ? 20 : 1,
            mode === "huge-tables" ? 600 : undefined,
          );
          try {
            const [result] = await Promise.allSettled([driver.poll()]);
            assert.ok(result);
            if (result.status === "rejected") assert.ok(isPduError(result.reason), String(result.reason));
            if (profile === "apc-rpdu2" || mode === "hang" || mode === "bad-names")
              expectations[mode](result);
          } finally {
            await driver.close();
            await sim.close();
          }
        });
      }
    }
  });
});

describe("pdu-bridge simulate --snmp", () => {
  it("serves the profile on the port it prints until stopped", async () => {
    const { runSimulateCommand } = await import("../../src/simulator/cli.js");
    const lines: string[] = [];
    const stop = new AbortController();
    const done = runSimulateCommand(["--snmp", "servertech-sentry4", "--outlets", "4", "--port", "0"], {
      out: (l) => lines.push(l),
      err: (l) => lines.push(l),
      signal: stop.signal,
    });
    try {
      const line = await waitFor(() => lines.find((l) => l.includes("udp 127.0.0.1:")), "the address line");
      const port = Number(/udp 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
      const { stdout } = await run("snmpwalk", [
        "-v2c",
        "-c",
        "public",
        "-On",
        `127.0.0.1:${port}`,
        "1.3.6.1.4.1.1718.4.1.8.2.1.3",
      ]);
      assert.equal(stdout.trim().split("\n").length, 4);
    } finally {
      stop.abort();
      assert.equal(await done, 0);
    }
  });

  it("refuses a bad flag with exit code 2 and the usage", async () => {
    const { runSimulateCommand } = await import("../../src/simulator/cli.js");
    const lines: string[] = [];
    const code = await runSimulateCommand(["--snmp", "nope"], {
      out: (l) => lines.push(l),
      err: (l) => lines.push(l),
    });
    assert.equal(code, 2);
    assert.match(lines.join("\n"), /--snmp must be one of apc-rpdu2/);
  });
});
