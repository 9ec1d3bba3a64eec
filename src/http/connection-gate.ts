/**
 * Who may open a connection to a listener, decided when it is accepted (before any byte is read):
 *
 * - at most `maxPerClient` open connections per client (an IPv4 address, an IPv6 /64;
 *   client-address.ts), so that one client dripping requests cannot hold the listener's places;
 *   addresses of `exempt` (the API's trusted proxies, which carry many clients) are not held to it;
 * - at most `maxConnections` in all;
 * - the last {@link reserveOf} places are kept for clients holding fewer than
 *   {@link RESERVE_HOLDING} connections: once the others are taken, a client with connections open
 *   gets no more, while a probe (the kubelet opens one connection per probe), a scrape or a new
 *   console still gets in. Starving those takes as many flooding addresses as there are places
 *   outside the reserve divided by `maxPerClient`, plus the reserve itself, all at once.
 *
 * A refused connection is closed at once, unanswered. Refusals are logged at most once a minute per
 * listener: the first one names the client and the rule; the ones folded meanwhile are counted in
 * one more line at the end of the minute.
 */
import { BlockList, isIP, type Server, type Socket } from "node:net";
import { clientKey, plainAddress } from "./client-address.js";

/** A client holding fewer connections than this may take a place of the reserve. */
export const RESERVE_HOLDING = 2;
/** How often refusals are logged at most. */
export const REFUSAL_LOG_MS = 60_000;

/** The places of a listener of `maxConnections` kept for clients holding almost none: a sixteenth. */
export function reserveOf(maxConnections: number): number {
  return Math.floor(maxConnections / 16);
}

export interface GateLimits {
  readonly maxConnections: number;
  readonly maxPerClient: number;
  /** Addresses not held to `maxPerClient` (the API's trusted proxies). */
  readonly exempt?: readonly string[];
}

/** A log line of the gate (a warning). */
export type GateLog = (fields: Record<string, unknown>, message: string) => void;

type Refusal = "client" | "reserve" | "full";

const RULES: Readonly<Record<Refusal, string>> = {
  client: "the client holds Http.MaxConnectionsPerClient connections already",
  reserve: "the listener's last places are kept for clients holding fewer than 2 connections",
  full: "the listener holds Http.MaxConnections connections",
};

export class ConnectionGate {
  readonly #limits: GateLimits;
  readonly #reserve: number;
  readonly #exempt: BlockList | null;
  readonly #log: GateLog;
  readonly #now: () => number;
  #open = 0;
  /** Open connections per client key; only clients with some (bounded by the open connections). */
  readonly #perClient = new Map<string, number>();
  #loggedAt = Number.NEGATIVE_INFINITY;
  #folded = 0;
  #flush: NodeJS.Timeout | null = null;

  constructor(limits: GateLimits, log: GateLog, now: () => number = Date.now) {
    this.#limits = limits;
    this.#reserve = reserveOf(limits.maxConnections);
    this.#log = log;
    this.#now = now;
    const exempt = limits.exempt ?? [];
    this.#exempt = exempt.length === 0 ? null : new BlockList();
    for (const address of exempt) {
      const plain = plainAddress(address);
      this.#exempt?.addAddress(plain, isIP(plain) === 6 ? "ipv6" : "ipv4");
    }
  }

  /** Open connections now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Puts the gate in front of every `connection` listener the server has now (node's HTTP parser,
   * or TLS): a refused socket reaches none of them.
   */
  attach(server: Server): void {
    const listeners = server.listeners("connection") as ((socket: Socket) => void)[];
    server.removeAllListeners("connection");
    server.on("connection", (socket: Socket) => {
      if (!this.admit(socket)) return;
      for (const listener of listeners) listener.call(server, socket);
    });
  }

  /** Counts `socket` in, or closes it; whether it was admitted. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress;
    // A unix socket (the app behind the API worker) has no address: only the total applies.
    const key = address === undefined || address === "" ? null : clientKey(address);
    const held = key === null ? 0 : (this.#perClient.get(key) ?? 0);
    const refusal = this.#refusal(address, held);
    if (refusal !== null) {
      socket.destroy();
      this.#refused(address ?? "", held, refusal);
      return false;
    }
    this.#open++;
    if (key !== null) this.#perClient.set(key, held + 1);
    socket.once("close", () => {
      this.#open--;
      if (key === null) return;
      const left = (this.#perClient.get(key) ?? 1) - 1;
      if (left > 0) this.#perClient.set(key, left);
      else this.#perClient.delete(key);
    });
    return true;
  }

  #refusal(address: string | undefined, held: number): Refusal | null {
    const { maxConnections, maxPerClient } = this.#limits;
    if (held >= maxPerClient && !this.#isExempt(address)) return "client";
    if (this.#open >= maxConnections) return "full";
    if (this.#open >= maxConnections - this.#reserve && held >= RESERVE_HOLDING) return "reserve";
    return null;
  }

  #isExempt(address: string | undefined): boolean {
    if (this.#exempt === null || address === undefined) return false;
    const plain = plainAddress(address);
    const family = isIP(plain);
    return family !== 0 && this.#exempt.check(plain, family === 6 ? "ipv6" : "ipv4");
  }

  /** One line a minute at most; what is folded is counted at the end of the minute. */
  #refused(address: string, held: number, refusal: Refusal): void {
    const now = this.#now();
    if (now - this.#loggedAt < REFUSAL_LOG_MS) {
      this.#folded++;
      this.#flush ??= setTimeout(() => this.#flushFolded(), this.#loggedAt + REFUSAL_LOG_MS - now).unref();
      return;
    }
    this.#loggedAt = now;
    this.#log(
      { client: plainAddress(address), held, open: this.#open, rule: refusal },
      `connections refused: ${RULES[refusal]}; further refusals this minute are counted, not logged`,
    );
  }

  #flushFolded(): void {
    this.#flush = null;
    if (this.#folded === 0) return;
    const folded = this.#folded;
    this.#folded = 0;
    this.#loggedAt = this.#now();
    this.#log(
      { refused: folded, open: this.#open },
      `connections refused: ${folded} more in the last minute`,
    );
  }

  /** Stops the pending log line (the listener closes). */
  close(): void {
    if (this.#flush !== null) clearTimeout(this.#flush);
    this.#flush = null;
  }
}
