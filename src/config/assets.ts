/**
 * Assets, feeds and sequences (docs/assets.md): what the configuration says (its YAML keys, key
 * for key, as the schema produces them) and the domain model built from it
 * (./asset-model.ts). Plain readonly data. The model is the configuration's, so the loader can judge
 * it (exit 2 naming the key); src/assets/ reads it under the names of its own types.ts.
 *
 * The configuration shapes are what the configuration schema produces for these keys; the domain
 * model is what every other file reads: ids inside, defaults applied, cords in order, the feed of
 * every instance and device in maps.
 */
import type { CircuitRange } from "./outlet-circuits.js";
import type { Config } from "./schema.js";

export type { CircuitRange } from "./outlet-circuits.js";

/** `Assets.<id>.Cords[]`: one outlet that feeds the asset. */
export interface CordConfig {
  readonly Instance: string;
  /** The device id; needed when the outlet index is on several devices of the instance. */
  readonly Device?: string;
  /** 0-based outlet index, as in the REST API (section 4). */
  readonly Outlet: number;
}

/** `Assets.<id>`. */
export interface AssetConfig {
  readonly Label?: string;
  /** 1 to {@link MAX_CORDS} outlets, on any instances. */
  readonly Cords: readonly CordConfig[];
  readonly Protected?: boolean;
  readonly Priority?: number;
  readonly Tenant?: string;
  readonly Tags?: readonly string[];
  readonly StartSeconds?: number;
}

/** `Feeds.<id>`. */
export interface FeedConfig {
  readonly Label?: string;
}

/** `Sequences`. */
export interface SequencesConfig {
  readonly MaxConcurrentStarts?: number;
  readonly GapSeconds?: number;
}

/** The keys of `Pdus.<id>` this part reads. */
export interface InstanceAssetsConfig {
  /** The feed this instance's inlets hang on. */
  readonly Feed?: string;
  /** Per device where one instance (a OneView cluster) mixes feeds: device id → feed. */
  readonly DeviceFeeds?: Readonly<Record<string, string>>;
  /**
   * Which entity each outlet draws through, by 0-based outlet range (`"0-11": breaker0`, `"12":
   * breaker1`), for every device of the instance, or `<deviceId>/<range>` for one device.
   */
  readonly OutletCircuits?: Readonly<Record<string, string>>;
}

/** The configuration keys of assets, feeds and sequences, as the loader hands them over. */
export interface AssetsSection {
  readonly Feeds?: Readonly<Record<string, FeedConfig>>;
  readonly Assets?: Readonly<Record<string, AssetConfig>>;
  readonly Sequences?: SequencesConfig;
  readonly Pdus: Readonly<Record<string, InstanceAssetsConfig>>;
}

/** Most cords one asset may have. */
export const MAX_CORDS = 8;
/** Asset and feed ids: what may become an MQTT topic level and a URL segment. */
export const ASSET_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Priority of an asset that names none: after every asset that does (docs/assets.md). */
export const DEFAULT_PRIORITY = 100;
/** Start-up time of an asset that names none (s). */
export const DEFAULT_START_SECONDS = 30;
export const DEFAULT_MAX_CONCURRENT_STARTS = 4;
export const DEFAULT_GAP_SECONDS = 5;

/** One cord of an asset in the domain model. */
export interface Cord {
  readonly instance: string;
  /** null: the outlet index is looked for on every device of the instance (it must be unique). */
  readonly device: string | null;
  readonly outlet: number;
}

export interface AssetDef {
  readonly id: string;
  /** `Label`, else the id. */
  readonly label: string;
  /** In configuration order; a cord is named by its position here. */
  readonly cords: readonly Cord[];
  readonly protected: boolean;
  readonly priority: number;
  readonly tenant: string | null;
  readonly tags: readonly string[];
  readonly startSeconds: number;
}

export interface FeedDef {
  readonly id: string;
  /** `Label`, else the id. */
  readonly label: string;
}

export interface SequenceSettings {
  readonly maxConcurrentStarts: number;
  readonly gapSeconds: number;
}

/** Everything of assets, feeds and sequences the core reads, built once per configuration (./asset-model.ts). */
export interface AssetModel {
  /** By id, in id order. */
  readonly assets: ReadonlyMap<string, AssetDef>;
  /** By id, in id order. */
  readonly feeds: ReadonlyMap<string, FeedDef>;
  /** `Pdus.<id>.Feed`, for instances that name one. */
  readonly instanceFeeds: ReadonlyMap<string, string>;
  /** `Pdus.<id>.DeviceFeeds`: instance → device → feed. */
  readonly deviceFeeds: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** `Pdus.<id>.OutletCircuits`, parsed, for instances that have any. */
  readonly circuits: ReadonlyMap<string, readonly CircuitRange[]>;
  readonly sequences: SequenceSettings;
}

/** The feed a device's inlets hang on: its `DeviceFeeds` entry, else its instance's `Feed`, else null. */
export function feedOf(model: AssetModel, instance: string, device: string): string | null {
  return model.deviceFeeds.get(instance)?.get(device) ?? model.instanceFeeds.get(instance) ?? null;
}

/** The assets, feeds and sequences keys of a loaded configuration, as `buildAssetModel` (./asset-model.ts) takes them. */
export function assetsSectionOf(config: Config): AssetsSection {
  const pdus: Record<string, InstanceAssetsConfig> = {};
  for (const i of config.instances) {
    pdus[i.id] = {
      ...(i.Feed === undefined ? {} : { Feed: i.Feed }),
      ...(i.DeviceFeeds === undefined ? {} : { DeviceFeeds: i.DeviceFeeds }),
      ...(i.OutletCircuits === undefined ? {} : { OutletCircuits: i.OutletCircuits }),
    };
  }
  return { Feeds: config.Feeds, Assets: config.Assets, Sequences: config.Sequences, Pdus: pdus };
}
