/**
 * Console sessions, in memory: an opaque random id in the cookie, the session under the SHA-256 of
 * that id (the ids themselves are not kept). A session ends after `idleMs` without a request that
 * counts as activity, `absoluteMs` after sign-in, at sign-out, or when it is evicted: at most `max`
 * sessions (the least recently used one goes first, after expired ones) and at most
 * {@link MAX_SESSIONS_PER_USER} per user (their oldest goes). Only a completed sign-in with a role
 * creates one, so failed or abandoned sign-ins leave nothing here.
 */
import { createHash, randomBytes } from "node:crypto";
import type { ConsoleUser } from "../../control/types.js";
import type { ConsoleRole } from "./principal.js";

export const MAX_SESSIONS_PER_USER = 16;
/** How often at most expired sessions are swept out (they are also dropped when looked up). */
const SWEEP_EVERY_MS = 60_000;

export interface Session {
  readonly user: ConsoleUser;
  readonly role: ConsoleRole;
  /** The cross-site request token the page sends in X-CSRF-Token. */
  readonly csrfToken: string;
  /** The ID token, for the provider's end-session request (its `id_token_hint`). */
  readonly idToken: string | null;
  readonly createdAt: number;
  lastSeenAt: number;
}

export interface SessionLimits {
  readonly idleMs: number;
  readonly absoluteMs: number;
  readonly max: number;
}

const keyOf = (id: string): string => createHash("sha256").update(id, "utf8").digest("base64url");

export class SessionStore {
  /** By key, least recently used first. */
  readonly #sessions = new Map<string, Session>();
  /** Keys of each user's sessions, oldest first. */
  readonly #byUser = new Map<string, Set<string>>();
  readonly #limits: SessionLimits;
  #lastSweep = 0;

  constructor(limits: SessionLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** A new session; returns the id for the cookie (43 characters of base64url, 256 random bits). */
  create(
    fields: Omit<Session, "csrfToken" | "createdAt" | "lastSeenAt">,
    now: number,
  ): { id: string; session: Session; evicted: number } {
    this.#sweep(now);
    /** Live sessions ended to make room. */
    let evicted = 0;
    const mine = this.#byUser.get(fields.user.sub);
    while (mine !== undefined && mine.size >= MAX_SESSIONS_PER_USER) {
      const oldest = mine.values().next().value!;
      this.#remove(oldest);
      evicted++;
    }
    while (this.#sessions.size >= this.#limits.max) {
      const lru = this.#sessions.keys().next().value!;
      this.#remove(lru);
      evicted++;
    }
    const id = randomBytes(32).toString("base64url");
    const session: Session = {
      ...fields,
      csrfToken: randomBytes(32).toString("base64url"),
      createdAt: now,
      lastSeenAt: now,
    };
    const key = keyOf(id);
    this.#sessions.set(key, session);
    const set = this.#byUser.get(fields.user.sub) ?? new Set<string>();
    set.add(key);
    this.#byUser.set(fields.user.sub, set);
    return { id, session, evicted };
  }

  /** The live session of a cookie value, or null (an ended one is dropped here). */
  get(id: string | undefined, now: number): Session | null {
    if (id === undefined || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const key = keyOf(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return null;
    if (this.#expired(session, now)) {
      this.#remove(key);
      return null;
    }
    return session;
  }

  /** Marks activity: the idle timeout starts again, and the session becomes the most recently used. */
  touch(id: string, session: Session, now: number): void {
    const key = keyOf(id);
    if (this.#sessions.get(key) !== session) return;
    session.lastSeenAt = now;
    this.#sessions.delete(key);
    this.#sessions.set(key, session);
  }

  /** Ends the session of a cookie value; true when there was one. */
  delete(id: string | undefined): boolean {
    if (id === undefined || !/^[A-Za-z0-9_-]{43}$/.test(id)) return false;
    return this.#remove(keyOf(id));
  }

  /** When the session ends unless used again (epoch ms): the earlier of idle and absolute. */
  endsAt(session: Session): { idle: number; absolute: number } {
    return {
      idle: session.lastSeenAt + this.#limits.idleMs,
      absolute: session.createdAt + this.#limits.absoluteMs,
    };
  }

  #expired(session: Session, now: number): boolean {
    const ends = this.endsAt(session);
    return now >= ends.idle || now >= ends.absolute;
  }

  #remove(key: string): boolean {
    const session = this.#sessions.get(key);
    if (session === undefined) return false;
    this.#sessions.delete(key);
    const set = this.#byUser.get(session.user.sub);
    set?.delete(key);
    if (set?.size === 0) this.#byUser.delete(session.user.sub);
    return true;
  }

  /** Drops every ended session, at most once a minute unless the store is full. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_EVERY_MS && this.#sessions.size < this.#limits.max) return;
    this.#lastSweep = now;
    for (const [key, session] of this.#sessions) if (this.#expired(session, now)) this.#remove(key);
  }
}
