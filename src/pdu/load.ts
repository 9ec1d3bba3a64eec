/**
 * Load against ratings, and alarms (docs/alarms.md): from one snapshot, every current compared
 * with its rating, the load state of each with hysteresis, and the alarms the PDU reports folded
 * in. Vendor-neutral: it reads the model only.
 *
 * - A rating is the one the PDU reports (`ratedCurrent` of an outlet or entity), else the instance's
 *   `Ratings` (by entity key, else by kind: `Breakers`, `Phases`, ... ; `Outlets`).
 * - The load state of a current is `warning` from `Alarms.WarnPercent` of its rating and `critical`
 *   from `Alarms.CriticalPercent`; it falls back a step only {@link HYSTERESIS_PERCENT} points below
 *   the line, so a value at the line does not flap.
 * - What the PDU reports raised (an outlet's, entity's or device's alarm, a measurement's threshold
 *   alarm) counts by {@link REPORTED_STATES}, one table; a low load of an outlet that is off is its
 *   normal ({@link LOW_LOAD_STATES}), not an alarm.
 *
 * A {@link LoadTracker} per instance keeps each thing's last load state (the hysteresis) and each
 * alarm's start, and forgets both with the thing: what a snapshot no longer has is not kept.
 */
import type { AlarmsConfig, RatingsConfig } from "../config/schema.js";
import { RATING_KINDS } from "../config/schema.js";
import type {
  ActiveAlarm,
  Alarm,
  AlarmChange,
  AlarmSeverity,
  AlarmSource,
  AlarmTarget,
  Device,
  LoadPoint,
  LoadReport,
  LoadState,
  LoadTarget,
  Measurement,
  Snapshot,
} from "./model.js";
import { TripWatch } from "./trips.js";

/** Points a value must fall below a line before its state steps back down. */
export const HYSTERESIS_PERCENT = 5;

export interface LoadThresholds {
  readonly warnPercent: number;
  readonly criticalPercent: number;
}

export const DEFAULT_THRESHOLDS: LoadThresholds = { warnPercent: 80, criticalPercent: 95 };

export function thresholdsOf(alarms: AlarmsConfig): LoadThresholds {
  return { warnPercent: alarms.WarnPercent, criticalPercent: alarms.CriticalPercent };
}

/**
 * The load state of `percent` of a rating, given the state before: up at a line, down only
 * {@link HYSTERESIS_PERCENT} points below it.
 */
export function nextLoadState(percent: number, previous: LoadState, t: LoadThresholds): LoadState {
  if (percent >= t.criticalPercent) return "critical";
  if (previous === "critical" && percent >= t.criticalPercent - HYSTERESIS_PERCENT) return "critical";
  if (percent >= t.warnPercent) return "warning";
  if (previous !== "normal" && percent >= t.warnPercent - HYSTERESIS_PERCENT) return "warning";
  return "normal";
}

const RANK: Readonly<Record<LoadState, number>> = { normal: 0, warning: 1, critical: 2 };

/** The worse of two states. */
export function worse(a: LoadState, b: LoadState): LoadState {
  return RANK[a] >= RANK[b] ? a : b;
}

/** How a state the PDU reports counts. */
export interface ReportedMeaning {
  readonly severity: AlarmSeverity;
  readonly source: AlarmSource;
}

/**
 * The states PDUs report that have a meaning of their own, by name in lower case (the Geist API and
 * the SNMP MIBs' enumerations). A raised state not listed counts as `pdu` with the PDU's own
 * severity: `warning` is a warning, anything else critical.
 */
export const REPORTED_STATES: ReadonlyMap<string, ReportedMeaning> = new Map<string, ReportedMeaning>([
  ["lowload", { severity: "warning", source: "load" }],
  ["phaseloadlow", { severity: "warning", source: "load" }],
  ["nearoverload", { severity: "warning", source: "load" }],
  ["phaseloadnearoverload", { severity: "warning", source: "load" }],
  ["overload", { severity: "critical", source: "load" }],
  ["phaseloadoverload", { severity: "critical", source: "load" }],
  ["tripped", { severity: "critical", source: "tripped" }],
  ["breakertripped", { severity: "critical", source: "tripped" }],
  ["fuseblown", { severity: "critical", source: "tripped" }],
  // An Eaton group's breaker status reads `breakerOff` once the breaker is open.
  ["breakeroff", { severity: "critical", source: "tripped" }],
  // An overcurrent protector's trip sensor reads `open` once it has tripped.
  ["open", { severity: "critical", source: "tripped" }],
]);

/**
 * Reported states that say a thing draws less than its low threshold: what an outlet that is off
 * always does (an APC unit reports `lowLoad` for every outlet switched off), so on an outlet that
 * is off they are not alarms. On an outlet that is on they are (a server that stopped drawing).
 */
export const LOW_LOAD_STATES: ReadonlySet<string> = new Set(["lowload"]);

/** What a reported alarm means, or null when it is not raised. */
export function reportedMeaning(alarm: Alarm): ReportedMeaning | null {
  if (!alarm.raised) return null;
  const known = REPORTED_STATES.get(alarm.state.trim().toLowerCase());
  if (known !== undefined) return known;
  return {
    severity: alarm.severity.trim().toLowerCase() === "warning" ? "warning" : "critical",
    source: "pdu",
  };
}

/** The kind of an entity key: its letters before the number (`breaker1` → `breaker`). */
export function entityKind(key: string): string {
  return key.replace(/[0-9]+$/, "").toLowerCase();
}

/** Entity kinds whose currents are loads even without a rating (their state is shown as a problem). */
const LOAD_KINDS: ReadonlySet<string> = new Set(
  RATING_KINDS.map(([, prefix]) => prefix).filter((p): p is NonNullable<typeof p> => p !== null),
);

/** The instance's rating of a thing from the configuration, or null. */
export function configuredRating(
  ratings: RatingsConfig,
  deviceId: string,
  target: LoadTarget,
): number | null {
  if (target.kind === "outlet") return ratings.Outlets ?? null;
  const entities = ratings.Entities;
  if (entities !== undefined) {
    const own = `${deviceId}/${target.key}`;
    if (Object.hasOwn(entities, own)) return entities[own] ?? null;
    if (Object.hasOwn(entities, target.key)) return entities[target.key] ?? null;
  }
  const kind = entityKind(target.key);
  const row = RATING_KINDS.find(([, prefix]) => prefix === kind);
  return row === undefined ? null : (ratings[row[0]] ?? null);
}

/**
 * Whether a thing has a `current` measurement in units a load can be computed from (`A`, blank or
 * `mA`): without one its load percent is never known, whatever its rating.
 */
export function measuresLoad(measurements: readonly Measurement[]): boolean {
  const m = measurements.find((x) => x.type.toLowerCase() === "current");
  return m !== undefined && (m.units === "A" || m.units === "" || m.units === "mA");
}

/** Amps of a `current` measurement (`A`, blank or `mA`), or null. */
function amps(measurements: readonly Measurement[]): { found: boolean; value: number | null } {
  for (const m of measurements) {
    if (m.type.toLowerCase() !== "current") continue;
    if (m.value === null || !Number.isFinite(m.value)) return { found: true, value: null };
    if (m.units === "A" || m.units === "") return { found: true, value: m.value };
    if (m.units === "mA") return { found: true, value: m.value / 1000 };
    return { found: true, value: null };
  }
  return { found: false, value: null };
}

/**
 * The worst reported meaning of a thing: its own alarm and its measurements' threshold alarms; for
 * an outlet that is `off`, its own low-load state left out ({@link LOW_LOAD_STATES}).
 */
function reportedOf(
  alarm: Alarm,
  measurements: readonly Measurement[],
  off: boolean,
): { meaning: ReportedMeaning; state: string } | null {
  const lowWhileOff = off && LOW_LOAD_STATES.has(alarm.state.trim().toLowerCase());
  let worst: ReportedMeaning | null = lowWhileOff ? null : reportedMeaning(alarm);
  let state = worst === null ? "" : alarm.state;
  for (const m of measurements) {
    if (m.alarm === null) continue;
    const meaning = reportedMeaning(m.alarm);
    if (meaning === null) continue;
    if (worst === null || RANK[meaning.severity] > RANK[worst.severity]) {
      worst = meaning;
      state = m.alarm.state;
    }
  }
  return worst === null ? null : { meaning: worst, state: state.trim() };
}

const whereOf = (target: AlarmTarget): string =>
  target.kind === "outlet"
    ? `outlet/${target.index}`
    : target.kind === "entity"
      ? `entity/${target.key}`
      : "device";

/** Severity first, then device, then where, then source. */
function compareAlarms(a: ActiveAlarm, b: ActiveAlarm): number {
  if (a.severity !== b.severity) return a.severity === "critical" ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The load states of a device's things that have a ratio; a map is made for the first one. */
interface DeviceStates {
  outlets: Map<number, LoadState> | null;
  entities: Map<string, LoadState> | null;
}

const NO_CHANGES: readonly AlarmChange[] = Object.freeze([]);
const NO_ALARMS: readonly ActiveAlarm[] = Object.freeze([]);
const NO_POINTS: readonly LoadPoint[] = Object.freeze([]);

/** What an alarm says besides where it is. */
type AlarmFields = Pick<ActiveAlarm, "source" | "severity" | "percent" | "reported">;

/** One outlet or entity, as the assessment reads it. */
interface Thing {
  readonly target: LoadTarget;
  readonly name: string;
  readonly alarm: Alarm;
  readonly measurements: readonly Measurement[];
  readonly ratedCurrent: number | undefined;
  readonly hidden: boolean;
  /** An outlet that is off (its low-load state is no alarm). */
  readonly off: boolean;
  /** An entity suspected tripped (./trips.ts). */
  readonly tripSuspected: boolean;
}

/** One assessment in progress: what it has found so far. */
interface Assessment {
  readonly at: number;
  readonly states: Map<string, DeviceStates>;
  readonly points: LoadPoint[];
  readonly alarms: Map<string, ActiveAlarm>;
  /** Every point so far is the same thing as the last report's point at its place, hidden alike. */
  samePoints: boolean;
}

/** Numbers the assessments of every tracker (a report's `serial`). */
let lastSerial = 0;

/** The whole percent of a ratio, or null. */
const percentOf = (ratio: number | null): number | null => (ratio === null ? null : Math.round(ratio * 100));

/** `point` when it is of the thing on `deviceId` at `target`, else null. */
function sameThing(point: LoadPoint | undefined, deviceId: string, target: LoadTarget): LoadPoint | null {
  if (point === undefined || point.deviceId !== deviceId || point.target.kind !== target.kind) return null;
  const same =
    target.kind === "outlet"
      ? (point.target as typeof target).index === target.index
      : (point.target as typeof target).key === target.key;
  return same ? point : null;
}

/** Whether two lists of active alarms say the same (same order, every field the surfaces show). */
function sameAlarms(a: readonly ActiveAlarm[], b: readonly ActiveAlarm[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.id !== y.id || x.name !== y.name || x.severity !== y.severity || x.percent !== y.percent)
      return false;
    if (x.reported !== y.reported || x.since !== y.since || x.hidden !== y.hidden) return false;
  }
  return true;
}

/** The load states and alarms of one instance across its snapshots. */
export class LoadTracker {
  readonly #ratings: RatingsConfig;
  readonly #thresholds: LoadThresholds;
  /** The last load state of every thing with a ratio, by device (the hysteresis). */
  #states = new Map<string, DeviceStates>();
  /** The active alarms of the last report, by id. */
  #alarms = new Map<string, ActiveAlarm>();
  /** The last report (what the next one compares with). */
  #last: LoadReport | null = null;
  /** The inferred breaker trips (the currents and outlets of the last snapshot). */
  readonly #trips = new TripWatch();

  constructor(ratings: RatingsConfig, thresholds: LoadThresholds) {
    this.#ratings = ratings;
    this.#thresholds = thresholds;
  }

  /** The report of `snapshot` and the alarms it raised, changed or cleared since the last one. */
  assess(snapshot: Snapshot): { report: LoadReport; changes: readonly AlarmChange[] } {
    const run: Assessment = {
      at: snapshot.timestamp,
      states: new Map(),
      points: [],
      alarms: new Map(),
      samePoints: true,
    };
    for (const device of snapshot.devices) this.#device(run, device);
    this.#trips.endSnapshot(snapshot.devices);
    this.#states = run.states;
    const changes = this.#changes(run);
    this.#alarms = run.alarms;
    const before = this.#last;
    const alarms = run.alarms.size === 0 ? NO_ALARMS : [...run.alarms.values()].sort(compareAlarms);
    const report: LoadReport = Object.freeze({
      points: run.points.length === 0 ? NO_POINTS : Object.freeze(run.points),
      alarms: before !== null && sameAlarms(alarms, before.alarms) ? before.alarms : Object.freeze(alarms),
      serial: ++lastSerial,
      comparedWith: before?.serial ?? 0,
      samePoints: before !== null && run.samePoints && run.points.length === before.points.length,
    });
    this.#last = report;
    return { report, changes };
  }

  /** The alarms raised, changed or cleared since the last report. */
  #changes(run: Assessment): readonly AlarmChange[] {
    if (run.alarms.size === 0 && this.#alarms.size === 0) return NO_CHANGES;
    const changes: AlarmChange[] = [];
    for (const [id, alarm] of run.alarms) {
      const before = this.#alarms.get(id);
      if (before === undefined) changes.push({ change: "raised", alarm, at: run.at });
      else if (before.severity !== alarm.severity || before.reported !== alarm.reported)
        changes.push({ change: "changed", alarm, at: run.at });
    }
    for (const [id, alarm] of this.#alarms)
      if (!run.alarms.has(id)) changes.push({ change: "cleared", alarm, at: run.at });
    return changes.length === 0 ? NO_CHANGES : Object.freeze(changes);
  }

  #device(run: Assessment, device: Device): void {
    const now: DeviceStates = { outlets: null, entities: null };
    const outletsRated = this.#ratings.Outlets !== undefined;
    for (const outlet of device.outlets) {
      // Most outlets have no rating and nothing raised: nothing to assess, nothing allocated.
      if (!outletsRated && outlet.ratedCurrent === undefined && !anyRaised(outlet.alarm, outlet.measurements))
        continue;
      this.#thing(run, device, now, {
        target: { kind: "outlet", index: outlet.index },
        name: outlet.displayName,
        alarm: outlet.alarm,
        measurements: outlet.measurements,
        ratedCurrent: outlet.ratedCurrent,
        hidden: outlet.hidden === true,
        off: outlet.state === "off",
        tripSuspected: false,
      });
    }
    const suspected = this.#trips.device(device, reportsTripNow);
    for (const entity of device.entities) {
      this.#thing(run, device, now, {
        target: { kind: "entity", key: entity.key },
        name: entity.displayName,
        alarm: entity.alarm,
        measurements: entity.measurements,
        ratedCurrent: entity.ratedCurrent,
        hidden: entity.hidden === true,
        off: false,
        tripSuspected: suspected.has(entity.key),
      });
    }
    const own = reportedMeaning(device.alarm);
    if (own !== null) {
      const fields = { ...own, percent: null, reported: device.alarm.state.trim() };
      this.#raise(run, device, { kind: "device" }, device.displayName, fields, false);
    }
    if (now.outlets !== null || now.entities !== null) run.states.set(device.id, now);
  }

  /** The load state of a thing's current against its rating, with the state it had before. */
  #loadState(device: Device, now: DeviceStates, target: LoadTarget, ratio: number): LoadState {
    const before = this.#states.get(device.id);
    const previous =
      (target.kind === "outlet" ? before?.outlets?.get(target.index) : before?.entities?.get(target.key)) ??
      "normal";
    const state = nextLoadState(ratio * 100, previous, this.#thresholds);
    if (target.kind === "outlet") (now.outlets ??= new Map()).set(target.index, state);
    else (now.entities ??= new Map()).set(target.key, state);
    return state;
  }

  /**
   * The configured rating of a thing: read again from the last report's point of the same thing
   * (the configuration of a tracker does not change) unless that one's rating came from the PDU.
   */
  #configuredRating(before: LoadPoint | null, deviceId: string, target: LoadTarget): number | null {
    if (before !== null && before.ratingFrom !== "pdu") return before.rating;
    return configuredRating(this.#ratings, deviceId, target);
  }

  #thing(run: Assessment, device: Device, now: DeviceStates, thing: Thing): void {
    const { target, name, hidden } = thing;
    // The last report's point at the place this thing's point would take: the same thing while the
    // snapshot keeps its shape.
    const before = sameThing(this.#last?.points[run.points.length], device.id, target);
    const reported = reportedOf(thing.alarm, thing.measurements, thing.off);
    const current = amps(thing.measurements);
    const rated = thing.ratedCurrent;
    const fromPdu = rated !== undefined && Number.isFinite(rated) && rated > 0;
    const rating = fromPdu ? rated : this.#configuredRating(before, device.id, target);
    const ratio = rating !== null && current.value !== null ? current.value / rating : null;
    const loadState = ratio === null ? "normal" : this.#loadState(device, now, target, ratio);
    const percent = percentOf(ratio);
    if (loadState !== "normal") {
      const fields = { source: "load" as const, severity: loadState, percent, reported: null };
      this.#raise(run, device, target, name, fields, hidden);
    }
    if (reported !== null) {
      const fields = { ...reported.meaning, percent, reported: reported.state };
      this.#raise(run, device, target, name, fields, hidden);
    }
    if (thing.tripSuspected) {
      const fields = { source: TRIP_SUSPECTED, severity: "critical" as const, percent: null, reported: null };
      this.#raise(run, device, target, name, fields, hidden);
    }
    // A point of the same thing without a rating was one by its kind (which its key fixes).
    const isLoad =
      rating !== null ||
      (target.kind === "entity" &&
        current.found &&
        (before?.rating === null || LOAD_KINDS.has(entityKind(target.key))));
    if (!isLoad) return;
    const pduState = reported === null ? loadState : worse(loadState, reported.meaning.severity);
    const state = thing.tripSuspected ? "critical" : pduState;
    if (before === null || (before.hidden === true) !== hidden) run.samePoints = false;
    const changed =
      before === null ||
      before.name !== name ||
      before.state !== state ||
      percentOf(before.ratio) !== percent ||
      (before.rating === null) !== (rating === null) ||
      (before.hidden === true) !== hidden;
    run.points.push(
      Object.freeze({
        deviceId: device.id,
        target,
        name,
        current: current.value,
        rating,
        ratingFrom: fromPdu ? "pdu" : rating === null ? null : "config",
        ratio,
        loadState,
        state,
        ...(hidden ? { hidden: true as const } : {}),
        changed,
      }),
    );
  }

  /**
   * Adds an alarm; one of the same thing and source already raised in this assessment (a load the
   * rating and the PDU both report) is merged into it: the worse severity, the PDU's state.
   */
  #raise(
    run: Assessment,
    device: Device,
    target: AlarmTarget,
    name: string,
    fields: AlarmFields,
    hidden: boolean,
  ): void {
    const id = `${device.id}/${whereOf(target)}/${fields.source}`;
    const existing = run.alarms.get(id);
    const severity =
      existing === undefined ? fields.severity : worseSeverity(existing.severity, fields.severity);
    const alarm: ActiveAlarm = Object.freeze({
      id,
      deviceId: device.id,
      target,
      name,
      source: fields.source,
      severity,
      percent: fields.percent ?? existing?.percent ?? null,
      reported: fields.reported ?? existing?.reported ?? null,
      since: this.#alarms.get(id)?.since ?? run.at,
      ...(hidden ? { hidden: true as const } : {}),
    });
    run.alarms.set(id, alarm);
  }
}

/** The source of an inferred breaker trip (./trips.ts). */
export const TRIP_SUSPECTED = "breaker-trip-suspected" as const;

/** Whether an alarm or a measurement's threshold alarm says tripped (source `tripped`). */
function saysTripped(alarm: Alarm, measurements: readonly Measurement[]): boolean {
  if (reportedMeaning(alarm)?.source === "tripped") return true;
  for (const m of measurements)
    if (m.alarm !== null && reportedMeaning(m.alarm)?.source === "tripped") return true;
  return false;
}

/** Whether the PDU reports a trip of its own on the device now: then no trip is inferred on it. */
function reportsTripNow(device: Device): boolean {
  if (reportedMeaning(device.alarm)?.source === "tripped") return true;
  for (const e of device.entities) if (saysTripped(e.alarm, e.measurements)) return true;
  for (const o of device.outlets) if (saysTripped(o.alarm, o.measurements)) return true;
  return false;
}

/** Whether the thing's alarm or a measurement's threshold alarm is raised. */
function anyRaised(alarm: Alarm, measurements: readonly Measurement[]): boolean {
  if (alarm.raised) return true;
  for (const m of measurements) if (m.alarm?.raised === true) return true;
  return false;
}

function worseSeverity(a: AlarmSeverity, b: AlarmSeverity): AlarmSeverity {
  return a === "critical" || b === "critical" ? "critical" : "warning";
}

/** The report of a snapshot with nothing to compare (no tracker). */
export const EMPTY_REPORT: LoadReport = Object.freeze({
  points: NO_POINTS,
  alarms: NO_ALARMS,
  serial: 0,
  comparedWith: 0,
  samePoints: false,
});

/** The state of a device: the worst of its alarms. */
export function deviceState(report: LoadReport, deviceId: string): LoadState {
  let state: LoadState = "normal";
  for (const a of report.alarms) if (a.deviceId === deviceId) state = worse(state, a.severity);
  return state;
}

/** An active alarm as every surface writes it (MQTT, REST, the console). */
export interface AlarmJson {
  readonly instanceId: string;
  readonly id: string;
  readonly deviceId: string;
  readonly target: ActiveAlarm["target"];
  readonly name: string;
  readonly source: AlarmSource;
  readonly severity: AlarmSeverity;
  readonly percent: number | null;
  readonly reported: string | null;
  readonly sinceUtc: string;
}

export function alarmJson(instanceId: string, alarm: ActiveAlarm): AlarmJson {
  return {
    instanceId,
    id: alarm.id,
    deviceId: alarm.deviceId,
    target: alarm.target,
    name: alarm.name,
    source: alarm.source,
    severity: alarm.severity,
    percent: alarm.percent,
    reported: alarm.reported,
    sinceUtc: new Date(alarm.since).toISOString(),
  };
}

/** A load as the `load` topics and the console write it: whole percent and the state. */
export function loadJson(point: LoadPoint): { readonly percent: number | null; readonly state: LoadState } {
  return { percent: point.ratio === null ? null : Math.round(point.ratio * 100), state: point.state };
}
