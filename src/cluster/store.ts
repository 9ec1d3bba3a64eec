/**
 * The `LeaseStore` seam: everything the election algorithm (elector.ts) needs from a coordination
 * engine, and nothing more. An engine stores named lease records and changes one only when the
 * caller names the version it last saw (etcd: a transaction on `mod_revision`; Kubernetes: an
 * update carrying `resourceVersion`). The algorithm above the seam is the same for every engine.
 *
 * Engines: etcd.ts (etcd v3 through its JSON gateway) and kubernetes.ts (coordination.k8s.io/v1
 * Leases). The factory is engines.ts.
 *
 * What an engine returns was written by other replicas (or anyone with access to the engine): it is
 * checked here ({@link checkRecord}) before the algorithm sees it, and a record that fails the check
 * reaches the algorithm as `record: null` ("someone's, unreadable"), never as a throw.
 */

/** A lease as stored: who holds it and since when, as its holder wrote it. */
export interface LeaseRecord {
  /** The holder's identity (elector.ts: `<member>/<incarnation>`); "" when nobody holds it. */
  readonly holder: string;
  /**
   * The lease duration the holder works with, in whole seconds. For people and other tools reading
   * the record: every replica judges expiry with its own configuration and its own clock.
   */
  readonly durationSeconds: number;
  /** When the holder acquired and last renewed it, by the holder's wall clock (RFC 3339); for people only. */
  readonly acquireTime: string | null;
  readonly renewTime: string | null;
  /** How many times the lease has changed holders. */
  readonly transitions: number;
  /** A small JSON text the algorithm keeps with the lease (readiness, once-only command ids). */
  readonly payload: string;
}

export interface StoredLease {
  /** The lease's name in the seam (`member-<name>`, `bucket-<n>`, `config`). */
  readonly name: string;
  /** null: a value this service cannot read (written by something else); treated as someone's. */
  readonly record: LeaseRecord | null;
  /**
   * The engine's version of this record (etcd `mod_revision`, Kubernetes `resourceVersion`): opaque,
   * compared only for equality, and named by every conditional write.
   */
  readonly version: string;
}

export interface LeaseList {
  readonly leases: readonly StoredLease[];
  /** The engine's revision of the list: a watch from it misses no later change. */
  readonly revision: string;
}

export type LeaseEvent =
  { readonly type: "put"; readonly lease: StoredLease } | { readonly type: "delete"; readonly name: string };

export interface LeaseWatch {
  /** Stops the watch; `onEnd` is not called for a watch closed this way. */
  close(): void;
}

/**
 * One small interface over a coordination engine. Every call takes a signal (the caller's
 * deadline) and throws {@link LeaseConflictError} when a conditional write finds another version,
 * {@link LeaseStoreError} when the engine could not be asked or refused for another reason.
 */
export interface LeaseStore {
  /** For messages and status: the engine and where it is (`etcd http://…`, `kubernetes ns/prefix`). */
  readonly description: string;
  /** The lease, or null when there is none. */
  get(name: string, signal: AbortSignal): Promise<StoredLease | null>;
  /** Creates the lease; conflict when it exists. */
  create(name: string, record: LeaseRecord, signal: AbortSignal): Promise<StoredLease>;
  /** Replaces the lease if its version is still `version`; conflict when it is not, or it is gone. */
  update(name: string, record: LeaseRecord, version: string, signal: AbortSignal): Promise<StoredLease>;
  /** Deletes the lease if its version is still `version`; conflict when it changed; nothing when it is gone. */
  delete(name: string, version: string, signal: AbortSignal): Promise<void>;
  /** Every lease of this installation (members, buckets, config). */
  list(signal: AbortSignal): Promise<LeaseList>;
  /**
   * Changes after `revision` (a {@link LeaseList.revision}), in order, until `close()`. `onEnd` is
   * called once when the watch ends by itself (engine gone, history compacted): the caller lists
   * again and starts a new one.
   */
  watch(revision: string, onEvent: (event: LeaseEvent) => void, onEnd: (error: Error) => void): LeaseWatch;
  /** Ends open watches and connections. */
  close(): Promise<void>;
}

/** A conditional write found another version than the one named (or the lease exists, for create). */
export class LeaseConflictError extends Error {
  constructor(name: string, detail: string) {
    super(`lease ${name}: ${detail}`);
    this.name = "LeaseConflictError";
  }
}

/** The engine could not be reached, or refused a request for a reason other than a conflict. */
export class LeaseStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LeaseStoreError";
  }
}

/** Longest payload accepted, in characters (etcd values and Kubernetes annotations take far more). */
export const MAX_PAYLOAD_LENGTH = 16_384;
/**
 * Longest payload of a bucket's record (./records.ts), in characters: a Kubernetes object's
 * annotations take 256 KiB in all, and etcd's JSON of it (base64, 4/3) stays far below its 1.5 MiB
 * request limit and within the 256 KiB value this service reads back.
 */
export const MAX_RECORD_PAYLOAD_LENGTH = 131_072;
/** Names of the records kept beside the bucket leases (./records.ts): `energy-<bucket>`, `webhooks-<bucket>`. */
export const RECORD_NAME = /^(energy|webhooks)-[0-9]{1,4}$/;

/** Longest holder identity accepted (a member name of 63, `/` and an incarnation). */
export const MAX_HOLDER_LENGTH = 128;
const MAX_TIME_LENGTH = 64;
const MAX_TRANSITIONS = 2 ** 31 - 1;

/** Lease names in the seam: what engines may put into a key or a Kubernetes name. */
export const LEASE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]{0,78}[a-z0-9])?$/;

/**
 * The fields of a stored record, checked: the right types and bounded sizes, or null. Engines map
 * their own shape to these fields first (a missing Kubernetes `holderIdentity` is "", a missing
 * `leaseTransitions` 0).
 */
export function checkRecord(
  fields: {
    holder: unknown;
    durationSeconds: unknown;
    acquireTime: unknown;
    renewTime: unknown;
    transitions: unknown;
    payload: unknown;
  },
  maxPayload = MAX_PAYLOAD_LENGTH,
): LeaseRecord | null {
  const { holder, durationSeconds, acquireTime, renewTime, transitions, payload } = fields;
  if (typeof holder !== "string" || holder.length > MAX_HOLDER_LENGTH) return null;
  if (!isWhole(durationSeconds, 0, 86_400) || !isWhole(transitions, 0, MAX_TRANSITIONS)) return null;
  const time = (t: unknown) => t === null || (typeof t === "string" && t.length <= MAX_TIME_LENGTH);
  if (!time(acquireTime) || !time(renewTime)) return null;
  if (typeof payload !== "string" || payload.length > maxPayload) return null;
  return {
    holder,
    durationSeconds,
    acquireTime: acquireTime as string | null,
    renewTime: renewTime as string | null,
    transitions,
    payload,
  };
}

const isWhole = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

/** A record's size check before it is written: the algorithm never writes what it would refuse to read. */
export function assertWritable(name: string, record: LeaseRecord, maxPayload = MAX_PAYLOAD_LENGTH): void {
  if (!LEASE_NAME_PATTERN.test(name)) throw new Error(`invalid lease name ${JSON.stringify(name)}`);
  if (checkRecord(record, maxPayload) === null) throw new Error(`lease ${name}: the record is out of bounds`);
}

/** Aborts with the caller's signal or after `timeoutMs`, whichever comes first. */
export function deadline(signal: AbortSignal, timeoutMs: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
}

/** A short text for an error of any kind (for logs and status): its message, code and cause. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  let text =
    typeof code === "string" && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  if (error.cause instanceof Error && !text.includes(error.cause.message)) text += `: ${error.cause.message}`;
  return text;
}
