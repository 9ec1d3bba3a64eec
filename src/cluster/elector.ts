/**
 * The election algorithm above the lease seam: member leases, bucket leases, who should hold what,
 * and the fencing of writes. The same for every engine. docs/cluster.md explains the design and
 * the timing argument; the rules in short:
 *
 * - **Expiry is judged locally.** A replica notes, on its monotonic clock (`performance.now()`),
 *   when it last saw a lease's version change. A lease held by another replica counts as expired
 *   once it has not changed for `LeaseDuration` on this clock. Times written in records are never
 *   compared (clocks differ; only their rates are assumed close).
 * - **Holding is judged from the holder's own renewals.** A holder's lease is valid until
 *   `RenewDeadline` after it *sent* its last successful conditional renewal. Past that (the engine
 *   unreachable, the event loop stalled, the process paused) it drops the bucket at once, before
 *   anyone else may take it: they wait `LeaseDuration` > `RenewDeadline` from when they saw that
 *   renewal, which was written after it was sent. A replica also holds nothing while its own member
 *   lease is not valid by the same rule.
 * - **Writes are fenced** ({@link WriteGrant}): a write to a PDU follows a conditional renewal of
 *   its bucket's lease, must start within {@link START_WINDOW_MS} of that renewal's answer and is
 *   aborted at the lease's validity end.
 * - **Who holds what** (assign.ts): balanced rendezvous over the candidates (alive, ready members
 *   with the same bucket count; every alive member when none is ready). A free or expired bucket is
 *   taken by its target at once, by the others in weight order after `LeaseDuration` more; a holder
 *   hands a bucket to its target once that target has been a candidate for {@link settleMs}.
 * - **Once-only ids** (`reboot`, `resetStats`) and **reboot holds** are recorded in the bucket
 *   lease's payload (bucket-memory.ts) by the same conditional renewal that precedes the write, each
 *   for a time: a new holder reads them before its first write and refuses them.
 *
 * Nothing here throws out of a timer: engine errors are logged (once per change of state) and
 * retried on the next tick.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "../log.js";
import { assign, bucketOf, fallbackRank, WeightCache } from "./assign.js";
import {
  describeError,
  LeaseConflictError,
  type LeaseEvent,
  type LeaseRecord,
  type LeaseStore,
  type LeaseWatch,
  type StoredLease,
} from "./store.js";
import { BucketMemory, MAX_HOLD_MS, ONCE_ID_PATTERN, ONCE_KEEP_MS, onceIdsOf } from "./bucket-memory.js";
import type { ClusterStatus, MemberView, SilentMember, UnpolledBucket } from "../cluster-status.js";
import { FencingError } from "../fencing.js";

export { FencingError };
export type { ClusterStatus, MemberView, SilentMember, UnpolledBucket };

/** A write must start within this long of the renewal that allowed it (less when RenewDeadline is short). */
export const START_WINDOW_MS = 1000;
export { ONCE_ID_PATTERN, onceIdsOf } from "./bucket-memory.js";

/** Members considered at most (far more than any installation runs; bounds the work of a round). */
const MAX_MEMBERS = 256;
const MEMBER_PREFIX = "member-";
const BUCKET_PREFIX = "bucket-";
const CONFIG_LEASE = "config";
/** A release waits this long (ms) at most for the work listeners handed in ({@link ClusterEvent}). */
export const RELEASE_HOLD_MS = 1000;

export type LossReason =
  /** Handed to the replica that should hold it (balance, readiness). */
  | "handover"
  /** This replica is stopping. */
  | "stopping"
  /** No successful renewal within RenewDeadline (engine unreachable, event loop stalled, paused). */
  | "renew-deadline"
  /** Someone else wrote the lease (it was taken after all). */
  | "conflict"
  /** The installation's bucket count in the engine differs from this replica's. */
  | "blocked";

export type ClusterEvent =
  | { readonly type: "acquired"; readonly bucket: number }
  | {
      readonly type: "lost";
      readonly bucket: number;
      readonly reason: LossReason;
      /**
       * On a release (handover, stopping): a listener may hand in work the release waits for before
       * the lease is written free (at most {@link RELEASE_HOLD_MS}), such as ending the bucket's MQTT
       * availability connection cleanly before the next holder opens its own.
       */
      readonly holdRelease?: (work: Promise<unknown>) => void;
    }
  | { readonly type: "members"; readonly members: readonly MemberView[] };

/** What a fenced write gets: check it right before sending, pass its signal, call done() after. */
export interface WriteGrant {
  readonly bucket: number;
  /** Aborted at the lease's validity end, or when the bucket is lost. */
  readonly signal: AbortSignal;
  /**
   * Throws {@link FencingError} unless the write may start now: the bucket still held, its lease
   * valid, and within the start window of the renewal (on the monotonic clock, so an event-loop
   * stall between the renewal and the write counts).
   */
  assertMayStart(): void;
  /** The write has ended (whatever its outcome); a handover waits for this. */
  done(): void;
}

export interface ElectorOptions {
  readonly store: LeaseStore;
  /** Member name (unique per replica; validated by the configuration). */
  readonly member: string;
  readonly buckets: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly logger: Logger;
  /** Whether this replica says it is ready from the start (default false; see setReady). */
  readonly ready?: boolean;
  /** Where the other replicas reach this one's REST API (in the member lease, for forwarding), or null. */
  readonly url?: string | null;
}

interface Observed {
  lease: StoredLease;
  /** Monotonic time this replica first saw this version. */
  seenAt: number;
}

interface Held {
  version: string;
  record: LeaseRecord;
  /** Monotonic: RenewDeadline after the last successful renewal was sent. */
  validUntil: number;
  lastSend: number;
  readonly grants: Set<Grant>;
  /** The once-only ids and reboot holds the lease records (as of its last write). */
  memory: BucketMemory;
}

/** A reboot hold asked of a write: the outlet (any key) and how long it is held once sent (ms). */
export interface HoldRequest {
  readonly key: string;
  readonly ms: number;
}

/** What a fenced write asks to record with its renewal. */
export interface WriteOptions {
  readonly onceId?: string;
  readonly hold?: HoldRequest;
}

interface MemberInfo {
  readonly name: string;
  readonly identity: string;
  readonly ready: boolean;
  readonly buckets: number;
  /** The REST API URL it advertises (checked: an http(s) origin), or null. */
  readonly url: string | null;
}

type RenewOutcome =
  | { readonly ok: true; readonly sentAt: number; readonly answeredAt: number }
  | {
      readonly ok: false;
      readonly reason: "not-held" | "once-used" | "held" | "failed";
      readonly detail: string;
    };

interface Waiter {
  readonly onceId: string | null;
  readonly hold: HoldRequest | null;
  readonly resolve: (o: RenewOutcome) => void;
}

interface Batch {
  readonly onceIds: string[];
  readonly holdKeys: string[];
  readonly waiters: Waiter[];
}

const now = () => performance.now();
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function parsePayload(payload: string): Record<string, unknown> {
  if (payload === "") return {};
  try {
    const value: unknown = JSON.parse(payload);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** An http(s) origin (scheme, host, port) read from another replica's member lease, else null. */
function advertisedUrl(value: unknown): string | null {
  if (typeof value !== "string" || value.length > 300 || !/^https?:\/\/[^/?#@\s]+\/?$/.test(value))
    return null;
  try {
    return new URL(value).origin;
  } catch {
    return null;
  }
}

export class Elector {
  readonly member: string;
  readonly buckets: number;
  /** `<member>/<incarnation>`: a restart of the same member is another holder. */
  readonly identity: string;
  readonly #store: LeaseStore;
  readonly #log: Logger;
  readonly #leaseMs: number;
  readonly #deadlineMs: number;
  readonly #retryMs: number;
  readonly #settleMs: number;
  readonly #startWindowMs: number;
  readonly #requestMs: number;
  readonly #gcAfterMs: number;
  /** A lease of another replica unchanged this long has stopped being renewed (see {@link #renewals}). */
  readonly #silentMs: number;
  readonly #weights = new WeightCache();

  #state: ClusterStatus["state"] = "starting";
  #startedAt = 0;
  #ready: boolean;
  readonly #url: string | null;
  #readyWritten: boolean | null = null;
  /** Why this replica may not hold buckets: the installation's bucket count differs. */
  #blocked: string | null = null;
  /** Our member lease is held by another incarnation of our name (informational: we hold nothing then). */
  #nameTaken: string | null = null;
  #lastError: string | null = null;
  #lastListOk = -Infinity;
  #transitions = 0;

  readonly #observed = new Map<string, Observed>();
  /** Monotonic time each bucket was first seen free (released, absent or expired), for fallbacks. */
  readonly #freeSince = new Map<number, number>();
  readonly #candidateSince = new Map<string, number>();
  readonly #held = new Map<number, Held>();
  readonly #chains = new Map<number, Promise<void>>();
  readonly #batches = new Map<number, Batch>();
  #memberVersion: string | null = null;
  #memberValidUntil = -Infinity;
  #memberLastSend = -Infinity;
  #memberAcquireTime = new Date().toISOString();
  #members: MemberView[] = [];

  #watch: LeaseWatch | null = null;
  #watchBroken = true;
  #timer: NodeJS.Timeout | null = null;
  #deadlineTimer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #again = false;
  #halted = false;
  /** Aborted when stopping: requests of a round in flight end at once. */
  readonly #rounds = new AbortController();
  readonly #listeners = new Set<(event: ClusterEvent) => void>();

  constructor(options: ElectorOptions) {
    this.#store = options.store;
    this.member = options.member;
    this.buckets = options.buckets;
    this.identity = `${options.member}/${randomBytes(6).toString("hex")}`;
    this.#log = options.logger;
    this.#leaseMs = options.leaseDurationMs;
    this.#deadlineMs = options.renewDeadlineMs;
    this.#retryMs = options.retryPeriodMs;
    this.#settleMs = 2 * options.retryPeriodMs;
    this.#startWindowMs = Math.min(START_WINDOW_MS, options.renewDeadlineMs / 4);
    this.#requestMs = Math.max(1000, options.retryPeriodMs);
    this.#gcAfterMs = Math.max(10 * options.leaseDurationMs, 60_000);
    this.#silentMs = Math.min(3 * options.retryPeriodMs, options.renewDeadlineMs);
    this.#ready = options.ready ?? false;
    this.#url = options.url ?? null;
  }

  /** How long a target must have been a candidate before a holder hands it a bucket (also the start-up wait). */
  get settleMs(): number {
    return this.#settleMs;
  }

  // ---- the interface the service uses (index.ts documents it) ----

  /** Joins: writes the member lease and starts the loop; resolves after the first round. */
  async start(): Promise<void> {
    if (this.#startedAt !== 0) throw new Error("the elector was started already");
    this.#startedAt = now();
    await this.#tick();
    this.#scheduleNext();
  }

  /**
   * Leaves: holds nothing from now on, waits for writes in flight (their deadlines bound it),
   * deletes the member lease and releases every bucket so that the others take them at once.
   */
  async stop(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "stopping") return;
    this.#state = "stopping";
    this.#halted = false;
    this.#clearTimers();
    this.#rounds.abort();
    await this.#ticking;
    const held = [...this.#held.keys()];
    const releases = held.map((b) => this.#release(b, "stopping"));
    this.#watch?.close();
    this.#watch = null;
    if (this.#memberVersion !== null) {
      try {
        await this.#store.delete(`${MEMBER_PREFIX}${this.member}`, this.#memberVersion, this.#ownSignal());
      } catch (error) {
        this.#log.debug({ err: describeError(error) }, "cluster: could not delete the member lease");
      }
    }
    await Promise.allSettled(releases);
    this.#memberValidUntil = -Infinity;
    this.#state = "stopped";
    this.#log.info({ member: this.member, released: held.length }, "cluster: left, buckets released");
  }

  /**
   * Freezes the loop (no rounds, no renewals, no timers, no watch) without releasing anything, as a
   * process paused or killed at this moment leaves its leases: they expire on their own. What is
   * asked of it afterwards still answers from the clock, as a paused process that resumes would:
   * `holdsBucket` turns false at the validity end, and `beforeWrite` tries its renewal. For tests.
   */
  halt(): void {
    this.#halted = true;
    this.#clearTimers();
    this.#watch?.close();
    this.#watch = null;
  }

  /** Says whether this replica is ready (its member lease carries it; ready members are preferred). */
  setReady(ready: boolean): void {
    if (this.#ready === ready) return;
    this.#ready = ready;
    this.#kick();
  }

  /** The bucket of an instance id. */
  bucketOf(instanceId: string): number {
    return bucketOf(instanceId, this.buckets);
  }

  /** Whether this replica holds the bucket now, its lease valid on the monotonic clock. */
  holdsBucket(bucket: number): boolean {
    const held = this.#held.get(bucket);
    if (held === undefined) return false;
    const t = now();
    if (t < held.validUntil && t < this.#memberValidUntil) return true;
    this.#checkDeadlines();
    return false;
  }

  /** The member holding the bucket as this replica last saw it (valid there), or null. */
  holderOf(bucket: number): string | null {
    if (this.holdsBucket(bucket)) return this.member;
    const seen = this.#observed.get(`${BUCKET_PREFIX}${bucket}`);
    const holder = seen?.lease.record?.holder ?? "";
    if (seen === undefined || holder === "" || now() - seen.seenAt >= this.#leaseMs) return null;
    const name = holder.split("/")[0] ?? "";
    return name === this.member ? null : name;
  }

  /**
   * The REST API URL a member advertises in its member lease, while that lease is alive as last
   * seen here, or null (unknown member, expired lease, no or malformed URL).
   */
  urlOf(member: string): string | null {
    const seen = this.#observed.get(`${MEMBER_PREFIX}${member}`);
    if (seen === undefined || now() - seen.seenAt >= this.#leaseMs) return null;
    return this.#memberInfo(seen)?.url ?? null;
  }

  /**
   * The identity (`<member>/<incarnation>`) holding a member's lease, while that lease is alive as
   * last seen here, or null: requests to that replica name it, so a restart of the member is another
   * receiver.
   */
  identityOf(member: string): string | null {
    const seen = this.#observed.get(`${MEMBER_PREFIX}${member}`);
    if (seen === undefined || now() - seen.seenAt >= this.#leaseMs) return null;
    const info = this.#memberInfo(seen);
    return info?.name === member ? info.identity : null;
  }

  /** Whether `onceId` is recorded in the bucket's lease as last seen (by this replica or another). */
  onceUsed(bucket: number, onceId: string): boolean {
    const held = this.#held.get(bucket);
    if (held !== undefined) return held.memory.usedOnce(onceId, now());
    const payload = this.#observed.get(`${BUCKET_PREFIX}${bucket}`)?.lease.record?.payload;
    return payload !== undefined && onceIdsOf(payload).includes(onceId);
  }

  /**
   * Fences a write to a PDU of `bucket`: renews the bucket's lease with a conditional write (which
   * records `onceId` when given, refusing an id already recorded, and `hold`, refusing an outlet
   * whose hold is running), then returns the grant the write must use. Throws {@link FencingError}
   * when this replica does not hold the bucket, the id or the outlet is refused, or the renewal
   * fails.
   */
  async beforeWrite(bucket: number, options: WriteOptions = {}): Promise<WriteGrant> {
    const onceId = options.onceId ?? null;
    const hold = options.hold ?? null;
    if (onceId !== null && !ONCE_ID_PATTERN.test(onceId)) {
      throw new Error("a once-only id is 1-64 characters of A-Za-z0-9_-");
    }
    if (this.#state === "stopping" || this.#state === "stopped") {
      throw new FencingError("stopping", "this replica is stopping");
    }
    if (!this.holdsBucket(bucket)) {
      const holder = this.holderOf(bucket);
      throw new FencingError("not-holder", `bucket ${bucket} is not held here`, holder);
    }
    const held = this.#held.get(bucket)!;
    if (onceId !== null && held.memory.usedOnce(onceId, now())) {
      throw new FencingError("once-used", `once-only id ${onceId} was used already`);
    }
    const left = hold === null ? 0 : held.memory.heldFor(hold.key, now());
    if (left > 0) throw heldError(left);
    const outcome = await this.#renew(bucket, onceId, hold);
    if (!outcome.ok) {
      if (outcome.reason === "once-used") {
        throw new FencingError("once-used", `once-only id ${onceId ?? ""} was used already`);
      }
      if (outcome.reason === "held") throw new FencingError("held", outcome.detail);
      if (outcome.reason === "not-held") {
        throw new FencingError("not-holder", `bucket ${bucket} is not held here`, this.holderOf(bucket));
      }
      throw new FencingError("renewal-failed", `the renewal of bucket ${bucket} failed: ${outcome.detail}`);
    }
    const current = this.#held.get(bucket);
    if (current === undefined || !this.holdsBucket(bucket)) {
      throw new FencingError("not-holder", `bucket ${bucket} was lost`, this.holderOf(bucket));
    }
    const endBy = outcome.sentAt + this.#deadlineMs;
    const startBy = Math.min(outcome.answeredAt + this.#startWindowMs, endBy);
    const grant = new Grant(
      bucket,
      startBy,
      endBy,
      () => this.holdsBucket(bucket),
      () => current.grants.delete(grant),
    );
    current.grants.add(grant);
    return grant;
  }

  on(listener: (event: ClusterEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  status(): ClusterStatus {
    const buckets = [...this.#held.keys()].filter((b) => this.holdsBucket(b)).sort((a, b) => a - b);
    const age = now() - this.#lastListOk;
    const reachable = age < this.#deadlineMs;
    return {
      member: this.member,
      engine: this.#store.description,
      state: this.#state,
      blocked: this.#blocked ?? this.#nameTaken,
      reachable,
      lastAnswerAgeMs: Number.isFinite(age) ? Math.round(age) : null,
      renewDeadlineMs: this.#deadlineMs,
      ready: this.#ready,
      buckets,
      members: this.#members,
      transitions: this.#transitions,
      lastError: reachable ? null : this.#lastError,
      ...this.#renewals(),
    };
  }

  /**
   * What this replica sees of the others' renewals, from its observations alone (no engine call):
   * members whose lease stopped changing, and the buckets not held here that nobody polls. A live
   * replica renews its leases every round (RetryPeriod at most), and a change is seen through the
   * watch, or at the next list (every round): a member lease unchanged for 3 × RetryPeriod (at most
   * RenewDeadline) has stopped being renewed. A bucket lease unchanged for RenewDeadline is held by
   * nobody: its holder drops it (and stops polling its instances) RenewDeadline after it sent its
   * last successful renewal, which was written before this replica saw it. Others may take such a
   * bucket once it has been unchanged for LeaseDuration; until someone does, its instances are
   * polled by nobody.
   */
  #renewals(): { silent: SilentMember[]; unpolled: UnpolledBucket[] } {
    const t = now();
    // How long a lease went unchanged as far as this replica looked: up to its last list, so that
    // its own trouble reaching the engine never shows as the others' silence.
    const unchanged = (seen: Observed) => this.#lastListOk - seen.seenAt;
    const silent: SilentMember[] = [];
    const unpolled: UnpolledBucket[] = [];
    if (this.#lastListOk === -Infinity) return { silent, unpolled };
    for (const seen of this.#observed.values()) {
      if (!seen.lease.name.startsWith(MEMBER_PREFIX)) continue;
      const info = this.#memberInfo(seen);
      if (info === null || info.name === this.member || unchanged(seen) < this.#silentMs) continue;
      silent.push({ name: info.name, silentForMs: Math.round(t - seen.seenAt) });
    }
    silent.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (let b = 0; b < this.buckets; b++) {
      if (this.holdsBucket(b)) continue;
      const seen = this.#observed.get(`${BUCKET_PREFIX}${b}`);
      const holder = seen?.lease.record === null ? "?" : (seen?.lease.record.holder ?? "");
      if (seen === undefined || holder === "") {
        unpolled.push({ bucket: b, holder: null, silentForMs: null, freeInMs: 0 });
        continue;
      }
      if (unchanged(seen) < this.#deadlineMs) continue;
      const age = t - seen.seenAt;
      unpolled.push({
        bucket: b,
        holder: holder.split("/")[0] ?? "?",
        silentForMs: Math.round(age),
        freeInMs: Math.max(0, Math.round(this.#leaseMs - age)),
      });
    }
    return { silent: silent.slice(0, MAX_MEMBERS), unpolled };
  }

  // ---- the loop ----

  /** A request's deadline within a round: stop() cuts rounds short. */
  #signal(): AbortSignal {
    return AbortSignal.any([AbortSignal.timeout(this.#requestMs), this.#rounds.signal]);
  }

  /** A request's deadline outside rounds (releasing, leaving). */
  #ownSignal(): AbortSignal {
    return AbortSignal.timeout(this.#requestMs);
  }

  #emit(event: ClusterEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#log.error({ err: error }, "cluster: an event listener threw");
      }
    }
  }

  #clearTimers(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#deadlineTimer !== null) clearTimeout(this.#deadlineTimer);
    this.#timer = null;
    this.#deadlineTimer = null;
  }

  #running(): boolean {
    return !this.#halted && (this.#state === "starting" || this.#state === "running");
  }

  /** An extra round soon (a lease freed, a member changed, readiness changed). */
  #kick(): void {
    if (!this.#running() || this.#startedAt === 0) return;
    if (this.#ticking !== null) {
      this.#again = true;
      return;
    }
    this.#scheduleAt(now() + 10);
  }

  #scheduleAt(at: number): void {
    if (!this.#running()) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        void this.#tick().then(() => this.#scheduleNext());
      },
      Math.max(0, at - now()),
    );
  }

  /** The next round: RetryPeriod with jitter, earlier when a lease seen will expire before that. */
  #scheduleNext(): void {
    if (!this.#running()) return;
    if (this.#again) {
      this.#again = false;
      this.#scheduleAt(now() + 10);
      return;
    }
    let at = now() + this.#retryMs * (0.8 + 0.2 * Math.random());
    for (const seen of this.#observed.values()) {
      if ((seen.lease.record?.holder ?? "?") === "") continue;
      const expiry = seen.seenAt + this.#leaseMs + 5;
      if (expiry > now() && expiry < at) at = expiry;
    }
    this.#scheduleAt(at);
  }

  #tick(): Promise<void> {
    if (this.#ticking !== null) return this.#ticking;
    this.#ticking = this.#round()
      .catch((error: unknown) => this.#log.error({ err: error }, "cluster: round failed"))
      .finally(() => {
        this.#ticking = null;
      });
    return this.#ticking;
  }

  async #round(): Promise<void> {
    if (!this.#running()) return;
    let listed;
    try {
      listed = await this.#store.list(this.#signal());
    } catch (error) {
      // Without a list nothing is acquired or handed over, but what is held is still renewed.
      this.#engineError(error);
      await this.#renewMember();
      this.#checkDeadlines();
      await Promise.allSettled([...this.#held.keys()].map((b) => this.#renewIfDue(b)));
      this.#armDeadlineTimer();
      return;
    }
    if (!this.#running()) return;
    this.#engineOk();
    this.#observeList(listed.leases);
    if (this.#watchBroken) this.#startWatch(listed.revision);

    await this.#renewMember();
    if (!this.#running()) return;
    this.#checkDeadlines();
    await this.#checkConfig();
    if (
      this.#state === "starting" &&
      now() - this.#startedAt >= this.#settleMs &&
      this.#memberVersion !== null
    ) {
      this.#state = "running";
    }

    const { candidates, current, free } = this.#view();
    const target = assign(this.buckets, candidates, current, this.#weights);
    const work: Promise<unknown>[] = [];
    const acquiring: Promise<number | null>[] = [];
    const acquire = (b: number) => acquiring.push(this.#acquire(b).then((held) => (held ? b : null)));
    const t = now();
    for (let b = 0; b < this.buckets; b++) {
      const want = target[b] ?? null;
      if (this.#held.has(b)) {
        if (this.#blocked !== null) work.push(this.#release(b, "blocked"));
        else if (
          want !== null &&
          want !== this.member &&
          t - (this.#candidateSince.get(want) ?? t) >= this.#settleMs
        ) {
          work.push(this.#release(b, "handover"));
        } else {
          work.push(this.#renewIfDue(b));
        }
        continue;
      }
      const freeAt = free.get(b);
      if (freeAt === undefined || want === null || !this.#mayAcquire()) continue;
      if (want === this.member) {
        acquire(b);
      } else {
        const rank = fallbackRank(b, want, this.member, candidates, this.#weights);
        if (t - freeAt >= this.#leaseMs + (rank - 1) * this.#retryMs) acquire(b);
      }
    }
    await Promise.allSettled(work);
    const acquired = await Promise.allSettled(acquiring);
    this.#logAcquired(acquired.map((r) => (r.status === "fulfilled" ? r.value : null)));
    await this.#collectGarbage();
    this.#armDeadlineTimer();
  }

  /** One line for the buckets a round acquired: how many, which, and how many are held now. */
  #logAcquired(buckets: readonly (number | null)[]): void {
    const acquired = buckets.filter((b): b is number => b !== null);
    if (acquired.length === 0) return;
    this.#log.info(
      { member: this.member, buckets: acquired, held: this.#held.size },
      `cluster: ${acquired.length} bucket${acquired.length === 1 ? "" : "s"} acquired`,
    );
  }

  #mayAcquire(): boolean {
    return this.#state === "running" && this.#blocked === null && now() < this.#memberValidUntil;
  }

  #engineError(error: unknown): void {
    const text = describeError(error);
    if (this.#lastError !== text) {
      this.#log.warn(
        { member: this.member, engine: this.#store.description, err: text },
        "cluster: the coordination engine failed",
      );
    }
    this.#lastError = text;
  }

  #engineOk(): void {
    if (this.#lastError !== null && now() - this.#lastListOk >= this.#deadlineMs) {
      this.#log.info(
        { member: this.member, engine: this.#store.description },
        "cluster: the coordination engine answers again",
      );
    }
    this.#lastError = null;
    this.#lastListOk = now();
  }

  // ---- observations ----

  #observe(lease: StoredLease): void {
    const seen = this.#observed.get(lease.name);
    if (seen === undefined || seen.lease.version !== lease.version) {
      this.#observed.set(lease.name, { lease, seenAt: now() });
      this.#noteFree(lease);
    } else {
      seen.lease = lease;
    }
  }

  #forget(name: string): void {
    this.#observed.delete(name);
    const bucket = this.#bucketNumber(name);
    if (bucket !== null && !this.#freeSince.has(bucket)) this.#freeSince.set(bucket, now());
  }

  #noteFree(lease: StoredLease): void {
    const bucket = this.#bucketNumber(lease.name);
    if (bucket === null) return;
    if (lease.record?.holder === "") {
      if (!this.#freeSince.has(bucket)) this.#freeSince.set(bucket, now());
    } else {
      this.#freeSince.delete(bucket);
    }
  }

  #observeList(leases: readonly StoredLease[]): void {
    const names = new Set(leases.map((l) => l.name));
    for (const lease of leases) this.#observe(lease);
    for (const name of [...this.#observed.keys()]) if (!names.has(name)) this.#forget(name);
    for (let b = 0; b < this.buckets; b++) {
      if (!names.has(`${BUCKET_PREFIX}${b}`) && !this.#freeSince.has(b)) this.#freeSince.set(b, now());
    }
  }

  #startWatch(revision: string): void {
    this.#watch?.close();
    this.#watchBroken = false;
    this.#watch = this.#store.watch(
      revision,
      (event) => this.#onWatchEvent(event),
      (error) => {
        this.#watchBroken = true;
        this.#watch = null;
        this.#log.debug(
          { err: describeError(error) },
          "cluster: the watch ended; it starts again after the next list",
        );
      },
    );
  }

  #onWatchEvent(event: LeaseEvent): void {
    if (!this.#running()) return;
    if (event.type === "delete") {
      this.#forget(event.name);
      this.#kick();
      return;
    }
    const before = this.#observed.get(event.lease.name)?.lease;
    this.#observe(event.lease);
    const name = event.lease.name;
    const record = event.lease.record;
    // A freed bucket, a member joining, leaving or changing readiness: act now rather than next round.
    if (name.startsWith(BUCKET_PREFIX) && record?.holder === "") this.#kick();
    else if (
      name.startsWith(MEMBER_PREFIX) &&
      (before === undefined ||
        before.record?.payload !== record?.payload ||
        before.record?.holder !== record?.holder)
    ) {
      this.#kick();
    } else if (name === CONFIG_LEASE) this.#kick();
  }

  #bucketNumber(name: string): number | null {
    if (!name.startsWith(BUCKET_PREFIX)) return null;
    const text = name.slice(BUCKET_PREFIX.length);
    if (!/^(0|[1-9][0-9]{0,5})$/.test(text)) return null;
    const bucket = Number(text);
    return bucket < this.buckets ? bucket : null;
  }

  #memberInfo(seen: Observed): MemberInfo | null {
    const name = seen.lease.name.slice(MEMBER_PREFIX.length);
    const record = seen.lease.record;
    if (record === null || record.holder === "") return null;
    const [holderName] = record.holder.split("/");
    if (holderName !== name) return null;
    const payload = parsePayload(record.payload);
    const buckets = payload.buckets;
    return {
      name,
      identity: record.holder,
      ready: payload.ready === true,
      buckets: typeof buckets === "number" && Number.isInteger(buckets) ? buckets : -1,
      url: advertisedUrl(payload.url),
    };
  }

  /** Candidates, the current valid holder of each bucket (by member name) and when free buckets became free. */
  #view(): { candidates: string[]; current: (string | null)[]; free: Map<number, number> } {
    const t = now();
    const alive = new Map<string, MemberInfo>();
    for (const seen of this.#observed.values()) {
      if (!seen.lease.name.startsWith(MEMBER_PREFIX)) continue;
      const info = this.#memberInfo(seen);
      if (info === null || info.name === this.member) continue;
      if (t - seen.seenAt < this.#leaseMs) alive.set(info.name, info);
    }

    const current: (string | null)[] = new Array<string | null>(this.buckets).fill(null);
    const free = new Map<number, number>();
    /** Identities whose bucket lease ran out: they stopped renewing, so they are no candidates. */
    const dead = new Set<string>();
    for (let b = 0; b < this.buckets; b++) {
      if (this.#held.has(b) && this.holdsBucket(b)) {
        current[b] = this.member;
        continue;
      }
      const seen = this.#observed.get(`${BUCKET_PREFIX}${b}`);
      const holder = seen?.lease.record === null ? "?" : (seen?.lease.record.holder ?? "");
      if (seen === undefined || holder === "") {
        free.set(b, this.#freeSince.get(b) ?? t);
        continue;
      }
      const expiresAt = seen.seenAt + this.#leaseMs;
      if (t >= expiresAt) {
        // A holder whose lease ran out stopped renewing: it is no candidate either.
        free.set(b, Math.max(expiresAt, this.#freeSince.get(b) ?? expiresAt));
        dead.add(holder);
        continue;
      }
      current[b] = holder.split("/")[0] ?? "?";
    }

    const members: MemberView[] = [];
    const eligible: { name: string; ready: boolean }[] = [];
    // Member leases come from the engine: a bounded number of them is considered (by name).
    const considered = [...alive.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, MAX_MEMBERS);
    for (const info of considered) {
      if (info.buckets !== this.buckets) continue;
      members.push({ name: info.name, ready: info.ready, self: false });
      if (!dead.has(info.identity)) eligible.push({ name: info.name, ready: info.ready });
    }
    if (now() < this.#memberValidUntil) {
      members.push({ name: this.member, ready: this.#ready, self: true });
      if (this.#blocked === null && this.#state !== "stopping")
        eligible.push({ name: this.member, ready: this.#ready });
    }
    members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.#publishMembers(members);

    const ready = eligible.filter((m) => m.ready);
    const candidates = (ready.length > 0 ? ready : eligible).map((m) => m.name);
    const set = new Set(candidates);
    for (const name of [...this.#candidateSince.keys()])
      if (!set.has(name)) this.#candidateSince.delete(name);
    for (const name of candidates) if (!this.#candidateSince.has(name)) this.#candidateSince.set(name, t);
    this.#weights.retain(new Set([...set, this.member]));
    for (let b = 0; b < this.buckets; b++) {
      const holder = current[b];
      if (holder !== null && holder !== undefined && !set.has(holder)) current[b] = null;
    }
    return { candidates, current, free };
  }

  #publishMembers(members: MemberView[]): void {
    const same =
      members.length === this.#members.length &&
      members.every((m, i) => m.name === this.#members[i]?.name && m.ready === this.#members[i]?.ready);
    if (same) return;
    this.#members = members;
    this.#log.info(
      { member: this.member, members: members.map((m) => `${m.name}${m.ready ? "" : " (not ready)"}`) },
      "cluster: members changed",
    );
    this.#emit({ type: "members", members });
  }

  // ---- the installation's bucket count ----

  async #checkConfig(): Promise<void> {
    const seen = this.#observed.get(CONFIG_LEASE);
    const record: LeaseRecord = {
      holder: "",
      durationSeconds: 0,
      acquireTime: null,
      renewTime: new Date().toISOString(),
      transitions: 0,
      payload: JSON.stringify({ buckets: this.buckets }),
    };
    try {
      if (seen === undefined) {
        this.#observe(await this.#store.create(CONFIG_LEASE, record, this.#signal()));
        this.#setBlocked(null);
        return;
      }
      const theirs = parsePayload(seen.lease.record?.payload ?? "").buckets;
      if (theirs === this.buckets) {
        this.#setBlocked(null);
        return;
      }
      if (this.#othersWithOtherCount()) {
        this.#setBlocked(
          `Cluster.Buckets is ${this.buckets} here but ${JSON.stringify(theirs)} in the engine, and replicas running with that are alive: ` +
            "this replica holds nothing until they are gone (the bucket count is fixed for an installation)",
        );
        return;
      }
      // Nobody with the other count is left (judged over LeaseDuration): this count becomes the installation's.
      this.#observe(await this.#store.update(CONFIG_LEASE, record, seen.lease.version, this.#signal()));
      this.#log.warn(
        { member: this.member, from: theirs, to: this.buckets },
        "cluster: the installation's bucket count changed",
      );
      this.#setBlocked(null);
    } catch (error) {
      if (!(error instanceof LeaseConflictError)) this.#engineError(error);
    }
  }

  /** Whether a member with another bucket count, or a holder of another installation's shape, is alive. */
  #othersWithOtherCount(): boolean {
    const t = now();
    if (t - this.#startedAt < this.#leaseMs) return true;
    for (const seen of this.#observed.values()) {
      if (t - seen.seenAt >= this.#leaseMs) continue;
      if (seen.lease.name.startsWith(MEMBER_PREFIX)) {
        const info = this.#memberInfo(seen);
        if (info !== null && info.name !== this.member && info.buckets !== this.buckets) return true;
      }
      if (
        seen.lease.name.startsWith(BUCKET_PREFIX) &&
        seen.lease.record?.holder !== "" &&
        !this.#held.has(this.#bucketNumber(seen.lease.name) ?? -1)
      ) {
        const holder = (seen.lease.record?.holder ?? "?").split("/")[0] ?? "?";
        const member = this.#observed.get(`${MEMBER_PREFIX}${holder}`);
        const info = member === undefined ? null : this.#memberInfo(member);
        if (info === null || info.buckets !== this.buckets) return true;
      }
    }
    return false;
  }

  #setBlocked(reason: string | null): void {
    if (reason !== null && this.#blocked === null)
      this.#log.error({ member: this.member }, `cluster: ${reason}`);
    if (reason === null && this.#blocked !== null)
      this.#log.info({ member: this.member }, "cluster: no longer blocked");
    this.#blocked = reason;
  }

  // ---- the member lease ----

  async #renewMember(): Promise<void> {
    const t = now();
    const due = t - this.#memberLastSend >= this.#retryMs / 2 || this.#readyWritten !== this.#ready;
    if (!due || !this.#running()) return;
    const name = `${MEMBER_PREFIX}${this.member}`;
    const ready = this.#ready;
    const record: LeaseRecord = {
      holder: this.identity,
      durationSeconds: Math.ceil(this.#leaseMs / 1000),
      acquireTime: this.#memberAcquireTime,
      renewTime: new Date().toISOString(),
      transitions: 0,
      payload: JSON.stringify({
        ready,
        buckets: this.buckets,
        ...(this.#url === null ? {} : { url: this.#url }),
      }),
    };
    try {
      let version = this.#memberVersion;
      if (version === null) {
        const seen = this.#observed.get(name);
        if (
          seen !== undefined &&
          seen.lease.record?.holder !== "" &&
          seen.lease.record?.holder !== this.identity
        ) {
          // Our name, another incarnation: a replica that died without leaving (or a second one
          // with the same name, which this refuses to join beside). Wait until it expires.
          if (now() - seen.seenAt < this.#leaseMs) {
            if (this.#nameTaken === null) {
              this.#nameTaken = `the member lease ${name} is held by ${seen.lease.record?.holder ?? "?"}: waiting for it to expire (is another replica running with the member name ${this.member}?)`;
              this.#log.warn({ member: this.member }, `cluster: ${this.#nameTaken}`);
            }
            return;
          }
        }
        this.#nameTaken = null;
        version = seen?.lease.version ?? null;
      }
      const sentAt = now();
      const stored =
        version === null
          ? await this.#store.create(name, record, this.#signal())
          : await this.#store.update(name, record, version, this.#signal());
      this.#memberVersion = stored.version;
      this.#memberLastSend = sentAt;
      this.#memberValidUntil = sentAt + this.#deadlineMs;
      this.#readyWritten = ready;
      this.#observe(stored);
    } catch (error) {
      if (error instanceof LeaseConflictError) {
        const current = await this.#store.get(name, this.#signal()).catch(() => undefined);
        if (current !== undefined && current !== null && current.record?.holder === this.identity) {
          // One of our own writes whose answer was lost: adopt it (validity stays the last confirmed one's).
          this.#memberVersion = current.version;
          this.#observe(current);
          return;
        }
        if (this.#memberVersion !== null) {
          this.#log.error(
            { member: this.member },
            "cluster: someone else wrote this replica's member lease; giving up every bucket and joining again",
          );
          this.#dropAll("conflict");
        }
        this.#memberVersion = null;
        this.#memberValidUntil = -Infinity;
      } else {
        this.#engineError(error);
      }
    }
  }

  /** Member leases nobody has renewed for a long time (replicas gone without leaving). */
  async #collectGarbage(): Promise<void> {
    const t = now();
    for (const seen of [...this.#observed.values()]) {
      if (!seen.lease.name.startsWith(MEMBER_PREFIX) || seen.lease.name === `${MEMBER_PREFIX}${this.member}`)
        continue;
      if (t - seen.seenAt < this.#gcAfterMs) continue;
      try {
        await this.#store.delete(seen.lease.name, seen.lease.version, this.#signal());
        this.#forget(seen.lease.name);
      } catch {
        // Someone else changed or removed it; the next list shows.
      }
    }
  }

  // ---- buckets ----

  #chain(bucket: number, work: () => Promise<void>): Promise<void> {
    const next = (this.#chains.get(bucket) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => undefined);
    this.#chains.set(bucket, settled);
    void settled.then(() => {
      if (this.#chains.get(bucket) === settled) this.#chains.delete(bucket);
    });
    return next;
  }

  /** Takes a free bucket's lease; true when this replica holds it now. */
  async #acquire(bucket: number): Promise<boolean> {
    const name = `${BUCKET_PREFIX}${bucket}`;
    let acquired = false;
    await this.#chain(bucket, async () => {
      if (this.#held.has(bucket) || !this.#mayAcquire()) return;
      const seen = this.#observed.get(name);
      const previous = seen?.lease.record ?? null;
      // What the lease remembers is read before this replica's first write, counted from when this
      // version was first seen here (never earlier than it was written).
      const memory =
        seen === undefined || previous === null
          ? new BucketMemory()
          : BucketMemory.read(previous.payload, seen.seenAt);
      const sentAt = now();
      const payload = memory.payload(sentAt);
      const time = new Date().toISOString();
      const record: LeaseRecord = {
        holder: this.identity,
        durationSeconds: Math.ceil(this.#leaseMs / 1000),
        acquireTime: time,
        renewTime: time,
        transitions: (previous?.transitions ?? 0) + (previous?.holder === this.identity ? 0 : 1),
        payload,
      };
      try {
        const stored =
          seen === undefined
            ? await this.#store.create(name, record, this.#signal())
            : await this.#store.update(name, record, seen.lease.version, this.#signal());
        this.#observe(stored);
        if (!this.#running()) {
          // Stopped meanwhile: give it back at once.
          await this.#store
            .update(name, { ...record, holder: "" }, stored.version, this.#ownSignal())
            .catch(() => undefined);
          return;
        }
        this.#held.set(bucket, {
          version: stored.version,
          record,
          validUntil: sentAt + this.#deadlineMs,
          lastSend: sentAt,
          grants: new Set(),
          memory,
        });
        this.#freeSince.delete(bucket);
        this.#transitions++;
        // One line per round at info (#round); each bucket's at debug.
        this.#log.debug(
          { member: this.member, bucket, transitions: record.transitions },
          "cluster: bucket acquired",
        );
        acquired = true;
        this.#emit({ type: "acquired", bucket });
        this.#armDeadlineTimer();
      } catch (error) {
        if (!(error instanceof LeaseConflictError)) this.#engineError(error);
      }
    });
    return acquired;
  }

  #renewIfDue(bucket: number): Promise<unknown> {
    const held = this.#held.get(bucket);
    if (held === undefined || now() - held.lastSend < this.#retryMs / 2) return Promise.resolve();
    return this.#renew(bucket, null, null);
  }

  /** A renewal of a held bucket, batched with the others waiting for the same bucket. */
  #renew(bucket: number, onceId: string | null, hold: HoldRequest | null): Promise<RenewOutcome> {
    let batch = this.#batches.get(bucket);
    if (batch === undefined) {
      const fresh: Batch = { onceIds: [], holdKeys: [], waiters: [] };
      batch = fresh;
      this.#batches.set(bucket, fresh);
      void this.#chain(bucket, () => this.#flush(bucket, fresh));
    }
    if (onceId !== null && batch.onceIds.includes(onceId)) {
      return Promise.resolve({ ok: false, reason: "once-used", detail: "the same id is being recorded" });
    }
    if (hold !== null && batch.holdKeys.includes(hold.key)) {
      return Promise.resolve({ ok: false, reason: "held", detail: heldError(hold.ms).message });
    }
    if (onceId !== null) batch.onceIds.push(onceId);
    if (hold !== null) batch.holdKeys.push(hold.key);
    const waiting = batch;
    return new Promise((resolve) => waiting.waiters.push({ onceId, hold, resolve }));
  }

  /**
   * The memory a renewal sent at `sentAt` writes: what is kept, plus the ids and holds of the
   * batch's waiters. Waiters refused here (an id kept, an outlet held, or no room left in the
   * payload) are answered at once and left out.
   */
  #memoryFor(held: Held, batch: Batch, sentAt: number): { memory: BucketMemory; waiters: Waiter[] } {
    let memory = held.memory.copy();
    memory.prune(sentAt);
    const waiters: Waiter[] = [];
    for (const waiter of batch.waiters) {
      const { onceId, hold } = waiter;
      if (onceId !== null && memory.usedOnce(onceId, sentAt)) {
        waiter.resolve({ ok: false, reason: "once-used", detail: "recorded before" });
        continue;
      }
      const left = hold === null ? 0 : memory.heldFor(hold.key, sentAt);
      if (left > 0) {
        waiter.resolve({ ok: false, reason: "held", detail: heldError(left).message });
        continue;
      }
      const before = memory.copy();
      const holdMs = hold === null ? 0 : Math.min(Math.max(0, hold.ms), MAX_HOLD_MS);
      // The write ends by sentAt + RenewDeadline; its hold runs from then.
      if (hold !== null) memory.recordHold(hold.key, sentAt + this.#deadlineMs + holdMs);
      if (onceId !== null)
        memory.recordOnce(onceId, sentAt + Math.max(ONCE_KEEP_MS, this.#deadlineMs + holdMs));
      if (!memory.fits(sentAt)) {
        waiter.resolve({ ok: false, reason: "held", detail: FULL });
        memory = before;
        continue;
      }
      waiters.push(waiter);
    }
    return { memory, waiters };
  }

  async #flush(bucket: number, batch: Batch): Promise<void> {
    if (this.#batches.get(bucket) === batch) this.#batches.delete(bucket);
    const held = this.#held.get(bucket);
    if (held === undefined || !this.holdsBucket(bucket)) {
      for (const w of batch.waiters) w.resolve({ ok: false, reason: "not-held", detail: "not held" });
      return;
    }
    const sentAt = now();
    const { memory, waiters } = this.#memoryFor(held, batch, sentAt);
    const answer = (outcome: RenewOutcome) => {
      for (const waiter of waiters) waiter.resolve(outcome);
    };
    const record: LeaseRecord = {
      ...held.record,
      renewTime: new Date().toISOString(),
      payload: memory.payload(sentAt),
    };
    if (sentAt >= held.validUntil || sentAt >= this.#memberValidUntil) {
      this.#checkDeadlines();
      answer({ ok: false, reason: "not-held", detail: "the lease ran out before the renewal" });
      return;
    }
    try {
      const stored = await this.#store.update(
        `${BUCKET_PREFIX}${bucket}`,
        record,
        held.version,
        // Not cut short by stop(): a write etcd commits must have its answer read, or the version
        // kept here goes stale and the release that follows fails its compare-and-swap.
        this.#ownSignal(),
      );
      const answeredAt = now();
      held.version = stored.version;
      held.record = record;
      held.memory = memory;
      this.#observe(stored);
      if (this.#held.get(bucket) !== held) {
        answer({ ok: false, reason: "not-held", detail: "released meanwhile" });
        return;
      }
      held.lastSend = sentAt;
      held.validUntil = sentAt + this.#deadlineMs;
      this.#armDeadlineTimer();
      answer({ ok: true, sentAt, answeredAt });
    } catch (error) {
      if (error instanceof LeaseConflictError) {
        await this.#resolveConflict(bucket, held);
        answer({ ok: false, reason: "failed", detail: describeError(error) });
        return;
      }
      this.#engineError(error);
      this.#checkDeadlines();
      answer({ ok: false, reason: "failed", detail: describeError(error) });
    }
  }

  /**
   * A renewal found another version. When the lease still names this incarnation, it was one of
   * our own writes whose answer was lost (a time-out): adopt its version and keep the validity of
   * the last confirmed renewal. Otherwise the lease was taken: drop the bucket.
   */
  async #resolveConflict(bucket: number, held: Held): Promise<void> {
    try {
      const current = await this.#store.get(`${BUCKET_PREFIX}${bucket}`, this.#signal());
      if (current !== null && current.record?.holder === this.identity && this.#held.get(bucket) === held) {
        held.version = current.version;
        held.record = current.record;
        // One of our own writes: what it recorded is kept from now on (counted from now: longer).
        held.memory = BucketMemory.read(current.record.payload, now());
        this.#observe(current);
        return;
      }
      if (current !== null) this.#observe(current);
    } catch (error) {
      this.#engineError(error);
    }
    if (this.#held.get(bucket) === held) this.#drop(bucket, "conflict");
  }

  /** Gives a bucket up now: no new writes, writes in flight aborted. */
  #drop(bucket: number, reason: LossReason): void {
    const held = this.#held.get(bucket);
    if (held === undefined) return;
    this.#held.delete(bucket);
    for (const grant of held.grants) grant.abort();
    this.#lost(bucket, reason);
  }

  #dropAll(reason: LossReason): void {
    for (const bucket of [...this.#held.keys()]) this.#drop(bucket, reason);
  }

  #lost(bucket: number, reason: LossReason, holds?: Promise<unknown>[]): void {
    this.#transitions++;
    // Leaving gives every bucket up at once: "cluster: left, buckets released" says so in one line.
    const log =
      reason === "stopping"
        ? this.#log.debug.bind(this.#log)
        : reason === "handover"
          ? this.#log.info.bind(this.#log)
          : this.#log.warn.bind(this.#log);
    log({ member: this.member, bucket, reason }, "cluster: bucket lost");
    this.#emit(
      holds === undefined
        ? { type: "lost", bucket, reason }
        : { type: "lost", bucket, reason, holdRelease: (work) => void holds.push(work) },
    );
  }

  /**
   * Hands a bucket over: no new writes from now, the writes in flight may finish (until their
   * deadline) and so may the work the `lost` event's listeners handed in (for at most
   * {@link RELEASE_HOLD_MS}), then the lease is written free so that its next holder takes it without waiting.
   */
  async #release(bucket: number, reason: LossReason): Promise<void> {
    const held = this.#held.get(bucket);
    if (held === undefined) return;
    this.#held.delete(bucket);
    const holds: Promise<unknown>[] = [];
    this.#lost(bucket, reason, holds);
    if (held.grants.size > 0) await Promise.all([...held.grants].map((g) => g.ended));
    if (holds.length > 0) await settledWithin(holds, RELEASE_HOLD_MS);
    await this.#chain(bucket, async () => {
      if (now() >= held.validUntil) return; // ran out meanwhile: it expires on its own
      const at = now();
      const record: LeaseRecord = {
        ...held.record,
        holder: "",
        renewTime: new Date().toISOString(),
        // What the next holder must respect, as much of it as is left now.
        payload: held.memory.payload(at),
      };
      try {
        this.#observe(
          await this.#store.update(`${BUCKET_PREFIX}${bucket}`, record, held.version, this.#ownSignal()),
        );
      } catch (error) {
        // Warn: the others wait for LeaseDuration instead of taking the bucket at once.
        this.#log.warn(
          { bucket, reason, err: describeError(error) },
          "cluster: release failed; the lease expires instead",
        );
      }
    });
  }

  /** Drops what ran out: buckets whose RenewDeadline passed, everything when the member lease did. */
  #checkDeadlines(): void {
    const t = now();
    for (const [bucket, held] of [...this.#held]) {
      if (t >= held.validUntil || t >= this.#memberValidUntil) this.#drop(bucket, "renew-deadline");
    }
  }

  #armDeadlineTimer(): void {
    if (this.#deadlineTimer !== null) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    if (this.#held.size === 0 || !this.#running()) return;
    let first = this.#memberValidUntil;
    for (const held of this.#held.values()) first = Math.min(first, held.validUntil);
    this.#deadlineTimer = setTimeout(
      () => {
        this.#deadlineTimer = null;
        this.#checkDeadlines();
        this.#armDeadlineTimer();
      },
      Math.max(0, first - now()) + 1,
    );
  }
}

/** Said when a bucket's payload has no room for one more once-only id or reboot hold. */
const FULL =
  "too many reboots and once-only commands are recorded in this bucket's lease just now; try again in a minute";

/** The refusal of a reboot while the outlet's reboot hold runs (recorded in the bucket's lease). */
function heldError(leftMs: number): FencingError {
  return new FencingError(
    "held",
    `this outlet was rebooted less than its reboot delay ago (${Math.ceil(leftMs / 1000)} s left, recorded with the bucket's lease)`,
  );
}

/** A fenced write's permission (see {@link WriteGrant}). */
class Grant implements WriteGrant {
  readonly bucket: number;
  readonly #startBy: number;
  readonly #holds: () => boolean;
  readonly #forget: () => void;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #finish!: () => void;
  /** Resolves when the write is done or aborted at its deadline. */
  readonly ended: Promise<void>;

  constructor(bucket: number, startBy: number, endBy: number, holds: () => boolean, forget: () => void) {
    this.bucket = bucket;
    this.#startBy = startBy;
    this.#holds = holds;
    this.#forget = forget;
    this.ended = new Promise((resolve) => (this.#finish = resolve));
    this.#timer = setTimeout(() => this.abort(), Math.max(0, endBy - now()));
    // The deadline matters only while the process lives: it does not keep it alive.
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  assertMayStart(): void {
    if (this.#controller.signal.aborted)
      throw new FencingError("late", "the write's lease ran out or was lost");
    if (!this.#holds()) throw new FencingError("not-holder", `bucket ${this.bucket} is no longer held here`);
    if (now() > this.#startBy) {
      throw new FencingError("late", "the write did not start within its window after the lease renewal");
    }
  }

  done(): void {
    clearTimeout(this.#timer);
    this.#forget();
    this.#finish();
  }

  abort(): void {
    this.#controller.abort(new FencingError("late", "the write's lease ran out or was lost"));
    this.done();
  }
}

/** Waits until every promise settled, or `ms` passed. */
async function settledWithin(work: readonly Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([Promise.allSettled(work), late]);
  clearTimeout(timer);
}
