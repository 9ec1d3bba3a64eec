/**
 * Relay protection through the composed App: however commands for one outlet alternate and
 * whatever surface they come by (MQTT, REST, a OneView group command), the simulator's write
 * journal shows at most one state change per `RelayProtection` interval; a refused change says
 * why and when it may run, nothing is sent for it, and a burst of refusals is audited once (its
 * first line, then one line with the count of the rest).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ControlEvent } from "../../src/bus.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "relay-protection-key-5d1e0a";
const INTERVAL_S = 4;

type Sims = "main" | "cluster";

/** The control writes the simulator executed on one outlet (the write journal) after entry `since`. */
function switches(sim: Simulator, deviceId: string, index: number, since: number): number {
  return sim
    .journal()
    .slice(since)
    .filter((e) => e.cmd === "control" && e.path === `/api/dev/${deviceId}/outlet/${index}`).length;
}

describe("relay protection", () => {
  let h: AppHarness<Sims>;
  const events: ControlEvent[] = [];
  const withKey = { "x-api-key": KEY };

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: { main: { outlets: 4 }, cluster: { oneview: { members: 2 }, outlets: 4, seed: 3 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 60, relayProtection: INTERVAL_S }),
            pduYaml("cl", s.cluster, { actionsEnabled: true, pollInterval: 60, relayProtection: INTERVAL_S }),
          ],
        }),
      waitForFirstPolls: true,
    });
    h.app.bus.on("control", (e) => events.push(e));
    await h.commandsReady("lab");
  });
  after(() => h?.close());

  it("60 alternating off/on over MQTT within a second switch the outlet once", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const topic = `${h.parent}/lab/${dev}/outlets/1/set`;
    const start = sim.journal().length;
    const seen = events.length;
    for (let i = 0; i < 60; i += 1) void h.mqtt.publish(topic, i % 2 === 0 ? "off" : "on");
    await waitFor(
      () => events.slice(seen).filter((e) => e.source.surface === "mqtt").length === 60,
      "every command's outcome",
      15_000,
    );
    assert.equal(switches(sim, dev, 1, start), 1, "one state change within the interval");
    const refused = events.slice(seen).filter((e) => e.problem === "relay-protection");
    assert.ok(refused.length >= 1, "later changes were refused by relay protection");
    assert.match(String(refused[0]?.detail), /relay protection.*may switch again from \d{4}-\d\d-\d\dT/);
    // The burst's refusals are audited once: its first line, the rest only counted.
    const lines = h.audits().filter((l) => l.topic === topic && l.problem === "relay-protection");
    assert.ok(lines.length <= 1, `${lines.length} audit lines for ${refused.length} refusals`);
    const superseded = events.slice(seen).filter((e) => e.problem === "superseded").length;
    const supersededLines = h.audits().filter((l) => l.topic === topic && l.problem === "superseded");
    assert.ok(
      supersededLines.length <= 1,
      `${supersededLines.length} audit lines for ${superseded} superseded`,
    );
  });

  it("REST: a change sooner than the interval is 409 relay-protection with Retry-After, then runs", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const path = `/api/v1/instances/lab/outlets/${dev}/2/control`;
    const start = sim.journal().length;
    const first = await h.api.post(path, { action: "on" }, withKey);
    assert.equal(first.status, 200, first.text);
    const second = await h.api.post(path, { action: "off" }, withKey);
    assert.equal(second.status, 409, second.text);
    const body = second.json<{ type: string; detail: string }>();
    assert.match(body.type, /relay-protection$/);
    assert.match(body.detail, /switched [\d.]+ s ago.*once every 4 s.*in [\d.]+ s\); not sent/);
    const reboot = await h.api.post(path, { action: "reboot" }, withKey);
    assert.equal(reboot.status, 409, "a reboot is a state change too");
    assert.equal(switches(sim, dev, 2, start), 1);
    // Once the interval has passed, the change runs.
    const later = await waitFor(
      async () => {
        const r = await h.api.post(path, { action: "off" }, withKey);
        return r.status === 200 ? r : null;
      },
      "the change once the interval passed",
      15_000,
      500,
    );
    assert.equal(later.status, 200);
    assert.equal(sim.outlet(dev, 2).state, "off");
    assert.equal(switches(sim, dev, 2, start), 2);
  });

  it("a group command is refused on a member that switched within the interval", async () => {
    const sim = h.sims.cluster;
    const members = sim.groupMembers("2");
    const m = members[0]!;
    const start = sim.journal().length;
    const one = await h.api.post(
      `/api/v1/instances/cl/outlets/${m.deviceId}/${m.index}/control`,
      { action: "on" },
      withKey,
    );
    assert.equal(one.status, 200, one.text);
    const group = await h.api.post(`/api/v1/instances/cl/groups/2/control`, { action: "off" }, withKey);
    assert.equal(group.status, 502, group.text);
    const outlets = group.json<{
      outlets: { deviceId: string; index: number; ok: boolean; error?: string }[];
    }>().outlets;
    const refused = outlets.filter((o) => !o.ok);
    assert.deepEqual(
      refused.map((o) => `${o.deviceId}/${o.index}`),
      [`${m.deviceId}/${m.index}`],
    );
    assert.match(String(refused[0]?.error), /relay protection/);
    assert.equal(switches(sim, m.deviceId, m.index, start), 1, "the member switched once");
    for (const other of members.slice(1)) assert.equal(switches(sim, other.deviceId, other.index, start), 1);
  });

  it("resetStats switches no relay and is not held by it", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const path = `/api/v1/instances/lab/outlets/${dev}/3/control`;
    assert.equal((await h.api.post(path, { action: "on" }, withKey)).status, 200);
    const reset = await h.api.post(path, { action: "resetStats" }, withKey);
    assert.equal(reset.status, 200, reset.text);
  });
});
