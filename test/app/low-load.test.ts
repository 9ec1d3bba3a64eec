/**
 * A low load of an outlet that is off is no alarm: the whole service polling the SNMP simulator's
 * APC AP8858, which reports `lowLoad` for every outlet drawing nothing, as a real one does for the
 * outlets switched off. The outlets that are off raise nothing (the demo opened on such warnings);
 * one switched on that still draws nothing raises its `lowLoad` warning, on every surface's report.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

describe("lowLoad of an outlet that is off", () => {
  let simulator: SnmpSimulator;
  let h: AppHarness<never>;

  before(async () => {
    // Frozen: each outlet's load stays at its base (outlets 1 and 4 draw nothing, and are off).
    simulator = await startSnmpSimulator({ profile: "apc-rpdu2", port: 0, outlets: 8, frozen: true });
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          "  apc:",
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${simulator.port}, Timeout: 2 }`,
          "    PollInterval: 1",
        ].join("\n"),
      env: { SERVICE_PDU_APC_COMMUNITY: "public" },
      waitForFirstPolls: true,
    });
  });

  after(async () => {
    await h?.close();
    await simulator?.close();
  });

  /** The active alarms of outlets 1 and 4 (off at start; outlet 2 is overloaded, as in the recording). */
  const alarmsOf14 = (): string[] =>
    (h.app.store.get("apc")?.load.alarms ?? [])
      .filter((a) => a.target.kind === "outlet" && [1, 4].includes(a.target.index))
      .map((a) => `${a.id} ${a.reported ?? ""}`);
  const outlet = (index: number) => h.app.store.get("apc")?.snapshot?.devices[0]?.outlets[index];

  it("raises nothing for the outlets that are off, and lowLoad for one that is on and draws nothing", async () => {
    assert.equal(outlet(1)?.state, "off");
    assert.equal(outlet(4)?.state, "off");
    assert.equal(outlet(1)?.alarm.state, "lowLoad", "the PDU reports lowLoad for it");
    assert.deepEqual(alarmsOf14(), [], "no alarm for an outlet that is off");

    const device = h.app.store.get("apc")?.snapshot?.devices[0]?.id ?? "";
    const state = simulator.unit.outlets[1];
    assert.ok(state !== undefined);
    state.on = true;
    await waitFor(() => outlet(1)?.state === "on", "outlet 1 on in a poll");
    const alarm = await waitFor(
      () => h.app.store.get("apc")?.load.alarms.find((a) => a.id === `${device}/outlet/1/load`),
      "the lowLoad warning of the outlet that is on and draws nothing",
    );
    assert.equal(alarm.severity, "warning");
    assert.equal(alarm.reported, "lowLoad");
    assert.deepEqual(
      alarmsOf14(),
      [`${device}/outlet/1/load lowLoad`],
      "outlet 4, still off, raises nothing",
    );
  });
});
