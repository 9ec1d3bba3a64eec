/**
 * The feed-loss projection over fleets computed by hand. Feed A: instance pa (device A1, inlet0
 * 8 A of 16). Feed B: instance pb (device B1: inlet0 5 A of 16, breaker0 3 A of 10, breaker1 2 A
 * of 10; outlet 0 on breaker0, outlet 1 on breaker1, outlet 2 on a breaker it does not say).
 * Instance pn has no feed.
 *
 *   db   pa/0 2 A, pb/0 2 A           A fails: 2 A to pb/0 (breaker0, inlet0)
 *   app  pa/1 3 A, pb/1 1 A, pb/2 1 A  A fails: 3 A over two cords: 1.5 to pb/1 (breaker1, inlet0),
 *                                      1.5 to pb/2 (inlet0; which breaker is not known)
 *   solo pa/2 1 A                      A fails: dark
 *   nf   pa/3 1 A, pn/0 1 A            A fails: at risk (its other cord is on no feed)
 *
 * If A fails, B1: inlet0 5 + 2 + 1.5 + 1.5 = 10 A (62.5 %), breaker0 3 + 2 = 5 A, breaker1
 * 2 + 1.5 = 3.5 A, both inexact (1.5 A unplaced among them). If B fails, A1: inlet0 8 + 2 (db)
 * + 2 (app's 1 + 1) = 12 A (75 %).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { AssetBook } from "../../src/assets/book.js";
import {
  FeedLossProjector,
  FeedLossTracker,
  projectFeed,
  projectFeedLoss,
  type FeedProjection,
} from "../../src/assets/feed-loss.js";
import type { AssetConfig } from "../../src/assets/types.js";
import { DEFAULT_THRESHOLDS } from "../../src/pdu/load.js";
import { assetModel, pduSnapshot, readingOf } from "../../testkit/asset-fleet.js";

const model = assetModel(
  {
    db: {
      Cords: [
        { Instance: "pa", Outlet: 0 },
        { Instance: "pb", Outlet: 0 },
      ],
    },
    app: {
      Cords: [
        { Instance: "pa", Outlet: 1 },
        { Instance: "pb", Outlet: 1 },
        { Instance: "pb", Outlet: 2 },
      ],
    },
    solo: { Cords: [{ Instance: "pa", Outlet: 2 }] },
    nf: {
      Cords: [
        { Instance: "pa", Outlet: 3 },
        { Instance: "pn", Outlet: 0 },
      ],
    },
  },
  { pa: { Feed: "A" }, pb: { Feed: "B" }, pn: {} },
  ["A", "B"],
);

function fleet(inletB = 5, ratedB = 16, pbOnline = true): AssetBook {
  const book = new AssetBook(model);
  const pa = pduSnapshot("pa", [
    {
      id: "A1",
      outlets: [{ current: 2 }, { current: 3 }, { current: 1 }, { current: 1 }],
      entities: [{ key: "inlet0", current: 8, rated: 16 }],
    },
  ]);
  const pb = pduSnapshot("pb", [
    {
      id: "B1",
      outlets: [{ current: 2, feedsFrom: "breaker0" }, { current: 1, feedsFrom: "breaker1" }, { current: 1 }],
      entities: [
        { key: "breaker0", current: 3, rated: 10 },
        { key: "breaker1", current: 2, rated: 10 },
        { key: "inlet0", current: inletB, rated: ratedB },
      ],
    },
  ]);
  const pn = pduSnapshot("pn", [
    { id: "N1", outlets: [{ current: 1 }], entities: [{ key: "inlet0", current: 1, rated: 16 }] },
  ]);
  book.update(readingOf(pa), true, 1);
  book.update(readingOf(pb, pbOnline), true, 1);
  book.update(readingOf(pn), true, 1);
  return book;
}

const project = (book: AssetBook, feed: string): FeedProjection =>
  projectFeed(model, feed, [...book.states()], book.readings());

const entity = (p: FeedProjection, key: string) => {
  const e = p.entities.find((x) => x.key === key);
  assert.ok(e !== undefined, `${key} projected`);
  return e;
};

describe("feed-loss projection", () => {
  it("moves each asset's current on the failed feed to its live cords elsewhere, onto what they draw through", () => {
    const a = project(fleet(), "A");
    assert.deepEqual(
      a.entities.map((e) => `${e.instance}/${e.deviceId}/${e.key}`),
      ["pb/B1/breaker0", "pb/B1/breaker1", "pb/B1/inlet0"],
      "only the other feeds' entities (not A's own, not those of no feed)",
    );
    const inlet = entity(a, "inlet0");
    assert.equal(inlet.measured, 5);
    assert.equal(inlet.added, 5);
    assert.equal(inlet.projected, 10);
    assert.equal(inlet.rating, 16);
    assert.equal(inlet.ratio, 10 / 16);
    assert.equal(inlet.exact, true);
    const b0 = entity(a, "breaker0");
    assert.equal(b0.projected, 5);
    assert.equal(b0.ratio, 0.5);
    assert.equal(b0.exact, false, "app's share on outlet 2 may flow through it");
    const b1 = entity(a, "breaker1");
    assert.equal(b1.projected, 3.5);
    assert.equal(b1.exact, false);
    assert.deepEqual(a.unplaced, [{ instance: "pb", deviceId: "B1", amps: 1.5 }]);
    assert.deepEqual(a.dark, ["solo"]);
    assert.deepEqual(a.atRisk, ["nf"]);
    assert.deepEqual(a.unseen, []);
  });

  it("projects the other way round too, for every configured feed", () => {
    const book = fleet();
    const [a, b] = projectFeedLoss(model, book.states(), book.readings());
    assert.equal(a?.feed, "A");
    assert.equal(b?.feed, "B");
    const inlet = entity(b, "inlet0");
    assert.equal(inlet.deviceId, "A1");
    assert.equal(inlet.projected, 12);
    assert.equal(inlet.ratio, 0.75);
    assert.deepEqual(b.dark, []);
    assert.deepEqual(b.atRisk, []);
    assert.deepEqual(b.unplaced, []);
  });

  it("lists an instance on another feed without a current reading, and an asset whose other cord is not live as dark", () => {
    const a = project(fleet(5, 16, false), "A");
    assert.deepEqual(a.unseen, ["pb"]);
    assert.deepEqual(a.entities, []);
    assert.deepEqual(a.dark, ["app", "db", "solo"], "a cord whose PDU is offline is not live");
  });

  it("takes a phase named by feedsFrom, and leaves several phases unplaced otherwise", () => {
    const m = assetModel(
      {
        x: {
          Cords: [
            { Instance: "pa", Outlet: 0 },
            { Instance: "pc", Outlet: 0 },
          ],
        },
        y: {
          Cords: [
            { Instance: "pa", Outlet: 1 },
            { Instance: "pc", Outlet: 1 },
          ],
        },
      },
      { pa: { Feed: "A" }, pc: { Feed: "B" } },
      ["A", "B"],
    );
    const book = new AssetBook(m);
    book.update(
      readingOf(pduSnapshot("pa", [{ id: "A1", outlets: [{ current: 4 }, { current: 2 }] }])),
      true,
      1,
    );
    book.update(
      readingOf(
        pduSnapshot("pc", [
          {
            id: "C1",
            outlets: [{ current: 4, feedsFrom: "phase1" }, { current: 2 }],
            entities: [
              { key: "phase0", current: 1, rated: 16 },
              { key: "phase1", current: 6, rated: 16 },
              { key: "phase2", current: 1, rated: 16 },
              { key: "total0", current: 8, rated: 48 },
            ],
          },
        ]),
      ),
      true,
      1,
    );
    const p = projectFeed(m, "A", [...book.states()], book.readings());
    assert.equal(entity(p, "phase1").projected, 10, "x's 4 A onto the phase it names");
    assert.equal(entity(p, "phase0").projected, 1);
    assert.equal(entity(p, "total0").projected, 14, "both shares onto the one total");
    assert.equal(entity(p, "phase0").exact, false, "y's 2 A is on one of the phases");
    assert.deepEqual(p.unplaced, [{ instance: "pc", deviceId: "C1", amps: 2 }]);
  });

  it("leaves nothing unplaced for entities that read no current (a unit's temperature sensors)", () => {
    const m = assetModel(
      {
        x: {
          Cords: [
            { Instance: "pa", Outlet: 0 },
            { Instance: "pc", Outlet: 0 },
          ],
        },
      },
      { pa: { Feed: "A" }, pc: { Feed: "B" } },
      ["A", "B"],
    );
    const book = new AssetBook(m);
    book.update(readingOf(pduSnapshot("pa", [{ id: "A1", outlets: [{ current: 3 }] }])), true, 1);
    const pc = pduSnapshot("pc", [
      {
        id: "C1",
        outlets: [{ current: 3, feedsFrom: "bank0" }],
        entities: [
          { key: "bank0", current: 3, rated: 16 },
          { key: "bank1", current: 0, rated: 16 },
          { key: "phase0", current: 3, rated: 16 },
          { key: "sensor0" },
          { key: "sensor1" },
        ],
      },
    ]);
    book.update(readingOf(pc), true, 1);
    const p = projectFeed(m, "A", [...book.states()], book.readings());
    assert.deepEqual(p.unplaced, []);
    assert.deepEqual(
      p.entities.map((e) => [e.key, e.projected, e.exact]),
      [
        ["bank0", 6, true],
        ["bank1", 0, true],
        ["phase0", 6, true],
      ],
    );
  });
});

describe("feed-loss alarms", () => {
  it("raises at the warning line with the entity and the feed named, holds within the hysteresis, clears below it", () => {
    const tracker = new FeedLossTracker(DEFAULT_THRESHOLDS);
    // B1's inlet0 rated 12: projected (inlet + 5) / 12.
    const step = (inlet: number, at: number) => tracker.assess([project(fleet(inlet, 12), "A")], at);
    assert.deepEqual(step(4, 1).changes, [], "9 of 12 A: 75 %");
    const raised = step(5, 2); // 10 / 12 = 83 %
    assert.equal(raised.changes.length, 1);
    const alarm = raised.changes[0]!.alarm;
    assert.equal(raised.changes[0]!.change, "raised");
    assert.equal(alarm.scope, "$feeds");
    assert.equal(alarm.id, "A/pb/B1/entity/inlet0/feed-loss");
    assert.equal(alarm.source, "feed-loss");
    assert.equal(alarm.feed, "A");
    assert.equal(alarm.instanceId, "pb");
    assert.equal(alarm.deviceId, "B1");
    assert.deepEqual(alarm.target, { kind: "entity", key: "inlet0" });
    assert.equal(alarm.severity, "warning");
    assert.equal(alarm.percent, 83);
    assert.deepEqual(raised.alarms, [alarm]);
    assert.deepEqual(step(4.4, 3).changes, [], "78 %: within 5 points of the line, still a warning");
    assert.equal(step(4.4, 3).alarms.length, 1);
    const critical = step(6.5, 4); // 11.5 / 12 = 96 %
    assert.equal(critical.changes[0]?.change, "changed");
    assert.equal(critical.changes[0]?.alarm.severity, "critical");
    assert.equal(critical.changes[0]?.alarm.since, 2);
    const offline = tracker.assess([project(fleet(6.5, 12, false), "A")], 5);
    assert.deepEqual(offline.changes, [], "pb's polls fail: its projection's alarm is kept, not cleared");
    assert.equal(offline.alarms[0]?.severity, "critical");
    assert.deepEqual(step(6.5, 6).changes, [], "back, and still critical");
    const cleared = step(3.5, 7); // 8.5 / 12 = 71 %
    assert.equal(cleared.changes[0]?.change, "cleared");
    assert.deepEqual(cleared.alarms, []);
  });
});

describe("feed-loss projection, for any fleet", () => {
  it("moves exactly the current on the failed feed of assets with live cords elsewhere, all of it through the inlets", () => {
    const outletArb = fc.record({
      state: fc.constantFrom<"on" | "off" | "unknown">("on", "on", "on", "off", "unknown"),
      current: fc.integer({ min: 0, max: 40 }).map((n) => n / 10),
      breaker: fc.constantFrom<number | null>(0, 1, 2, null),
    });
    const instanceArb = fc.record({
      feed: fc.constantFrom("A", "B", "C"),
      outlets: fc.array(outletArb, { minLength: 1, maxLength: 6 }),
      online: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(instanceArb, { minLength: 2, maxLength: 5 }),
        fc.array(fc.array(fc.record({ i: fc.nat(), o: fc.nat() }), { minLength: 1, maxLength: 3 }), {
          maxLength: 12,
        }),
        (instances, assets) => {
          const ids = instances.map((_, k) => `p${k}`);
          const configs: Record<string, AssetConfig> = {};
          const used = new Set<string>();
          assets.forEach((cords, a) => {
            const list = cords
              .map(({ i, o }) => ({
                Instance: ids[i % ids.length]!,
                Outlet: o % instances[i % ids.length]!.outlets.length,
              }))
              .filter((c) => !used.has(`${c.Instance}/${c.Outlet}`) && used.add(`${c.Instance}/${c.Outlet}`));
            if (list.length > 0) configs[`a${a}`] = { Cords: list };
          });
          const m = assetModel(
            configs,
            Object.fromEntries(instances.map((x, k) => [ids[k]!, { Feed: x.feed }])),
            ["A", "B", "C"],
          );
          const book = new AssetBook(m);
          instances.forEach((x, k) => {
            const snap = pduSnapshot(ids[k]!, [
              {
                id: `D${k}`,
                outlets: x.outlets.map((o) => ({
                  state: o.state,
                  current: o.current,
                  ...(o.breaker === null ? {} : { feedsFrom: `breaker${o.breaker}` }),
                })),
                entities: [
                  { key: "breaker0", current: 1, rated: 16 },
                  { key: "breaker1", current: 1, rated: 16 },
                  { key: "breaker2", current: 1, rated: 16 },
                  { key: "inlet0", current: 3, rated: 32 },
                ],
              },
            ]);
            book.update(readingOf(snap, x.online), true, 1);
          });
          for (const p of projectFeedLoss(m, book.states(), book.readings())) {
            // What moves, computed again from the readings: each asset's live current on F, when it
            // has a live cord on another feed.
            let moved = 0;
            for (const s of book.states()) {
              const live = s.readings.filter((r) => r.status === "live");
              const onF = live.filter((r) => r.feed === p.feed);
              if (onF.length > 0 && live.some((r) => r.feed !== p.feed))
                moved += onF.reduce((t, r) => t + (r.current ?? 0), 0);
            }
            const inlets = p.entities.filter((e) => e.key === "inlet0");
            const intoInlets = inlets.reduce((t, e) => t + e.added, 0);
            assert.ok(
              Math.abs(intoInlets - moved) < 1e-9,
              `feed ${p.feed}: ${intoInlets} A into inlets, ${moved} A moved`,
            );
            for (const inlet of inlets) {
              const device = p.entities.filter(
                (e) => e.deviceId === inlet.deviceId && e.key.startsWith("breaker"),
              );
              const unplaced = p.unplaced.find((u) => u.deviceId === inlet.deviceId)?.amps ?? 0;
              const intoBreakers = device.reduce((t, e) => t + e.added, 0);
              assert.ok(
                Math.abs(inlet.added - intoBreakers - unplaced) < 1e-9,
                `${inlet.deviceId}: breakers and unplaced add up`,
              );
              assert.equal(
                device.every((e) => e.exact),
                unplaced === 0,
              );
              assert.equal(inlet.projected, inlet.measured + inlet.added);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** A projection as plain data (the projector's entities are objects it writes again). */
function plain(p: FeedProjection): unknown {
  return {
    feed: p.feed,
    entities: p.entities.map((e) => ({
      instance: e.instance,
      deviceId: e.deviceId,
      key: e.key,
      name: e.name,
      measured: e.measured,
      added: e.added,
      projected: e.projected,
      rating: e.rating,
      ratio: e.ratio,
      exact: e.exact,
    })),
    dark: [...p.dark],
    atRisk: [...p.atRisk],
    unplaced: p.unplaced.map((u) => ({ ...u })),
    unseen: [...p.unseen],
  };
}

describe("feed-loss projector, kept across projections", () => {
  it("answers what a fresh projection answers after every reading, whatever moved (figures, entities, devices, online)", () => {
    const KEYS = ["breaker0", "breaker1", "phase0", "phase1", "inlet0"];
    const entityArb = fc.record({
      on: fc.boolean(),
      current: fc.option(fc.integer({ min: 0, max: 100 }).map((n) => n / 10)),
      rated: fc.option(fc.constantFrom(10, 16, 32)),
    });
    const stepArb = fc.record({
      instance: fc.nat(),
      devices: fc.integer({ min: 1, max: 2 }),
      online: fc.boolean(),
      outlets: fc.array(
        fc.record({
          state: fc.constantFrom<"on" | "off" | "unknown">("on", "on", "off", "unknown"),
          current: fc.integer({ min: 0, max: 40 }).map((n) => n / 10),
          feedsFrom: fc.constantFrom<string | null>("breaker0", "breaker1", "phase1", "inlet0", null),
        }),
        { minLength: 3, maxLength: 3 },
      ),
      entities: fc.array(entityArb, { minLength: KEYS.length, maxLength: KEYS.length }),
    });
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("A", "B", "C"), { minLength: 2, maxLength: 4 }),
        fc.array(stepArb, { minLength: 1, maxLength: 10 }),
        (feeds, steps) => {
          const ids = feeds.map((_, k) => `p${k}`);
          const configs: Record<string, AssetConfig> = {};
          for (let o = 0; o < 3; o++)
            configs[`s${o}`] = { Cords: ids.map((id) => ({ Instance: id, Device: "D0", Outlet: o })) };
          const m = assetModel(configs, Object.fromEntries(feeds.map((f, k) => [ids[k]!, { Feed: f }])), [
            "A",
            "B",
            "C",
          ]);
          const book = new AssetBook(m);
          const projector = new FeedLossProjector();
          for (const step of steps) {
            const id = ids[step.instance % ids.length]!;
            const devices = Array.from({ length: step.devices }, (_, d) => ({
              id: `D${d}`,
              outlets: step.outlets.map((o) => ({
                state: o.state,
                current: o.current,
                ...(o.feedsFrom === null ? {} : { feedsFrom: o.feedsFrom }),
              })),
              entities: KEYS.flatMap((key, k) => {
                const e = step.entities[k]!;
                if (!e.on) return [];
                return [
                  {
                    key,
                    ...(e.current === null ? {} : { current: e.current }),
                    ...(e.rated === null ? {} : { rated: e.rated }),
                  },
                ];
              }),
            }));
            book.update(readingOf(pduSnapshot(id, devices), step.online), true, 1);
            const kept = projector.project(m, book.states(), book.readings()).map(plain);
            const fresh = projectFeedLoss(m, book.states(), book.readings()).map(plain);
            assert.deepStrictEqual(kept, fresh);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
