/**
 * What control commands do, through the real composed App: the simulator's outlets really switch,
 * reboot and reset; the commanded state is latched (REST readings and the retained MQTT state topic)
 * while the PDU still reports the old state; a OneView group action reaches exactly the member
 * outlets, each through its own unit's proxy port; a failing member PDU makes a 502 naming outlets.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RecordedRequest, Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/mqtt-client.js";

const KEY = "e2e-effects-key-1f0b";
const headers = { "x-api-key": KEY };
const outletPath = (instance: string, deviceId: string, index: number): string =>
  `/api/v1/instances/${instance}/outlets/${deviceId}/${index}/control`;
const groupPath = (instance: string, groupKey: string): string =>
  `/api/v1/instances/${instance}/groups/${groupKey}/control`;
const name = (o: { deviceId: string; index: number }): string => `${o.deviceId}/${o.index}`;

interface Reading {
  instanceId: string;
  deviceId: string;
  outletIndex: number | null;
  type: string;
  value: number;
  state: string | null;
}

/** The outlet a recorded write went to, from its path `/api/dev/<id>/outlet/<i>`. */
function writtenOutlet(r: RecordedRequest): { deviceId: string; index: number } {
  const m = /^\/api\/dev\/([^/]+)\/outlet\/(\d+)$/.exec(r.path);
  assert.ok(m, `a write to an outlet: ${r.path}`);
  return { deviceId: decodeURIComponent(m[1]!), index: Number(m[2]) };
}

/** The unit (index and port) that owns a device. */
function unitOf(sim: Simulator, deviceId: string): { index: number; port: number } {
  const unit = sim.units.find((u) => u.deviceIds.includes(deviceId));
  assert.ok(unit, `a unit owns ${deviceId}`);
  return { index: unit.index, port: unit.port };
}

type Sims = "single" | "lag" | "cluster";

describe("control effects through the composed App", () => {
  let h: AppHarness<Sims>;

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: {
        // A reboot keeps the outlet off for 2 s, long enough to see.
        single: { outlets: 4, rebootMs: 2000 },
        // The PDU reports a switch only a minute later, like real units.
        lag: { outlets: 2, stateLagMs: 60_000, seed: 2 },
        cluster: { oneview: { members: 2 }, outlets: 4, seed: 3 },
      },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            // Relay protection off: outlets switch in quick succession here (test/app/relay-protection.test.ts).
            pduYaml("lab", s.single, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }),
            pduYaml("lag", s.lag, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
            pduYaml("cluster", s.cluster, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }),
          ],
        }),
    });
    for (const id of ["lab", "lag", "cluster"]) await h.waitForPoll(id);
  });
  after(() => h?.close());

  const control = async (path: string, action: string): Promise<Record<string, unknown>> => {
    const r = await h.api.post(path, { action }, headers);
    assert.equal(r.status, 200, r.text);
    return r.json();
  };

  it("on and off switch the outlet", async () => {
    const sim = h.sims.single;
    const dev = sim.deviceIds()[0]!;
    sim.setOutletState(dev, 0, "off");
    await control(outletPath("lab", dev, 0), "on");
    assert.equal(sim.outlet(dev, 0).state, "on");
    await control(outletPath("lab", dev, 0), "off");
    assert.equal(sim.outlet(dev, 0).state, "off");
    const actions = sim
      .writes()
      .filter((w) => w.path === `/api/dev/${dev}/outlet/0`)
      .map((w) => (w.body as { data?: { action?: string } }).data?.action);
    assert.deepEqual(actions.slice(-2), ["on", "off"]);
  });

  it("reboot power-cycles the outlet: off now, on again afterwards", async () => {
    const sim = h.sims.single;
    const dev = sim.deviceIds()[0]!;
    sim.setOutletState(dev, 1, "on");
    await control(outletPath("lab", dev, 1), "reboot");
    assert.equal(sim.outlet(dev, 1).state, "off", "off during the reboot");
    const write = sim.writes().at(-1);
    assert.deepEqual((write?.body as { data?: unknown }).data, { action: "reboot", delay: false });
    await waitFor(() => sim.outlet(dev, 1).state === "on", "the outlet to come back on", 10_000);
  });

  it("resetStats resets the outlet's energy to about 0, also in the readings", async () => {
    const sim = h.sims.single;
    const dev = sim.deviceIds()[0]!;
    sim.setEnergy(dev, 2, 42.5);
    assert.ok(sim.outlet(dev, 2).energyKwh >= 42.5);
    const sent = Date.now();
    await control(outletPath("lab", dev, 2), "resetStats");
    assert.ok(sim.outlet(dev, 2).energyKwh < 0.01, String(sim.outlet(dev, 2).energyKwh));
    assert.equal(sim.writes().at(-1)?.cmd, "reset");
    // The early re-poll after the command brings the reset value into the readings.
    await h.waitForPoll("lab", sent);
    const r = await h.api.get("/api/v1/readings?instance=lab");
    const energy = r
      .json<Reading[]>()
      .find((x) => x.deviceId === dev && x.outletIndex === 2 && x.type.toLowerCase() === "energy");
    assert.ok(energy, "an energy reading of the outlet");
    assert.ok(energy.value < 1, `energy after the reset: ${energy.value}`);
  });

  it("latches the commanded state in the readings and on MQTT while the PDU still reports the old one", async () => {
    const sim = h.sims.lag;
    const dev = sim.deviceIds()[0]!;
    assert.equal(sim.outlet(dev, 0).reportedState, "on");
    const topic = `${h.parent}/lag/${dev}/outlets/0/state`;
    await h.mqtt.waitFor(topic, (m) => m.payload === "on");
    const sent = Date.now();
    await control(outletPath("lag", dev, 0), "off");
    assert.equal(sim.outlet(dev, 0).state, "off", "the relay switched");
    assert.equal(sim.outlet(dev, 0).reportedState, "on", "the PDU still reports on");

    // At once on MQTT, and in the readings.
    await h.mqtt.waitFor(topic, (m) => m.payload === "off" && m.at >= sent);
    const statesOf = async (index: number) =>
      (await h.api.get("/api/v1/readings?instance=lag"))
        .json<Reading[]>()
        .filter((x) => x.deviceId === dev && x.outletIndex === index)
        .map((x) => x.state);
    assert.ok((await statesOf(0)).length > 0);
    assert.ok(
      (await statesOf(0)).every((s) => s === "off"),
      "outlet 0 shows the commanded off",
    );
    assert.ok(
      (await statesOf(1)).every((s) => s === "on"),
      "outlet 1 is untouched",
    );

    // A poll that still sees "on" does not undo the latch.
    await h.waitForPoll("lag", Date.now());
    assert.equal(sim.outlet(dev, 0).reportedState, "on");
    assert.ok(
      (await statesOf(0)).every((s) => s === "off"),
      "still off after a poll reporting on",
    );

    // Retained: a subscriber arriving now gets "off".
    const late = await h.subscribe([topic]);
    const retained = await late.waitFor(topic);
    assert.equal(retained.payload, "off");
    assert.equal(retained.retain, true);
  });

  it("a OneView group action writes exactly the member outlets, each through its own unit's port", async () => {
    const sim = h.sims.cluster;
    assert.equal(sim.units.length, 3);
    const all = sim.deviceIds().flatMap((d) => [0, 1, 2, 3].map((index) => ({ deviceId: d, index })));
    for (const o of all) sim.setOutletState(o.deviceId, o.index, "on");
    const members = sim.groupMembers("3");
    const memberNames = new Set(members.map(name));
    assert.ok(new Set(members.map((m) => unitOf(sim, m.deviceId).index)).size === 3, "spans every unit");

    sim.clearRequests();
    const body = await control(groupPath("cluster", "3"), "off");
    assert.deepEqual(
      (body.outlets as { deviceId: string; index: number }[]).map(name).sort(),
      [...memberNames].sort(),
    );
    const writes = sim.writes();
    assert.deepEqual(writes.map((w) => name(writtenOutlet(w))).sort(), [...memberNames].sort());
    for (const w of writes) {
      const owner = unitOf(sim, writtenOutlet(w).deviceId);
      assert.equal(w.port, owner.port, `${w.path} went to its unit's port`);
      assert.equal(w.unit, owner.index);
    }
    assert.equal(new Set(writes.map((w) => w.port)).size, 3, "three proxy ports used");
    for (const o of all) {
      assert.equal(sim.outlet(o.deviceId, o.index).state, memberNames.has(name(o)) ? "off" : "on", name(o));
    }
  });

  it("a group whose members include a failing PDU answers 502 naming the failed outlets", async () => {
    const sim = h.sims.cluster;
    const members = sim.groupMembers("2");
    for (const m of members) sim.setOutletState(m.deviceId, m.index, "off");
    const failing = sim.units[2]!;
    await sim.setFault("http500", 2);
    try {
      const r = await h.api.post(groupPath("cluster", "2"), { action: "on" }, headers);
      assert.equal(r.status, 502, r.text);
      assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/);
      const problem = r.json<{
        detail: string;
        outlets: { deviceId: string; index: number; ok: boolean; error?: string }[];
      }>();
      const failed = members.filter((m) => failing.deviceIds.includes(m.deviceId));
      const succeeded = members.filter((m) => !failing.deviceIds.includes(m.deviceId));
      assert.ok(failed.length > 0 && succeeded.length > 0);
      for (const m of failed)
        assert.ok(problem.detail.includes(name(m)), `${name(m)} named in ${problem.detail}`);
      assert.deepEqual(
        problem.outlets
          .filter((o) => !o.ok)
          .map(name)
          .sort(),
        failed.map(name).sort(),
      );
      assert.ok(problem.outlets.filter((o) => !o.ok).every((o) => typeof o.error === "string"));
      for (const m of succeeded) assert.equal(sim.outlet(m.deviceId, m.index).state, "on", name(m));
      for (const m of failed) assert.equal(sim.outlet(m.deviceId, m.index).state, "off", name(m));
    } finally {
      await sim.setFault(null, 2);
    }
  });
});
