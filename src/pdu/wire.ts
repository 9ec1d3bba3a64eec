/**
 * The Geist envelope and request bodies (pdu-protocol.md §1, §3): small pure helpers shared by the
 * client and its tests. Nothing here does I/O.
 */
import { PduError } from "./errors.js";

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
  const env = parsed as Record<string, unknown>;
  const retCode = env.retCode;
  if (typeof retCode !== "number" || !Number.isInteger(retCode)) {
    throw new PduError("malformed", `answer from ${where} is not a Geist envelope (no integer retCode)`);
  }
  return { retCode, retMsg: typeof env.retMsg === "string" ? env.retMsg : "", data: env.data };
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
