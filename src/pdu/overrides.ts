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
 * unknown keys are not errors (PDUs change): {@link unknownOverrides} lists them for a warning. What
 * the loader and `check-config` judge of them without a snapshot is in src/config/overrides.ts.
 */
import { hasOverrides, type InstanceOverrides, type ThingOverride } from "../config/overrides.js";
import type { Device, Entity, Group, Outlet, Snapshot } from "./model.js";
import { findDevice, findGroup } from "./model.js";

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
