/**
 * Builders for the assets core's tests and bench (src/assets/): PDU snapshots with outlets that
 * carry currents, powers and energies and entities with currents and ratings, an instance's
 * reading with its load report, and an asset model from a few lines.
 */
import { buildAssetModel } from "../src/assets/model.js";
import type { InstanceReading } from "../src/assets/state.js";
import type { AssetConfig, AssetModel, AssetsSection, InstanceAssetsConfig } from "../src/assets/types.js";
import { DEFAULT_THRESHOLDS, LoadTracker } from "../src/pdu/load.js";
import type { Device, Entity, Outlet, OutletState, Snapshot } from "../src/pdu/model.js";
import { CLEAR_ALARM, measurement, system, VENDOR } from "./snapshot-builders.js";

export interface OutletSpec {
  readonly state?: OutletState;
  /** A; absent: no current measurement. */
  readonly current?: number | null;
  readonly power?: number | null;
  readonly energy?: number | null;
  /** kWh: the lifetime counter docs/energy.md describes to an outlet's measurements. */
  readonly energyLifetime?: number;
  readonly feedsFrom?: string;
}

export interface EntitySpec {
  readonly key: string;
  readonly current?: number | null;
  readonly rated?: number;
}

export interface DeviceSpec {
  readonly id: string;
  /** Outlets by position: index = position unless `indexes` says otherwise. */
  readonly outlets: readonly OutletSpec[];
  readonly indexes?: readonly number[];
  readonly entities?: readonly EntitySpec[];
}

export function assetOutlet(index: number, spec: OutletSpec): Outlet {
  const measurements = [];
  if (spec.current !== undefined) measurements.push(measurement("current", spec.current, "A"));
  if (spec.energy !== undefined) measurements.push(measurement("energy", spec.energy, "kWh"));
  if (spec.energyLifetime !== undefined)
    measurements.push(measurement("energyLifetime", spec.energyLifetime, "kWh"));
  if (spec.power !== undefined) measurements.push(measurement("realPower", spec.power, "W"));
  return Object.freeze({
    index,
    name: `Outlet ${index + 1}`,
    label: "",
    displayName: `Outlet ${index + 1}`,
    state: spec.state ?? "on",
    alarm: CLEAR_ALARM,
    onDelay: 0,
    offDelay: 0,
    rebootDelay: 5,
    poaAction: "last",
    measurements: Object.freeze(measurements),
    ...(spec.feedsFrom === undefined ? {} : { feedsFrom: spec.feedsFrom }),
  });
}

export function assetEntity(spec: EntitySpec): Entity {
  return Object.freeze({
    key: spec.key,
    name: spec.key,
    label: "",
    displayName: spec.key,
    alarm: CLEAR_ALARM,
    measurements: Object.freeze(
      spec.current === undefined ? [] : [measurement("current", spec.current, "A")],
    ),
    ...(spec.rated === undefined ? {} : { ratedCurrent: spec.rated }),
  });
}

export function assetDevice(spec: DeviceSpec): Device {
  const outlets = spec.outlets.map((o, i) => assetOutlet(spec.indexes?.[i] ?? i, o));
  outlets.sort((a, b) => a.index - b.index);
  return Object.freeze({
    id: spec.id,
    name: "Rack PDU",
    label: "",
    displayName: "Rack PDU",
    type: "rpdu",
    state: "normal",
    alarm: CLEAR_ALARM,
    order: 1,
    outletControlEnabled: true,
    canResetOutletEnergy: true,
    canSwitchOutlets: true,
    lifetimeEnergy: null,
    system: system("Rack PDU", `SER-${spec.id}`),
    route: null,
    outlets: Object.freeze(outlets),
    entities: Object.freeze((spec.entities ?? []).map(assetEntity)),
  });
}

export function pduSnapshot(instanceId: string, devices: readonly DeviceSpec[], timestamp = 1_000): Snapshot {
  const built = devices.map(assetDevice).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return Object.freeze({
    instanceId,
    timestamp,
    mode: built.length > 1 ? "oneview" : "single",
    vendor: VENDOR,
    system: built[0]?.system ?? system("empty", "none"),
    devices: Object.freeze(built),
    groups: Object.freeze([]),
  });
}

/** An instance's reading, its load report made by a fresh tracker (default thresholds, no configured ratings). */
export function readingOf(snapshot: Snapshot, online = true): InstanceReading {
  const { report } = new LoadTracker({}, DEFAULT_THRESHOLDS).assess(snapshot);
  return { id: snapshot.instanceId, snapshot, online, load: report };
}

/** An asset model from the configuration's keys; throws on any problem (tests build sound ones). */
export function assetModel(
  assets: Readonly<Record<string, AssetConfig>>,
  pdus: Readonly<Record<string, InstanceAssetsConfig>>,
  feeds: readonly string[] = [],
  sequences: AssetsSection["Sequences"] = {},
): AssetModel {
  const { model, problems } = buildAssetModel({
    Assets: assets,
    Pdus: pdus,
    Feeds: Object.fromEntries(feeds.map((f) => [f, {}])),
    Sequences: sequences,
  });
  if (problems.length > 0) throw new Error(problems.map((p) => `${p.key} ${p.problem}`).join("; "));
  return model;
}
