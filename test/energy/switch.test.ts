/**
 * `Energy.LifetimeCounters: false`: no lifetime counter is kept, published, announced to Home
 * Assistant or exported, and no checkpoint is written; the PDU's own counter is published as ever.
 * It is the energy benchmark's baseline (bench/energy.ts): the same bridge without the counters.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import type { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

const ID = "lab";
const OUTLETS = 3;

describe("lifetime energy counters switched off", () => {
  let h: AppHarness<"lab">;
  let recorder: Recorder;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-energy-off-"));
    h = await startAppHarness<"lab">({
      sims: { lab: { outlets: OUTLETS, seed: 5 } },
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml(ID, sims.lab, { pollInterval: 1 })],
          extra: `State: { Dir: ${JSON.stringify(dir)} }\nEnergy: { LifetimeCounters: false }`,
        }),
      waitForFirstPolls: true,
    });
    recorder = await h.subscribe([`pdu-bridge/${ID}/#`, "homeassistant/sensor/#"]);
  });
  after(async () => {
    await h?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("publishes the PDU's counter only: no lifetime topic, sensor, series or checkpoint", async () => {
    const own = () => recorder.messages.filter((m) => m.topic.endsWith("/measurements/energy"));
    const configs = () => recorder.messages.filter((m) => m.topic.endsWith("_energy/config"));
    await waitFor(
      () => own().length >= 1 && configs().length >= OUTLETS,
      `the PDU's own counters: ${recorder.messages.length} messages`,
    );
    const device = h.app.store.get(ID)?.snapshot?.devices[0]?.id ?? "";
    // A few more polls go by.
    const since = Date.now();
    await waitFor(() => (h.app.store.get(ID)?.lastSuccessUtc ?? 0) > since + 2000, "more polls", 15_000);
    assert.deepEqual(
      recorder.messages.filter((m) => m.topic.includes("energyLifetime")).map((m) => m.topic),
      [],
    );
    assert.equal(h.app.energy.reader.outletWh(ID, device, 0), null);
    const res = await fetch(`http://127.0.0.1:${h.app.endpoints.healthPort}/metrics`);
    assert.equal(res.status, 200);
    const metrics = await res.text();
    assert.doesNotMatch(metrics, /^pdu_outlet_energy_lifetime_wh_total\{/m);
    assert.match(metrics, /^pdu_outlet_energy_joules_total\{/m);
    assert.deepEqual(await readdir(dir), [], "no checkpoint written");
  });
});
