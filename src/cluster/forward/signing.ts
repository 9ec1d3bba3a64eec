/**
 * How replicas prove a request or an answer comes from a replica of the installation
 * (docs/cluster.md, "Authentication between replicas"). The key is derived from the replicas'
 * shared secret (`SERVICE_CLUSTER_SECRET`), which no client has and which never travels.
 *
 * A request's signature covers its method, path, body (its SHA-256), the sending member (`via`),
 * the receiving replica's identity (member and incarnation: a request for one replica is refused
 * by every other, and by the same member restarted), the user it claims, its time and a nonce.
 * The receiver refuses it outside {@link SIGNATURE_WINDOW_MS} of its own clock and when it has seen
 * the nonce before ({@link NonceCache}, which keeps every nonce for as long as its time is accepted).
 * An answer's signature covers the request's nonce, its status and its body, so an answer cannot be
 * made up by a replica without the secret, nor taken from another request.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** The headers of the protocol between replicas. */
export const REPLICA_HEADERS = {
  /** The member the request comes from (`via`). */
  from: "x-pdu-bridge-member",
  /** The identity (member/incarnation) of the replica it is meant for. */
  to: "x-pdu-bridge-to",
  /** Who the request is on behalf of (the audit's user). */
  user: "x-pdu-bridge-user",
  /** When it was signed (epoch ms on the sender's clock). */
  time: "x-pdu-bridge-time",
  /** 16 random bytes, base64url: one request, once. */
  nonce: "x-pdu-bridge-nonce",
  /** Hex HMAC-SHA256 of a request, or of an answer. */
  signature: "x-pdu-bridge-signature",
} as const;

/**
 * How far a request's time may be from the receiver's clock, either way (ms). Replicas run on
 * machines whose clocks NTP keeps within milliseconds of each other; 30 s leaves room for a clock
 * that drifted, while a captured request is useless half a minute later.
 */
export const SIGNATURE_WINDOW_MS = 30_000;
/** Nonces remembered at most: far more than replicas send each other within a window. */
export const NONCE_CACHE_MAX = 65_536;

const MEMBER = /^[a-z0-9.-]{1,63}$/;
const IDENTITY = /^[a-z0-9.-]{1,63}\/[0-9a-f]{1,32}$/;
const NONCE = /^[A-Za-z0-9_-]{22}$/;
/** The claimed user: `-` (none: a read), `api-key`, or `console:<SHA-256 of the subject>`. */
const USER = /^(-|api-key|console:[0-9a-f]{64})$/;

/** What a request's signature covers, besides its time and nonce. */
export interface RequestParts {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly from: string;
  readonly to: string;
  readonly user: string;
}

/** A request whose signature checked out. */
export interface VerifiedRequest {
  readonly from: string;
  readonly user: string;
  readonly nonce: string;
}

export type Verification =
  | ({ readonly ok: true } & VerifiedRequest)
  | { readonly ok: false; readonly reason: RefusalReason; readonly from?: string };

/** Why a request was refused (what the aggregated log line counts). */
export type RefusalReason =
  "unsigned" | "malformed" | "bad-signature" | "outside-window" | "other-replica" | "replayed" | "too-many";

export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

function keyOf(secret: string): Buffer {
  return createHmac("sha256", secret).update("pdu-bridge replicas v2").digest();
}

function mac(secret: string, lines: readonly string[]): string {
  return createHmac("sha256", keyOf(secret)).update(lines.join("\n"), "utf8").digest("hex");
}

function requestMac(secret: string, parts: RequestParts, time: string, nonce: string): string {
  const { method, path, body, from, to, user } = parts;
  return mac(secret, ["request", method, path, from, to, user, time, nonce, sha256(body)]);
}

/** Equal hex strings in constant time (lengths first; the expected length is public). */
function sameMac(expected: string, given: unknown): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(expected, "utf8");
  const b = Buffer.from(given, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The headers that sign a request (and say where it is from and for). */
export function signRequest(secret: string, parts: RequestParts, now = Date.now()): Record<string, string> {
  const time = String(now);
  const nonce = randomBytes(16).toString("base64url");
  return {
    [REPLICA_HEADERS.from]: parts.from,
    [REPLICA_HEADERS.to]: parts.to,
    [REPLICA_HEADERS.user]: parts.user,
    [REPLICA_HEADERS.time]: time,
    [REPLICA_HEADERS.nonce]: nonce,
    [REPLICA_HEADERS.signature]: requestMac(secret, parts, time, nonce),
  };
}

const one = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === "string" ? value : undefined;
};

/**
 * Checks a request meant for `identity`: well-formed headers, a signature made with the secret,
 * a time within the window, this replica as its receiver, a nonce not seen before (then
 * remembered). Nothing is remembered for a request that fails before the nonce.
 */
export function verifyRequest(
  secret: string,
  identity: string,
  request: { readonly method: string; readonly path: string; readonly body: string },
  headers: IncomingHttpHeaders,
  nonces: NonceCache,
  now = Date.now(),
): Verification {
  const given = one(headers, REPLICA_HEADERS.signature);
  if (given === undefined) return { ok: false, reason: "unsigned" };
  const from = one(headers, REPLICA_HEADERS.from) ?? "";
  const to = one(headers, REPLICA_HEADERS.to) ?? "";
  const user = one(headers, REPLICA_HEADERS.user) ?? "";
  const time = one(headers, REPLICA_HEADERS.time) ?? "";
  const nonce = one(headers, REPLICA_HEADERS.nonce) ?? "";
  const named = MEMBER.test(from) ? { from } : {};
  if (
    secret === "" ||
    !MEMBER.test(from) ||
    !IDENTITY.test(to) ||
    !USER.test(user) ||
    !/^[0-9]{1,15}$/.test(time) ||
    !NONCE.test(nonce)
  ) {
    return { ok: false, reason: "malformed", ...named };
  }
  const parts: RequestParts = { ...request, from, to, user };
  if (!sameMac(requestMac(secret, parts, time, nonce), given)) {
    return { ok: false, reason: "bad-signature", ...named };
  }
  const at = Number(time);
  if (Math.abs(now - at) > SIGNATURE_WINDOW_MS) return { ok: false, reason: "outside-window", ...named };
  if (to !== identity) return { ok: false, reason: "other-replica", ...named };
  const admitted = nonces.admit(nonce, at + SIGNATURE_WINDOW_MS, now);
  if (admitted !== "new") return { ok: false, reason: admitted === "seen" ? "replayed" : "too-many", from };
  return { ok: true, from, user, nonce };
}

/** The signature of an answer to the request with `nonce`. */
export function signAnswer(secret: string, nonce: string, status: number, body: string): string {
  return mac(secret, ["answer", nonce, String(status), sha256(body)]);
}

/** Whether an answer carries the signature of the holder for the request with `nonce`. */
export function answerSigned(
  secret: string,
  nonce: string,
  status: number,
  body: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): boolean {
  return (
    secret !== "" && sameMac(signAnswer(secret, nonce, status, body), headers[REPLICA_HEADERS.signature])
  );
}

/** The nonce a request was signed with (from the headers {@link signRequest} made). */
export const nonceOf = (headers: Record<string, string>): string => headers[REPLICA_HEADERS.nonce] ?? "";

/**
 * The nonces of requests accepted, each kept until its time leaves the window (after which its
 * time alone refuses it). Bounded: when {@link NONCE_CACHE_MAX} nonces are within their window, new
 * requests are refused rather than an older nonce forgotten (which would let its request run again).
 */
export class NonceCache {
  readonly #until = new Map<string, number>();
  readonly #max: number;

  constructor(max = NONCE_CACHE_MAX) {
    this.#max = max;
  }

  get size(): number {
    return this.#until.size;
  }

  /** "new" (remembered now), "seen" (a replay) or "full" (refused: too many within the window). */
  admit(nonce: string, until: number, now: number): "new" | "seen" | "full" {
    const known = this.#until.get(nonce);
    if (known !== undefined && known >= now) return "seen";
    if (this.#until.size >= this.#max) {
      for (const [n, u] of this.#until) if (u < now) this.#until.delete(n);
      if (this.#until.size >= this.#max) return "full";
    }
    this.#until.set(nonce, until);
    return "new";
  }
}
