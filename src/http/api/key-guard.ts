/**
 * API key checks of the control endpoints: constant-time comparison and the lock-out of client
 * addresses that keep sending wrong keys.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { BlockList, isIP } from "node:net";
import { clientKey, plainAddress } from "../client-address.js";

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
/** Addresses remembered at most (locked and not). */
export const MAX_TRACKED_CLIENTS = 10_000;

/**
 * Sliding-window count of failed keys per client address. An address with more than MAX_FAILURES
 * failures in the last FAILURE_WINDOW_MS is locked out until the oldest of them leaves the window.
 * Each address keeps at most MAX_FAILURES + 1 timestamps, and at most `capacity` addresses are
 * kept, so memory stays bounded whatever clients send.
 *
 * A live lock is never evicted: otherwise failures from 10,000 other addresses would push a locked
 * address out, and it could try again at once. To make room the limiter drops expired
 * addresses, then the least recently failed address that is not locked; when every address is
 * locked, a failure from a new address is refused ({@link recordFailure} returns false: 429) until
 * the first lock ends.
 */
export class FailedKeyLimiter {
  /** Addresses not locked, least recently failed first. */
  readonly #unlocked = new Map<string, number[]>();
  /** Addresses locked out (or whose lock may have ended since: checked on use). */
  readonly #locked = new Map<string, number[]>();
  readonly #now: () => number;
  readonly #capacity: number;
  /** When every tracked address is locked: the time the first lock ends (no scan before it). */
  #fullUntil = 0;

  constructor(now: () => number = Date.now, capacity = MAX_TRACKED_CLIENTS) {
    this.#now = now;
    this.#capacity = capacity;
  }

  /**
   * Whole seconds until `client` may try again (at least 1), or 0 when it is not locked out. A
   * client is counted by its {@link clientKey} (an IPv6 one by its /64: otherwise a host could
   * try ten keys from each of its addresses).
   */
  retryAfter(address: string): number {
    const client = clientKey(address);
    const now = this.#now();
    const recent = this.#recent(client, now);
    if (recent.length <= MAX_FAILURES) return 0;
    return secondsUntil((recent[0] ?? now) + FAILURE_WINDOW_MS, now);
  }

  /**
   * Records a failed key. Returns false when it cannot be recorded because every remembered address
   * is locked out and `client` is not one of them: answer 429 (see {@link fullRetryAfter}).
   */
  recordFailure(address: string): boolean {
    const client = clientKey(address);
    const now = this.#now();
    const known = this.#unlocked.has(client) || this.#locked.has(client);
    if (!known && this.size >= this.#capacity && !this.#makeRoom(now)) return false;
    const recent = this.#recent(client, now);
    recent.push(now);
    const kept = recent.slice(-(MAX_FAILURES + 1));
    // Re-insert, so the map's order is least recently failed first (for eviction).
    this.#unlocked.delete(client);
    this.#locked.delete(client);
    (kept.length > MAX_FAILURES ? this.#locked : this.#unlocked).set(client, kept);
    return true;
  }

  /** Whole seconds until a new address can be recorded again, while every one is locked. */
  fullRetryAfter(): number {
    return secondsUntil(this.#fullUntil, this.#now());
  }

  /** Number of addresses remembered (for tests of the bound). */
  get size(): number {
    return this.#unlocked.size + this.#locked.size;
  }

  #recent(client: string, now: number): number[] {
    const cutoff = now - FAILURE_WINDOW_MS;
    const times = this.#unlocked.get(client) ?? this.#locked.get(client) ?? [];
    return times.filter((t) => t > cutoff);
  }

  /** Frees at least one place without dropping a live lock; false when every address is locked. */
  #makeRoom(now: number): boolean {
    const cutoff = now - FAILURE_WINDOW_MS;
    // Expired addresses come first in the map's order: drop them all (each is dropped once).
    for (const [client, times] of this.#unlocked) {
      if ((times.at(-1) ?? 0) > cutoff) break;
      this.#unlocked.delete(client);
    }
    if (this.size < this.#capacity) return true;
    const oldest = this.#unlocked.keys().next();
    if (oldest.done !== true) {
      this.#unlocked.delete(oldest.value);
      return true;
    }
    if (now < this.#fullUntil) return false;
    let firstEnd = Infinity;
    for (const [client, times] of this.#locked) {
      const end = (times[0] ?? 0) + FAILURE_WINDOW_MS;
      if (end <= now) this.#locked.delete(client);
      else firstEnd = Math.min(firstEnd, end);
    }
    if (this.size < this.#capacity) return true;
    this.#fullUntil = firstEnd;
    return false;
  }
}

const secondsUntil = (time: number, now: number): number => Math.max(1, Math.ceil((time - now) / 1000));

/**
 * Who a request comes from, for the lock-out and the audit log (`Api.TrustedProxies`). Behind an
 * Ingress every request arrives from the proxy, so one attacker would lock out every client; but
 * believing `X-Forwarded-For` from anyone would let a client pick a fresh address per
 * try. So only a connection from a trusted proxy may name the client: the header is read from the
 * right (the entry the nearest proxy appended), skipping trusted proxies; the first other address
 * is the client. An entry that is not an IP address ends the walk at the proxy before it.
 */
export function clientAddressResolver(
  trustedProxies: readonly string[],
): (remoteAddress: string | undefined, forwardedFor: string | string[] | undefined) => string {
  const trusted = new BlockList();
  for (const address of trustedProxies) {
    const plain = plainAddress(address);
    trusted.addAddress(plain, isIP(plain) === 6 ? "ipv6" : "ipv4");
  }
  const isTrusted = (address: string): boolean => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 6 ? "ipv6" : "ipv4");
  };
  return (remoteAddress, forwardedFor) => {
    let client = plainAddress(remoteAddress ?? "");
    if (trustedProxies.length === 0 || !isTrusted(client) || forwardedFor === undefined) return client;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor).split(",");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plainAddress(hops[i] ?? "");
      if (isIP(hop) === 0) break;
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return client;
  };
}
