/**
 * Inferred breaker trips (src/pdu/trips.ts through the load tracker, src/pdu/load.ts): a breaker
 * that falls to 0 A while outlets it feeds are on and drew current raises `breaker-trip-suspected`
 * (critical, the breaker's load point critical), kept while it stays at 0 and cleared when current
 * returns; nothing for outlets switched off, for absent values, for a breaker whose trip state the
 * PDU reports, or beside a trip the PDU reports.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_THRESHOLDS, LoadTracker, TRIP_SUSPECTED } from "../../src/pdu/load.js";
import type { Alarm, Entity, Measurement, Outlet, OutletState, Snapshot } from "../../src/pdu/model.js";
import { CLEAR_ALARM, device, measurement, outlet, snapshot } from "../../testkit/snapshot-builders.js";

const TRIPPED: Alarm = { state: "tripped", severity: "alarm", raised: true };

interface Poll {
  /** The breaker's amps (null: absent). */
  readonly breaker: number | null;
  /** Each fed outlet's state and amps (null: absent; undefined: it measures no current). */
  readonly outlets: readonly (readonly [OutletState, number | null | undefined])[];
  readonly reportsTrip?: true;
  readonly alarm?: Alarm;
  /** The outlets' feedsFrom (default breaker0). */
  readonly feeds?: string;
}

function fed(index: number, state: OutletState, amps: number | null | undefined, feeds: string): Outlet {
  const base = outlet(index, { state });
  const measurements: Measurement[] =
    amps === undefined ? [] : [measurement("current", amps, "A"), ...base.measurements.slice(1)];
  return { ...base, measurements, feedsFrom: feeds };
}

function poll(p: Poll, at: number): Snapshot {
  const breaker: Entity = {
    key: "breaker0",
    name: "Breaker 1",
    label: "",
    displayName: "Breaker 1",
    alarm: p.alarm ?? CLEAR_ALARM,
    measurements: [measurement("current", p.breaker, "A")],
    ...(p.reportsTrip ? { reportsTrip: true as const } : {}),
  };
  const outlets = p.outlets.map(([state, amps], i) => fed(i, state, amps, p.feeds ?? "breaker0"));
  const base = device({ id: "DEV1", outlets });
  return snapshot("rack", [{ ...base, entities: [...base.entities, breaker] }], [], at);
}

/** The trip alarms after each poll, as `raised`/`cleared` changes and whether one is active. */
function run(polls: readonly Poll[]): { active: boolean[]; changes: string[]; states: string[] } {
  const tracker = new LoadTracker({}, DEFAULT_THRESHOLDS);
  const active: boolean[] = [];
  const changes: string[] = [];
  const states: string[] = [];
  polls.forEach((p, k) => {
    const { report, changes: c } = tracker.assess(poll(p, 1_000 * (k + 1)));
    active.push(report.alarms.some((a) => a.source === TRIP_SUSPECTED));
    for (const x of c) if (x.alarm.source === TRIP_SUSPECTED) changes.push(`${k} ${x.change} ${x.alarm.id}`);
    states.push(
      report.points.find((pt) => pt.target.kind === "entity" && pt.target.key === "breaker0")?.state ?? "-",
    );
  });
  return { active, changes, states };
}

const drawing: Poll = {
  breaker: 3,
  outlets: [
    ["on", 1.5],
    ["on", 1.5],
  ],
};
const silent: Poll = {
  breaker: 0,
  outlets: [
    ["on", 0],
    ["on", 0],
  ],
};
const ID = `DEV1/entity/breaker0/${TRIP_SUSPECTED}`;

describe("inferred breaker trips", () => {
  it("raised at the fall, kept at 0 A, cleared when current returns; the breaker reads critical", () => {
    const r = run([drawing, silent, silent, silent, drawing, drawing]);
    assert.deepEqual(r.active, [false, true, true, true, false, false]);
    assert.deepEqual(r.changes, [`1 raised ${ID}`, `4 cleared ${ID}`]);
    assert.deepEqual(r.states, ["normal", "critical", "critical", "critical", "normal", "normal"]);
  });

  it("outlets read at 0 A a poll before their breaker (a PDU's tables are not read at one instant) still count", () => {
    const straddled: Poll = {
      breaker: 3,
      outlets: [
        ["on", 0],
        ["on", 0],
      ],
    };
    assert.deepEqual(run([drawing, straddled, silent]).active, [false, false, true]);
    assert.deepEqual(run([drawing, straddled, straddled, silent]).active, [false, false, false, false]);
  });

  it("the alarm is critical, on the breaker, with no percent nor reported state", () => {
    const tracker = new LoadTracker({ Breakers: 16 }, DEFAULT_THRESHOLDS);
    tracker.assess(poll(drawing, 1_000));
    const alarm = tracker.assess(poll(silent, 2_000)).report.alarms.find((a) => a.source === TRIP_SUSPECTED);
    assert.deepEqual(
      alarm && [
        alarm.id,
        alarm.severity,
        alarm.target,
        alarm.percent,
        alarm.reported,
        alarm.name,
        alarm.since,
      ],
      [ID, "critical", { kind: "entity", key: "breaker0" }, null, null, "Breaker 1", 2_000],
    );
  });

  it("outlets switched off by the operator: nothing", () => {
    const off: Poll = {
      breaker: 0,
      outlets: [
        ["off", 0],
        ["off", 0],
      ],
    };
    assert.deepEqual(run([drawing, off, off]).changes, []);
  });

  it("outlets that did not draw before, or a breaker at 0 A before: nothing", () => {
    const idle: Poll = {
      breaker: 3,
      outlets: [
        ["on", 0],
        ["off", 2],
      ],
    };
    assert.deepEqual(
      run([
        idle,
        {
          breaker: 0,
          outlets: [
            ["on", 0],
            ["on", 0],
          ],
        },
      ]).changes,
      [],
    );
    assert.deepEqual(run([silent, silent, silent]).changes, []);
  });

  it("a suspected trip clears when every outlet it feeds is switched off", () => {
    const off: Poll = {
      breaker: 0,
      outlets: [
        ["off", 0],
        ["off", 0],
      ],
    };
    assert.deepEqual(run([drawing, silent, off]).active, [false, true, false]);
  });

  it("absent values are never 0: an absent breaker current or absent outlet currents raise nothing", () => {
    const absentBreaker: Poll = {
      breaker: null,
      outlets: [
        ["on", 0],
        ["on", 0],
      ],
    };
    assert.deepEqual(run([drawing, absentBreaker, absentBreaker]).changes, []);
    // Absent, then 0: no fall seen between two readings.
    assert.deepEqual(run([drawing, absentBreaker, silent]).changes, []);
    const absentOutlets: Poll = {
      breaker: 3,
      outlets: [
        ["on", null],
        ["on", null],
      ],
    };
    assert.deepEqual(run([absentOutlets, silent]).changes, []);
    // A trip already raised is kept while the breaker's value is absent (neither raise nor clear).
    assert.deepEqual(run([drawing, silent, absentBreaker, drawing]).active, [false, true, true, false]);
  });

  it("outlets that measure no current count by the breaker's own current", () => {
    const before: Poll = {
      breaker: 3,
      outlets: [
        ["on", undefined],
        ["on", undefined],
      ],
    };
    const after: Poll = {
      breaker: 0,
      outlets: [
        ["on", undefined],
        ["on", undefined],
      ],
    };
    assert.deepEqual(run([before, after]).active, [false, true]);
  });

  it("not doubled: nothing for a breaker whose trip state the PDU reports, nor beside a trip it reports", () => {
    const own = (p: Poll): Poll => ({ ...p, reportsTrip: true });
    assert.deepEqual(run([own(drawing), own(silent)]).changes, []);
    const reported: Poll = { ...silent, alarm: TRIPPED };
    const r = run([drawing, reported, reported]);
    assert.deepEqual(r.changes, []);
    const tracker = new LoadTracker({}, DEFAULT_THRESHOLDS);
    tracker.assess(poll(drawing, 1_000));
    const alarms = tracker.assess(poll(reported, 2_000)).report.alarms.map((a) => a.source);
    assert.deepEqual(alarms, ["tripped"]);
  });

  it("an outlet that names another entity, or none the device has, is not fed by the breaker", () => {
    const other = (p: Poll): Poll => ({ ...p, feeds: "breaker9" });
    assert.deepEqual(run([other(drawing), other(silent)]).changes, []);
  });
});
