/**
 * A tiny HTTP(S) client for talking to the simulator in tests: one fresh connection per request
 * (no keep-alive pool to leak), raw bytes available, chunked bodies on request.
 */
import http from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import https from "node:https";

export interface Envelope {
  retCode: number;
  retMsg: string;
  data: unknown;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
}

export interface RequestOptions {
  method?: string;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  /** Send the body with `Transfer-Encoding: chunked` instead of `Content-Length`. */
  chunked?: boolean;
  /** PEM CA for https. */
  ca?: string;
  /** Give up (reject with "timeout") after this many ms. */
  timeoutMs?: number;
  agent?: http.Agent | false;
}

/** Error with the transport's code (`ECONNRESET`, `ECONNREFUSED`, `timeout`, TLS codes...). */
export class TransportError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function request(url: string, o: RequestOptions = {}): Promise<RawResponse> {
  const target = new URL(url);
  const lib = target.protocol === "https:" ? https : http;
  const payload =
    o.body === undefined ? undefined : typeof o.body === "string" ? o.body : JSON.stringify(o.body);
  const headers: Record<string, string> = { accept: "application/json" };
  if (payload !== undefined) {
    headers["content-type"] = "application/json";
    if (o.chunked !== true) headers["content-length"] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = lib.request(target, {
      method: o.method ?? (payload === undefined ? "GET" : "POST"),
      headers,
      agent: o.agent ?? false,
      ...(o.ca !== undefined ? { ca: o.ca } : {}),
    });
    if (o.timeoutMs !== undefined)
      req.setTimeout(o.timeoutMs, () => req.destroy(new TransportError("timeout", "no answer in time")));
    req.on("error", (e: NodeJS.ErrnoException) =>
      reject(e instanceof TransportError ? e : new TransportError(e.code ?? e.message, e.message)),
    );
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (e) => reject(new TransportError("response", e.message)));
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString("utf8") });
      });
    });
    if (payload !== undefined && o.chunked === true) {
      // two writes without a length: node sends them chunked
      const half = Math.floor(payload.length / 2);
      req.write(payload.slice(0, half));
      req.end(payload.slice(half));
    } else req.end(payload);
  });
}

export async function getJson(url: string, o: RequestOptions = {}): Promise<Envelope> {
  const res = await request(url, o);
  return JSON.parse(res.text) as Envelope;
}

export async function postJson(url: string, body: unknown, o: RequestOptions = {}): Promise<Envelope> {
  const res = await request(url, { ...o, method: "POST", body });
  return JSON.parse(res.text) as Envelope;
}

/** Logs in on `baseUrl` and returns the token (throws on a non-zero retCode). */
export async function login(
  baseUrl: string,
  user = "admin",
  password = "admin",
  o: RequestOptions = {},
): Promise<string> {
  const env = await postJson(
    `${baseUrl}/api/auth/${encodeURIComponent(user)}`,
    { token: "", cmd: "login", data: { password } },
    o,
  );
  const data = env.data as { token?: unknown } | null;
  if (env.retCode !== 0 || typeof data?.token !== "string")
    throw new Error(`login failed: ${JSON.stringify(env)}`);
  return data.token;
}

export { waitFor } from "./wait.js";
