/**
 * Assets and feeds as one of the App's parts (docs/assets.md, "In the service"). It keeps the
 * {@link AssetBook} from the store's events: each `snapshot` and `pollFailed` of an instance
 * recomputes only the assets with a cord there; a snapshot a latch or a view made (not a poll)
 * moves states but counts no poll. The redundancy alarms an update raises, changes or clears are
 * told on the bus as an `alarms` event under `$assets`, and every asset whose state moved in an
 * `assets` event, which the surfaces hear.
 *
 * The feed-loss projection is a pass over the fleet, so it runs on a timer (once per the shortest
 * poll interval of an instance on a feed, at least every second), only when a reading changed since
 * the last; its alarms go out under `$feeds`.
 *
 * A live change of any key of Assets, Feeds or Sequences builds the model again and the book from the last one
 * (`AssetBook.reconfigure`: counts and alarms kept where the cords are the same). A cord that names
 * an outlet its instance does not report is logged once, at the first poll that shows it, and shown
 * on the asset; never fatal.
 *
 * Among several replicas it hears only the instances this replica polls; an instance handed to
 * another replica is read as `elsewhere` (its cords unknown here, never stale).
 */
import type { EventBus } from "../bus.js";
import { buildAssetModel } from "../config/asset-model.js";
import { assetsSectionOf } from "../config/assets.js";
import type { Config } from "../config/schema.js";
import type { Part } from "../lifecycle.js";
import type { Logger } from "../log.js";
import type { Ownership } from "../ownership.js";
import { thresholdsOf } from "../pdu/load.js";
import { ASSETS_SCOPE, FEEDS_SCOPE, type FleetAlarm, type FleetAlarmChange } from "./alarms.js";
import { AssetBook } from "./book.js";
import { FeedLossProjector, FeedLossTracker, type FeedProjection } from "./feed-loss.js";
import { feedTotals, type FeedTotal } from "./feeds.js";
import type { AssetState, CordProblem, InstanceReading } from "./state.js";
import type { AssetDef, AssetModel } from "./types.js";
import type { AssetsView } from "./view.js";

/** Cord problems that only a configuration change mends: logged once each. */
const CONFIG_PROBLEMS: ReadonlySet<CordProblem> = new Set(["unknown-device", "unknown-outlet", "ambiguous"]);

/** Bounds of the projection's period (ms). */
const PROJECT_MIN_MS = 1000;
const PROJECT_MAX_MS = 60_000;

export interface AssetsPartOptions {
  /** The configuration in force (read at start and at each live change). */
  readonly config: () => Config;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Which instances this process polls (all of them alone). */
  readonly ownership: Ownership;
  /** Whether the instance's last poll succeeded (the store's status), for snapshots not from a poll. */
  readonly online: (instanceId: string) => boolean;
  /** The outlets' lifetime energy counters (Wh; the `energy` part's reader), or null where not known. */
  readonly lifetimeWh?: (instanceId: string, deviceId: string, index: number) => number | null;
  readonly now?: () => number;
}

export class AssetsPart implements Part, AssetsView {
  readonly name = "assets";
  readonly #o: AssetsPartOptions;
  readonly #logger: Logger;
  readonly #now: () => number;
  #book: AssetBook;
  readonly #tracker: FeedLossTracker;
  readonly #projector = new FeedLossProjector();
  #projections: readonly FeedProjection[] = [];
  #feedAlarms: readonly FleetAlarm[] = [];
  #projectedAt: number | null = null;
  /** A reading changed since the last projection. */
  #dirty = true;
  #timer: NodeJS.Timeout | null = null;
  /** Each instance's reader of lifetime counters (the store's events name configured instances only). */
  readonly #lifetimeReaders = new Map<string, (deviceId: string, index: number) => number | null>();
  /**
   * Each instance's poll interval (ms) and each asset's shortest (worked out at its first figure
   * decision), of the configuration in force: made at the first use after a change of it.
   */
  #intervals: {
    readonly ms: ReadonlyMap<string, number>;
    readonly byAsset: WeakMap<AssetDef, number>;
  } | null = null;
  /** `asset \0 cord \0 problem` already logged (bounded by the configuration: 8 cords an asset). */
  #logged = new Set<string>();

  constructor(options: AssetsPartOptions) {
    this.#o = options;
    this.#logger = options.logger.child({ part: "assets" });
    this.#now = options.now ?? Date.now;
    const config = options.config();
    this.#book = new AssetBook(modelOf(config));
    this.#tracker = new FeedLossTracker(thresholdsOf(config.Alarms));
  }

  get model(): AssetModel {
    return this.#book.model;
  }

  get book(): AssetBook {
    return this.#book;
  }

  projections(): readonly FeedProjection[] {
    return this.#projections;
  }

  projectedAt(): number | null {
    return this.#projectedAt;
  }

  feedTotals(): readonly FeedTotal[] {
    return feedTotals(this.#book.model, this.#book.readings());
  }

  assetAlarms(): readonly FleetAlarm[] {
    return this.#book.alarms();
  }

  feedAlarms(): readonly FleetAlarm[] {
    return this.#feedAlarms;
  }

  publishes(asset: AssetDef): boolean {
    return this.publishesOn(asset.cords[0]?.instance);
  }

  publishesOn(instance: string | undefined): boolean {
    return instance !== undefined && this.#o.ownership.owns(instance);
  }

  publishesFleet(): boolean {
    const first = this.#o.config().instances[0];
    return first !== undefined && this.#o.ownership.owns(first.id);
  }

  pollIntervalMs(asset: AssetDef): number {
    let intervals = this.#intervals;
    if (intervals === null) {
      const ms = new Map(this.#o.config().instances.map((i) => [i.id, i.PollInterval * 1000]));
      this.#intervals = intervals = { ms, byAsset: new WeakMap() };
    }
    const known = intervals.byAsset.get(asset);
    if (known !== undefined) return known;
    let shortest = Infinity;
    for (const cord of asset.cords)
      shortest = Math.min(shortest, intervals.ms.get(cord.instance) ?? Infinity);
    const interval = Number.isFinite(shortest) ? shortest : PROJECT_MIN_MS;
    intervals.byAsset.set(asset, interval);
    return interval;
  }

  /** The instance's lifetime counters, read when a cord is read (one reader per instance, made once). */
  #lifetimeOf(instanceId: string): (deviceId: string, index: number) => number | null {
    let reader = this.#lifetimeReaders.get(instanceId);
    if (reader === undefined) {
      const read = this.#o.lifetimeWh;
      reader = read === undefined ? () => null : (deviceId, index) => read(instanceId, deviceId, index);
      this.#lifetimeReaders.set(instanceId, reader);
    }
    return reader;
  }

  start(): void {
    const { bus } = this.#o;
    bus.listen(this, {
      snapshot: (e) =>
        this.#update(
          {
            id: e.instanceId,
            snapshot: e.snapshot,
            online: e.fromPoll || this.#o.online(e.instanceId),
            load: e.load,
            lifetimeWh: this.#lifetimeOf(e.instanceId),
          },
          e.fromPoll,
        ),
      pollFailed: ({ instanceId }) => {
        const last = this.#book.readings().get(instanceId);
        this.#update(
          {
            id: instanceId,
            snapshot: last?.snapshot ?? null,
            online: false,
            ...(last?.load === undefined ? {} : { load: last.load }),
            lifetimeWh: this.#lifetimeOf(instanceId),
          },
          true,
        );
      },
      ownershipChanged: ({ lost }) => {
        for (const id of lost) this.#update({ id, snapshot: null, online: false, elsewhere: true }, false);
      },
      configApplied: ({ config, live }) => {
        // Any change may move a poll interval.
        this.#intervals = null;
        if (live.assets === true) this.#reconfigure(config);
      },
    });
    this.#schedule();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One instance's new reading: its assets recomputed, their alarms and states told. */
  #update(reading: InstanceReading, poll: boolean): void {
    const { states, moved, alarmChanges } = this.#book.update(reading, poll, this.#now());
    this.#dirty = true;
    this.#tellAlarms(ASSETS_SCOPE, alarmChanges);
    for (const state of states) if (state.changed) this.#logProblems(state);
    if (moved.length > 0) this.#o.bus.emit("assets", { assets: moved, feeds: false, reconfigured: false });
  }

  /** A cord that names no outlet of its instance: one warning per cord and problem. */
  #logProblems(state: AssetState): void {
    for (const r of state.readings) {
      if (r.problem === null || !CONFIG_PROBLEMS.has(r.problem)) continue;
      const key = `${state.id}\u0000${r.cord}\u0000${r.problem}`;
      if (this.#logged.has(key)) continue;
      this.#logged.add(key);
      this.#logger.warn(
        { asset: state.id, cord: r.cord, instance: r.instance, outlet: r.index, problem: r.problem },
        `asset ${state.id} cord ${r.cord + 1}: ${r.detail ?? r.problem}; shown on the asset (logged once)`,
      );
    }
  }

  #reconfigure(config: Config): void {
    const { book, alarmChanges } = AssetBook.reconfigure(this.#book, modelOf(config), this.#now());
    this.#book = book;
    this.#logged = new Set();
    this.#dirty = true;
    this.#tellAlarms(ASSETS_SCOPE, alarmChanges);
    for (const state of book.states()) this.#logProblems(state);
    this.#o.bus.emit("assets", { assets: [...book.model.assets.keys()], feeds: false, reconfigured: true });
    this.#project();
    this.#schedule();
  }

  #tellAlarms(scope: string, changes: readonly FleetAlarmChange[]): void {
    if (changes.length > 0) this.#o.bus.emit("alarms", { instanceId: scope, changes });
  }

  /** The projection's timer, at the shortest poll interval of an instance on a feed. */
  #schedule(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    const model = this.#book.model;
    if (model.feeds.size === 0) {
      this.#project();
      return;
    }
    const onFeeds = new Set([...model.instanceFeeds.keys(), ...model.deviceFeeds.keys()]);
    const intervals = this.#o
      .config()
      .instances.filter((i) => onFeeds.has(i.id))
      .map((i) => i.PollInterval * 1000);
    const every = Math.min(PROJECT_MAX_MS, Math.max(PROJECT_MIN_MS, Math.min(PROJECT_MAX_MS, ...intervals)));
    this.#timer = setInterval(() => {
      if (this.#dirty) this.#project();
    }, every);
    this.#timer.unref();
  }

  /** The feed-loss projection of every feed now, and its alarms. */
  #project(): void {
    this.#dirty = false;
    const book = this.#book;
    const projections = this.#projector.project(book.model, book.states(), book.readings());
    const at = this.#now();
    const { alarms, changes } = this.#tracker.assess(projections, at);
    this.#projections = projections;
    this.#projectedAt = at;
    this.#feedAlarms = alarms;
    this.#tellAlarms(FEEDS_SCOPE, changes);
    this.#o.bus.emit("assets", { assets: [], feeds: true, reconfigured: false });
  }
}

/** The model of a configuration the loader judged (its problems were exit 2 there). */
function modelOf(config: Config): AssetModel {
  return buildAssetModel(assetsSectionOf(config)).model;
}
