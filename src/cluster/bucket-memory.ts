/**
 * What a bucket lease remembers for whoever holds the bucket next (docs/cluster.md, "Once-only
 * commands" and "The reboot hold"): the once-only ids of commands that may have run, and the outlets
 * whose reboot hold is running, each for a time rather than a count.
 *
 * Times are never compared between replicas. The payload carries, for each entry, the milliseconds
 * it still has **from the moment the writing renewal was sent**; a reader counts them from the moment
 * it first saw that version on its own monotonic clock, which is later (a version is seen only once
 * written), so every entry lasts at least as long at the reader as at the writer.
 *
 * The payload is `{"once": [ids…], "keep": [ms…], "holds": {"<hash>": ms}}`; `once` alone (ids
 * without `keep`) is read as kept for {@link ONCE_KEEP_MS}. Everything read is checked: malformed
 * entries are left out, never trusted.
 */
import { createHash } from "node:crypto";
import { MAX_PAYLOAD_LENGTH } from "./store.js";

/** Once-only ids: what a caller may use (a UUID fits). */
export const ONCE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * How long a once-only id is kept at least (ms): longer than any request between replicas can take
 * to arrive and wait for its outlet's turn (their signatures are accepted for 30 s, a forward ends
 * within 90 s), and at least as long as the reboot hold its write started.
 */
export const ONCE_KEEP_MS = 120_000;
/** The longest reboot hold recorded (ms): an hour; a PDU's reboot delay is seconds to minutes. */
export const MAX_HOLD_MS = 3_600_000;
/** Room left in the payload for the rest of the record's JSON. */
const PAYLOAD_BUDGET = MAX_PAYLOAD_LENGTH - 256;
const HOLD_KEY = /^[A-Za-z0-9_-]{16}$/;

/** The payload's key for a held outlet: a short hash of the caller's key (any string). */
export const holdKeyOf = (key: string): string =>
  createHash("sha256").update(key, "utf8").digest("base64url").slice(0, 16);

/** The most an entry can be kept from a renewal: a hold's write deadline (RenewDeadline, at most an hour) plus the hold. */
const MAX_ENTRY_MS = 2 * MAX_HOLD_MS + ONCE_KEEP_MS;

const isMs = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= MAX_ENTRY_MS;

function parse(payload: string): Record<string, unknown> {
  if (payload === "") return {};
  try {
    const value: unknown = JSON.parse(payload);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The once-only ids recorded in a bucket payload (malformed entries left out). */
export function onceIdsOf(payload: string): string[] {
  const once = parse(payload).once;
  return Array.isArray(once)
    ? once.filter((id): id is string => typeof id === "string" && ONCE_ID_PATTERN.test(id))
    : [];
}

export class BucketMemory {
  /** once-only id → until (monotonic ms) */
  readonly #once = new Map<string, number>();
  /** hold key → until (monotonic ms) */
  readonly #holds = new Map<string, number>();

  /** The memory of a payload first seen at `seenAt` (monotonic ms). */
  static read(payload: string, seenAt: number): BucketMemory {
    const memory = new BucketMemory();
    const fields = parse(payload);
    const once = Array.isArray(fields.once) ? fields.once : [];
    const keep = Array.isArray(fields.keep) && fields.keep.length === once.length ? fields.keep : null;
    once.forEach((id: unknown, i) => {
      if (typeof id !== "string" || !ONCE_ID_PATTERN.test(id)) return;
      const ms: unknown = keep === null ? ONCE_KEEP_MS : keep[i];
      if (isMs(ms)) memory.#once.set(id, seenAt + ms);
    });
    const holds = fields.holds;
    if (typeof holds === "object" && holds !== null && !Array.isArray(holds)) {
      for (const [key, ms] of Object.entries(holds as Record<string, unknown>)) {
        if (HOLD_KEY.test(key) && isMs(ms)) memory.#holds.set(key, seenAt + ms);
      }
    }
    return memory;
  }

  copy(): BucketMemory {
    const memory = new BucketMemory();
    for (const [k, v] of this.#once) memory.#once.set(k, v);
    for (const [k, v] of this.#holds) memory.#holds.set(k, v);
    return memory;
  }

  /** Whether the once-only id is recorded and kept at `at`. */
  usedOnce(id: string, at: number): boolean {
    return (this.#once.get(id) ?? -Infinity) > at;
  }

  /** The milliseconds left of an outlet's reboot hold at `at`, or 0. */
  heldFor(key: string, at: number): number {
    return Math.max(0, (this.#holds.get(holdKeyOf(key)) ?? -Infinity) - at);
  }

  recordOnce(id: string, until: number): void {
    this.#once.set(id, Math.max(until, this.#once.get(id) ?? -Infinity));
  }

  recordHold(key: string, until: number): void {
    const hash = holdKeyOf(key);
    this.#holds.set(hash, Math.max(until, this.#holds.get(hash) ?? -Infinity));
  }

  /** Forgets what ran out by `at`. */
  prune(at: number): void {
    for (const [id, until] of this.#once) if (until <= at) this.#once.delete(id);
    for (const [key, until] of this.#holds) if (until <= at) this.#holds.delete(key);
  }

  /** The payload written by a renewal sent at `at` (what is left of each entry from then). */
  payload(at: number): string {
    const once = [...this.#once].filter(([, until]) => until > at);
    const holds = [...this.#holds].filter(([, until]) => until > at);
    return JSON.stringify({
      once: once.map(([id]) => id),
      keep: once.map(([, until]) => Math.ceil(until - at)),
      holds: Object.fromEntries(holds.map(([key, until]) => [key, Math.ceil(until - at)])),
    });
  }

  /** Whether {@link payload} fits the lease record. */
  fits(at: number): boolean {
    return this.payload(at).length <= PAYLOAD_BUDGET;
  }
}
