/**
 * What the rest of the service reads of assets and feeds (`App.assets`, src/assets/part.ts): the
 * model and the book in force, the latest feed-loss projection and totals, the alarms about several
 * PDUs, and where an asset is published. Everything here is read at each use: a live change of the
 * configuration replaces the model and the book.
 */
import type { FleetAlarm } from "./alarms.js";
import type { AssetBook } from "./book.js";
import type { FeedProjection } from "./feed-loss.js";
import type { FeedTotal } from "./feeds.js";
import type { AssetDef, AssetModel } from "./types.js";

export interface AssetsView {
  /** The model of the configuration in force. */
  readonly model: AssetModel;
  /**
   * Every asset's state (`get`, `states`), the outlet index the protected-asset rule reads
   * (`cordsAt`, src/assets/protect.ts) and the readings of every instance heard of. Replaced by a
   * live change of the configuration: read it at each use, never keep it.
   */
  readonly book: AssetBook;
  /** The latest feed-loss projection, one per feed in feed order ([] before the first); written in place by the next: read it, never keep it. */
  projections(): readonly FeedProjection[];
  /** When the latest projection was made (epoch ms), or null before the first. */
  projectedAt(): number | null;
  /** What each feed carries now, in feed order. */
  feedTotals(): readonly FeedTotal[];
  /** Active redundancy alarms (`$assets`), worst first. */
  assetAlarms(): readonly FleetAlarm[];
  /** Active feed-loss alarms (`$feeds`), worst first. */
  feedAlarms(): readonly FleetAlarm[];
  /**
   * Whether this process publishes the asset (its MQTT topics, Home Assistant device and series):
   * alone always; among several replicas the one that polls its first cord's instance, so that one
   * replica publishes each asset (docs/assets.md, "Among several replicas").
   */
  publishes(asset: AssetDef): boolean;
  /**
   * {@link publishes} of an asset whose first cord is on `instance` (undefined: an asset without
   * cords), for a reader that keeps the instance and need not read the definition again.
   */
  publishesOn(instance: string | undefined): boolean;
  /**
   * Whether this process publishes what is about the whole fleet (the `$assets` and `$feeds` alarm
   * lists and the feeds' series): alone always; among several replicas the one that polls the
   * first configured instance.
   */
  publishesFleet(): boolean;
  /**
   * The shortest poll interval (ms) of the instances the asset's cords are on, as configured now
   * (its figures are published at most about once per it: src/mqtt/assets.ts).
   */
  pollIntervalMs(asset: AssetDef): number;
}
