/**
 * API key checks of the control endpoints: constant-time comparison and the lock-out of client
 * addresses that keep sending wrong keys.
 */
import { createHash, timingSafeEqual } from "node:crypto";

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/**
 * Compares a presented key with the configured one in constant time. Both are hashed first, so the
 * comparison takes as long for a key of any length and reveals nothing about the configured length.
 */
export function keyMatcher(configured: string): (presented: string) => boolean {
  const expected = digest(configured);
  return (presented) => timingSafeEqual(digest(presented), expected);
}

export const FAILURE_WINDOW_MS = 60_000;
/** More than this many failed keys from one address within the window lock it out. */
export const MAX_FAILURES = 10;
/** Addresses remembered at most; beyond it expired entries, then the oldest, are dropped. */
export const MAX_TRACKED_CLIENTS = 10_000;

/**
 * Sliding-window count of failed keys per client address. An address with more than MAX_FAILURES
 * failures in the last FAILURE_WINDOW_MS is locked out until the oldest of them leaves the window.
 * Each address keeps at most MAX_FAILURES + 1 timestamps, and at most MAX_TRACKED_CLIENTS
 * addresses are kept, so memory stays bounded whatever clients send.
 */
export class FailedKeyLimiter {
  readonly #failures = new Map<string, number[]>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Whole seconds until `client` may try again (at least 1), or 0 when it is not locked out. */
  retryAfter(client: string): number {
    const recent = this.#recent(client, this.#now());
    if (recent.length <= MAX_FAILURES) return 0;
    const oldest = recent[0] ?? this.#now();
    return Math.max(1, Math.ceil((oldest + FAILURE_WINDOW_MS - this.#now()) / 1000));
  }

  recordFailure(client: string): void {
    const now = this.#now();
    const recent = this.#recent(client, now);
    recent.push(now);
    // Re-insert, so the map's order is least recently failed first (for pruning).
    this.#failures.delete(client);
    this.#failures.set(client, recent.slice(-(MAX_FAILURES + 1)));
    this.#prune(now);
  }

  /** Number of addresses remembered (for tests of the bound). */
  get size(): number {
    return this.#failures.size;
  }

  #recent(client: string, now: number): number[] {
    const cutoff = now - FAILURE_WINDOW_MS;
    return (this.#failures.get(client) ?? []).filter((t) => t > cutoff);
  }

  #prune(now: number): void {
    if (this.#failures.size <= MAX_TRACKED_CLIENTS) return;
    const cutoff = now - FAILURE_WINDOW_MS;
    for (const [client, times] of this.#failures) {
      if ((times.at(-1) ?? 0) <= cutoff) this.#failures.delete(client);
    }
    for (const client of this.#failures.keys()) {
      if (this.#failures.size <= MAX_TRACKED_CLIENTS) break;
      this.#failures.delete(client);
    }
  }
}
