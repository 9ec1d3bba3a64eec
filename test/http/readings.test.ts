/**
 * readingsOf: one reading per numeric measurement of outlets and entities, no group rollups, the
 * contract's order, display names, and the outlet's (latched) state. Snapshots come from the real
 * parser fed with hand-written Geist trees.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EventBus } from "../../src/bus.js";
import { parseApiTree, parseOneView } from "../../src/pdu/geist/parse.js";
import { readingsOf, type Reading } from "../../src/pdu/readings.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { oneViewTree, singleUnitTree } from "../../testkit/fixtures/geist-trees.js";

const T = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
const ISO = "2025-01-02T03:04:05.678Z";

/** Short form of a reading for order assertions. */
const where = (r: Reading) =>
  `${r.deviceId}/${r.sourceType === "outlet" ? r.outletIndex : r.entityKey}/${r.type}`;

test("single unit: numeric outlet and entity measurements in the contract's order, fields exact", () => {
  const readings = readingsOf(parseApiTree(singleUnitTree(), "rack-a", T));

  // Outlet 1 (index 1) has realPower "n/a", Energy "" and current "1e999": only apparentPower is a reading.
  assert.deepEqual(readings.filter((r) => r.outletIndex === 1).map(where), ["D1/1/apparentPower"]);
  // Outlets numerically (10 after 9), then entities by key; breaker entities have no measurements.
  const order = [...new Set(readings.map((r) => `${r.sourceType}:${r.outletIndex ?? r.entityKey}`))];
  assert.deepEqual(order, [
    ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((i) => `outlet:${i}`),
    "entity:phase0",
    "entity:total0",
  ]);
  // Types within one source: case-insensitive order.
  assert.deepEqual(
    readings.filter((r) => r.outletIndex === 0).map((r) => r.type),
    ["current", "energy", "realPower"],
  );
  assert.deepEqual(
    readings.filter((r) => r.entityKey === "phase0").map((r) => r.type),
    ["current", "voltage"],
  );
  // Device A0 has no outlets or entities, so no readings.
  assert.ok(readings.every((r) => r.deviceId === "D1"));

  assert.deepEqual(
    readings.find((r) => r.outletIndex === 1),
    {
      instanceId: "rack-a",
      deviceId: "D1",
      device: "PDU one",
      source: "db-01",
      sourceType: "outlet",
      outletIndex: 1,
      entityKey: null,
      type: "apparentPower",
      value: 42,
      units: "VA",
      state: "off",
      timestampUtc: ISO,
    },
  );
  assert.deepEqual(
    readings.find((r) => r.entityKey === "phase0" && r.type === "voltage"),
    {
      instanceId: "rack-a",
      deviceId: "D1",
      device: "PDU one",
      source: "Phase",
      sourceType: "entity",
      outletIndex: null,
      entityKey: "phase0",
      type: "voltage",
      value: 230.5,
      units: "V",
      state: null,
      timestampUtc: ISO,
    },
  );
  // 12 outlets × 3 numeric measurements, except outlet 1 with 1; phase0 2; total0 1.
  assert.equal(readings.length, 11 * 3 + 1 + 2 + 1);
});

test("OneView: outlets of every member device, sorted by device id, and no group rollups", () => {
  const snapshot = parseOneView(oneViewTree(), "cluster", T);
  assert.ok(
    snapshot.groups.some((g) => g.measurements.length > 0),
    "the fixture has group rollups",
  );
  const readings = readingsOf(snapshot);
  assert.deepEqual(
    [...new Set(readings.map((r) => r.deviceId))],
    ["AAAA0001", "BBBB0001", "CCCC0001", "CCCC0002"],
  );
  assert.ok(readings.every((r) => r.sourceType === "outlet" && r.entityKey === null));
  const rollupKeys = snapshot.groups.flatMap((g) => g.measurements.map((m) => m.key));
  assert.ok(rollupKeys.includes("pduTotalRealPower"));
  assert.ok(!readings.some((r) => rollupKeys.includes(r.type) && r.type.startsWith("pduTotal")));
  // Exactly the numeric measurements of the outlets (the fixture's devices have no entities).
  const numeric = snapshot.devices.flatMap((d) =>
    d.outlets.flatMap((o) => o.measurements.filter((m) => m.value !== null)),
  );
  assert.equal(readings.length, numeric.length);
  assert.ok(numeric.length >= 7 * 3);
});

test("a latched switch shows as the reading's state until a poll agrees", () => {
  const store = new SnapshotStore(["rack-a"], { bus: new EventBus(), now: () => T });
  store.recordSuccess("rack-a", parseApiTree(singleUnitTree(), "rack-a", T));
  const stateOf = () => {
    const snapshot = store.get("rack-a")?.snapshot;
    assert.ok(snapshot);
    return readingsOf(snapshot).find((r) => r.outletIndex === 3)?.state;
  };
  assert.equal(stateOf(), "off");
  store.latch("rack-a", "D1", 3, "on");
  assert.equal(stateOf(), "on");
  store.close();
});
