/**
 * Records a bucket's holder keeps in the coordination engine for whoever holds the bucket next,
 * beside the bucket's lease: one small record per bucket and kind (`energy-<bucket>`: the lifetime
 * energy counters' checkpoint, docs/energy.md; `webhooks-<bucket>`: the webhook events not yet
 * delivered, docs/events.md). The holder writes it; a new holder reads it before
 * it publishes anything of the bucket's instances.
 *
 * A record is stored as a lease (the same seam, ./store.ts) with nobody holding it and the
 * payload, at most {@link MAX_RECORD_PAYLOAD_LENGTH} characters. Writes are conditional on the
 * version this replica last read or wrote: a replica that lost the bucket and still writes finds
 * another version once the new holder has written, and its write is refused.
 */
import {
  LeaseConflictError,
  MAX_RECORD_PAYLOAD_LENGTH,
  RECORD_NAME,
  type LeaseRecord,
  type LeaseStore,
} from "./store.js";

export { MAX_RECORD_PAYLOAD_LENGTH } from "./store.js";

/** The kinds of record kept per bucket. */
export type RecordKind = "energy" | "webhooks";

/** How long a record's read or write may take (ms). */
const RECORD_TIMEOUT_MS = 10_000;

export class BucketRecords {
  readonly #store: LeaseStore;
  readonly #kind: string;
  /** bucket → the version last read or written here. */
  readonly #versions = new Map<number, string | null>();

  constructor(store: LeaseStore, kind: RecordKind) {
    this.#store = store;
    this.#kind = kind;
  }

  get description(): string {
    return this.#store.description;
  }

  #name(bucket: number): string {
    const name = `${this.#kind}-${bucket}`;
    if (!RECORD_NAME.test(name)) throw new Error(`no record name for bucket ${bucket}`);
    return name;
  }

  /** The bucket's payload, or null when none was written (or it cannot be read). */
  async read(bucket: number): Promise<string | null> {
    const lease = await this.#store.get(this.#name(bucket), AbortSignal.timeout(RECORD_TIMEOUT_MS));
    this.#versions.set(bucket, lease?.version ?? null);
    return lease?.record?.payload ?? null;
  }

  /** Writes the bucket's payload over the version last seen here; refused when another wrote since. */
  async write(bucket: number, payload: string): Promise<void> {
    if (payload.length > MAX_RECORD_PAYLOAD_LENGTH)
      throw new Error(
        `the ${this.#kind} record of bucket ${bucket} would take ${payload.length} characters, more than the ${MAX_RECORD_PAYLOAD_LENGTH} a record may: spread the instances over more Cluster.Buckets`,
      );
    const name = this.#name(bucket);
    const record: LeaseRecord = {
      holder: "",
      durationSeconds: 0,
      acquireTime: null,
      renewTime: null,
      transitions: 0,
      payload,
    };
    const signal = AbortSignal.timeout(RECORD_TIMEOUT_MS);
    if (!this.#versions.has(bucket)) await this.read(bucket);
    const version = this.#versions.get(bucket) ?? null;
    try {
      const stored =
        version === null
          ? await this.#store.create(name, record, signal)
          : await this.#store.update(name, record, version, signal);
      this.#versions.set(bucket, stored.version);
    } catch (error) {
      // Another replica wrote it since (or it went): read again before the next write.
      if (error instanceof LeaseConflictError) this.#versions.delete(bucket);
      throw error;
    }
  }

  /** Forgets what was seen of a bucket (given up: its next write reads first). */
  forget(bucket: number): void {
    this.#versions.delete(bucket);
  }
}
