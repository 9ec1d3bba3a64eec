/**
 * The simulator's hostile answer modes (docs/simulator.md, "Hostile answers"), over real HTTP: a
 * huge device id, a huge label, thousands of outlets, a new device id on every answer, combined,
 * on a single unit and in a OneView master's `/oneview`; bad modes are refused, and clearing them
 * serves the real tree again.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import type { WireApi, WireDevice } from "../../src/simulator/tree.js";
import { getJson, request } from "../../testkit/sim-http.js";

async function api(sim: Simulator): Promise<WireApi> {
  const env = await getJson(`${sim.url}/api`);
  assert.equal(env.retCode, 0);
  return env.data as WireApi;
}

describe("simulator hostile answers: single unit", () => {
  let sim: Simulator;
  let ids: string[];
  before(async () => {
    sim = await startSimulator({ seed: 9, devices: 2, outlets: 4 });
    ids = sim.deviceIds();
  });
  after(() => sim.close());

  it("huge-id: the first device answers under an id of exactly n characters", async () => {
    await sim.setFault("huge-id:100000");
    const tree = await api(sim);
    const answered = Object.keys(tree.dev);
    assert.equal(answered.length, 2);
    const huge = answered.find((id) => id.length === 100_000);
    assert.ok(huge?.startsWith(ids[0]!), "the real id, padded");
    assert.ok(answered.includes(ids[1]!), "the other device keeps its id");
    // The simulator's state keeps the real id.
    assert.deepEqual(sim.deviceIds(), ids);
  });

  it("huge-label: the first device and its first outlet carry an n-character label", async () => {
    await sim.setFault("huge-label:50000");
    const tree = await api(sim);
    const first = tree.dev[ids[0]!]!;
    assert.equal(first.label, "L".repeat(50_000));
    assert.equal(first.outlet["0"]?.label.length, 50_000);
    assert.notEqual(first.outlet["1"]?.label.length, 50_000);
    assert.notEqual(String(tree.dev[ids[1]!]?.label).length, 50_000);
  });

  it("outlets:n: every device answers exactly n outlets, copies of its real ones", async () => {
    await sim.setFault("outlets:5000");
    const tree = await api(sim);
    for (const id of ids) {
      const outlets = tree.dev[id]!.outlet;
      assert.equal(Object.keys(outlets).length, 5000);
      assert.equal(outlets["4999"]?.name, "Outlet 5000");
      assert.equal(typeof outlets["4999"]?.measurement["0"]?.value, "string");
      assert.equal(outlets["4999"]?.state, outlets["3"]?.state, "outlet 4999 shows real outlet 3");
    }
    await sim.setFault("outlets:0");
    assert.deepEqual((await api(sim)).dev[ids[0]!]?.outlet, {});
  });

  it("new-id: every answer renames every device; sub-tree reads and writes still use the real ids", async () => {
    await sim.setFault("new-id");
    const a = Object.keys((await api(sim)).dev);
    const b = Object.keys((await api(sim)).dev);
    assert.equal(a.length, 2);
    assert.equal(new Set([...a, ...b, ...ids]).size, 6, "two answers, two sets of new ids");
    for (const id of a) assert.ok(ids.some((real) => id.startsWith(`${real}-`)));
    const sub = await getJson(`${sim.url}/api/dev/${ids[0]}/label`);
    assert.equal(sub.retCode, 0, "a sub-tree read is not reshaped");
  });

  it("combines the modes of a list and refuses bad ones", async () => {
    await sim.setFault(["outlets:300", "new-id", "huge-label:1000"]);
    const tree = await api(sim);
    const devices = Object.values(tree.dev);
    assert.ok(Object.keys(tree.dev).every((id) => !ids.includes(id)));
    assert.ok(devices.every((d: WireDevice) => Object.keys(d.outlet).length === 300));
    assert.equal(devices.filter((d) => String(d.label).length === 1000).length, 1);
    // A transport fault combines with the answer modes.
    await sim.setFault(["outlets:2", "http500"]);
    assert.equal((await request(`${sim.url}/api`)).status, 500);
    for (const bad of [
      "huge-id:0",
      "outlets:-1",
      "outlets:1.5",
      `huge-label:${64 * 1024 * 1024 + 1}`,
      ["new-id", "new-id"],
      ["hang", "http500"],
    ] as const) {
      await assert.rejects(sim.setFault(bad), RangeError, JSON.stringify(bad));
    }
  });

  it("clearing the modes serves the real tree again", async () => {
    await sim.setFault("outlets:900");
    await sim.setFault([]);
    const tree = await api(sim);
    assert.deepEqual(Object.keys(tree.dev).sort(), [...ids].sort());
    assert.equal(Object.keys(tree.dev[ids[0]!]!.outlet).length, 4);
    await sim.setFault("new-id");
    await sim.setFault(null);
    assert.deepEqual(Object.keys((await api(sim)).dev).sort(), [...ids].sort());
  });
});

describe("simulator hostile answers: OneView master", () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ seed: 10, oneview: { members: 2 }, outlets: 2 });
  });
  after(() => sim.close());

  it("reshapes every host's cache in /oneview", async () => {
    await sim.setFault(["new-id", "outlets:40"]);
    const env = await getJson(`${sim.url}/oneview`);
    assert.equal(env.retCode, 0);
    const hosts = (env.data as { host: Record<string, { cache: WireApi }> }).host;
    const devices = Object.values(hosts).flatMap((h) => Object.entries(h.cache.dev));
    assert.equal(devices.length, 3);
    for (const [id, device] of devices) {
      assert.ok(!sim.deviceIds().includes(id), `${id} is a new id`);
      assert.equal(Object.keys(device.outlet).length, 40);
    }
  });
});
