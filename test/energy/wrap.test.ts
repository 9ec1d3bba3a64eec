/**
 * A 32-bit energy counter wrapping: the project's SNMP simulator as an Eaton ePDU (outletWh is an
 * Unsigned32 of watt-hours) set just below 2^32 before the bridge starts. The PDU's own reading
 * falls back to 0; the lifetime counter goes on, never decreasing, and rises by what the
 * simulator's ground truth rose.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { appYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const WRAP = 2 ** 32;
const ID = "eaton";

describe("a Counter32 energy counter wrapping", () => {
  let sim: SnmpSimulator;
  let h: AppHarness<never>;
  const seen: number[] = [];

  const lifetime = (): number | null => {
    const device = h.app.store.get(ID)?.snapshot?.devices[0]?.id;
    return device === undefined ? null : h.app.energy.reader.outletWh(ID, device, 2);
  };
  const reading = (): number | null => {
    const outlet = h.app.store.get(ID)?.snapshot?.devices[0]?.outlets[2];
    const kwh = outlet?.measurements.find((m) => m.type === "energy")?.value;
    return typeof kwh === "number" ? kwh * 1000 : null;
  };

  before(async () => {
    // Its values refreshed every 100 ms: what is set below is served before the bridge starts.
    sim = await startSnmpSimulator({
      profile: "eaton-epdu",
      community: "lab-read",
      port: 0,
      outlets: 3,
      refreshMs: 100,
    });
    // The third outlet draws about 700 W; its counter 4 Wh below the wrap (about 20 s).
    sim.unit.setEnergy(3, WRAP - 4);
    h = await startAppHarness({
      yaml: () =>
        appYaml({
          pdus: [
            [
              `  ${ID}:`,
              "    Driver: snmp",
              `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
              "    PollInterval: 1",
            ].join("\n"),
          ],
        }),
      env: { SERVICE_PDU_EATON_COMMUNITY: "lab-read" },
      waitForFirstPolls: true,
    });
    h.app.bus.listen({ name: "test" }, { snapshot: () => void record() });
  });
  after(async () => {
    await h?.close();
    await sim?.close();
  });

  function record(): void {
    const wh = lifetime();
    if (wh !== null) seen.push(wh);
  }

  it("counts through the wrap and never decreases", async () => {
    const firstReading = reading();
    assert.ok(firstReading !== null && firstReading > WRAP - 10, `read near the wrap: ${firstReading}`);
    const start = lifetime();
    const truthStart = sim.unit.truthWh(3);
    assert.ok(start !== null);
    await waitFor(() => (reading() ?? Infinity) < 1000, "the PDU's counter wrapped", 60_000);
    await waitFor(() => (reading() ?? 0) >= 2, "a few watt-hours after the wrap", 60_000);
    const end = lifetime();
    const truthEnd = sim.unit.truthWh(3);
    assert.ok(end !== null && end > WRAP, `the lifetime counter went past 2^32 Wh: ${end}`);
    for (let i = 1; i < seen.length; i++)
      assert.ok(seen[i]! >= seen[i - 1]!, `decreased at ${i}: ${seen.join(" ")}`);
    // Counted since the start within the rounding and one second's draw (the poll's and the truth's read times).
    const counted = end - start;
    const drawn = truthEnd - truthStart;
    assert.ok(Math.abs(counted - drawn) <= 3, `counted ${counted} Wh, drawn ${drawn.toFixed(3)} Wh`);
    assert.ok(
      h.logs().some((l) => String(l.msg).includes("32-bit counter wrapped")),
      "the wrap is logged",
    );
  });
});
