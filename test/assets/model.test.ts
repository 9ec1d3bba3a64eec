import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CircuitApplier, circuitOf, parseCircuits, unmatchedCircuits } from "../../src/assets/circuits.js";
import { buildAssetModel } from "../../src/assets/model.js";
import { feedOf } from "../../src/assets/types.js";
import { restamp, sameContent } from "../../src/pdu/model.js";
import { pduSnapshot } from "../../testkit/asset-fleet.js";

describe("asset model from the configuration", () => {
  it("applies the defaults and keeps the cords in order", () => {
    const { model, problems } = buildAssetModel({
      Feeds: { A: { Label: "Feed A (UPS 1)" }, B: {} },
      Pdus: { "rack-a1": { Feed: "A" }, "rack-b1": { Feed: "B", DeviceFeeds: { "3F2A": "A" } } },
      Assets: {
        "db-01": {
          Label: "Database primary",
          Cords: [
            { Instance: "rack-a1", Outlet: 3 },
            { Instance: "rack-b1", Device: "3F2A", Outlet: 3 },
          ],
          Protected: true,
          Priority: 1,
          Tenant: "acme",
          Tags: ["db", "prod", "db"],
          StartSeconds: 60,
        },
        web: { Cords: [{ Instance: "rack-a1", Outlet: 4 }] },
      },
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(model.assets.get("db-01"), {
      id: "db-01",
      label: "Database primary",
      cords: [
        { instance: "rack-a1", device: null, outlet: 3 },
        { instance: "rack-b1", device: "3F2A", outlet: 3 },
      ],
      protected: true,
      priority: 1,
      tenant: "acme",
      tags: ["db", "prod"],
      startSeconds: 60,
    });
    const web = model.assets.get("web");
    assert.equal(web?.label, "web");
    assert.equal(web?.priority, 100);
    assert.equal(web?.startSeconds, 30);
    assert.equal(web?.protected, false);
    assert.equal(web?.tenant, null);
    assert.equal(model.feeds.get("A")?.label, "Feed A (UPS 1)");
    assert.equal(model.feeds.get("B")?.label, "B");
    assert.deepEqual(model.sequences, { maxConcurrentStarts: 4, gapSeconds: 5 });
    assert.equal(feedOf(model, "rack-b1", "3F2A"), "A", "DeviceFeeds wins over the instance's Feed");
    assert.equal(feedOf(model, "rack-b1", "other"), "B");
    assert.equal(feedOf(model, "rack-a1", "x"), "A");
    assert.equal(feedOf(model, "nowhere", "x"), null);
  });

  it("names the key of every rule broken, and leaves the asset out", () => {
    const { model, problems } = buildAssetModel({
      Feeds: { A: {} },
      Pdus: {
        p1: {
          Feed: "C",
          DeviceFeeds: { d1: "Z" },
          OutletCircuits: { "0-11": "breaker0", "5-7": "breaker1", x: "b" },
        },
      },
      Sequences: { MaxConcurrentStarts: 0, GapSeconds: -1 },
      Assets: {
        a: { Cords: [{ Instance: "p1", Outlet: 1 }] },
        b: {
          Cords: [
            { Instance: "p1", Outlet: 1 },
            { Instance: "p2", Outlet: 0 },
            { Instance: "p1", Outlet: -1 },
          ],
        },
        c: { Cords: [] },
        "d e": { Cords: [{ Instance: "p1", Outlet: 9 }] },
        f: { Cords: Array.from({ length: 9 }, (_, i) => ({ Instance: "p1", Outlet: 20 + i })) },
        g: {
          Cords: [{ Instance: "p1", Outlet: 40 }],
          Priority: 1.5,
          StartSeconds: 4000,
          Tenant: "a/b",
          Tags: ["ok", "no tag"],
        },
      },
    });
    const keys = problems.map((p) => p.key);
    for (const key of [
      "Pdus.p1.Feed",
      "Pdus.p1.DeviceFeeds.d1",
      "Pdus.p1.OutletCircuits.5-7",
      "Pdus.p1.OutletCircuits.x",
      "Sequences.MaxConcurrentStarts",
      "Sequences.GapSeconds",
      "Assets.b.Cords.0",
      "Assets.b.Cords.1.Instance",
      "Assets.b.Cords.2.Outlet",
      "Assets.c.Cords",
      "Assets.d e",
      "Assets.f.Cords",
      "Assets.g.Priority",
      "Assets.g.StartSeconds",
      "Assets.g.Tenant",
      "Assets.g.Tags.1",
    ])
      assert.ok(keys.includes(key), `${key} in ${keys.join(", ")}`);
    assert.match(
      problems.find((p) => p.key === "Assets.b.Cords.0")?.problem ?? "",
      /same outlet as Assets\.a\.Cords\.0/,
    );
    assert.deepEqual([...model.assets.keys()], ["a"]);
    assert.deepEqual(model.sequences, { maxConcurrentStarts: 4, gapSeconds: 5 });
  });
});

describe("OutletCircuits", () => {
  it("parses ranges for every device and for one device, the device's row winning", () => {
    const { ranges, problems } = parseCircuits({
      "0-11": "breaker0",
      "12-23": "breaker1",
      "D2/0-3": "breaker7",
      "30": "bank2",
    });
    assert.deepEqual(problems, []);
    assert.equal(circuitOf(ranges, "D1", 0), "breaker0");
    assert.equal(circuitOf(ranges, "D1", 11), "breaker0");
    assert.equal(circuitOf(ranges, "D1", 12), "breaker1");
    assert.equal(circuitOf(ranges, "D2", 2), "breaker7");
    assert.equal(circuitOf(ranges, "D2", 5), "breaker0");
    assert.equal(circuitOf(ranges, "D1", 30), "bank2");
    assert.equal(circuitOf(ranges, "D1", 24), undefined);
  });

  it("refuses backwards ranges, leading zeros and unsafe names", () => {
    const { ranges, problems } = parseCircuits({
      "5-2": "breaker0",
      "01": "breaker0",
      "0-1": "a+b",
      "x#/1": "breaker0",
    });
    assert.equal(ranges.length, 0);
    assert.equal(problems.length, 4);
  });

  it("fills feedsFrom where the driver gave none and the device has the entity, keeping the PDU's", () => {
    const snap = pduSnapshot("p1", [
      {
        id: "D1",
        outlets: [{}, { feedsFrom: "phase1" }, {}, {}],
        entities: [{ key: "breaker0" }, { key: "phase1" }],
      },
    ]);
    const { ranges } = parseCircuits({ "0-1": "breaker0", "2": "breaker9" });
    const applier = new CircuitApplier(ranges);
    const out = applier.apply(snap);
    const outlets = out.devices[0]!.outlets;
    assert.equal(outlets[0]!.feedsFrom, "breaker0");
    assert.equal(outlets[1]!.feedsFrom, "phase1", "what the PDU reports wins");
    assert.equal(outlets[2]!.feedsFrom, undefined, "the device has no breaker9");
    assert.equal(outlets[3]!.feedsFrom, undefined);
    assert.equal(
      out.devices[0]!.outlets[3],
      snap.devices[0]!.outlets[3],
      "untouched outlets are the same objects",
    );
    assert.deepEqual(unmatchedCircuits(ranges, snap), ["2 → breaker9"]);
  });

  it("keeps a restamped snapshot the same content", () => {
    const snap = pduSnapshot("p1", [{ id: "D1", outlets: [{}, {}], entities: [{ key: "breaker0" }] }]);
    const applier = new CircuitApplier(parseCircuits({ "0-1": "breaker0" }).ranges);
    const first = applier.apply(snap);
    const second = applier.apply(restamp(snap, 2_000));
    assert.notEqual(first, snap);
    assert.ok(sameContent(first, second), "the same devices array for a restamped poll");
    const none = new CircuitApplier([]);
    assert.equal(none.apply(snap), snap, "no ranges: the snapshot itself");
    const nothing = new CircuitApplier(parseCircuits({ "7": "breaker0" }).ranges);
    assert.equal(nothing.apply(snap), snap, "no outlet gains one: the snapshot itself");
  });
});
