/**
 * The simulator answers in the shape real units send: its `GET /api` and `GET /oneview` have the
 * same key paths with the same JSON types as the wire fixtures (values and counts are free). A test
 * that only ever sees the simulator's own output cannot catch a simulator that drifted, this can.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { wireEnvelope } from "../../testkit/fixtures/wire.js";
import { getJson } from "../../testkit/sim-http.js";
import { compareShapes, shapeOf } from "../../testkit/wire-shape.js";

/** Deliberately unknown fields in the fixtures (they test the parser's tolerance): not simulated. */
const fixtureOnly = (path: string): boolean => /(^|\.)futureField(\.|$)/.test(path);

describe("simulator vs wire fixtures: the same structure", () => {
  let single: Simulator;
  let cluster: Simulator;
  // 8 outlets: the default membership then has user groups, "unassigned" and null entries.
  before(async () => {
    single = await startSimulator({ seed: 3, devices: 2, outlets: 6 });
    cluster = await startSimulator({ seed: 4, oneview: { members: 2 }, outlets: 8 });
  });
  after(async () => {
    await single.close();
    await cluster.close();
  });

  it("GET /api has the shape of api-single-unit.json", async () => {
    const answer = await getJson(`${single.url}/api`);
    assert.deepEqual(compareShapes(shapeOf(answer), shapeOf(wireEnvelope("api")), fixtureOnly), []);
  });

  it("GET /oneview has the shape of oneview-cluster.json", async () => {
    const answer = await getJson(`${cluster.url}/oneview`);
    assert.deepEqual(compareShapes(shapeOf(answer), shapeOf(wireEnvelope("oneview")), fixtureOnly), []);
  });

  it("a member's own GET /api has the shape of a unit, too", async () => {
    const member = cluster.units[1];
    assert.ok(member);
    const answer = await getJson(`${member.url}/api`);
    assert.deepEqual(compareShapes(shapeOf(answer), shapeOf(wireEnvelope("api")), fixtureOnly), []);
  });

  it("the comparison sees a drift: a flattened rollup is reported", () => {
    const fixture = wireEnvelope("oneview");
    const drifted = structuredClone(fixture) as { data: { group: Record<string, { entity: unknown }> } };
    const group = drifted.data.group["2"];
    assert.ok(group);
    group.entity = { outlet: { "0": { type: "realPower", units: "W", sumValue: "5" } } };
    const diff = compareShapes(shapeOf(drifted), shapeOf(fixture), fixtureOnly);
    assert.ok(diff.includes("unexpected $.data.group.*.entity.outlet.*.type (string)"), diff.join("\n"));
  });
});
