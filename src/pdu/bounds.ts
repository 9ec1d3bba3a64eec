/**
 * Bounds on what a PDU sends (docs/reliability.md, "Bounds on what a PDU sends"): the lengths of the
 * names and texts of a snapshot and the counts of its parts. Vendor-neutral: the poller applies them
 * to the snapshot every driver returns ({@link SnapshotBounds}), before anything else of the service
 * sees it, so a family's parser needs no rules of its own (it may use the constants to stop reading
 * early). Everything a PDU names is repeated downstream (every REST reading carries its device's id
 * and display name, every MQTT topic its ids), so one long string or one huge answer would cost its
 * size many times over.
 *
 * Over a bound:
 * - an id that is too long (device id, entity key, measurement type, group key): the thing it names
 *   is left out, never cut into a different id; a device left out takes its outlets and entities,
 *   and its outlets leave the groups; an outlet's `feedsFrom` (an entity key) that is too long is
 *   left out of the outlet (not known);
 * - a text that is too long (name, label, state, alarm, power-on action, units, identity fields),
 *   or that breaks the one rule for display text (./display.ts: a control character, or one that
 *   changes how text is displayed, such as U+202E): read as blank, and a display name made of it
 *   falls back as the driver's would (name, then the id or `Outlet <n>`);
 * - a count that is too large (devices, outlets, entities, measurements, groups, members): the whole
 *   answer is refused (a poll failure naming the bound): which part to leave out would be a guess;
 * - an answer whose every device is left out is refused too: a PDU is never turned into no devices.
 *
 * What is left out or blanked is listed in the snapshot's `warnings` (logged once per path by the
 * poller, shown in /health/integrations); a refusal is the instance's `lastError`.
 *
 * Cost: one read-only pass over a changed snapshot, counting its parts and reading its lengths with
 * nothing allocated ({@link passesAsIs}); only a snapshot that fails it is walked again to be
 * bounded (counts first, then a copy of what is over a bound). A snapshot the driver returned
 * restamped (model.ts `restamp`, the PDU answered exactly as before) is not checked again.
 */
import { PduError } from "./errors.js";
import {
  restamp,
  sameContent,
  type Alarm,
  type Device,
  type Entity,
  type Group,
  type GroupMeasurement,
  type Measurement,
  type Outlet,
  type OutletRef,
  type ParseWarning,
  type PduSystem,
  type Snapshot,
} from "./model.js";
import { displayTextProblem } from "../display.js";
import { quoteName } from "../names.js";

/** The bounds, in UTF-16 code units for lengths. */
export const PDU_BOUNDS = Object.freeze({
  /** Device ids, entity keys, measurement types, group keys and rollup keys. */
  idChars: 256,
  /** Names, labels, display names, states, alarm states and severities, power-on actions, identity fields. */
  textChars: 256,
  /** Units of a measurement. */
  unitsChars: 32,
  /** Devices of one answer. */
  devices: 256,
  /** Outlets of one device. */
  outletsPerDevice: 256,
  /** Outlets of one answer. */
  outlets: 4096,
  /** Entities of one device. */
  entitiesPerDevice: 256,
  /** Measurements of one outlet, entity or group. */
  measurementsPerPart: 64,
  /** Measurements of one answer (outlets, entities and group rollups): 4096 outlets of 6 and more. */
  measurements: 32_768,
  /** OneView groups of one answer. */
  groups: 256,
  /** Warnings kept on a snapshot (the driver's and these); the last one counts the rest. */
  warnings: 20,
});

/** A warning's path and problem are cut to these many characters. */
const MAX_WARNING_PATH = 300;
const MAX_WARNING_PROBLEM = 500;

/** Thrown for an answer the bounds refuse: a poll failure (`malformed`) whose message names the bound. */
export class BoundsError extends PduError {
  constructor(problem: string) {
    super("malformed", `answer refused: ${problem}`);
  }
}

/**
 * The bounds of one instance: checks each snapshot its driver returns, and remembers the last
 * outcome so that a restamped snapshot (the same content polled again) costs nothing.
 */
export class SnapshotBounds {
  /** The last snapshot checked, and what came of it (the bounded snapshot, or the refusal). */
  #last: {
    readonly raw: Snapshot;
    readonly bounded: Snapshot | null;
    readonly refusal: BoundsError | null;
  } | null = null;

  /** `snapshot` within the bounds: itself when nothing is over one, else a copy; throws a BoundsError to refuse it. */
  apply(snapshot: Snapshot): Snapshot {
    const last = this.#last;
    if (last !== null && sameContent(snapshot, last.raw)) {
      if (last.refusal !== null) throw last.refusal;
      const bounded = last.bounded!;
      return bounded === last.raw ? snapshot : restamp(bounded, snapshot.timestamp);
    }
    try {
      const bounded = passesAsIs(snapshot) ? snapshot : boundSnapshot(snapshot);
      this.#last = { raw: snapshot, bounded, refusal: null };
      return bounded;
    } catch (error) {
      if (error instanceof BoundsError) this.#last = { raw: snapshot, bounded: null, refusal: error };
      throw error;
    }
  }
}

/** The warnings of one check (the driver's first), bounded. */
class Notes {
  readonly list: ParseWarning[] = [];
  more = 0;
  changed = false;

  constructor(driver: readonly ParseWarning[] | undefined) {
    for (const w of driver ?? []) {
      const path = cut(w.path, MAX_WARNING_PATH);
      const problem = cut(w.problem, MAX_WARNING_PROBLEM);
      if (path !== w.path || problem !== w.problem) this.changed = true;
      this.push(path === w.path && problem === w.problem ? w : Object.freeze({ path, problem }));
    }
  }

  push(warning: ParseWarning): void {
    if (this.list.length >= PDU_BOUNDS.warnings) {
      this.more++;
      this.changed = true;
      return;
    }
    this.list.push(warning);
  }

  add(path: string, problem: string): void {
    this.changed = true;
    this.push(Object.freeze({ path: cut(path, MAX_WARNING_PATH), problem }));
  }

  result(): readonly ParseWarning[] {
    if (this.more > 0) {
      const last = this.list[this.list.length - 1]!;
      this.list[this.list.length - 1] = Object.freeze({
        path: last.path,
        problem: `${last.problem} (and ${this.more} more)`,
      });
    }
    return Object.freeze(this.list);
  }
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

const tooLong = (what: string, length: number, max: number, outcome: string): string =>
  `${what} of ${length} characters is longer than ${max}; ${outcome}`;

function refuse(problem: string): never {
  throw new BoundsError(problem);
}

function count(n: number, max: number, what: string): void {
  if (n > max) refuse(`${what} ${n}, more than ${max}`);
}

/**
 * Any character of the one display rule's (./display.ts): controls, noncharacters, surrogates
 * (checked in full by {@link displayTextProblem}), bidirectional formatting, line and paragraph
 * separators. A fast test: most texts have none.
 */
const SUSPECT =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
  /[\u0000-\u001f\u007f-\u009f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

/** Why `value` may not be shown, or null (the one display rule, with a fast path). */
const undisplayable = (value: string): string | null =>
  SUSPECT.test(value) ? displayTextProblem(value) : null;

/** Whether a text passes as it is: within `max` and displayable. */
const fits = (value: string, max: number): boolean => value.length <= max && undisplayable(value) === null;

/** `value`, or "" with a warning when it is longer than `max` or may not be shown. */
function text(value: string, max: number, notes: Notes, path: () => string, what: string): string {
  if (value.length > max) {
    notes.add(`${path()}.${what}`, tooLong(what, value.length, max, "read as blank"));
    return "";
  }
  const problem = undisplayable(value);
  if (problem === null) return value;
  notes.add(`${path()}.${what}`, `${what} ${quoteName(value, 40)} ${problem}; read as blank`);
  return "";
}

/** The display name as a driver makes it: label, else name, else `fallback` (blank means absent). */
function display(label: string, name: string, fallback: string): string {
  return label.trim() !== "" ? label : name.trim() !== "" ? name : fallback;
}

/**
 * A device's or group's name and label within the bounds, and its display name made again from
 * them (else `fallback`, its id) when either was blanked or the display name itself is too long.
 */
function boundNames(
  o: { readonly name: string; readonly label: string; readonly displayName: string },
  fallback: string,
  notes: Notes,
  path: () => string,
): { name: string; label: string; displayName: string } {
  const max = PDU_BOUNDS.textChars;
  const name = text(o.name, max, notes, path, "name");
  const label = text(o.label, max, notes, path, "label");
  const displayName =
    fits(o.displayName, max) && name === o.name && label === o.label
      ? o.displayName
      : display(label, name, fallback);
  return { name, label, displayName };
}

const idPath = (id: string): string => quoteName(id);

/** Checks the counts first (refusing before anything is copied), then every length. */
function boundSnapshot(s: Snapshot): Snapshot {
  checkCounts(s);
  const notes = new Notes(s.warnings);
  const systems = new Map<PduSystem, PduSystem>();
  const system = boundSystem(s.system, systems, notes, () => "system");
  const left = new Set<string>();
  let devices: Device[] | null = null;
  for (let i = 0; i < s.devices.length; i++) {
    const d = s.devices[i]!;
    let next: Device | null;
    if (d.id.length > PDU_BOUNDS.idChars) {
      const problem = tooLong("device id", d.id.length, PDU_BOUNDS.idChars, "the device is left out");
      notes.add(`devices[${i}]`, problem);
      left.add(d.id);
      next = null;
    } else next = boundDevice(d, systems, notes);
    if (devices === null && next !== d) devices = s.devices.slice(0, i);
    if (devices !== null && next !== null) devices.push(next);
  }
  if (s.devices.length > 0 && devices !== null && devices.length === 0) {
    const first = notes.list.find((w) => w.problem.endsWith("the device is left out"));
    refuse(`every device of the answer is left out: ${first?.problem ?? "over the bounds"}`);
  }
  let groups: Group[] | null = null;
  for (let i = 0; i < s.groups.length; i++) {
    const g = s.groups[i]!;
    const next = boundGroup(g, i, left, notes);
    if (groups === null && next !== g) groups = s.groups.slice(0, i);
    if (groups !== null && next !== null) groups.push(next);
  }
  if (devices === null && groups === null && system === s.system && !notes.changed) return s;
  return Object.freeze({
    ...s,
    system,
    devices: devices === null ? s.devices : Object.freeze(devices),
    groups: groups === null ? s.groups : Object.freeze(groups),
    warnings: notes.result(),
  });
}

function checkCounts(s: Snapshot): void {
  count(s.devices.length, PDU_BOUNDS.devices, "devices in the answer:");
  count(s.groups.length, PDU_BOUNDS.groups, "groups in the answer:");
  let outlets = 0;
  let measurements = 0;
  for (const d of s.devices) {
    const where = `device ${quoteName(d.id)}`;
    count(d.outlets.length, PDU_BOUNDS.outletsPerDevice, `outlets on ${where}:`);
    count(d.entities.length, PDU_BOUNDS.entitiesPerDevice, `entities on ${where}:`);
    outlets += d.outlets.length;
    for (const o of d.outlets) {
      count(o.measurements.length, PDU_BOUNDS.measurementsPerPart, `measurements of an outlet on ${where}:`);
      measurements += o.measurements.length;
    }
    for (const e of d.entities) {
      count(e.measurements.length, PDU_BOUNDS.measurementsPerPart, `measurements of an entity on ${where}:`);
      measurements += e.measurements.length;
    }
  }
  for (const g of s.groups) {
    count(
      g.measurements.length,
      PDU_BOUNDS.measurementsPerPart,
      `measurements of group ${quoteName(g.key)}:`,
    );
    count(g.members.length, PDU_BOUNDS.outlets, `members of group ${quoteName(g.key)}:`);
    measurements += g.measurements.length;
  }
  count(outlets, PDU_BOUNDS.outlets, "outlets in the answer:");
  count(measurements, PDU_BOUNDS.measurements, "measurements in the answer:");
}

const SYSTEM_FIELDS = [
  "label",
  "oem",
  "model",
  "modelNumber",
  "serialNumber",
  "hardwareVersion",
  "firmwareVersion",
  "apiVersion",
  "macAddress",
  "ipAddress",
] as const;

/** A unit's identity within the bounds; each distinct object is checked once per snapshot. */
function boundSystem(
  system: PduSystem,
  seen: Map<PduSystem, PduSystem>,
  notes: Notes,
  path: () => string,
): PduSystem {
  const known = seen.get(system);
  if (known !== undefined) return known;
  let out: Record<string, string> | null = null;
  for (const field of SYSTEM_FIELDS) {
    const value = system[field];
    if (fits(value, PDU_BOUNDS.textChars)) continue;
    out ??= { ...system };
    out[field] = text(value, PDU_BOUNDS.textChars, notes, path, field);
  }
  const bounded = out === null ? system : (Object.freeze(out) as unknown as PduSystem);
  seen.set(system, bounded);
  return bounded;
}

// ---- fast checks: reads only, no allocation; the copying paths below run only when one fails ----

const TEXT = PDU_BOUNDS.textChars;

function alarmFits(alarm: Alarm): boolean {
  return fits(alarm.state, TEXT) && fits(alarm.severity, TEXT);
}

function measurementsFit(list: readonly Measurement[]): boolean {
  for (const m of list) {
    if (m.type.length > PDU_BOUNDS.idChars || !fits(m.units, PDU_BOUNDS.unitsChars)) return false;
    if (m.alarm !== null && !alarmFits(m.alarm)) return false;
  }
  return true;
}

function outletFits(o: Outlet): boolean {
  return (
    Number.isSafeInteger(o.index) &&
    o.index >= 0 &&
    fits(o.name, TEXT) &&
    fits(o.label, TEXT) &&
    fits(o.displayName, TEXT) &&
    (o.poaAction === null || fits(o.poaAction, TEXT)) &&
    (o.feedsFrom === undefined || o.feedsFrom.length <= PDU_BOUNDS.idChars) &&
    alarmFits(o.alarm) &&
    measurementsFit(o.measurements)
  );
}

function entityFits(e: Entity): boolean {
  return (
    e.key.length <= PDU_BOUNDS.idChars &&
    fits(e.name, TEXT) &&
    fits(e.label, TEXT) &&
    fits(e.displayName, TEXT) &&
    alarmFits(e.alarm) &&
    measurementsFit(e.measurements)
  );
}

function systemFits(system: PduSystem): boolean {
  for (const field of SYSTEM_FIELDS) if (!fits(system[field], TEXT)) return false;
  return true;
}

function warningsFit(warnings: readonly ParseWarning[] | undefined): boolean {
  if (warnings === undefined) return true;
  if (warnings.length > PDU_BOUNDS.warnings) return false;
  for (const w of warnings)
    if (w.path.length > MAX_WARNING_PATH || w.problem.length > MAX_WARNING_PROBLEM) return false;
  return true;
}

function deviceFits(d: Device): boolean {
  return (
    d.id.length <= PDU_BOUNDS.idChars &&
    d.outlets.length <= PDU_BOUNDS.outletsPerDevice &&
    d.entities.length <= PDU_BOUNDS.entitiesPerDevice &&
    fits(d.name, TEXT) &&
    fits(d.label, TEXT) &&
    fits(d.displayName, TEXT) &&
    fits(d.type, TEXT) &&
    fits(d.state, TEXT) &&
    alarmFits(d.alarm) &&
    systemFits(d.system)
  );
}

function groupFits(g: Group): boolean {
  if (
    g.key.length > PDU_BOUNDS.idChars ||
    g.measurements.length > PDU_BOUNDS.measurementsPerPart ||
    g.members.length > PDU_BOUNDS.outlets ||
    !fits(g.name, TEXT) ||
    !fits(g.label, TEXT) ||
    !fits(g.displayName, TEXT) ||
    !fits(g.state, TEXT)
  )
    return false;
  for (const m of g.measurements) {
    if (m.key.length > PDU_BOUNDS.idChars || m.type.length > PDU_BOUNDS.idChars) return false;
    if (!fits(m.units, PDU_BOUNDS.unitsChars)) return false;
  }
  return true;
}

/**
 * Whether the snapshot passes the bounds as it is (what {@link boundSnapshot} would return
 * unchanged): every count, id, text and driver warning within its bound. Reads only; anything else
 * (a count over a bound included) is left to {@link boundSnapshot}, which refuses or copies.
 */
function passesAsIs(s: Snapshot): boolean {
  if (s.devices.length > PDU_BOUNDS.devices || s.groups.length > PDU_BOUNDS.groups) return false;
  if (!warningsFit(s.warnings) || !systemFits(s.system)) return false;
  let outlets = 0;
  let measurements = 0;
  for (const d of s.devices) {
    if (!deviceFits(d)) return false;
    outlets += d.outlets.length;
    for (const o of d.outlets) {
      if (o.measurements.length > PDU_BOUNDS.measurementsPerPart || !outletFits(o)) return false;
      measurements += o.measurements.length;
    }
    for (const e of d.entities) {
      if (e.measurements.length > PDU_BOUNDS.measurementsPerPart || !entityFits(e)) return false;
      measurements += e.measurements.length;
    }
  }
  for (const g of s.groups) {
    if (!groupFits(g)) return false;
    measurements += g.measurements.length;
  }
  return outlets <= PDU_BOUNDS.outlets && measurements <= PDU_BOUNDS.measurements;
}

function boundAlarm(alarm: Alarm, notes: Notes, path: () => string): Alarm {
  const max = PDU_BOUNDS.textChars;
  if (fits(alarm.state, max) && fits(alarm.severity, max)) return alarm;
  const state = text(alarm.state, max, notes, () => `${path()}.alarm`, "state");
  const severity = text(alarm.severity, max, notes, () => `${path()}.alarm`, "severity");
  // A blank state is a clear alarm (model.ts); an over-long one is no state the model raises on.
  return Object.freeze({
    state: state === "" ? "none" : state,
    severity,
    raised: state === "" ? false : alarm.raised,
  });
}

/** Measurements within the bounds: one with an over-long type is left out, over-long units read blank. */
function boundMeasurements(
  list: readonly Measurement[],
  notes: Notes,
  path: () => string,
): readonly Measurement[] {
  let out: Measurement[] | null = null;
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    let next: Measurement | null = m;
    if (m.type.length > PDU_BOUNDS.idChars) {
      const problem = tooLong(
        "measurement type",
        m.type.length,
        PDU_BOUNDS.idChars,
        "the measurement is left out",
      );
      notes.add(`${path()}.measurements[${i}]`, problem);
      next = null;
    } else if (
      !fits(m.units, PDU_BOUNDS.unitsChars) ||
      (m.alarm !== null &&
        (!fits(m.alarm.state, PDU_BOUNDS.textChars) || !fits(m.alarm.severity, PDU_BOUNDS.textChars)))
    ) {
      const at = () => `${path()}.measurements.${quoteName(m.type)}`;
      next = {
        ...m,
        units: text(m.units, PDU_BOUNDS.unitsChars, notes, at, "units"),
        alarm: m.alarm === null ? null : boundAlarm(m.alarm, notes, at),
      };
    }
    if (out === null && next !== m) out = list.slice(0, i);
    if (out !== null && next !== null) out.push(next);
  }
  return out === null ? list : Object.freeze(out);
}

function textsOver(...values: readonly string[]): boolean {
  for (const v of values) if (!fits(v, PDU_BOUNDS.textChars)) return true;
  return false;
}

function boundOutlet(o: Outlet, notes: Notes, devicePath: () => string): Outlet | null {
  if (outletFits(o)) return o;
  const path = () => `${devicePath()}.outlets[${o.index}]`;
  if (!Number.isSafeInteger(o.index) || o.index < 0) {
    notes.add(
      `${devicePath()}.outlets`,
      `outlet index ${String(o.index)} is not a whole number from 0; the outlet is left out`,
    );
    return null;
  }
  const measurements = boundMeasurements(o.measurements, notes, path);
  const alarm = boundAlarm(o.alarm, notes, path);
  const feedsFromOver = o.feedsFrom !== undefined && o.feedsFrom.length > PDU_BOUNDS.idChars;
  if (
    measurements === o.measurements &&
    alarm === o.alarm &&
    !feedsFromOver &&
    !textsOver(o.name, o.label, o.displayName) &&
    (o.poaAction === null || o.poaAction.length <= PDU_BOUNDS.textChars)
  )
    return o;
  const max = PDU_BOUNDS.textChars;
  const name = text(o.name, max, notes, path, "name");
  const label = text(o.label, max, notes, path, "label");
  const poaAction = o.poaAction === null ? null : text(o.poaAction, max, notes, path, "poaAction") || null;
  const displayName =
    fits(o.displayName, max) && name === o.name && label === o.label
      ? o.displayName
      : display(label, name, `Outlet ${o.index + 1}`);
  const bounded: { -readonly [K in keyof Outlet]: Outlet[K] } = {
    ...o,
    name,
    label,
    displayName,
    poaAction,
    alarm,
    measurements,
  };
  if (feedsFromOver) {
    const problem = tooLong("feedsFrom", o.feedsFrom.length, PDU_BOUNDS.idChars, "left out (not known)");
    notes.add(`${path()}.feedsFrom`, problem);
    delete bounded.feedsFrom;
  }
  return bounded;
}

function boundEntity(e: Entity, i: number, notes: Notes, devicePath: () => string): Entity | null {
  if (entityFits(e)) return e;
  if (e.key.length > PDU_BOUNDS.idChars) {
    const problem = tooLong("entity key", e.key.length, PDU_BOUNDS.idChars, "the entity is left out");
    notes.add(`${devicePath()}.entities[${i}]`, problem);
    return null;
  }
  const path = () => `${devicePath()}.entities.${quoteName(e.key)}`;
  const measurements = boundMeasurements(e.measurements, notes, path);
  const alarm = boundAlarm(e.alarm, notes, path);
  if (measurements === e.measurements && alarm === e.alarm && !textsOver(e.name, e.label, e.displayName))
    return e;
  const max = PDU_BOUNDS.textChars;
  const name = text(e.name, max, notes, path, "name");
  const label = text(e.label, max, notes, path, "label");
  const displayName =
    fits(e.displayName, max) && name === e.name && label === e.label
      ? e.displayName
      : display(label, name, e.key);
  return { ...e, name, label, displayName, alarm, measurements };
}

function boundDevice(d: Device, systems: Map<PduSystem, PduSystem>, notes: Notes): Device {
  const path = () => `devices.${idPath(d.id)}`;
  let outlets: Outlet[] | null = null;
  for (let i = 0; i < d.outlets.length; i++) {
    const o = d.outlets[i]!;
    const next = boundOutlet(o, notes, path);
    if (outlets === null && next !== o) outlets = d.outlets.slice(0, i);
    if (outlets !== null && next !== null) outlets.push(next);
  }
  let entities: Entity[] | null = null;
  for (let i = 0; i < d.entities.length; i++) {
    const e = d.entities[i]!;
    const next = boundEntity(e, i, notes, path);
    if (entities === null && next !== e) entities = d.entities.slice(0, i);
    if (entities !== null && next !== null) entities.push(next);
  }
  const system = boundSystem(d.system, systems, notes, () => `${path()}.system`);
  const alarm = boundAlarm(d.alarm, notes, path);
  if (
    outlets === null &&
    entities === null &&
    system === d.system &&
    alarm === d.alarm &&
    !textsOver(d.name, d.label, d.displayName, d.type, d.state)
  )
    return d;
  const max = PDU_BOUNDS.textChars;
  return {
    ...d,
    ...boundNames(d, d.id, notes, path),
    type: text(d.type, max, notes, path, "type"),
    state: text(d.state, max, notes, path, "state"),
    alarm,
    system,
    outlets: outlets === null ? d.outlets : Object.freeze(outlets),
    entities: entities === null ? d.entities : Object.freeze(entities),
  };
}

function boundGroupMeasurements(
  list: readonly GroupMeasurement[],
  notes: Notes,
  path: string,
): readonly GroupMeasurement[] {
  let out: GroupMeasurement[] | null = null;
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    let next: GroupMeasurement | null = m;
    const id = Math.max(m.key.length, m.type.length);
    if (id > PDU_BOUNDS.idChars) {
      const problem = tooLong("rollup key", id, PDU_BOUNDS.idChars, "the rollup is left out");
      notes.add(`${path}.measurements[${i}]`, problem);
      next = null;
    } else if (!fits(m.units, PDU_BOUNDS.unitsChars)) {
      next = {
        ...m,
        units: text(
          m.units,
          PDU_BOUNDS.unitsChars,
          notes,
          () => `${path}.measurements.${quoteName(m.key)}`,
          "units",
        ),
      };
    }
    if (out === null && next !== m) out = list.slice(0, i);
    if (out !== null && next !== null) out.push(next);
  }
  return out === null ? list : Object.freeze(out);
}

function boundGroup(g: Group, i: number, left: ReadonlySet<string>, notes: Notes): Group | null {
  if (g.key.length > PDU_BOUNDS.idChars) {
    notes.add(
      `groups[${i}]`,
      tooLong("group key", g.key.length, PDU_BOUNDS.idChars, "the group is left out"),
    );
    return null;
  }
  const path = `groups.${quoteName(g.key)}`;
  const at = () => path;
  const measurements = boundGroupMeasurements(g.measurements, notes, path);
  let members: readonly OutletRef[] = g.members;
  if (left.size > 0 && members.some((m) => left.has(m.deviceId)))
    members = Object.freeze(members.filter((m) => !left.has(m.deviceId)));
  if (
    measurements === g.measurements &&
    members === g.members &&
    !textsOver(g.name, g.label, g.displayName, g.state)
  )
    return g;
  const max = PDU_BOUNDS.textChars;
  return {
    ...g,
    ...boundNames(g, g.key, notes, at),
    state: text(g.state, max, notes, at, "state"),
    members,
    measurements,
  };
}
