/**
 * The `energy` part: the lifetime energy counters of every outlet and entity that reports energy
 * (docs/energy.md). It hears each polled snapshot on the bus before the surfaces do (it stands
 * before them in the App's list), updates the instance's counters (./book.ts) and answers the
 * surfaces through the {@link EnergyReader} seam.
 *
 * Checkpoints (./checkpoint.ts) go to one backend, by scope: `State.Dir` (one scope, loaded at
 * start, before the first poll) or, among replicas, the coordination engine (one scope per bucket,
 * read when the bucket is taken and before anything of it is published; written by its holder).
 * A scope whose counters changed is written at most once per {@link EnergyPartOptions.checkpointMs},
 * and soon (at most once a second) after a change a rise from its last checkpoint would not make
 * good (a counter started, a reset, a wrap, a replaced unit); a bucket handed over is written as it
 * is handed over, and every scope at stop.
 */
import type { EventBus, OwnershipChangedEvent, SnapshotEvent } from "../bus.js";
import type { EnergyReader } from "../energy-reader.js";
import type { Part } from "../lifecycle.js";
import { FoldedLog } from "../log-limit.js";
import type { Logger } from "../log.js";
import type { Ownership } from "../ownership.js";
import { InstanceBook, type Noted } from "./book.js";
import { bookOf, CheckpointError, entryOf, type InstanceEntry } from "./checkpoint.js";

/** A scope whose counters changed urgently (InstanceBook.urgent) is written at most this often (ms). */
export const URGENT_CHECKPOINT_MS = 1000;
/** Reads of a bucket's checkpoint before its counters start from the PDUs' own. */
const LOAD_ATTEMPTS = 3;
const LOAD_RETRY_MS = 1000;

/** Where checkpoints go: a directory (one scope) or the coordination engine (a scope per bucket). */
export interface CheckpointBackend {
  /** For messages: `State.Dir /var/lib/pdu-bridge`, `etcd http://…`. */
  readonly description: string;
  /** The instances' entries of a scope; null: none written yet. Throws when it cannot be read. */
  load(scope: number): Promise<Record<string, InstanceEntry> | null>;
  /** Writes the scope's entries; resolves with the bytes written. */
  save(scope: number, entries: Record<string, InstanceEntry>): Promise<number>;
}

export interface EnergyPartOptions {
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly ownership: Ownership;
  /** The configured instance ids, now (a live change may add some). */
  readonly instanceIds: () => readonly string[];
  /** null: memory only (the counters start again from the PDUs' own at every start). */
  readonly backend: CheckpointBackend | null;
  /** An instance's scope: 0 for a directory, its bucket among replicas. */
  readonly scopeOf: (instanceId: string) => number;
  /** Whether scopes are read at start (a directory) or when their bucket is taken (replicas). */
  readonly loadAtStart: boolean;
  /** Checkpoints of changed counters at most this often (ms). */
  readonly checkpointMs: number;
  /** false (`Energy.LifetimeCounters`): no counters at all; the part hears nothing and writes nothing. */
  readonly enabled?: boolean;
}

/** A scope's state. */
interface Scope {
  /** Its counters are known (read from the backend, or none there). */
  ready: boolean;
  /** Entries read for instances this configuration does not have: written back as they were. */
  extra: Record<string, InstanceEntry>;
  /** A write in flight. */
  saving: Promise<void> | null;
  /** A prompt write scheduled (an urgent change), or null. */
  soon: NodeJS.Timeout | null;
  /** When its last write started (epoch ms). */
  writtenAt: number;
}

export class EnergyPart implements Part {
  readonly name = "energy";
  readonly reader: EnergyReader;
  readonly #options: EnergyPartOptions;
  readonly #books = new Map<string, InstanceBook>();
  readonly #scopes = new Map<number, Scope>();
  readonly #log: FoldedLog;
  #timer: NodeJS.Timeout | null = null;
  /** Checkpoints written and their last size (for the bench and status). */
  readonly written = { count: 0, bytes: 0 };

  constructor(options: EnergyPartOptions) {
    this.#options = options;
    this.#log = new FoldedLog(options.logger, { burst: 20 });
    for (const id of options.instanceIds()) this.#books.set(id, new InstanceBook());
    this.reader = {
      ready: (instanceId) => this.#ready(instanceId),
      outletWh: (instanceId, deviceId, index) =>
        this.#ready(instanceId) ? (this.#books.get(instanceId)?.outletWh(deviceId, index) ?? null) : null,
      entityWh: (instanceId, deviceId, key) =>
        this.#ready(instanceId) ? (this.#books.get(instanceId)?.entityWh(deviceId, key) ?? null) : null,
    };
  }

  async start(): Promise<void> {
    const { backend, bus, logger } = this.#options;
    if (this.#options.enabled === false) return;
    if (backend === null) {
      logger.warn(
        "energy: no State.Dir: the lifetime energy counters start again from the PDUs' own counters at every start (docs/energy.md)",
      );
    } else if (this.#options.loadAtStart) {
      await this.#load(0);
    }
    bus.listen(this, {
      snapshot: (event) => this.#snapshot(event),
      ownershipChanged: (event) => this.#ownership(event),
    });
    const every = Math.max(1000, this.#options.checkpointMs);
    this.#timer = setInterval(() => this.#checkpoint(), every);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    for (const state of this.#scopes.values()) if (state.soon !== null) clearTimeout(state.soon);
    const scopes = [...this.#scopes.keys()];
    await Promise.allSettled(scopes.map((scope) => this.#save(scope, false)));
    this.#log.close();
  }

  #ready(instanceId: string): boolean {
    if (this.#options.backend === null) return true;
    return this.#scopes.get(this.#options.scopeOf(instanceId))?.ready === true;
  }

  #snapshot(event: SnapshotEvent): void {
    if (!event.fromPoll || event.unchanged) return;
    const id = event.instanceId;
    if (!this.#ready(id) || !this.#options.ownership.owns(id)) return;
    let book = this.#books.get(id);
    if (book === undefined) {
      // An instance added by a live change.
      book = new InstanceBook();
      this.#books.set(id, book);
    }
    book.update(event.snapshot, (noted) => this.#note(id, noted));
    if (book.urgent) this.#soon(this.#options.scopeOf(id));
  }

  /**
   * A scope written soon (at most every {@link URGENT_CHECKPOINT_MS}) after an urgent change: until
   * then, a restart or a new holder would continue from a checkpoint that a rise cannot bring up to
   * what was published (a reset since it, or no checkpoint yet), and publish less.
   */
  #soon(scope: number): void {
    const state = this.#scopes.get(scope);
    if (state === undefined || state.soon !== null) return;
    const wait = Math.max(0, state.writtenAt + URGENT_CHECKPOINT_MS - Date.now());
    state.soon = setTimeout(() => {
      state.soon = null;
      this.#checkpointScope(scope);
    }, wait);
    state.soon.unref();
  }

  /** Among replicas: a bucket taken is read before its counters are used; one handed over is written. */
  #ownership(event: OwnershipChangedEvent): void {
    const bucket = event.bucket;
    if (bucket === undefined || this.#options.backend === null || this.#options.loadAtStart) return;
    if (bucket.held) {
      void this.#loadBucket(bucket.index);
      return;
    }
    // Written beside the handover, not before it: holding the lease's release for a write to the
    // engine would keep the bucket's instances unpublished that long. The next holder reads the
    // record when it takes the bucket; the periodic checkpoint keeps it at most one interval old.
    const save = bucket.handover ? this.#save(bucket.index, true) : Promise.resolve();
    const done = save.catch((error: unknown) => {
      this.#options.logger.error(
        { bucket: bucket.index, err: error },
        "energy: the checkpoint of a bucket handed over could not be written; its next holder continues from the one before",
      );
    });
    void done.then(() => this.#forget(bucket.index));
  }

  /**
   * A bucket taken: its checkpoint read, tried {@link LOAD_ATTEMPTS} times; a record that cannot be
   * read (or checked) at all leaves its counters to start from the PDUs' own, said as an error.
   */
  async #loadBucket(bucket: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#load(bucket);
        return;
      } catch (error) {
        if (attempt < LOAD_ATTEMPTS && !(error instanceof CheckpointError)) {
          await new Promise((resolve) => setTimeout(resolve, LOAD_RETRY_MS));
          continue;
        }
        this.#options.logger.error(
          { bucket, err: error },
          "energy: the bucket's checkpoint could not be read; its lifetime counters start from the PDUs' own",
        );
        this.#scopeFor(bucket).ready = true;
        return;
      }
    }
  }

  /** Reads a scope's checkpoint into the books of its instances. */
  async #load(scope: number): Promise<void> {
    const backend = this.#options.backend;
    if (backend === null) return;
    const state = this.#scopeFor(scope);
    state.ready = false;
    const entries = (await backend.load(scope)) ?? {};
    state.extra = {};
    let restored = 0;
    const configured = new Set(this.#options.instanceIds());
    for (const [id, entry] of Object.entries(entries)) {
      if (!configured.has(id) || this.#options.scopeOf(id) !== scope) {
        state.extra[id] = entry;
        continue;
      }
      this.#books.set(id, bookOf(entry));
      restored++;
    }
    state.ready = true;
    this.#options.logger.info(
      { scope, restored, kept: Object.keys(state.extra).length, from: backend.description },
      "energy: lifetime counters read from the checkpoint",
    );
  }

  #scopeFor(scope: number): Scope {
    let state = this.#scopes.get(scope);
    if (state === undefined) {
      state = { ready: false, extra: {}, saving: null, soon: null, writtenAt: 0 };
      this.#scopes.set(scope, state);
    }
    return state;
  }

  /** A bucket given up: its books start empty again (its next holder continues them). */
  #forget(scope: number): void {
    const state = this.#scopes.get(scope);
    if (state?.soon !== undefined && state.soon !== null) clearTimeout(state.soon);
    this.#scopes.delete(scope);
    for (const id of this.#options.instanceIds())
      if (this.#options.scopeOf(id) === scope) this.#books.set(id, new InstanceBook());
  }

  #checkpoint(): void {
    for (const scope of this.#scopes.keys()) this.#checkpointScope(scope);
  }

  #checkpointScope(scope: number): void {
    void this.#save(scope, false).catch((error: unknown) => {
      this.#log.error(
        `checkpoint|${scope}`,
        { scope, err: error },
        "energy: the checkpoint could not be written; it is tried again",
      );
    });
  }

  /** Writes a scope when its counters changed (or `always`); one write per scope at a time. */
  async #save(scope: number, always: boolean): Promise<void> {
    const backend = this.#options.backend;
    const state = this.#scopes.get(scope);
    if (backend === null || state === undefined || !state.ready) return;
    if (state.saving !== null) await state.saving;
    const ids = this.#options.instanceIds().filter((id) => this.#options.scopeOf(id) === scope);
    // A bucket handed over is written as this replica last knew it (it no longer owns it by then);
    // otherwise only while every instance of the scope is still its own: never a partial record.
    if (!always && !ids.every((id) => this.#options.ownership.owns(id))) return;
    const books = ids.map((id) => [id, this.#books.get(id)] as const);
    if (!always && !books.some(([, book]) => book?.dirty === true)) return;
    const entries: Record<string, InstanceEntry> = { ...state.extra };
    for (const [id, book] of books) {
      if (book === undefined) continue;
      entries[id] = entryOf(book);
      book.dirty = false;
      book.urgent = false;
    }
    state.writtenAt = Date.now();
    const saving = backend.save(scope, entries).then((bytes) => {
      this.written.count++;
      this.written.bytes = bytes;
    });
    state.saving = saving.then(
      () => {
        state.saving = null;
      },
      () => {
        state.saving = null;
      },
    );
    await saving.catch((error: unknown) => {
      for (const [, book] of books) if (book !== undefined) book.dirty = true;
      throw error;
    });
  }

  #note(instanceId: string, noted: Noted): void {
    const fields = {
      instance: instanceId,
      device: noted.deviceId,
      where: noted.what,
      readingKwh: noted.readingWh / 1000,
      lifetimeKwh: noted.lifetimeWh / 1000,
    };
    const key = `${instanceId}|${noted.outcome}`;
    switch (noted.outcome) {
      case "rejected":
        this.#log.warn(
          key,
          fields,
          "energy: a rise larger than the outlet or entity could draw was not counted",
        );
        break;
      case "reset-uncounted":
        this.#log.warn(
          key,
          fields,
          "energy: the PDU's counter dropped; carried on from the last value (the reading was too large to be energy since a reset)",
        );
        break;
      case "reset":
        this.#log.info(
          key,
          fields,
          "energy: the PDU's counter dropped (a reset or a replaced unit); carried on from the last value",
        );
        break;
      case "wrap":
        this.#log.info(key, fields, "energy: the PDU's 32-bit counter wrapped; counted through");
        break;
      case "rebased":
        this.#log.warn(
          key,
          fields,
          "energy: the PDU's counter jumped and stayed there; counting from the new reading",
        );
        break;
      default:
        break;
    }
  }
}
