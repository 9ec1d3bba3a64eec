/**
 * End to end against a OneView cluster that answers in the shape real units send (the simulator is
 * first checked against the wire fixture): the whole bridge polls it, publishes the member devices'
 * outlets and the group rollup topics (with their discovery), answers REST readings for member
 * devices, and a group `off` reaches exactly the group's member outlets, each through the proxy
 * port of the unit that owns it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { findGroup } from "../../src/pdu/model.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { wireEnvelope } from "../../testkit/fixtures/wire.js";
import { getJson } from "../../testkit/sim-http.js";
import { waitFor } from "../../testkit/wait.js";
import { compareShapes, shapeOf } from "../../testkit/wire-shape.js";

const KEY = "oneview-real-shape-key-0123";

interface Reading {
  instanceId: string;
  deviceId: string;
  sourceType: string;
  outletIndex: number | null;
  type: string;
  value: number;
}

describe("the bridge and a OneView cluster in the real wire shape", () => {
  let h: AppHarness<"cluster">;
  let ha: Awaited<ReturnType<AppHarness<"cluster">["subscribe"]>>;

  before(async () => {
    h = await startAppHarness({
      sims: { cluster: { oneview: { members: 2 }, outlets: 8, seed: 31 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [pduYaml("cluster", s.cluster, { actionsEnabled: true, pollInterval: 2 })],
        }),
    });
    ha = await h.subscribe(["homeassistant/#"]);
    await h.waitForPoll("cluster");
  });
  after(async () => {
    await h?.close();
  });

  it("polls a simulator whose /oneview has the fixture's structure", async () => {
    const answer = await getJson(`${h.sims.cluster.url}/oneview`);
    assert.deepEqual(
      compareShapes(shapeOf(answer), shapeOf(wireEnvelope("oneview")), (p) => p.includes("futureField")),
      [],
    );
    const status = h.app.store.get("cluster");
    assert.equal(status?.consecutiveFailures, 0, status?.lastError ?? "");
    assert.deepEqual(status?.snapshot?.warnings, []);
  });

  it("publishes every member device's outlets", async () => {
    const sim = h.sims.cluster;
    const members = sim.units.filter((u) => u.role === "member");
    assert.equal(members.length, 2);
    for (const unit of members) {
      for (const deviceId of unit.deviceIds) {
        for (let i = 0; i < 8; i++) {
          const state = await h.mqtt.waitFor(`${h.parent}/cluster/${deviceId}/outlets/${i}/state`);
          assert.equal(state.payload, sim.outlet(deviceId, i).reportedState);
          const power = await h.mqtt.waitFor(
            `${h.parent}/cluster/${deviceId}/outlets/${i}/measurements/realPower`,
          );
          assert.ok(Number.isFinite(Number(power.payload)), power.payload);
        }
      }
    }
  });

  it("publishes the group rollups, from the rollup nodes, with their discovery", async () => {
    const snapshot = h.app.store.get("cluster")?.snapshot;
    assert.ok(snapshot);
    const expected: [group: string, key: string][] = [
      ["2", "realPower"],
      ["2", "apparentPower"],
      ["2", "current"],
      ["2", "energy"],
      ["3", "realPower"],
      ["total", "pduTotalRealPower"],
      ["total", "pduTotalEnergy"],
    ];
    for (const [group, key] of expected) {
      const rollup = findGroup(snapshot, group)?.measurements.find((m) => m.key === key);
      assert.ok(rollup, `group ${group} has the ${key} rollup`);
      assert.ok(rollup.sum !== null && rollup.sum >= 0, `${group}/${key} has a sum`);
      const m = await h.mqtt.waitFor(`${h.parent}/cluster/groups/${group}/measurements/${key}`);
      const payload = JSON.parse(m.payload) as { sum: number | null };
      assert.equal(typeof payload.sum, "number", m.payload);
      const config = await waitFor(
        () => [...ha.latest("homeassistant/").values()].find((c) => c.payload.includes(m.topic)),
        `discovery of ${m.topic}`,
      );
      assert.ok(config.payload.includes('"device_class"'), config.payload);
    }
    const energy = findGroup(snapshot, "2")?.measurements.find((m) => m.key === "energy");
    assert.equal(energy?.avg, null, "energy rolls up as a sum only, as on real units");
  });

  it("answers REST readings for the member devices", async () => {
    const r = await h.api.get("/api/v1/readings?instance=cluster");
    assert.equal(r.status, 200, r.text);
    const readings = r.json<Reading[]>();
    for (const deviceId of h.sims.cluster.deviceIds()) {
      const outlets = new Set(
        readings
          .filter((x) => x.deviceId === deviceId && x.sourceType === "outlet" && x.type === "realPower")
          .map((x) => x.outletIndex),
      );
      assert.equal(outlets.size, 8, `device ${deviceId}: realPower of every outlet`);
    }
  });

  it("a group off reaches exactly the member outlets, each through its unit's proxy port", async () => {
    const sim = h.sims.cluster;
    const members = sim.groupMembers("2");
    const portOf = new Map(sim.units.flatMap((u) => u.deviceIds.map((id) => [id, u.port] as const)));
    assert.ok(new Set(members.map((m) => portOf.get(m.deviceId))).size >= 2, "group 2 spans units");
    for (const m of members) sim.setOutletState(m.deviceId, m.index, "on");
    sim.clearRequests();

    const r = await h.api.post(
      "/api/v1/instances/cluster/groups/2/control",
      { action: "off" },
      { "x-api-key": KEY },
    );
    assert.equal(r.status, 200, r.text);

    const writes = sim.writes();
    const key = (deviceId: string, index: number) => `${deviceId}/${index}`;
    assert.deepEqual(
      writes.map((w) => `${w.path} @${w.port}`).sort(),
      members.map((m) => `/api/dev/${m.deviceId}/outlet/${m.index} @${portOf.get(m.deviceId)}`).sort(),
    );
    for (const w of writes)
      assert.deepEqual((w.body as { data?: unknown }).data, { action: "off", delay: false });
    // Exactly the members: every write above is one of them, and every member was switched.
    for (const m of members)
      assert.equal(sim.outlet(m.deviceId, m.index).state, "off", key(m.deviceId, m.index));
  });

  it("409 problem+json, nothing sent, when a member device reports outletControlEnabled: false", async () => {
    const sim = h.sims.cluster;
    const member = sim.units.find((u) => u.role === "member");
    const deviceId = member?.deviceIds[0];
    assert.ok(deviceId);
    sim.setOutletControlEnabled(deviceId, false);
    try {
      const since = Date.now();
      await h.waitForPoll("cluster", since);
      sim.clearRequests();
      const r = await h.api.post(
        `/api/v1/instances/cluster/outlets/${deviceId}/5/control`,
        { action: "off" },
        { "x-api-key": KEY },
      );
      assert.equal(r.status, 409, r.text);
      assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/);
      const problem = r.json<{ detail: string }>();
      assert.match(problem.detail, /outlet control is disabled on the PDU itself/);
      assert.ok(problem.detail.includes(deviceId), problem.detail);
      // Polls (GETs) go on; no POST at all: no login, no write.
      assert.deepEqual(
        sim.requests.filter((q) => q.method !== "GET"),
        [],
      );
    } finally {
      sim.setOutletControlEnabled(deviceId, true);
    }
  });
});
