/**
 * Overrides (docs/control.md): the one seam between a polled snapshot and everything derived from it.
 * The store applies {@link applyOverrides} to every snapshot it keeps, so MQTT topics, Home
 * Assistant discovery, REST readings, the console, metrics and the control core all read the same
 * overridden model:
 *
 * - `Name` replaces `displayName` (and sets `renamed`); the PDU's own `label` stays as polled.
 * - `Hidden` sets `hidden`; {@link publishedView} (what MQTT and discovery walk) leaves such things
 *   out, while REST still lists them with `hidden: true`.
 * - `Protected` sets `protected` on an outlet or a group; the control core refuses `off` and
 *   `reboot` of it (and any group action that includes a protected outlet).
 * - `Measurements` keeps only the listed measurement types (compared ignoring case, like the
 *   protocol compares types) on outlets, entities and group rollups, on every surface.
 *
 * Overrides are keyed by device id, outlet index, entity key and group key, never by names, and
 * unknown keys are not errors (PDUs change): {@link unknownOverrides} lists them for a warning.
 */
import { OverrideIndexPattern, type InstanceConfig } from "../config/schema.js";
import type { Device, Entity, Group, Outlet, Snapshot } from "./model.js";
import { findDevice, findGroup } from "./model.js";
import { displaySpoofing } from "./display.js";
import { nameProblem, quoteName } from "./names.js";

/** What the overrides read of an instance's configuration. */
export type InstanceOverrides = Pick<InstanceConfig, "id" | "Overrides" | "Measurements">;

const INDEX = new RegExp(OverrideIndexPattern);

interface ThingOverride {
  readonly Name?: string;
  readonly Hidden?: boolean;
  readonly Protected?: boolean;
}

/** `record[key]` when it is the record's own key (so `constructor` or `__proto__` never match). */
function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A group key's override: the PDU's keys match ignoring case, as everywhere else for groups. */
function groupOverride(instance: InstanceOverrides, key: string): ThingOverride | undefined {
  const groups = instance.Overrides.Groups;
  const exact = own(groups, key);
  if (exact !== undefined) return exact;
  const lower = key.toLowerCase();
  const found = Object.keys(groups).find((k) => k.toLowerCase() === lower);
  return found === undefined ? undefined : groups[found];
}

/** Whether the instance configures anything that changes a snapshot. */
export function hasOverrides(instance: InstanceOverrides): boolean {
  const { Outlets, Entities, Groups } = instance.Overrides;
  return (
    instance.Measurements !== undefined ||
    Object.keys(Outlets).length > 0 ||
    Object.keys(Entities).length > 0 ||
    Object.keys(Groups).length > 0
  );
}

/** The store's view for the instance (src/poller/store.ts `setView`), or null when nothing is configured. */
export function overridesView(instance: InstanceOverrides): ((snapshot: Snapshot) => Snapshot) | null {
  if (!hasOverrides(instance)) return null;
  const compiled = compile(instance);
  return (snapshot) => compiled(snapshot);
}

type Overridable = Outlet | Entity | Group;

/** One outlet, entity or group with its override and the measurement filter applied. */
function overrideOne<T extends Overridable>(
  thing: T,
  override: ThingOverride | undefined,
  keep: <M extends { readonly type: string }>(list: readonly M[]) => readonly M[],
): T {
  const measurements = keep<T["measurements"][number]>(thing.measurements);
  if (override === undefined && measurements === thing.measurements) return thing;
  const out: Record<string, unknown> = { ...thing, measurements };
  if (override?.Name !== undefined) {
    out.displayName = override.Name;
    out.renamed = true;
  }
  if (override?.Hidden === true) out.hidden = true;
  if (override?.Protected === true) out.protected = true;
  return Object.freeze(out) as unknown as T;
}

/** The snapshot as the instance's overrides and `Measurements` make it (the same object when none apply). */
export function applyOverrides(snapshot: Snapshot, instance: InstanceOverrides): Snapshot {
  return hasOverrides(instance) ? compile(instance)(snapshot) : snapshot;
}

/** The instance's overrides as a function of a snapshot: what can be worked out once, is. */
function compile(instance: InstanceOverrides): (snapshot: Snapshot) => Snapshot {
  const types =
    instance.Measurements === undefined ? null : new Set(instance.Measurements.map((t) => t.toLowerCase()));
  /** Lower-cased measurement type → kept (types repeat across outlets: each is lower-cased once). */
  const verdicts = new Map<string, boolean>();
  const kept = (type: string): boolean => {
    let verdict = verdicts.get(type);
    if (verdict === undefined) {
      verdict = types === null || types.has(type.toLowerCase());
      // Bounded: types come from the PDU; past the bound, decide without remembering.
      if (verdicts.size < MAX_REMEMBERED_TYPES) verdicts.set(type, verdict);
    }
    return verdict;
  };
  const keep = <M extends { readonly type: string }>(list: readonly M[]): readonly M[] => {
    if (types === null || list.every((m) => kept(m.type))) return list;
    return Object.freeze(list.filter((m) => kept(m.type)));
  };
  return (snapshot) => overrideSnapshot(snapshot, instance, keep);
}

/** Measurement types whose verdict {@link compile} remembers per instance. */
const MAX_REMEMBERED_TYPES = 256;

function overrideSnapshot(
  snapshot: Snapshot,
  instance: InstanceOverrides,
  keep: <M extends { readonly type: string }>(list: readonly M[]) => readonly M[],
): Snapshot {
  const types = instance.Measurements ?? null;
  const { Outlets, Entities } = instance.Overrides;
  const devices = snapshot.devices.map((device): Device => {
    const outlets = own(Outlets, device.id);
    const entities = own(Entities, device.id);
    if (types === null && outlets === undefined && entities === undefined) return device;
    return Object.freeze({
      ...device,
      outlets: Object.freeze(device.outlets.map((o) => overrideOne(o, own(outlets, String(o.index)), keep))),
      entities: Object.freeze(device.entities.map((e) => overrideOne(e, own(entities, e.key), keep))),
    });
  });
  const groups = snapshot.groups.map((g) => overrideOne(g, groupOverride(instance, g.key), keep));
  const result: Snapshot = Object.freeze({
    ...snapshot,
    devices: Object.freeze(devices),
    groups: Object.freeze(groups),
  });
  if (anyHidden(result)) withHidden.add(result);
  return result;
}

/** Snapshots made by {@link applyOverrides} with something hidden: only these need a published view. */
const withHidden = new WeakSet<Snapshot>();
const published = new WeakMap<Snapshot, Snapshot>();

function anyHidden(snapshot: Snapshot): boolean {
  return (
    snapshot.groups.some((g) => g.hidden === true) ||
    snapshot.devices.some(
      (d) => d.outlets.some((o) => o.hidden === true) || d.entities.some((e) => e.hidden === true),
    )
  );
}

/**
 * What MQTT and Home Assistant discovery show of a snapshot: hidden outlets, entities and groups
 * left out. The same object when nothing is hidden (every snapshot of an instance without hidden
 * overrides, at the cost of one lookup); otherwise built once per snapshot.
 */
export function publishedView(snapshot: Snapshot): Snapshot {
  if (!withHidden.has(snapshot)) return snapshot;
  const cached = published.get(snapshot);
  if (cached !== undefined) return cached;
  const view = Object.freeze({
    ...snapshot,
    devices: Object.freeze(
      snapshot.devices.map((d) =>
        Object.freeze({
          ...d,
          outlets: Object.freeze(d.outlets.filter((o) => o.hidden !== true)),
          entities: Object.freeze(d.entities.filter((e) => e.hidden !== true)),
        }),
      ),
    ),
    groups: Object.freeze(snapshot.groups.filter((g) => g.hidden !== true)),
  });
  published.set(snapshot, view);
  return view;
}

/** A problem with one override key, for a configuration error (path below `Pdus.<id>`). */
export interface OverrideProblem {
  readonly path: readonly string[];
  readonly problem: string;
}

/**
 * Keys and names the schema cannot judge: device ids, entity and group keys, and every `Name`, must
 * be safe names (src/pdu/names.ts), and a `Name` must not change how text is displayed
 * (src/pdu/display.ts). The first problem, or undefined.
 */
export function overrideProblem(instance: InstanceOverrides): OverrideProblem | undefined {
  const base = ["Pdus", instance.id, "Overrides"];
  const key = (path: string[], k: string, what: string): OverrideProblem | undefined => {
    const problem = nameProblem(k);
    return problem === null
      ? undefined
      : { path: [...base, ...path, k], problem: `the ${what} ${quoteName(k)} ${problem}` };
  };
  const name = (path: string[], o: ThingOverride): OverrideProblem | undefined => {
    if (o.Name === undefined) return undefined;
    const problem = nameProblem(o.Name);
    if (problem !== null)
      return { path: [...base, ...path, "Name"], problem: `${problem}: a Name must be a safe name` };
    const spoofing = displaySpoofing(o.Name);
    return spoofing === null
      ? undefined
      : {
          path: [...base, ...path, "Name"],
          problem: `contains ${spoofing}: a Name must not change how text is displayed`,
        };
  };
  const { Outlets, Entities, Groups } = instance.Overrides;
  for (const [deviceId, outlets] of Object.entries(Outlets)) {
    const found = key(["Outlets"], deviceId, "device id");
    if (found) return found;
    for (const [index, o] of Object.entries(outlets)) {
      if (!INDEX.test(index)) {
        return {
          path: [...base, "Outlets", deviceId, index],
          problem: `outlet indexes are the PDU's 0-based keys written as text ("0", "7"), got ${quoteName(index)}`,
        };
      }
      const bad = name(["Outlets", deviceId, index], o);
      if (bad) return bad;
    }
  }
  for (const [deviceId, entities] of Object.entries(Entities)) {
    const found = key(["Entities"], deviceId, "device id");
    if (found) return found;
    for (const [entityKey, e] of Object.entries(entities)) {
      const bad =
        key(["Entities", deviceId], entityKey, "entity key") ?? name(["Entities", deviceId, entityKey], e);
      if (bad) return bad;
    }
  }
  for (const [groupKey, g] of Object.entries(Groups)) {
    const bad = key(["Groups"], groupKey, "group key") ?? name(["Groups", groupKey], g);
    if (bad) return bad;
  }
  return undefined;
}

/**
 * Overrides that name nothing in the snapshot (a device, outlet, entity or group the PDU does not
 * have), one sentence each, naming the key. Not errors: the PDU may gain the thing later.
 */
export function unknownOverrides(snapshot: Snapshot, instance: InstanceOverrides): string[] {
  const at = `Pdus.${instance.id}.Overrides`;
  const out: string[] = [];
  const { Outlets, Entities, Groups } = instance.Overrides;
  const devices = `its devices: ${snapshot.devices.map((d) => d.id).join(", ") || "none"}`;
  /** Each device's keys: the device missing, or each key `why` finds a problem with. */
  const byDevice = (
    section: string,
    map: Readonly<Record<string, object>>,
    why: (device: Device, key: string) => string | null,
  ) => {
    for (const [deviceId, keys] of Object.entries(map)) {
      const device = findDevice(snapshot, deviceId);
      if (device === undefined) {
        out.push(
          `${at}.${section}.${deviceId}: instance ${instance.id} has no device ${deviceId} (${devices})`,
        );
        continue;
      }
      for (const key of Object.keys(keys)) {
        const problem = why(device, key);
        if (problem !== null) out.push(`${at}.${section}.${deviceId}.${key}: device ${deviceId} ${problem}`);
      }
    }
  };
  byDevice("Outlets", Outlets, (device, index) =>
    device.outlets.some((o) => String(o.index) === index)
      ? null
      : `has no outlet ${index} (indexes are 0-based; it has ${device.outlets.length} outlets)`,
  );
  byDevice("Entities", Entities, (device, key) =>
    device.entities.some((e) => e.key === key)
      ? null
      : `has no entity ${key} (its entities: ${device.entities.map((e) => e.key).join(", ") || "none"})`,
  );
  for (const groupKey of Object.keys(Groups)) {
    if (findGroup(snapshot, groupKey) === undefined) {
      const keys =
        snapshot.groups.map((g) => g.key).join(", ") || "none (groups exist only on a OneView master)";
      out.push(
        `${at}.Groups.${groupKey}: instance ${instance.id} has no group ${groupKey} (its groups: ${keys})`,
      );
    }
  }
  return out;
}

/**
 * What `check-config` can say about overrides without contacting a PDU: settings that have no
 * effect as written. Whether the ids exist is only known after a poll (warned at start).
 */
export function overrideNotes(
  instance: InstanceOverrides & Pick<InstanceConfig, "ActionsEnabled">,
): string[] {
  const at = `Pdus.${instance.id}.Overrides`;
  const out: string[] = [];
  const check = (path: string, o: ThingOverride) => {
    if (o.Protected === true && !instance.ActionsEnabled) {
      out.push(
        `${path}.Protected: has no effect while Pdus.${instance.id}.ActionsEnabled is false (all control is refused)`,
      );
    }
    if (o.Hidden === true && o.Name !== undefined) {
      out.push(`${path}.Name: not shown anywhere but REST, since the same override has Hidden: true`);
    }
    if (o.Name === undefined && o.Hidden === undefined && o.Protected === undefined) {
      out.push(`${path}: empty override (no Name, Hidden or Protected)`);
    }
  };
  const { Outlets, Entities, Groups } = instance.Overrides;
  for (const [d, outlets] of Object.entries(Outlets)) {
    for (const [i, o] of Object.entries(outlets)) check(`${at}.Outlets.${d}.${i}`, o);
  }
  for (const [d, entities] of Object.entries(Entities)) {
    for (const [k, e] of Object.entries(entities)) check(`${at}.Entities.${d}.${k}`, e);
  }
  for (const [k, g] of Object.entries(Groups)) check(`${at}.Groups.${k}`, g);
  return out;
}
