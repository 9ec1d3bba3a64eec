/**
 * Wire → model: turns the `data` of `GET /api` (one unit) or `GET /oneview` (a cluster) into a
 * normalised, frozen {@link Snapshot} (docs/architecture.md, the snapshot model).
 *
 * Tolerance rules:
 * - Unknown properties are ignored everywhere.
 * - Scalars (names, labels, states, delays, ports, ...) that are missing or of the wrong type get
 *   defaults: "" for strings, null for numbers, false for flags, a clear alarm for alarms.
 * - Numbers may arrive as JSON numbers or as decimal strings; anything else ("n/a", "") is null.
 *
 * Essential parts (a malformed one throws a {@link ParseError} naming the JSON path, so the poll fails
 * cleanly and the previous snapshot is kept instead of being replaced by a half-empty one):
 * - the tree itself is an object; `dev` (single) / `host` (OneView) is an object;
 * - a single-unit tree has at least one device; a OneView tree has at least one host and at least
 *   one device over all hosts;
 * - every device, host, outlet, outlet measurement and group is an object, and every map that holds
 *   them (`outlet`, an outlet's `measurement`, `cache`, `groupMap...`, `group`), when present, is an
 *   object (absent or null means empty);
 * - outlet keys (in `outlet` and in `groupMap`) are canonical non-negative integer strings ("0", "11");
 * - every outlet measurement has a non-empty string `type`;
 * - a device id appears in only one OneView host.
 *
 * Optional parts (a malformed one is dropped, and recorded as a {@link ParseWarning} on the snapshot
 * with its JSON path; everything else is kept): entities and their measurements, group rollups
 * (`group.<key>.entity.outlet|pduTotal.<n>` nodes and their measurements), alarms, and the `sys` /
 * `conf.network` identity fields. Parts that are never read (`layout`, `point`, `auth`, top-level
 * `alarm`, `info`, `cli`, unknown fields) may hold anything. docs/reliability.md lists the same.
 *
 * OneView group membership: an outlet belongs to the group whose key equals its groupMap `group`
 * case-insensitively. `null`, a missing `group` and "" all mean the built-in `unassigned` group
 * (an outlet with no group is by definition unassigned, and the PDU reports both `null` and
 * "unassigned"). Only outlets present in the snapshot become members, so every member can be
 * routed and controlled. The built-in `total` group gets members only if the groupMap names it.
 *
 * Hot path (up to 1000 PDUs every few seconds): one pass over the tree, JSON paths are built only
 * when an error is thrown, identical alarms are shared, and only arrays and the snapshot are frozen.
 */
import { ParseError } from "../errors.js";
import {
  compareKeys,
  isAlarmRaised,
  type Alarm,
  type Device,
  type Entity,
  type Group,
  type GroupMeasurement,
  type Measurement,
  type Outlet,
  type OutletRef,
  type OutletState,
  type ParseWarning,
  type PduSystem,
  type Snapshot,
} from "../model.js";
import { quoteName } from "../../names.js";
import { GEIST_VENDOR, type ProxyRoute } from "./wire.js";

type Obj = Record<string, unknown>;

/** Location of the value being parsed, as path segments below `$`. Mutated with push/pop while walking. */
type Path = string[];

const EMPTY: readonly never[] = Object.freeze([]);
const EMPTY_OBJ: Obj = Object.freeze({});
const OUTLET_KEY = /^(?:0|[1-9][0-9]{0,8})$/;
const DECIMAL = /^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$/;
const INTEGER = /^\s*[0-9]+\s*$/;
const PLAIN_SEGMENT = /^[A-Za-z0-9_-]+$/;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A key in a JSON path is cut to this many characters (a PDU's keys can be as long as its answer). */
const MAX_PATH_SEGMENT = 64;

function formatPath(path: Path, extra: readonly string[]): string {
  let out = "$";
  for (const seg of [...path, ...extra]) {
    if (seg.length > MAX_PATH_SEGMENT) out += `[${JSON.stringify(seg.slice(0, MAX_PATH_SEGMENT))}…]`;
    else out += PLAIN_SEGMENT.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`;
  }
  return out;
}

function fail(path: Path, problem: string, ...extra: string[]): never {
  throw new ParseError(formatPath(path, extra), problem);
}

/** Warnings kept per snapshot; further ones are only counted. */
export const MAX_PARSE_WARNINGS = 20;
/** A warning's path is cut to this many characters (PDU-supplied keys can be long). */
const MAX_WARNING_PATH = 300;

/** Collects the optional parts dropped during one parse (bounded). */
class Warnings {
  readonly list: ParseWarning[] = [];
  more = 0;

  add(path: Path, problem: string, ...extra: string[]): void {
    if (this.list.length >= MAX_PARSE_WARNINGS) {
      this.more++;
      return;
    }
    let where = formatPath(path, extra);
    if (where.length > MAX_WARNING_PATH) where = `${where.slice(0, MAX_WARNING_PATH)}…`;
    this.list.push(Object.freeze({ path: where, problem }));
  }

  result(): readonly ParseWarning[] {
    if (this.list.length === 0) return EMPTY;
    if (this.more > 0) {
      const last = this.list[this.list.length - 1];
      if (last !== undefined)
        this.list[this.list.length - 1] = Object.freeze({
          path: last.path,
          problem: `${last.problem} (and ${this.more} more malformed optional parts)`,
        });
    }
    return Object.freeze(this.list);
  }
}

/** An optional map child: absent/null → undefined; an object → it; anything else → a warning and undefined. */
function softMap(parent: Obj, key: string, path: Path, w: Warnings, dropped: string): Obj | undefined {
  const v = parent[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) {
    w.add(path, `expected an object; ${dropped} dropped`, key);
    return undefined;
  }
  return v;
}

/** A map child: absent/null → undefined; an object → it; anything else → ParseError at `path.key`. */
function optionalMap(parent: Obj, key: string, path: Path): Obj | undefined {
  const v = parent[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) fail(path, "expected an object", key);
  return v;
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** A finite number from a JSON number or a decimal string; otherwise null. */
function toNumber(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v !== "string" || !DECIMAL.test(v)) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** `lifetimeEnergy`: a non-negative integer in a string (a JSON integer is tolerated); otherwise null. */
function toCounter(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && INTEGER.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function isBlank(s: string): boolean {
  return s === "" || s.trim() === "";
}

function displayName(label: string, name: string, fallback: string): string {
  return !isBlank(label) ? label : !isBlank(name) ? name : fallback;
}

/** ASCII case-insensitive order without allocating lower-case copies; ties broken by code unit. */
function compareCaseInsensitive(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x >= 65 && x <= 90) x += 32;
    if (y >= 65 && y <= 90) y += 32;
    if (x !== y) return x - y;
  }
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : 1;
}

function compareOrdinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- alarms: the same few {state, severity} pairs repeat on every outlet, so share them (bounded) ----

const NO_ALARM: Alarm = Object.freeze({ state: "none", severity: "", raised: false });
const alarmCache = new Map<string, Map<string, Alarm>>();
const ALARM_CACHE_LIMIT = 32;

/**
 * Measurement types, each once. JSON.parse shares strings of up to 10 characters between answers
 * but makes a new `apparentPower` and `powerFactor` for every outlet of every poll, and a snapshot
 * lives a whole interval. Bounded: a PDU inventing types gets its own strings past the limit.
 */
const typeCache = new Map<string, string>();
const TYPE_CACHE_LIMIT = 256;
/** Strings longer than this are never cached (the caches live as long as the process). */
const CACHED_CHARS = 64;

function interned(type: string): string {
  const known = typeCache.get(type);
  if (known !== undefined) return known;
  if (typeCache.size < TYPE_CACHE_LIMIT && type.length <= CACHED_CHARS) typeCache.set(type, type);
  return type;
}

/**
 * `parent.alarm`: absent/null is clear; a non-object, or a non-string state/severity, is an optional
 * part gone wrong: a warning, and the alarm reads clear (the part that is a string is kept).
 */
function alarmOf(parent: Obj, path: Path, w: Warnings): Alarm {
  const v = parent.alarm;
  if (v === undefined || v === null) return NO_ALARM;
  if (!isObj(v)) {
    w.add(path, "alarm is not an object; read as clear", "alarm");
    return NO_ALARM;
  }
  if (v.state !== undefined && v.state !== null && typeof v.state !== "string")
    w.add(path, "alarm state is not a string; read as clear", "alarm", "state");
  if (v.severity !== undefined && v.severity !== null && typeof v.severity !== "string")
    w.add(path, "alarm severity is not a string; read as blank", "alarm", "severity");
  const rawState = str(v.state);
  const state = isBlank(rawState) ? "none" : rawState;
  const severity = str(v.severity);
  let bySeverity = alarmCache.get(state);
  if (bySeverity === undefined && alarmCache.size < ALARM_CACHE_LIMIT && state.length <= CACHED_CHARS) {
    bySeverity = new Map();
    alarmCache.set(state, bySeverity);
  }
  let alarm = bySeverity?.get(severity);
  if (alarm === undefined) {
    alarm = Object.freeze({ state, severity, raised: isAlarmRaised(state) });
    if (bySeverity !== undefined && bySeverity.size < ALARM_CACHE_LIMIT && severity.length <= CACHED_CHARS)
      bySeverity.set(severity, alarm);
  }
  return alarm;
}

// ---- single-unit tree ----

function byType(a: Measurement, b: Measurement): number {
  return compareCaseInsensitive(a.type, b.type);
}

/**
 * `parent.measurement`, sorted by type. `essential` (an outlet's): a malformed map or measurement
 * fails the parse. Otherwise (an entity's) it is dropped with a warning and the rest is kept.
 */
function measurementsOf(parent: Obj, path: Path, w: Warnings, essential: boolean): readonly Measurement[] {
  const map = essential
    ? optionalMap(parent, "measurement", path)
    : softMap(parent, "measurement", path, w, "the measurements");
  if (map === undefined) return EMPTY;
  const out: Measurement[] = [];
  path.push("measurement");
  for (const key of Object.keys(map)) {
    const m = map[key];
    if (!isObj(m)) {
      if (essential) fail(path, "measurement is not an object", key);
      w.add(path, "measurement is not an object; dropped", key);
      continue;
    }
    const type = m.type;
    if (typeof type !== "string" || type === "") {
      if (essential) fail(path, "measurement has no string type", key, "type");
      w.add(path, "measurement has no string type; dropped", key, "type");
      continue;
    }
    let alarm: Alarm | null = null;
    if (m.alarm !== undefined && m.alarm !== null) {
      path.push(key);
      const read = alarmOf(m, path, w);
      alarm = isObj(m.alarm) ? read : null;
      path.pop();
    }
    out.push({ type: interned(type), value: toNumber(m.value), units: str(m.units), alarm });
  }
  path.pop();
  out.sort(byType);
  return Object.freeze(out);
}

function outletState(v: unknown): OutletState {
  if (v === "on" || v === "off") return v;
  if (typeof v !== "string") return "unknown";
  const s = v.trim().toLowerCase();
  return s === "on" || s === "off" ? s : "unknown";
}

/**
 * The entity an outlet draws through (`Outlet.feedsFrom`): its `parentBreaker`, else `parent`, else
 * `parentPhase` (pdu-protocol.md: "entity keys this outlet hangs from"), the first that names an
 * entity of the same device; absent when none does. The key kept is the entity's own string.
 */
function feedsFromOf(o: Obj, entities: readonly Entity[]): string | undefined {
  for (const field of ["parentBreaker", "parent", "parentPhase"] as const) {
    const v = o[field];
    if (typeof v !== "string" || v === "") continue;
    for (const e of entities) if (e.key === v) return e.key;
  }
  return undefined;
}

function outletsOf(device: Obj, path: Path, w: Warnings, entities: readonly Entity[]): readonly Outlet[] {
  const map = optionalMap(device, "outlet", path);
  if (map === undefined) return EMPTY;
  const out: Outlet[] = [];
  path.push("outlet");
  for (const key of Object.keys(map)) {
    if (!OUTLET_KEY.test(key)) fail(path, "outlet key is not a non-negative integer string", key);
    const o = map[key];
    if (!isObj(o)) fail(path, "outlet is not an object", key);
    path.push(key);
    const index = Number(key);
    const name = str(o.name);
    const label = str(o.label);
    const feedsFrom = feedsFromOf(o, entities);
    out.push({
      index,
      name,
      label,
      displayName: displayName(label, name, "") || `Outlet ${index + 1}`,
      state: outletState(o.state),
      alarm: alarmOf(o, path, w),
      onDelay: toNumber(o.onDelay),
      offDelay: toNumber(o.offDelay),
      rebootDelay: toNumber(o.rebootDelay),
      poaAction: typeof o.poaAction === "string" ? o.poaAction : null,
      measurements: measurementsOf(o, path, w, true),
      ...(feedsFrom === undefined ? {} : { feedsFrom }),
    });
    path.pop();
  }
  path.pop();
  // Integer-like keys already come in ascending order from a JSON object; this sort is then one pass.
  out.sort((a, b) => a.index - b.index);
  return Object.freeze(out);
}

function entitiesOf(device: Obj, path: Path, w: Warnings): readonly Entity[] {
  const map = softMap(device, "entity", path, w, "the entities");
  if (map === undefined) return EMPTY;
  const keys = Object.keys(map).sort(compareKeys);
  const out: Entity[] = [];
  path.push("entity");
  for (const key of keys) {
    const e = map[key];
    if (!isObj(e)) {
      w.add(path, "entity is not an object; dropped", key);
      continue;
    }
    path.push(key);
    const name = str(e.name);
    const label = str(e.label);
    out.push({
      key,
      name,
      label,
      displayName: displayName(label, name, key),
      alarm: alarmOf(e, path, w),
      measurements: measurementsOf(e, path, w, false),
    });
    path.pop();
  }
  path.pop();
  return Object.freeze(out);
}

function deviceOf(
  id: string,
  d: unknown,
  path: Path,
  w: Warnings,
  system: PduSystem,
  route: ProxyRoute | null,
): Device {
  if (!isObj(d)) fail(path, "device is not an object");
  const name = str(d.name);
  const label = str(d.label);
  const conf = isObj(d.conf) ? d.conf : EMPTY_OBJ;
  const entities = entitiesOf(d, path, w);
  return {
    id,
    name,
    label,
    displayName: displayName(label, name, id),
    type: str(d.type),
    state: str(d.state),
    alarm: alarmOf(d, path, w),
    order: toNumber(d.order),
    outletControlEnabled: conf.outletControlEnabled !== false,
    // Every Geist unit resets an outlet's energy (the `resetStats` write of its API).
    canResetOutletEnergy: true,
    canSwitchOutlets: true,
    lifetimeEnergy: toCounter(d.lifetimeEnergy),
    system,
    route,
    outlets: outletsOf(d, path, w, entities),
    entities,
  };
}

/** Appends the devices of `tree.dev` (path = location of `tree`); returns the raw `dev` map. */
function addDevices(
  tree: Obj,
  path: Path,
  w: Warnings,
  system: PduSystem,
  route: ProxyRoute | null,
  out: Device[],
): Obj {
  const dev = tree.dev;
  if (!isObj(dev))
    fail(path, dev === undefined ? "missing (map of device id to device)" : "expected an object", "dev");
  path.push("dev");
  for (const id of Object.keys(dev)) {
    path.push(id);
    out.push(deviceOf(id, dev[id], path, w, system, route));
    path.pop();
  }
  path.pop();
  return dev;
}

const SYS_FIELDS = [
  "label",
  "name",
  "oem",
  "model",
  "modelNumber",
  "serialNumber",
  "version",
  "appVersion",
  "apiVersion",
] as const;

/** Identity of a unit from `sys` and `conf.network` (path = location of `tree`); all optional. */
function systemOf(tree: Obj, path: Path, w: Warnings): PduSystem {
  const sys = softMap(tree, "sys", path, w, "the unit's identity") ?? EMPTY_OBJ;
  for (const field of SYS_FIELDS) {
    const v = sys[field];
    if (v !== undefined && v !== null && typeof v !== "string")
      w.add(path, "not a string; read as blank", "sys", field);
  }
  // conf.network.ethernet.address["1"].address: each level optional.
  let at: Obj = tree;
  let depth = 0;
  const levels = ["conf", "network", "ethernet"] as const;
  for (const level of levels) {
    const next = softMap(at, level, path, w, "the network identity");
    if (next === undefined) break;
    path.push(level);
    depth++;
    at = next;
  }
  const ethernet = depth === levels.length ? at : EMPTY_OBJ;
  let first: Obj = EMPTY_OBJ;
  if (depth === levels.length) {
    const addresses = softMap(ethernet, "address", path, w, "the IP address");
    if (addresses !== undefined) {
      path.push("address");
      first = softMap(addresses, "1", path, w, "the IP address") ?? EMPTY_OBJ;
      path.pop();
    }
  }
  path.length -= depth;
  return Object.freeze({
    label: displayName(str(sys.label), str(sys.name), ""),
    oem: str(sys.oem),
    model: str(sys.model),
    modelNumber: str(sys.modelNumber),
    serialNumber: str(sys.serialNumber),
    hardwareVersion: str(sys.version),
    firmwareVersion: str(sys.appVersion),
    apiVersion: str(sys.apiVersion),
    macAddress: str(ethernet.macAddr),
    ipAddress: str(first.address),
  });
}

const NO_SYSTEM: PduSystem = systemOf(EMPTY_OBJ, [], new Warnings());

function sortDevices(devices: Device[]): void {
  devices.sort((a, b) => compareOrdinal(a.id, b.id));
}

/** Parses the `data` of `GET /api` (one unit). Throws ParseError when the tree is malformed. */
export function parseApiTree(data: unknown, instanceId: string, timestamp: number): Snapshot {
  const path: Path = [];
  if (!isObj(data)) fail(path, "expected an object (the data of GET /api)");
  const w = new Warnings();
  const system = systemOf(data, path, w);
  const devices: Device[] = [];
  addDevices(data, path, w, system, null, devices);
  if (devices.length === 0) fail(path, "no devices", "dev");
  sortDevices(devices);
  return Object.freeze({
    instanceId,
    timestamp,
    mode: "single",
    vendor: GEIST_VENDOR,
    system,
    devices: Object.freeze(devices),
    groups: EMPTY,
    warnings: w.result(),
  });
}

// ---- OneView ----

/** A port number; missing or non-numeric counts as 0 ("the master itself"). */
/**
 * A member's proxy port on the master's host: absent or <= 0 means "the master itself" (0); a value
 * that is not an integer up to 65535 is unusable (NaN), so that no write to that member can fall
 * through to the master's port.
 */
function portOf(v: unknown): number {
  if (v === undefined || v === null) return 0;
  const n = toNumber(v);
  if (n === null || !Number.isInteger(n) || n > 65535) return NaN;
  return n <= 0 ? 0 : n;
}

const UNASSIGNED = "unassigned";

/** The lower-cased group key an outlet's groupMap entry names. */
function memberGroupKey(entry: Obj, path: Path): string {
  const g = entry.group;
  if (g === undefined || g === null || g === "") return UNASSIGNED;
  if (typeof g === "number") return String(g);
  if (typeof g !== "string") fail(path, "group is not a string or null", "group");
  return g.toLowerCase();
}

/** Adds one groupMap device's `outlet.<index>.group` entries (path = location of that device entry). */
function scanOutletGroups(
  deviceId: string,
  entry: Obj,
  devMap: Obj | undefined,
  path: Path,
  members: Map<string, OutletRef[]>,
): void {
  const outlets = optionalMap(entry, "outlet", path);
  if (outlets === undefined) return;
  const device = devMap?.[deviceId];
  const present = isObj(device) && isObj(device.outlet) ? device.outlet : EMPTY_OBJ;
  path.push("outlet");
  for (const key of Object.keys(outlets)) {
    if (!OUTLET_KEY.test(key)) fail(path, "outlet key is not a non-negative integer string", key);
    const o = outlets[key];
    if (!isObj(o)) fail(path, "expected an object", key);
    path.push(key);
    const groupKey = memberGroupKey(o, path);
    path.pop();
    if (present[key] === undefined) continue;
    let list = members.get(groupKey);
    if (list === undefined) members.set(groupKey, (list = []));
    list.push({ deviceId, index: Number(key) });
  }
  path.pop();
}

/**
 * Adds the outlets named in one host's `groupMap.dev.<id>.outlet.<index>.group` to `members`
 * (keyed by lower-cased group key), keeping only outlets that exist in the host's `cache.dev`.
 */
function scanGroupMap(
  host: Obj,
  devMap: Obj | undefined,
  path: Path,
  members: Map<string, OutletRef[]>,
): void {
  const groupMap = optionalMap(host, "groupMap", path);
  if (groupMap === undefined) return;
  path.push("groupMap");
  const devs = optionalMap(groupMap, "dev", path);
  if (devs !== undefined) {
    path.push("dev");
    for (const deviceId of Object.keys(devs)) {
      const entry = devs[deviceId];
      if (!isObj(entry)) fail(path, "expected an object", deviceId);
      path.push(deviceId);
      scanOutletGroups(deviceId, entry, devMap, path, members);
      path.pop();
    }
    path.pop();
  }
  path.pop();
}

function compareRefs(a: OutletRef, b: OutletRef): number {
  return compareOrdinal(a.deviceId, b.deviceId) || a.index - b.index;
}

const ROLLUP_STATS = ["sumValue", "avgValue", "minValue", "maxValue"] as const;

/**
 * Appends the rollups of `entity.<segment>.<n>.measurement.<m>` (path = location of `entity`). Each
 * `<n>` is a rollup node `{name, alarm, measurement}`. Rollups are optional: a
 * malformed node or measurement is dropped with a warning, as is a second measurement of a type the
 * group already has. `seen` holds the lower-cased keys taken so far.
 */
function addRollups(
  entity: Obj,
  segment: "outlet" | "pduTotal",
  path: Path,
  w: Warnings,
  seen: Set<string>,
  out: GroupMeasurement[],
): void {
  const nodes = softMap(entity, segment, path, w, "the rollups");
  if (nodes === undefined) return;
  path.push(segment);
  for (const n of Object.keys(nodes)) {
    const node = nodes[n];
    if (!isObj(node)) {
      w.add(path, "rollup node is not an object; dropped", n);
      continue;
    }
    path.push(n);
    const map = softMap(node, "measurement", path, w, "the rollups of this node");
    if (map !== undefined) {
      path.push("measurement");
      for (const key of Object.keys(map)) {
        const m = map[key];
        if (!isObj(m)) {
          w.add(path, "rollup measurement is not an object; dropped", key);
          continue;
        }
        const type = m.type;
        if (typeof type !== "string" || type === "") {
          w.add(path, "rollup measurement has no string type; dropped", key, "type");
          continue;
        }
        const rollupKey =
          segment === "pduTotal" ? `pduTotal${type.charAt(0).toUpperCase()}${type.slice(1)}` : type;
        const lower = rollupKey.toLowerCase();
        if (seen.has(lower)) {
          w.add(path, `a second ${type} rollup in this group; dropped`, key);
          continue;
        }
        for (const stat of ROLLUP_STATS) {
          const v = m[stat];
          if (v !== undefined && v !== null && typeof v !== "string" && typeof v !== "number")
            w.add(path, "not a string; read as no value", key, stat);
        }
        seen.add(lower);
        out.push({
          key: rollupKey,
          type,
          units: str(m.units),
          sum: toNumber(m.sumValue),
          avg: toNumber(m.avgValue),
          min: toNumber(m.minValue),
          max: toNumber(m.maxValue),
        });
      }
      path.pop();
    }
    path.pop();
  }
  path.pop();
}

function rollupsOf(group: Obj, path: Path, w: Warnings): readonly GroupMeasurement[] {
  const entity = softMap(group, "entity", path, w, "the group's rollups");
  if (entity === undefined) return EMPTY;
  const out: GroupMeasurement[] = [];
  const seen = new Set<string>();
  path.push("entity");
  addRollups(entity, "outlet", path, w, seen, out);
  addRollups(entity, "pduTotal", path, w, seen, out);
  path.pop();
  out.sort((a, b) => compareCaseInsensitive(a.key, b.key));
  return Object.freeze(out);
}

function compareGroups(a: Group, b: Group): number {
  if (a.order !== b.order) {
    if (a.order === null) return 1;
    if (b.order === null) return -1;
    return a.order - b.order;
  }
  return compareKeys(a.key, b.key);
}

function groupsOf(
  data: Obj,
  path: Path,
  w: Warnings,
  members: Map<string, readonly OutletRef[]>,
): readonly Group[] {
  const map = optionalMap(data, "group", path);
  if (map === undefined) return EMPTY;
  const out: Group[] = [];
  path.push("group");
  for (const key of Object.keys(map)) {
    const g = map[key];
    if (!isObj(g)) fail(path, "group is not an object", key);
    path.push(key);
    const name = str(g.name);
    const label = str(g.label);
    out.push({
      key,
      name,
      label,
      displayName: displayName(label, name, key),
      state: str(g.state),
      order: toNumber(g.order),
      members: members.get(key.toLowerCase()) ?? EMPTY,
      measurements: rollupsOf(g, path, w),
    });
    path.pop();
  }
  path.pop();
  out.sort(compareGroups);
  return Object.freeze(out);
}

/**
 * Parses the `data` of `GET /oneview` (a cluster master). Devices come from every host's `cache`;
 * a host without a cache (or whose cache has no `dev`) contributes no devices. `system` is the
 * master's: the first host whose webPort and httpsPort are both <= 0, else the first host.
 * Throws ParseError when the tree is malformed.
 */
export function parseOneView(data: unknown, instanceId: string, timestamp: number): Snapshot {
  const path: Path = [];
  if (!isObj(data)) fail(path, "expected an object (the data of GET /oneview)");
  const hosts = data.host;
  if (!isObj(hosts))
    fail(path, hosts === undefined ? "missing (map of member hosts)" : "expected an object", "host");
  const w = new Warnings();
  const devices: Device[] = [];
  const members = new Map<string, OutletRef[]>();
  let masterSystem: PduSystem | undefined;
  let firstSystem: PduSystem | undefined;
  path.push("host");
  for (const hostKey of Object.keys(hosts)) {
    const host = hosts[hostKey];
    if (!isObj(host)) fail(path, "host is not an object", hostKey);
    path.push(hostKey);
    const webPort = portOf(host.webPort);
    const httpsPort = portOf(host.httpsPort);
    if (Number.isNaN(webPort)) w.add(path, "not a port number; writes to this member are refused", "webPort");
    if (Number.isNaN(httpsPort))
      w.add(path, "not a port number; writes to this member are refused", "httpsPort");
    const isMaster = webPort === 0 && httpsPort === 0;
    const route: ProxyRoute | null = isMaster ? null : Object.freeze({ hostKey, webPort, httpsPort });
    const cache = optionalMap(host, "cache", path);
    let system = NO_SYSTEM;
    let devMap: Obj | undefined;
    if (cache !== undefined) {
      path.push("cache");
      system = systemOf(cache, path, w);
      if (cache.dev !== undefined && cache.dev !== null)
        devMap = addDevices(cache, path, w, system, route, devices);
      path.pop();
    }
    scanGroupMap(host, devMap, path, members);
    if (isMaster) masterSystem ??= system;
    firstSystem ??= system;
    path.pop();
  }
  path.pop();
  if (firstSystem === undefined) fail(path, "no hosts", "host");
  if (devices.length === 0) fail(path, "no host has any devices", "host");
  sortDevices(devices);
  for (let i = 1; i < devices.length; i++) {
    const id = devices[i]?.id;
    if (id !== undefined && id === devices[i - 1]?.id)
      fail(path, `device ${quoteName(id)} is reported by more than one host`, "host");
  }
  for (const list of members.values()) Object.freeze(list.sort(compareRefs));
  return Object.freeze({
    instanceId,
    timestamp,
    mode: "oneview",
    vendor: GEIST_VENDOR,
    system: masterSystem ?? firstSystem,
    devices: Object.freeze(devices),
    groups: groupsOf(data, path, w, members),
    warnings: w.result(),
  });
}
