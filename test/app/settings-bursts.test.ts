/**
 * Settings-write bursts through the composed App against the simulator over real HTTP: a flood of
 * label writes for one outlet over MQTT, and concurrent PATCHes over REST, reach the PDU as at most
 * one `set` write per outlet per second, each merging what came meanwhile (the last value wins), and
 * a burst is audited once (the line of its first request says how many it merged).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ControlEvent } from "../../src/bus.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "settings-bursts-key-7a2c41";
const AUTH = { "x-api-key": KEY };

/** The `set` writes the simulator executed on one outlet after journal entry `since`: their times. */
function setWrites(sim: Simulator, deviceId: string, index: number, since: number): number[] {
  return sim
    .journal()
    .slice(since)
    .filter((e) => e.cmd === "set" && e.path === `/api/dev/${deviceId}/outlet/${index}`)
    .map((e) => e.time);
}

/** At most one write per second: as many writes as whole seconds they span, plus one. */
function assertOnePerSecond(times: readonly number[]): void {
  assert.ok(times.length >= 1, "the burst was written");
  const span = times[times.length - 1]! - times[0]!;
  assert.ok(times.length <= Math.floor(span / 1000) + 2, `${times.length} writes over ${span} ms`);
}

describe("settings-write bursts", () => {
  let h: AppHarness<"main">;
  const events: ControlEvent[] = [];

  before(async () => {
    h = await startAppHarness<"main">({
      sims: { main: { outlets: 4 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 60 })],
        }),
      waitForFirstPolls: true,
    });
    h.app.bus.on("control", (e) => events.push(e));
    await h.commandsReady("lab");
  });
  after(() => h?.close());

  it("2,000 label writes over MQTT: at most one write per second, the last label wins, audited per burst", async (t) => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const topic = `${h.parent}/lab/${dev}/outlets/1/label/set`;
    const since = sim.journal().length;
    const seen = events.length;
    const N = 2000;
    for (let i = 0; i < N; i += 1) void h.mqtt.publish(topic, `flood-${i}`);
    await waitFor(
      () => events.slice(seen).filter((e) => e.source.surface === "mqtt" && e.action === "set").length === N,
      "every write's outcome",
      30_000,
    );
    const times = setWrites(sim, dev, 1, since);
    t.diagnostic(`${N} label writes: ${times.length} writes at the PDU over ${times.at(-1)! - times[0]!} ms`);
    assertOnePerSecond(times);
    assert.ok(times.length < 20, `${times.length} writes for ${N} requests`);
    assert.equal(sim.outlet(dev, 1).label, `flood-${N - 1}`, "the last value won");
    assert.ok(
      events.slice(seen).every((e) => e.status === 200),
      "every request was answered by the write that carried it",
    );
    const lines = h.audits().filter((l) => l.topic === topic);
    const written = lines.filter((l) => l.folded === undefined);
    assert.equal(written.length, times.length, "one audit line per write");
    assert.ok(
      written.some((l) => typeof l.merged === "number" && l.merged > 1),
      "a burst's line says how many requests it merged",
    );
  });

  it("concurrent PATCHes over REST merge into few writes, field by field", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const path = `/api/v1/instances/lab/outlets/${dev}/2`;
    const since = sim.journal().length;
    const first = await h.api.send(path, { method: "PATCH", body: { label: "first" }, headers: AUTH });
    assert.equal(first.status, 200, first.text);
    const answers = await Promise.all([
      h.api.send(path, { method: "PATCH", body: { onDelay: 7 }, headers: AUTH }),
      ...Array.from({ length: 20 }, (_, i) =>
        h.api.send(path, { method: "PATCH", body: { label: `rest-${i}` }, headers: AUTH }),
      ),
    ]);
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const times = setWrites(sim, dev, 2, since);
    assertOnePerSecond(times);
    assert.ok(times.length <= 3, `${times.length} writes for 22 requests`);
    assert.equal(sim.outlet(dev, 2).onDelay, 7, "a field of the burst is kept");
    const echoed = answers.map((a) => a.json<{ settings: { label?: string } }>().settings.label);
    assert.ok(echoed.includes(sim.outlet(dev, 2).label), "the label written is one the answers echo");
  });
});
