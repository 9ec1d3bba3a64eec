/**
 * Two control rows of an APC rPDU2 unit claiming one outlet (the project's agent in its
 * `duplicate-rows` mode) through the whole bridge: the warning naming the instance and both rows is
 * logged once however many polls repeat it, and it shows in /health/integrations.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";

describe("duplicate SNMP rows through the bridge", () => {
  let sim: SnmpSimulator;
  let h: AppHarness<never>;
  before(async () => {
    sim = await startSnmpSimulator({
      profile: "apc-rpdu2",
      port: 0,
      community: "lab-read",
      writeCommunity: "lab-write",
      hostile: "duplicate-rows",
    });
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          "  dup-rack:",
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
          "    PollInterval: 1",
          "    ActionsEnabled: true",
        ].join("\n"),
      env: { SERVICE_PDU_DUP_RACK_COMMUNITY: "lab-read", SERVICE_PDU_DUP_RACK_WRITE_COMMUNITY: "lab-write" },
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await sim?.close();
  });

  it("is logged once, naming the instance and both rows, over several polls", async () => {
    const first = h.app.store.get("dup-rack")?.snapshot?.timestamp ?? 0;
    await h.waitForPoll("dup-rack", first + 1);
    const second = h.app.store.get("dup-rack")?.snapshot?.timestamp ?? 0;
    await h.waitForPoll("dup-rack", second + 1);
    const lines = h.logs().filter((l) => /both claim number 2/.test(String(l.problem)));
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]?.instance, "dup-rack");
    assert.equal(lines[0]?.path, "rPDU2OutletSwitchedControlEntry[9]");
    assert.match(
      String(lines[0]?.problem),
      /rows 2 and 9 both claim number 2 of unit 1: row 2 is used, row 9 ignored/,
    );
    const res = await h.health.get("/health/integrations");
    assert.match(res.text, /rows 2 and 9 both claim number 2/);
  });
});
