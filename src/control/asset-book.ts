/**
 * The assets' book control reads when the App has none of its own (docs/assets.md, "Asset
 * control"): the model of the configuration's `Assets`, `Feeds` and `Sequences`, every cord read
 * from the store's latest status of its instance at start and again on each `snapshot` and
 * `pollFailed` of it (a latch's snapshot too, so a cord switched off reads off at once), and built
 * again from the last one on a live change of the configuration (counts and alarms kept where the
 * cords are the same). Among several replicas the store holds only the instances this replica
 * polls: a cord elsewhere reads `not-polled` here, never live.
 */
import { AssetBook } from "../assets/book.js";
import type { InstanceReading } from "../assets/state.js";
import type { EventBus } from "../bus.js";
import { buildAssetModel } from "../config/asset-model.js";
import { assetsSectionOf } from "../config/assets.js";
import type { Config } from "../config/schema.js";
import type { SnapshotStore } from "../poller/store.js";

export class ControlAssetBook {
  readonly #config: () => Config;
  readonly #store: SnapshotStore;
  #book: AssetBook | null = null;

  constructor(config: () => Config, store: SnapshotStore) {
    this.#config = config;
    this.#store = store;
  }

  /** The book now, or null before {@link listen} or without assets. */
  get book(): AssetBook | null {
    return this.#book;
  }

  /** Builds the book from the store and follows its events (released with `owner`'s listeners). */
  listen(owner: object, bus: EventBus): void {
    this.#rebuild();
    bus.listen(owner, {
      snapshot: (e) => this.#book?.update(this.#read(e.instanceId), e.fromPoll, Date.now()),
      pollFailed: (e) => this.#book?.update(this.#read(e.instanceId), true, Date.now()),
      configApplied: () => this.#rebuild(),
    });
  }

  #rebuild(): void {
    const config = this.#config();
    // The loader refused a configuration whose model has problems: none are left here.
    const { model } = buildAssetModel(assetsSectionOf(config));
    const last = this.#book;
    this.#book =
      model.assets.size === 0
        ? null
        : last === null
          ? new AssetBook(model)
          : AssetBook.reconfigure(last, model, Date.now()).book;
    const book = this.#book;
    if (book === null || last !== null) return;
    for (const instance of config.instances) book.update(this.#read(instance.id), false, Date.now());
  }

  #read(id: string): InstanceReading {
    const status = this.#store.get(id);
    const snapshot = status?.snapshot ?? null;
    return {
      id,
      snapshot,
      online: snapshot !== null && status?.consecutiveFailures === 0,
      ...(status === undefined ? {} : { load: status.load }),
    };
  }
}
