/**
 * The Geist envelope and request bodies (docs/simulator.md describes the API): small pure helpers shared by the
 * client and its tests. Nothing here does I/O.
 */
import { PduError } from "../errors.js";
import type { DeviceRoute, Vendor } from "../model.js";

/** retCodes with a documented meaning. */
export const RetCode = {
  ok: 0,
  notAuthorised: 1001,
  wrongPassword: 1004,
  pathNotFound: 3001,
} as const;

const RET_MEANINGS: Readonly<Record<number, string>> = {
  [RetCode.notAuthorised]: "not authorised",
  [RetCode.wrongPassword]: "wrong password",
  [RetCode.pathNotFound]: "path not found",
};

/** The meaning of a retCode for messages: the PDU's retMsg when it sent one, else the documented meaning. */
export function describeRetCode(retCode: number, retMsg: string): string {
  return retMsg.trim() !== "" ? retMsg : (RET_MEANINGS[retCode] ?? "error");
}

export interface Envelope {
  readonly retCode: number;
  readonly retMsg: string;
  readonly data: unknown;
}

/**
 * Decodes a response body into an envelope. `where` names the request for messages
 * (`10.0.0.5:80 GET /api`). Throws a `malformed` PduError for non-JSON or a non-envelope.
 * A non-zero retCode is returned, not thrown: the caller decides what it means.
 */
export function decodeEnvelope(body: Buffer | string, where: string): Envelope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === "string" ? body : body.toString("utf8"));
  } catch {
    throw new PduError("malformed", `answer from ${where} is not JSON`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new PduError("malformed", `answer from ${where} is not a Geist envelope (not an object)`);
  }
  const env = parsed as { retCode?: unknown; retMsg?: unknown; data?: unknown };
  const retCode = env.retCode;
  if (typeof retCode !== "number" || !Number.isInteger(retCode)) {
    throw new PduError("malformed", `answer from ${where} is not a Geist envelope (no integer retCode)`);
  }
  if (typeof env.retMsg !== "string") env.retMsg = "";
  // The parsed object itself, not a new object holding `data`: V8 may allocate the objects of an
  // object literal straight into the old generation once enough of them have lived long, and an
  // old object keeps what it points to alive through every young collection until the next full
  // one; for the envelope, that is the whole tree of the answer, at every poll.
  return env as Envelope;
}

/** Body of `POST /api/auth/{username}`. */
export function loginBody(password: string): Buffer {
  return Buffer.from(JSON.stringify({ token: "", cmd: "login", data: { password } }), "utf8");
}

export type WriteCommand = "control" | "set" | "reset";

/** Body of a write: `{"cmd","token","data"}`. */
export function commandBody(
  cmd: WriteCommand,
  token: string,
  data: Readonly<Record<string, unknown>>,
): Buffer {
  return Buffer.from(JSON.stringify({ cmd, token, data }), "utf8");
}

/** `host:port`, with IPv6 literals bracketed, for URLs and messages. */
export function hostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** What discovery names a Geist unit's maker and a OneView group. */
export const GEIST_VENDOR: Vendor = Object.freeze({ manufacturer: "Vertiv", groupModel: "OneView group" });

/**
 * The {@link DeviceRoute} of a Geist device: `null` means the polled unit itself; otherwise the
 * device belongs to a OneView member, reached through that member's proxy ports on the master's host.
 */
// A type alias, not an interface: it must fit the model's index-signature DeviceRoute.
export type ProxyRoute = {
  /** Member key in the master's `host` map (MAC-like). */
  readonly hostKey: string;
  /** Port on the master's hostname proxying this member over http (0 or less: the master itself). */
  readonly webPort: number;
  /** Port on the master's hostname proxying this member over https (0 or less: the master itself). */
  readonly httpsPort: number;
};

/** A route handed back by the core is one this driver made (anything else reaches the unit itself). */
export function isProxyRoute(route: DeviceRoute | null): route is ProxyRoute {
  if (route === null) return false;
  const r = route;
  return typeof r.hostKey === "string" && typeof r.webPort === "number" && typeof r.httpsPort === "number";
}
