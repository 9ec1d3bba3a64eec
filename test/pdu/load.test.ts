/**
 * Loads against ratings and alarms (src/pdu/load.ts): ratings from the PDU before the configuration,
 * by entity key before kind; warning and critical lines with a hysteresis of 5 points (unit and
 * property tests: no flapping at a line, idempotent, monotonic, states forgotten with the thing);
 * reported states by the one table; alarms raised, changed and cleared with their start kept.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  configuredRating,
  DEFAULT_THRESHOLDS,
  entityKind,
  HYSTERESIS_PERCENT,
  LoadTracker,
  nextLoadState,
  reportedMeaning,
  type LoadThresholds,
} from "../../src/pdu/load.js";
import { ratingKeyProblem } from "../../src/config/ratings.js";
import type {
  Alarm,
  Device,
  Entity,
  LoadPoint,
  LoadReport,
  LoadState,
  Snapshot,
} from "../../src/pdu/model.js";
import { CLEAR_ALARM, device, measurement, outlet, snapshot } from "../../testkit/snapshot-builders.js";

const T = DEFAULT_THRESHOLDS;
const STATES: readonly LoadState[] = ["normal", "warning", "critical"];

function breaker(key: string, amps: number, extra: Partial<Entity> = {}): Entity {
  return {
    key,
    name: `Breaker ${key}`,
    label: "",
    displayName: `Breaker ${key}`,
    alarm: CLEAR_ALARM,
    measurements: [measurement("current", amps, "A")],
    ...extra,
  };
}

/** A unit whose breakers carry `amps` each (and one 0.5 A outlet). */
function unit(breakers: readonly Entity[], at = 1_000, more: Partial<Device> = {}): Snapshot {
  const base = device({ id: "DEV1", outlets: [outlet(0, { current: 0.5 })] });
  return snapshot("rack", [{ ...base, entities: [...base.entities, ...breakers], ...more }], [], at);
}

describe("nextLoadState", () => {
  it("goes up at each line and down 5 points below it", () => {
    assert.equal(nextLoadState(79.99, "normal", T), "normal");
    assert.equal(nextLoadState(80, "normal", T), "warning");
    assert.equal(nextLoadState(94.9, "warning", T), "warning");
    assert.equal(nextLoadState(95, "warning", T), "critical");
    assert.equal(nextLoadState(90, "critical", T), "critical");
    assert.equal(nextLoadState(89.9, "critical", T), "warning");
    assert.equal(nextLoadState(75, "warning", T), "warning");
    assert.equal(nextLoadState(74.9, "warning", T), "normal");
    assert.equal(nextLoadState(74.9, "critical", T), "normal");
    assert.equal(nextLoadState(200, "normal", T), "critical");
    assert.equal(nextLoadState(0, "critical", T), "normal");
  });

  const thresholds = fc
    .tuple(fc.integer({ min: 10, max: 150 }), fc.integer({ min: 1, max: 50 }))
    .map(([warn, gap]): LoadThresholds => ({ warnPercent: warn, criticalPercent: warn + gap }));
  const percent = fc.double({ min: 0, max: 250, noNaN: true });
  const state = fc.constantFrom(...STATES);

  it("property: applying the same value twice changes nothing (a repeated poll cannot flap)", () => {
    fc.assert(
      fc.property(thresholds, percent, state, (t, p, s) => {
        const once = nextLoadState(p, s, t);
        assert.equal(nextLoadState(p, once, t), once);
      }),
    );
  });

  it("property: a higher value never gives a lower state", () => {
    fc.assert(
      fc.property(thresholds, percent, percent, state, (t, a, b, s) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const rank = (x: LoadState) => STATES.indexOf(x);
        assert.ok(rank(nextLoadState(lo, s, t)) <= rank(nextLoadState(hi, s, t)));
      }),
    );
  });

  it("property: up only at a line, down only 5 points below it", () => {
    fc.assert(
      fc.property(thresholds, percent, state, (t, p, s) => {
        const next = nextLoadState(p, s, t);
        const rank = (x: LoadState) => STATES.indexOf(x);
        if (rank(next) > rank(s)) assert.ok(p >= (next === "critical" ? t.criticalPercent : t.warnPercent));
        if (rank(next) < rank(s)) {
          const line = s === "critical" ? t.criticalPercent : t.warnPercent;
          assert.ok(p < line - HYSTERESIS_PERCENT, `${s} → ${next} at ${p}`);
        }
      }),
    );
  });

  it("property: a value wobbling less than 5 points around a line changes the state at most once", () => {
    fc.assert(
      fc.property(
        thresholds,
        fc.constantFrom<"warn" | "critical">("warn", "critical"),
        fc.array(fc.double({ min: -2.49, max: 2.49, noNaN: true }), { minLength: 2, maxLength: 60 }),
        (t, which, wobble) => {
          const line = which === "warn" ? t.warnPercent : t.criticalPercent;
          let s: LoadState = which === "warn" ? "normal" : "warning";
          // One line at a time: the other one out of the wobble's reach.
          if (t.criticalPercent - t.warnPercent < 2.5) return;
          let changes = 0;
          for (const d of wobble) {
            const next = nextLoadState(line + d, s, t);
            if (next !== s) changes++;
            s = next;
          }
          assert.ok(changes <= 1, `${changes} changes around ${line}`);
        },
      ),
    );
  });
});

describe("ratings", () => {
  it("entity kinds and configured ratings: by device/key, by key, by kind; outlets by Outlets", () => {
    assert.equal(entityKind("breaker12"), "breaker");
    assert.equal(entityKind("phase0"), "phase");
    const ratings = {
      Breakers: 16,
      Phases: 32,
      Outlets: 10,
      Entities: { breaker1: 20, "DEV2/breaker1": 25 },
    };
    assert.equal(configuredRating(ratings, "DEV1", { kind: "entity", key: "breaker0" }), 16);
    assert.equal(configuredRating(ratings, "DEV1", { kind: "entity", key: "breaker1" }), 20);
    assert.equal(configuredRating(ratings, "DEV2", { kind: "entity", key: "breaker1" }), 25);
    assert.equal(configuredRating(ratings, "DEV1", { kind: "entity", key: "phase2" }), 32);
    assert.equal(configuredRating(ratings, "DEV1", { kind: "entity", key: "total0" }), null);
    assert.equal(configuredRating(ratings, "DEV1", { kind: "outlet", index: 3 }), 10);
    assert.equal(configuredRating({}, "DEV1", { kind: "outlet", index: 3 }), null);
    // An inherited name is not a key.
    assert.equal(configuredRating({ Entities: {} }, "DEV1", { kind: "entity", key: "constructor" }), null);
  });

  it("Ratings.Entities keys: an entity key or device/key, safe names only", () => {
    assert.equal(ratingKeyProblem("breaker0"), null);
    assert.equal(ratingKeyProblem("A0AE260C851900C4/breaker0"), null);
    assert.match(ratingKeyProblem("a/b/c") ?? "", /one '\/'/);
    assert.notEqual(ratingKeyProblem("bad+key"), null);
    assert.notEqual(ratingKeyProblem("dev/"), null);
  });

  it("the PDU's rating comes before the configuration's", () => {
    const tracker = new LoadTracker({ Breakers: 16 }, T);
    const { report } = tracker.assess(
      unit([breaker("breaker0", 8, { ratedCurrent: 10 }), breaker("breaker1", 8)]),
    );
    const b0 = report.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker0")!;
    const b1 = report.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker1")!;
    assert.deepEqual([b0.rating, b0.ratingFrom, b0.ratio, b0.state], [10, "pdu", 0.8, "warning"]);
    assert.deepEqual([b1.rating, b1.ratingFrom, b1.ratio, b1.state], [16, "config", 0.5, "normal"]);
  });

  it("points: every rated thing, and phases and breakers without a rating; not totals or unrated outlets", () => {
    const tracker = new LoadTracker({}, T);
    const { report } = tracker.assess(unit([breaker("breaker0", 3)]));
    const where = report.points.map((p) =>
      p.target.kind === "entity" ? p.target.key : `outlet${p.target.index}`,
    );
    assert.deepEqual(where, ["phase0", "breaker0"]);
    assert.ok(report.points.every((p) => p.rating === null && p.ratio === null && p.state === "normal"));
    const rated = new LoadTracker({ Outlets: 10 }, T).assess(unit([])).report;
    const o = rated.points.find((p) => p.target.kind === "outlet")!;
    assert.equal(o.ratio, 0.05);
  });

  it("a current in mA is scaled; other units and n/a give no ratio", () => {
    const tracker = new LoadTracker({ Breakers: 10 }, T);
    const ma = breaker("breaker0", 9000, { measurements: [measurement("current", 9000, "mA")] });
    const volts = breaker("breaker1", 9, { measurements: [measurement("current", 9, "V")] });
    const na = breaker("breaker2", 0, { measurements: [measurement("current", null, "A")] });
    const { report } = tracker.assess(unit([ma, volts, na]));
    const ratio = (key: string) =>
      report.points.find((p) => p.target.kind === "entity" && p.target.key === key)?.ratio;
    assert.equal(ratio("breaker0"), 0.9);
    assert.equal(ratio("breaker1"), null);
    assert.equal(ratio("breaker2"), null);
  });
});

describe("LoadTracker", () => {
  const at = (amps: number, t: number, rated = 16) =>
    unit([breaker("breaker0", amps, { ratedCurrent: rated })], t);

  it("a breaker driven over 80 % and 95 % and back: raised, changed, cleared, with hysteresis and its start kept", () => {
    const tracker = new LoadTracker({}, T);
    const steps: [number, string[], string][] = [
      [8, [], "normal"],
      [13.2, ["raised warning"], "warning"], // 82.5 %
      [12.5, [], "warning"], // 78 %: above 75, stays
      [15.5, ["changed critical"], "critical"], // 96.9 %
      [14.6, [], "critical"], // 91 %: above 90, stays
      [14.2, ["changed warning"], "warning"], // 88.8 %
      [11.9, ["cleared warning"], "normal"], // 74.4 %
    ];
    let since = 0;
    steps.forEach(([amps, expected, state], i) => {
      const { report, changes } = tracker.assess(at(amps, 1000 * (i + 1)));
      assert.deepEqual(
        changes.map((c) => `${c.change} ${c.alarm.severity}`),
        expected,
        `${amps} A`,
      );
      const point = report.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker0")!;
      assert.equal(point.state, state, `${amps} A`);
      const alarm = report.alarms[0];
      if (state === "normal") assert.equal(alarm, undefined);
      else {
        assert.equal(alarm?.id, "DEV1/entity/breaker0/load");
        assert.equal(alarm?.percent, Math.round((amps / 16) * 100));
        if (since === 0) since = alarm.since;
        assert.equal(alarm?.since, since, "the start is kept while it lasts");
      }
    });
    assert.equal(since, 2000);
  });

  it("property: the same snapshot assessed again raises, changes and clears nothing", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 20, noNaN: true }), { minLength: 1, maxLength: 20 }),
        (amps) => {
          const tracker = new LoadTracker({}, T);
          amps.forEach((a, i) => {
            const snap = at(a, i + 1);
            tracker.assess(snap);
            assert.deepEqual(tracker.assess(snap).changes, []);
          });
        },
      ),
    );
  });

  it("forgets a thing's state with the thing: it comes back as new", () => {
    const tracker = new LoadTracker({}, T);
    tracker.assess(at(13, 1)); // 81 %: warning
    assert.equal(tracker.assess(at(12.4, 2)).report.alarms.length, 1, "77.5 %: still warning");
    const gone = tracker.assess(unit([], 3));
    assert.deepEqual(
      gone.changes.map((c) => c.change),
      ["cleared"],
    );
    const back = tracker.assess(at(12.4, 4));
    assert.deepEqual(back.report.alarms, [], "77.5 % from a fresh start is normal");
  });

  it("reported states by the one table: nearOverload warning, overload critical, tripped critical, others by severity", () => {
    const alarm = (state: string, severity = "alarm"): Alarm => ({ state, severity, raised: true });
    assert.deepEqual(reportedMeaning(alarm("nearOverload")), { severity: "warning", source: "load" });
    assert.deepEqual(reportedMeaning(alarm("overload")), { severity: "critical", source: "load" });
    assert.deepEqual(reportedMeaning(alarm(" Tripped ")), { severity: "critical", source: "tripped" });
    assert.deepEqual(reportedMeaning(alarm("alarm", "warning")), { severity: "warning", source: "pdu" });
    assert.deepEqual(reportedMeaning(alarm("active", "alarm")), { severity: "critical", source: "pdu" });
    assert.equal(reportedMeaning({ state: "nearOverload", severity: "warning", raised: false }), null);

    const tracker = new LoadTracker({}, T);
    const tripped = breaker("breaker0", 0, { alarm: alarm("tripped"), ratedCurrent: 16 });
    const near = breaker("breaker1", 13, { alarm: alarm("nearOverload", "warning"), ratedCurrent: 16 });
    const sensor = {
      ...breaker("breaker2", 1),
      measurements: [{ ...measurement("current", 1, "A"), alarm: alarm("alarm", "warning") }],
    };
    const { report } = tracker.assess(unit([tripped, near, sensor], 1, { alarm: alarm("active") }));
    assert.deepEqual(
      report.alarms.map((a) => `${a.id} ${a.severity} ${a.reported}`),
      [
        "DEV1/device/pdu critical active",
        "DEV1/entity/breaker0/tripped critical tripped",
        "DEV1/entity/breaker1/load warning nearOverload",
        "DEV1/entity/breaker2/pdu warning alarm",
      ],
      "the rating and the PDU both say warning for breaker1: one alarm, the PDU's state",
    );
    const b0 = report.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker0")!;
    assert.equal(b0.state, "critical", "a tripped breaker's point is critical");
    assert.equal(b0.loadState, "normal");
  });

  it("hidden things are assessed and marked hidden", () => {
    const tracker = new LoadTracker({}, T);
    const { report } = tracker.assess(unit([breaker("breaker0", 15.9, { ratedCurrent: 16, hidden: true })]));
    assert.equal(report.alarms[0]?.hidden, true);
    assert.equal(report.points.find((p) => p.hidden)?.name, "Breaker breaker0");
  });
});

describe("what a report says changed since the one before", () => {
  /** What a point shows on every surface (its current aside). */
  const shown = (p: LoadPoint) =>
    JSON.stringify([
      p.name,
      p.ratio === null ? null : Math.round(p.ratio * 100),
      p.state,
      p.rating !== null,
      p.hidden === true,
    ]);
  const thing = (p: LoadPoint) =>
    `${p.deviceId}/${p.target.kind === "entity" ? p.target.key : p.target.index}/${p.hidden === true}`;

  it("flags the points whose whole percent, state, name, rating or visibility moved, and keeps an unchanged alarm list", () => {
    const tracker = new LoadTracker({ Breakers: 16 }, T);
    const first = tracker.assess(unit([breaker("breaker0", 8), breaker("breaker1", 13.2)], 1));
    assert.equal(first.report.comparedWith, 0);
    assert.equal(first.report.samePoints, false);
    assert.ok(first.report.points.every((p) => p.changed));
    const second = tracker.assess(unit([breaker("breaker0", 8.01), breaker("breaker1", 13.2)], 2));
    assert.equal(second.report.comparedWith, first.report.serial);
    assert.equal(second.report.samePoints, true);
    assert.deepEqual(
      second.report.points.map((p) => p.changed),
      [false, false, false],
      "8.01 A is still 50 %",
    );
    assert.equal(second.report.alarms, first.report.alarms, "the same list: the same array");
    const third = tracker.assess(unit([breaker("breaker0", 9), breaker("breaker1", 14)], 3));
    assert.deepEqual(
      third.report.points.map((p) => [p.target.kind === "entity" && p.target.key, p.changed]),
      [
        ["phase0", false],
        ["breaker0", true],
        ["breaker1", true],
      ],
    );
    assert.notEqual(third.report.alarms, second.report.alarms, "breaker1's percent moved in its alarm");
    const renamed = tracker.assess(
      unit([breaker("breaker0", 9, { displayName: "Left" }), breaker("breaker1", 14)], 4),
    );
    assert.deepEqual(
      renamed.report.points.map((p) => p.changed),
      [false, true, false],
    );
    const hidden = tracker.assess(
      unit([breaker("breaker0", 9, { hidden: true }), breaker("breaker1", 14)], 5),
    );
    assert.equal(hidden.report.samePoints, false, "a thing hidden now");
    const gone = tracker.assess(unit([breaker("breaker0", 9, { hidden: true })], 6));
    assert.equal(gone.report.samePoints, false, "a thing gone");
  });

  it("property: the flags say exactly what moved while the points are the same things", () => {
    // Currents that round to the same whole percent on both sides of a line, and any others.
    const amps = fc.oneof(
      fc.constantFrom(12.74, 12.8, 15.15, 15.2, 11.9, 12.1),
      fc.double({ min: 0, max: 20, noNaN: true }),
    );
    const three = <T>(a: fc.Arbitrary<T>) => fc.array(a, { minLength: 3, maxLength: 3 });
    const step = fc.record({
      amps: three(fc.oneof(fc.constant(null), amps)),
      hidden: three(fc.boolean()),
      tripped: three(fc.boolean()),
      renamed: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const tracker = new LoadTracker({ Breakers: 16 }, T);
        let before: LoadReport | null = null;
        steps.forEach(({ amps, hidden, tripped, renamed }, i) => {
          const breakers = amps.flatMap((a, k) =>
            a === null
              ? []
              : [
                  breaker(`breaker${k}`, a, {
                    hidden: hidden[k] ? true : undefined,
                    ...(renamed && k === 0 ? { displayName: "Left" } : {}),
                    ...(tripped[k] ? { alarm: { state: "tripped", severity: "alarm", raised: true } } : {}),
                  }),
                ],
          );
          const { report } = tracker.assess(unit(breakers, i + 1));
          if (before === null) {
            assert.ok(report.points.every((p) => p.changed));
          } else {
            assert.equal(report.comparedWith, before.serial);
            const same =
              report.points.length === before.points.length &&
              report.points.every((p, j) => thing(p) === thing(before!.points[j]!));
            assert.equal(report.samePoints, same);
            if (same)
              report.points.forEach((p, j) =>
                assert.equal(p.changed, shown(p) !== shown(before!.points[j]!)),
              );
            const json = (r: LoadReport) => JSON.stringify(r.alarms);
            assert.equal(report.alarms === before.alarms, json(report) === json(before));
          }
          before = report;
        });
      }),
    );
  });
});
