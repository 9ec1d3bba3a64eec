import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AssetBook } from "../../src/assets/book.js";
import { outletsThrough } from "../../src/assets/circuits.js";
import { byTag, byTenant, groupTotals } from "../../src/assets/sums.js";
import { assetState, readAsset, resolveCord, type InstanceReading } from "../../src/assets/state.js";
import { assetModel, pduSnapshot, readingOf, type OutletSpec } from "../../testkit/asset-fleet.js";

const on = (current: number, power = current * 230, energy: number | undefined = 10): OutletSpec => ({
  state: "on",
  current,
  power,
  ...(energy === undefined ? {} : { energy }),
});
const off: OutletSpec = { state: "off", current: 0, power: 0, energy: 5 };

/** Two instances of one device each; db has a cord on outlet 0 of each. */
function twoPdus(a: OutletSpec, b: OutletSpec, t = 1_000): { ra: InstanceReading; rb: InstanceReading } {
  return {
    ra: readingOf(pduSnapshot("pa", [{ id: "A1", outlets: [a, {}] }], t)),
    rb: readingOf(pduSnapshot("pb", [{ id: "B1", outlets: [b, {}] }], t)),
  };
}

const model = assetModel(
  {
    db: {
      Cords: [
        { Instance: "pa", Outlet: 0 },
        { Instance: "pb", Outlet: 0 },
      ],
      Protected: true,
      Label: "Database",
    },
    solo: { Cords: [{ Instance: "pa", Outlet: 1 }] },
  },
  { pa: { Feed: "A" }, pb: { Feed: "B" } },
  ["A", "B"],
);
const db = model.assets.get("db")!;

describe("cord resolution", () => {
  const snap = pduSnapshot("pa", [
    { id: "D1", outlets: [{}, {}, {}] },
    { id: "D2", outlets: [{}, {}], indexes: [2, 7] },
  ]);
  it("finds a device's outlet, or the one device with the index", () => {
    const named = resolveCord({ instance: "pa", device: "D2", outlet: 7 }, snap);
    assert.ok(named.ok && named.device.id === "D2" && named.outlet.index === 7);
    const unique = resolveCord({ instance: "pa", device: null, outlet: 1 }, snap);
    assert.ok(unique.ok && unique.device.id === "D1");
    const unique7 = resolveCord({ instance: "pa", device: null, outlet: 7 }, snap);
    assert.ok(unique7.ok && unique7.device.id === "D2", "an outlet not at its position is found too");
  });
  it("says why it cannot, without throwing", () => {
    const cases = [
      [{ instance: "pa", device: null, outlet: 2 }, "ambiguous"],
      [{ instance: "pa", device: null, outlet: 9 }, "unknown-outlet"],
      [{ instance: "pa", device: "D3", outlet: 0 }, "unknown-device"],
      [{ instance: "pa", device: "D2", outlet: 0 }, "unknown-outlet"],
    ] as const;
    for (const [cord, problem] of cases) {
      const r = resolveCord(cord, snap);
      assert.ok(!r.ok && r.problem === problem, `${JSON.stringify(cord)}: ${problem}`);
    }
    const r = resolveCord({ instance: "pa", device: null, outlet: 0 }, null);
    assert.ok(!r.ok && r.problem === "not-polled");
  });
});

describe("asset state", () => {
  const stateOf = (ra: InstanceReading, rb: InstanceReading) =>
    assetState(
      db,
      readAsset(
        model,
        db,
        new Map([
          ["pa", ra],
          ["pb", rb],
        ]),
      ),
      "ok",
      null,
    );

  it("is on with every cord live, and sums power, current and energy", () => {
    const { ra, rb } = twoPdus(on(1.5, 300, 12.5), on(1.25, 250, 7.5));
    const s = stateOf(ra, rb);
    assert.equal(s.state, "on");
    assert.equal(s.cordsLive, 2);
    assert.equal(s.cords, 2);
    assert.equal(s.power, 550);
    assert.equal(s.current, 2.75);
    assert.equal(s.energy, 20);
    assert.equal(s.readings[0]!.feed, "A");
    assert.equal(s.readings[1]!.feed, "B");
  });

  it("is partial with one cord off (the off cord counts 0), off with both", () => {
    const { ra, rb } = twoPdus(on(2, 400), { state: "off" });
    const s = stateOf(ra, rb);
    assert.equal(s.state, "partial");
    assert.equal(s.cordsLive, 1);
    assert.equal(s.power, 400, "an off outlet that reports nothing draws nothing");
    assert.equal(s.energy, null, "energy only when every cord reports it");
    const both = twoPdus(off, off);
    assert.equal(stateOf(both.ra, both.rb).state, "off");
  });

  it("is unknown when a cord's PDU is offline, never polled, or the cord does not resolve; sums then unknown", () => {
    const { ra, rb } = twoPdus(on(2, 400), on(2, 400));
    const offline = stateOf(ra, { ...rb, online: false });
    assert.equal(offline.state, "unknown");
    assert.equal(offline.cordsLive, 1);
    assert.equal(offline.power, null, "a failing PDU never turns into a low sum");
    assert.equal(offline.readings[1]!.problem, "offline");
    assert.equal(offline.readings[1]!.outletState, "on", "the last snapshot's state is still shown");
    const never = assetState(db, readAsset(model, db, new Map([["pa", ra]])), "ok", null);
    assert.equal(never.state, "unknown");
    assert.equal(never.readings[1]!.problem, "not-polled");
    const missing = stateOf(ra, readingOf(pduSnapshot("pb", [{ id: "B1", outlets: [] }])));
    assert.equal(missing.state, "unknown");
    assert.equal(missing.readings[1]!.problem, "unknown-outlet");
    const unknownState = stateOf(
      ra,
      readingOf(pduSnapshot("pb", [{ id: "B1", outlets: [{ state: "unknown" }] }])),
    );
    assert.equal(unknownState.state, "unknown");
    assert.equal(unknownState.readings[1]!.problem, "state-unknown");
    // Among replicas, an instance another replica polls: unknown, never its stale snapshot.
    const elsewhere = stateOf(ra, { ...rb, online: false, elsewhere: true, snapshot: null });
    assert.equal(elsewhere.state, "unknown");
    assert.equal(elsewhere.power, null);
    assert.equal(elsewhere.readings[1]!.status, "unknown");
    assert.equal(elsewhere.readings[1]!.problem, "not-held");
    assert.equal(elsewhere.readings[1]!.outletState, null);
  });

  it("returns the state before when nothing moved, and flags what moved", () => {
    const { ra, rb } = twoPdus(on(1), on(1));
    const readings = new Map([
      ["pa", ra],
      ["pb", rb],
    ]);
    const first = assetState(db, readAsset(model, db, readings), "ok", null);
    assert.equal(first.changed, true);
    const again = assetState(db, readAsset(model, db, readings), "ok", first);
    assert.equal(again.changed, false);
    assert.equal(assetState(db, readAsset(model, db, readings), "ok", again), again, "the same object");
    const moved = twoPdus(on(1.2), on(1));
    const figures = assetState(
      db,
      readAsset(
        model,
        db,
        new Map([
          ["pa", moved.ra],
          ["pb", moved.rb],
        ]),
      ),
      "ok",
      again,
    );
    assert.equal(figures.changed, false, "figures alone are not a change of what it shows");
    assert.notEqual(figures, again);
    assert.equal(assetState(db, readAsset(model, db, readings), "lost", again).changed, true);
  });
});

describe("redundancy over polls", () => {
  it("is lost after a cord is off for 2 polls in a row of its PDU, raised once with the asset named, cleared after 2 good polls", () => {
    const book = new AssetBook(model);
    const good = twoPdus(on(1), on(1));
    const bad = twoPdus(on(2), off);
    book.update(good.ra, true, 1);
    book.update(good.rb, true, 1);
    assert.equal(book.get("db")?.redundancy, "ok");
    assert.equal(book.get("solo")?.redundancy, "single");
    const first = book.update(bad.rb, true, 2);
    assert.equal(book.get("db")?.redundancy, "ok", "one poll is not enough");
    assert.deepEqual(first.alarmChanges, []);
    book.update(bad.ra, true, 2);
    assert.equal(book.get("db")?.redundancy, "ok", "polls of the other instance do not count for this cord");
    const second = book.update(bad.rb, true, 3);
    assert.equal(book.get("db")?.redundancy, "lost");
    assert.equal(second.alarmChanges.length, 1);
    const raised = second.alarmChanges[0]!;
    assert.equal(raised.change, "raised");
    assert.equal(raised.alarm.scope, "$assets");
    assert.equal(raised.alarm.id, "db/asset/redundancy");
    assert.equal(raised.alarm.deviceId, "db");
    assert.deepEqual(raised.alarm.target, { kind: "device" });
    assert.equal(raised.alarm.name, "Database");
    assert.equal(raised.alarm.source, "redundancy");
    assert.equal(raised.alarm.severity, "critical", "a protected asset");
    assert.equal(raised.alarm.reported, "cord 2 (pb outlet 0): off");
    assert.equal(raised.alarm.since, 3);
    assert.deepEqual(book.alarms(), [raised.alarm]);
    assert.deepEqual(book.update(bad.rb, true, 4).alarmChanges, [], "still lost: nothing new");
    book.update(good.rb, true, 5);
    assert.equal(book.get("db")?.redundancy, "lost", "one good poll does not clear it");
    const cleared = book.update(good.rb, true, 6);
    assert.equal(book.get("db")?.redundancy, "ok");
    assert.equal(cleared.alarmChanges[0]?.change, "cleared");
    assert.equal(cleared.alarmChanges[0]?.alarm.since, 3);
    assert.deepEqual(book.alarms(), []);
  });

  it("counts a failed poll (the PDU offline), and says so; a latch's snapshot does not count", () => {
    const book = new AssetBook(model);
    const good = twoPdus(on(1), on(1));
    book.update(good.ra, true, 1);
    book.update(good.rb, true, 1);
    book.update({ ...good.rb, online: false }, false, 2);
    book.update({ ...good.rb, online: false }, false, 3);
    assert.equal(book.get("db")?.redundancy, "ok", "no poll counted");
    assert.equal(book.get("db")?.state, "unknown", "but the state moves at once");
    book.update({ ...good.rb, online: false }, true, 4);
    const changes = book.update({ ...good.rb, online: false }, true, 5).alarmChanges;
    assert.equal(changes[0]?.change, "raised");
    assert.match(
      changes[0]?.alarm.reported ?? "",
      /cord 2 \(pb outlet 0\): the last poll of instance pb failed/,
    );
  });

  it("is lost when a live cord draws under 5 % of the asset's current while the other carries it", () => {
    const book = new AssetBook(model);
    const skewed = twoPdus(on(3.9), on(0.1));
    for (let t = 1; t <= 2; t++) {
      book.update(skewed.ra, true, t);
      book.update(skewed.rb, true, t);
    }
    assert.equal(book.get("db")?.redundancy, "lost");
    assert.match(book.alarms()[0]?.reported ?? "", /cord 2 .*draws under 5 % of the asset's current/);
    const idle = new AssetBook(model);
    const tiny = twoPdus(on(0.3), on(0));
    for (let t = 1; t <= 3; t++) {
      idle.update(tiny.ra, true, t);
      idle.update(tiny.rb, true, t);
    }
    assert.equal(idle.get("db")?.redundancy, "ok", "under 0.5 A a meter cannot tell a 5 % share");
  });

  it("raises nothing for an asset switched off (every cord off)", () => {
    const book = new AssetBook(model);
    const dark = twoPdus(off, off);
    for (let t = 1; t <= 3; t++) {
      book.update(dark.ra, true, t);
      book.update(dark.rb, true, t);
    }
    assert.equal(book.get("db")?.state, "off");
    assert.equal(book.get("db")?.redundancy, "ok");
    assert.deepEqual(book.alarms(), []);
  });

  it("changes the alarm when what is wrong changes, with its start kept", () => {
    const book = new AssetBook(model);
    const bad = twoPdus(on(2), off);
    for (let t = 1; t <= 2; t++) {
      book.update(bad.ra, true, t);
      book.update(bad.rb, true, t);
    }
    const changed = book.update({ ...bad.rb, online: false }, true, 3).alarmChanges;
    assert.equal(changed[0]?.change, "changed");
    assert.equal(changed[0]?.alarm.since, 2);
  });
});

describe("lifetime energy and group sums", () => {
  const m = assetModel(
    {
      db: {
        Cords: [
          { Instance: "pa", Outlet: 0 },
          { Instance: "pb", Outlet: 0 },
        ],
        Tenant: "acme",
        Tags: ["db"],
      },
      web: { Cords: [{ Instance: "pa", Outlet: 1 }], Tenant: "acme", Tags: ["web"] },
      other: { Cords: [{ Instance: "pb", Outlet: 1 }], Tenant: "zeta" },
    },
    { pa: {}, pb: {} },
  );

  it("sums the cords' lifetime counters, keeping an offline PDU's last one", () => {
    const book = new AssetBook(m);
    book.update(
      readingOf(
        pduSnapshot("pa", [
          {
            id: "A",
            outlets: [
              { power: 100, energyLifetime: 10 },
              { power: 50, energyLifetime: 4 },
            ],
          },
        ]),
      ),
      true,
      1,
    );
    book.update(
      readingOf(
        pduSnapshot("pb", [{ id: "B", outlets: [{ power: 120, energyLifetime: 20 }, { power: 7 }] }]),
      ),
      true,
      1,
    );
    assert.equal(book.get("db")?.energyLifetime, 30);
    assert.equal(book.get("other")?.energyLifetime, null, "no counter reported");
    const tenants = groupTotals(m, book.states(), byTenant);
    assert.deepEqual(tenants, [
      { key: "acme", assets: ["db", "web"], power: 270, energyLifetime: 34, unknown: [] },
      { key: "zeta", assets: ["other"], power: 7, energyLifetime: null, unknown: ["other"] },
    ]);
    assert.deepEqual(
      groupTotals(m, book.states(), byTag).map((g) => [g.key, g.assets]),
      [
        ["db", ["db"]],
        ["web", ["web"]],
      ],
    );
    const pb = book.readings().get("pb")!;
    book.update({ ...pb, online: false }, true, 2);
    assert.equal(book.get("db")?.energyLifetime, 30, "the counter never drops while a PDU is offline");
    assert.equal(book.get("db")?.power, null);
    assert.equal(groupTotals(m, book.states(), byTenant)[0]?.power, null);
  });
});

describe("a new configuration", () => {
  it("keeps the count of polls and the alarm of an asset whose cords are the same, clears those of assets gone", () => {
    const book = new AssetBook(model);
    const bad = twoPdus(on(2), off);
    for (let t = 1; t <= 2; t++) {
      book.update(bad.ra, true, t);
      book.update(bad.rb, true, t);
    }
    assert.equal(book.alarms().length, 1);
    const relabelled = assetModel(
      {
        db: {
          Cords: [
            { Instance: "pa", Outlet: 0 },
            { Instance: "pb", Outlet: 0 },
          ],
          Label: "Primary",
        },
        solo: { Cords: [{ Instance: "pa", Outlet: 1 }] },
      },
      { pa: { Feed: "A" }, pb: { Feed: "B" } },
      ["A", "B"],
    );
    const kept = AssetBook.reconfigure(book, relabelled, 3);
    assert.deepEqual(
      kept.alarmChanges.map((c) => [c.change, c.alarm.severity]),
      [["changed", "warning"]],
      "no longer protected: a warning, with its start kept",
    );
    assert.equal(kept.book.alarms()[0]?.since, 2);
    assert.equal(kept.book.get("db")?.redundancy, "lost");
    assert.equal(kept.book.get("db")?.state, "partial", "the readings are read again");
    const moved = assetModel(
      {
        db: {
          Cords: [
            { Instance: "pa", Outlet: 0 },
            { Instance: "pb", Outlet: 1 },
          ],
        },
      },
      { pa: {}, pb: {} },
    );
    const fresh = AssetBook.reconfigure(kept.book, moved, 4);
    assert.deepEqual(
      fresh.alarmChanges.map((c) => c.change),
      ["cleared"],
    );
    assert.equal(fresh.book.get("db")?.redundancy, "ok", "another cord: counted afresh");
    assert.equal(fresh.book.get("db")?.state, "on");
  });
});

describe("outlets through an entity", () => {
  it("lists the outlets whose feedsFrom names it", () => {
    const snap = pduSnapshot("p", [
      {
        id: "D",
        outlets: [{ feedsFrom: "breaker0" }, {}, { feedsFrom: "breaker0" }, { feedsFrom: "breaker1" }],
        entities: [{ key: "breaker0" }, { key: "breaker1" }],
      },
    ]);
    assert.deepEqual(
      outletsThrough(snap.devices[0]!, "breaker0").map((o) => o.index),
      [0, 2],
    );
  });
});
