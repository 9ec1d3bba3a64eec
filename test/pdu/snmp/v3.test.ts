/**
 * SNMPv3 (USM) against snmpsimd: authPriv with SHA and AES-128, authNoPriv with SHA-256, and wrong
 * keys or user: a clear error naming the instance and the agent, never a crash, and the next poll
 * with the same driver still fails cleanly.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { isPduError } from "../../../src/pdu/errors.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { snmpInstance, startSnmpsim, type Snmpsim } from "../../../testkit/snmpsim.js";

const v3 = (user: string, authKey: string, privKey: string | null, protocol: "sha" | "sha256") => ({
  Version: "3" as const,
  Auth: {
    Username: user,
    Protocol: protocol,
    PrivProtocol: privKey === null ? ("none" as const) : ("aes" as const),
  },
  AuthKey: authKey,
  PrivKey: privKey,
});

describe("SNMPv3 authPriv (SHA, AES-128)", () => {
  let sim: Snmpsim;
  before(async () => {
    sim = await startSnmpsim({
      only: ["servertech-sentry4"],
      v3: { user: "bridge", authKey: "auth-secret-1", privKey: "priv-secret-1", authProto: "SHA" },
    });
  });
  after(async () => {
    await sim.close();
  });

  it("polls with the right user and keys", async () => {
    const driver = new SnmpDriver(
      snmpInstance("v3ok", sim.port, v3("bridge", "auth-secret-1", "priv-secret-1", "sha")),
    );
    try {
      const s = await driver.poll();
      assert.equal(driver.profile?.id, "servertech-sentry4");
      assert.equal(s.devices[0]?.id, "ABEF0001234");
      assert.equal(s.devices[0]?.outlets.length, 8);
    } finally {
      await driver.close();
    }
  });

  for (const [what, cfg] of [
    ["a wrong authentication key", v3("bridge", "wrong-auth-key", "priv-secret-1", "sha")],
    ["a wrong privacy key", v3("bridge", "auth-secret-1", "wrong-priv-key", "sha")],
    ["an unknown user", v3("mallory", "auth-secret-1", "priv-secret-1", "sha")],
    ["the wrong protocol", v3("bridge", "auth-secret-1", "priv-secret-1", "sha256")],
  ] as const) {
    it(`${what}: a clear error naming the instance and the agent, twice, no crash`, async () => {
      const driver = new SnmpDriver(snmpInstance("rack-v3", sim.port, cfg, 1));
      try {
        for (let i = 0; i < 2; i++) {
          await assert.rejects(driver.poll(), (e) => {
            assert.ok(isPduError(e), String(e));
            assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${sim.port}`));
            assert.ok(e.kind === "timeout" || e.kind === "ret-code", e.kind);
            assert.match(e.message, /rack-v3/);
            assert.doesNotMatch(e.message, /secret/);
            return true;
          });
        }
      } finally {
        await driver.close();
      }
    });
  }
});

describe("SNMPv3 authNoPriv (SHA-256)", () => {
  let sim: Snmpsim;
  before(async () => {
    sim = await startSnmpsim({
      only: ["apc-rpdu"],
      v3: { user: "reader", authKey: "auth-secret-2", authProto: "SHA256" },
    });
  });
  after(async () => {
    await sim.close();
  });

  it("polls and switches", async () => {
    const driver = new SnmpDriver(
      snmpInstance("v3np", sim.port, v3("reader", "auth-secret-2", null, "sha256")),
    );
    try {
      const s = await driver.poll();
      assert.equal(driver.profile?.id, "apc-rpdu");
      assert.equal(s.devices[0]?.id, "ZA1012345678");
      await driver.controlOutlet({ deviceId: "ZA1012345678", index: 1, route: null }, "on");
      assert.equal(await sim.getV3("1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.2"), "1");
      await driver.controlOutlet({ deviceId: "ZA1012345678", index: 1, route: null }, "off");
      assert.equal(await sim.getV3("1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.2"), "2");
    } finally {
      await driver.close();
    }
  });
});
