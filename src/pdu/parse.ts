/**
 * Wire → model: turns the `data` of `GET /api` (one unit) or `GET /oneview` (a cluster) into a
 * normalised, frozen {@link Snapshot} (pdu-protocol.md §1, §2, §5).
 *
 * Tolerance rules:
 * - Unknown properties are ignored everywhere.
 * - Scalars (names, labels, states, delays, ports, ...) that are missing or of the wrong type get
 *   defaults: "" for strings, null for numbers, false for flags, a clear alarm for alarms.
 * - Numbers may arrive as JSON numbers or as decimal strings; anything else ("n/a", "") is null.
 *   Measurement `raw` keeps the PDU's string.
 *
 * What is required (anything else throws a {@link ParseError} naming the JSON path, so a poll fails
 * cleanly and the previous snapshot is kept instead of being replaced by a half-empty one):
 * - the tree itself is an object; `dev` (single) / `host` (OneView) is an object;
 * - a single-unit tree has at least one device; a OneView tree has at least one host and at least
 *   one device over all hosts;
 * - every device, host, outlet, entity, measurement and group is an object, and every map that holds
 *   them (`outlet`, `entity`, `measurement`, `cache`, `groupMap...`, `group`), when present, is an
 *   object (absent or null means empty);
 * - outlet keys (in `outlet` and in `groupMap`) are canonical non-negative integer strings ("0", "11");
 * - every measurement (and group rollup) has a non-empty string `type`;
 * - a device id appears in only one OneView host.
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
import { ParseError } from "./errors.js";
import {
  compareKeys,
  type Alarm,
  type Device,
  type Entity,
  type Group,
  type GroupMeasurement,
  type Measurement,
  type Outlet,
  type OutletRef,
  type OutletState,
  type PduSystem,
  type ProxyRoute,
  type Snapshot,
} from "./model.js";

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

function formatPath(path: Path, extra: readonly string[]): string {
  let out = "$";
  for (const seg of [...path, ...extra])
    out += PLAIN_SEGMENT.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`;
  return out;
}

function fail(path: Path, problem: string, ...extra: string[]): never {
  throw new ParseError(formatPath(path, extra), problem);
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

function isRaised(state: string): boolean {
  const s = state.trim().toLowerCase();
  return s === "alarm" || s === "active";
}

function alarmOf(v: unknown): Alarm {
  if (!isObj(v)) return NO_ALARM;
  const rawState = str(v.state);
  const state = isBlank(rawState) ? "none" : rawState;
  const severity = str(v.severity);
  let bySeverity = alarmCache.get(state);
  if (bySeverity === undefined && alarmCache.size < ALARM_CACHE_LIMIT) {
    bySeverity = new Map();
    alarmCache.set(state, bySeverity);
  }
  let alarm = bySeverity?.get(severity);
  if (alarm === undefined) {
    alarm = Object.freeze({ state, severity, raised: isRaised(state) });
    if (bySeverity !== undefined && bySeverity.size < ALARM_CACHE_LIMIT) bySeverity.set(severity, alarm);
  }
  return alarm;
}

// ---- single-unit tree ----

function byType(a: Measurement, b: Measurement): number {
  return compareCaseInsensitive(a.type, b.type);
}

/** `parent.measurement`, sorted by type. */
function measurementsOf(parent: Obj, path: Path): readonly Measurement[] {
  const map = optionalMap(parent, "measurement", path);
  if (map === undefined) return EMPTY;
  const out: Measurement[] = [];
  path.push("measurement");
  for (const key of Object.keys(map)) {
    const m = map[key];
    if (!isObj(m)) fail(path, "measurement is not an object", key);
    const type = m.type;
    if (typeof type !== "string" || type === "") fail(path, "measurement has no string type", key, "type");
    const value = m.value;
    out.push({
      type,
      value: toNumber(value),
      raw: typeof value === "string" ? value : typeof value === "number" ? String(value) : "",
      units: str(m.units),
      alarm: m.alarm === undefined || m.alarm === null ? null : alarmOf(m.alarm),
    });
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

function outletsOf(device: Obj, path: Path): readonly Outlet[] {
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
    out.push({
      index,
      name,
      label,
      displayName: displayName(label, name, "") || `Outlet ${index + 1}`,
      state: outletState(o.state),
      alarm: alarmOf(o.alarm),
      onDelay: toNumber(o.onDelay),
      offDelay: toNumber(o.offDelay),
      rebootDelay: toNumber(o.rebootDelay),
      poaAction: typeof o.poaAction === "string" ? o.poaAction : null,
      measurements: measurementsOf(o, path),
    });
    path.pop();
  }
  path.pop();
  // Integer-like keys already come in ascending order from a JSON object; this sort is then one pass.
  out.sort((a, b) => a.index - b.index);
  return Object.freeze(out);
}

function entitiesOf(device: Obj, path: Path): readonly Entity[] {
  const map = optionalMap(device, "entity", path);
  if (map === undefined) return EMPTY;
  const keys = Object.keys(map).sort(compareKeys);
  const out: Entity[] = [];
  path.push("entity");
  for (const key of keys) {
    const e = map[key];
    if (!isObj(e)) fail(path, "entity is not an object", key);
    path.push(key);
    const name = str(e.name);
    const label = str(e.label);
    out.push({
      key,
      name,
      label,
      displayName: displayName(label, name, key),
      alarm: alarmOf(e.alarm),
      measurements: measurementsOf(e, path),
    });
    path.pop();
  }
  path.pop();
  return Object.freeze(out);
}

function deviceOf(id: string, d: unknown, path: Path, system: PduSystem, route: ProxyRoute | null): Device {
  if (!isObj(d)) fail(path, "device is not an object");
  const name = str(d.name);
  const label = str(d.label);
  const conf = isObj(d.conf) ? d.conf : EMPTY_OBJ;
  return {
    id,
    name,
    label,
    displayName: displayName(label, name, id),
    type: str(d.type),
    state: str(d.state),
    alarm: alarmOf(d.alarm),
    order: toNumber(d.order),
    outletControlEnabled: conf.outletControlEnabled === true,
    lifetimeEnergy: toCounter(d.lifetimeEnergy),
    system,
    route,
    outlets: outletsOf(d, path),
    entities: entitiesOf(d, path),
  };
}

/** Appends the devices of `tree.dev` (path = location of `tree`); returns the raw `dev` map. */
function addDevices(tree: Obj, path: Path, system: PduSystem, route: ProxyRoute | null, out: Device[]): Obj {
  const dev = tree.dev;
  if (!isObj(dev))
    fail(path, dev === undefined ? "missing (map of device id to device)" : "expected an object", "dev");
  path.push("dev");
  for (const id of Object.keys(dev)) {
    path.push(id);
    out.push(deviceOf(id, dev[id], path, system, route));
    path.pop();
  }
  path.pop();
  return dev;
}

function systemOf(tree: Obj): PduSystem {
  const sys = isObj(tree.sys) ? tree.sys : EMPTY_OBJ;
  const conf = isObj(tree.conf) ? tree.conf : EMPTY_OBJ;
  const network = isObj(conf.network) ? conf.network : EMPTY_OBJ;
  const ethernet = isObj(network.ethernet) ? network.ethernet : EMPTY_OBJ;
  const addresses = isObj(ethernet.address) ? ethernet.address : EMPTY_OBJ;
  const first = isObj(addresses["1"]) ? addresses["1"] : EMPTY_OBJ;
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

const NO_SYSTEM: PduSystem = systemOf(EMPTY_OBJ);

function sortDevices(devices: Device[]): void {
  devices.sort((a, b) => compareOrdinal(a.id, b.id));
}

/** Parses the `data` of `GET /api` (one unit). Throws ParseError when the tree is malformed. */
export function parseApiTree(data: unknown, instanceId: string, timestamp: number): Snapshot {
  const path: Path = [];
  if (!isObj(data)) fail(path, "expected an object (the data of GET /api)");
  const system = systemOf(data);
  const devices: Device[] = [];
  addDevices(data, path, system, null, devices);
  if (devices.length === 0) fail(path, "no devices", "dev");
  sortDevices(devices);
  return Object.freeze({
    instanceId,
    timestamp,
    mode: "single",
    system,
    devices: Object.freeze(devices),
    groups: EMPTY,
  });
}

// ---- OneView ----

/** A port number; missing or non-numeric counts as 0 ("the master itself"). */
function portOf(v: unknown): number {
  return toNumber(v) ?? 0;
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

/** Appends the rollups of `entity.<segment>` (path = location of `entity`). */
function addRollups(entity: Obj, segment: "outlet" | "pduTotal", path: Path, out: GroupMeasurement[]): void {
  const map = optionalMap(entity, segment, path);
  if (map === undefined) return;
  path.push(segment);
  for (const key of Object.keys(map)) {
    const m = map[key];
    if (!isObj(m)) fail(path, "rollup is not an object", key);
    const type = m.type;
    if (typeof type !== "string" || type === "") fail(path, "rollup has no string type", key, "type");
    out.push({
      key: segment === "pduTotal" ? `pduTotal${type.charAt(0).toUpperCase()}${type.slice(1)}` : type,
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

function rollupsOf(group: Obj, path: Path): readonly GroupMeasurement[] {
  const entity = optionalMap(group, "entity", path);
  if (entity === undefined) return EMPTY;
  const out: GroupMeasurement[] = [];
  path.push("entity");
  addRollups(entity, "outlet", path, out);
  addRollups(entity, "pduTotal", path, out);
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

function groupsOf(data: Obj, path: Path, members: Map<string, readonly OutletRef[]>): readonly Group[] {
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
      measurements: rollupsOf(g, path),
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
    const isMaster = webPort <= 0 && httpsPort <= 0;
    const route: ProxyRoute | null = isMaster ? null : Object.freeze({ hostKey, webPort, httpsPort });
    const cache = optionalMap(host, "cache", path);
    let system = NO_SYSTEM;
    let devMap: Obj | undefined;
    if (cache !== undefined) {
      system = systemOf(cache);
      path.push("cache");
      if (cache.dev !== undefined && cache.dev !== null)
        devMap = addDevices(cache, path, system, route, devices);
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
      fail(path, `device ${id} is reported by more than one host`, "host");
  }
  for (const list of members.values()) Object.freeze(list.sort(compareRefs));
  return Object.freeze({
    instanceId,
    timestamp,
    mode: "oneview",
    system: masterSystem ?? firstSystem,
    devices: Object.freeze(devices),
    groups: groupsOf(data, path, members),
  });
}
