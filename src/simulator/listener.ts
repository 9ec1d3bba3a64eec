/**
 * One listening port of the simulator (a unit, or a member's proxy port): node:http or node:https,
 * the transport quirks of real units (chunked POSTs reset, idle keep-alive drops) and fault injection.
 */

import http from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { ListenerContext, Reply } from "./api.js";
import { handleGet, handlePost, segments } from "./api.js";
import type { TlsMaterial } from "./cert.js";
import { answerShape, isHostileMode, reshapeAnswer, type AnswerShape, type HostileMode } from "./hostile.js";
import type { SimState, SimUnit } from "./state.js";
import { MEMBER_HEADER } from "../pdu/driver.js";
import type { JournalEntry, RecordedRequest, SimulatorFault } from "./types.js";

/**
 * The bridge replica that sent a request, from its `X-Pdu-Bridge-Member` header (real units ignore
 * it): null without one, `"(invalid)"` for one that is not a plain member name.
 */
function memberOf(req: IncomingMessage): string | null {
  const raw = req.headers[MEMBER_HEADER];
  if (raw === undefined) return null;
  return typeof raw === "string" && MEMBER_PATTERN.test(raw) ? raw : "(invalid)";
}

const MEMBER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** What a listener needs from the simulator that owns it. */
export interface ListenerOwner {
  readonly state: SimState;
  readonly rejectChunked: boolean;
  readonly idleDropMs: number | null;
  record(entry: RecordedRequest): void;
  /** A write the unit executed (its answer said OK), for the write journal. */
  executed(entry: JournalEntry): void;
  proxyPort(unit: SimUnit): number;
}

export type ParsedFault =
  | { readonly kind: "refuse" | "hang" | "http500" | "truncated" | "wrong-shape" | "huge" }
  | { readonly kind: "slow"; readonly ms: number };

/** What a listener does wrong: at most one transport fault, and the hostile answer modes combined. */
export interface ParsedFaults {
  readonly transport: ParsedFault | null;
  readonly shape: AnswerShape | null;
}

/** A fault or a list of faults (see SimulatorFault); null or `[]`: none. */
export function parseFaults(faults: SimulatorFault | readonly SimulatorFault[] | null): ParsedFaults {
  const list: readonly SimulatorFault[] =
    faults === null ? [] : typeof faults === "string" ? [faults] : faults;
  const modes: HostileMode[] = [];
  let transport: ParsedFault | null = null;
  for (const fault of list) {
    if (isHostileMode(fault)) {
      modes.push(fault);
      continue;
    }
    if (transport !== null) throw new RangeError(`simulator: ${fault} and another transport fault at once`);
    transport = parseFault(fault);
  }
  return { transport, shape: answerShape(modes) };
}

export function parseFault(fault: SimulatorFault): ParsedFault {
  if (fault.startsWith("slow:")) {
    const ms = Number(fault.slice(5));
    if (!Number.isInteger(ms) || ms < 0) throw new RangeError(`simulator: bad fault ${fault}`);
    return { kind: "slow", ms };
  }
  switch (fault) {
    case "refuse":
    case "hang":
    case "http500":
    case "truncated":
    case "wrong-shape":
    case "huge":
      return { kind: fault };
    default:
      throw new RangeError(`simulator: unknown fault ${String(fault)}`);
  }
}

const BODY_LIMIT = 1024 * 1024;
/** Size of the `huge` fault's padding (the whole body is a few bytes more). */
export const HUGE_BODY_BYTES = 56 * 1024 * 1024;
const PAD = Buffer.alloc(64 * 1024, "x");

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

export class Listener {
  readonly tokens = new Map<string, string>();
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly idle = new WeakMap<Socket, NodeJS.Timeout>();
  private readonly sleepers = new Set<() => void>();
  private readonly ctx: ListenerContext;
  private fault: ParsedFault | null = null;
  private shape: AnswerShape | null = null;
  /** Answers reshaped so far (numbers the ids of the `new-id` mode). */
  private reshaped = 0;
  private listening = false;
  private closed = false;
  private boundHost = "";
  private boundPort = 0;

  constructor(
    private readonly owner: ListenerOwner,
    readonly unit: SimUnit,
    tls: TlsMaterial | null,
  ) {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.onRequest(req, res);
    this.server = tls
      ? https.createServer({ key: tls.key, cert: tls.cert }, handler)
      : http.createServer(handler);
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    if (owner.idleDropMs !== null)
      this.server.keepAliveTimeout = Math.max(this.server.keepAliveTimeout, owner.idleDropMs + 1000);
    this.ctx = { state: owner.state, unit, tokens: this.tokens, proxyPort: (u) => owner.proxyPort(u) };
  }

  get port(): number {
    return this.boundPort;
  }

  /** TCP connections open now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once("error", onError);
      this.server.listen(port, host, () => {
        this.server.off("error", onError);
        const address = this.server.address();
        this.boundPort = typeof address === "object" && address !== null ? address.port : port;
        this.boundHost = host;
        this.listening = true;
        resolve();
      });
    });
  }

  async setFault(faults: ParsedFaults): Promise<void> {
    if (this.closed) return;
    const fault = faults.transport;
    this.fault = fault;
    this.shape = faults.shape;
    if (fault?.kind === "refuse") await this.stop();
    else if (!this.listening) await this.listen(this.boundHost, this.boundPort);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.sleepers) wake();
    await this.stop();
  }

  /** Stops listening and drops every open connection. */
  private stop(): Promise<void> {
    if (!this.listening) return Promise.resolve();
    this.listening = false;
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    clearTimeout(this.idle.get(socket));
    const method = req.method ?? "GET";
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const chunked = /\bchunked\b/i.test(req.headers["transfer-encoding"] ?? "");
    if (method === "POST" && chunked && this.owner.rejectChunked) {
      this.record(method, path, true, undefined, null, memberOf(req));
      reset(socket);
      return;
    }
    void this.respond(req, res, method, path, chunked).catch(() => res.destroy());
  }

  private async respond(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    chunked: boolean,
  ): Promise<void> {
    const raw = await readBody(req);
    if (raw === null) {
      send(res, 413, "request body too large", "text/plain");
      return;
    }
    const body = parseJson(raw);
    const declared = req.headers["content-length"];
    const member = memberOf(req);
    this.record(method, path, chunked, body, declared === undefined ? null : Number(declared), member);
    const fault = this.fault;
    if (fault?.kind === "hang") return;
    if (fault?.kind === "slow") {
      await this.sleep(fault.ms);
      if (this.closed || res.destroyed) return;
    }
    if (this.owner.idleDropMs !== null) this.armIdleDrop(res, this.owner.idleDropMs);
    if (fault?.kind === "http500") return send(res, 500, "Internal Server Error", "text/plain");
    if (fault?.kind === "huge") return streamHuge(res);

    const segs = segments(path);
    const reply: Reply =
      segs === null
        ? { status: 404, envelope: { retCode: 3001, retMsg: "path not found", data: null } }
        : method === "POST"
          ? handlePost(this.ctx, segs, body)
          : method === "GET"
            ? handleGet(this.ctx, segs)
            : { status: 405, envelope: { retCode: 3001, retMsg: "method not allowed", data: null } };
    if (method === "POST" && reply.envelope.retCode === 0 && segs !== null && segs[1] !== "auth") {
      const data = isObj(body) && isObj(body.data) ? body.data : {};
      const cmd = isObj(body) && typeof body.cmd === "string" ? body.cmd : "";
      this.owner.executed({ time: this.owner.state.time(), unit: this.unit.index, path, cmd, data, member });
    }
    let envelope = reply.envelope;
    const shape = this.shape;
    const root = segs?.length === 1 && (segs[0] === "api" || segs[0] === "oneview") ? segs[0] : null;
    if (shape !== null && method === "GET" && root !== null && envelope.retCode === 0)
      envelope = { ...envelope, data: reshapeAnswer(envelope.data, root, shape, ++this.reshaped) };
    if (fault?.kind === "wrong-shape" && envelope.retCode === 0)
      envelope = { ...envelope, data: wrongShape(envelope.data) };
    let text = Buffer.from(JSON.stringify(envelope));
    if (fault?.kind === "truncated") text = text.subarray(0, Math.floor(text.length / 2));
    send(res, reply.status, text, "application/json");
  }

  private record(
    method: string,
    path: string,
    chunked: boolean,
    body: unknown,
    contentLength: number | null,
    member: string | null,
  ): void {
    const cmd = isObj(body) && typeof body.cmd === "string" ? body.cmd : null;
    this.owner.record({
      member,
      time: this.owner.state.time(),
      method,
      path,
      port: this.boundPort,
      unit: this.unit.index,
      chunked,
      contentLength,
      body: redact(body),
      cmd,
    });
  }

  /** Destroys the connection when no new request arrives within `ms` after this response. */
  private armIdleDrop(res: ServerResponse, ms: number): void {
    const socket = res.socket;
    if (!socket) return;
    res.once("finish", () => {
      const timer = setTimeout(() => socket.destroy(), ms);
      timer.unref();
      this.idle.set(socket, timer);
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}

/** Sends a TCP RST where the socket allows it (plain TCP), else just closes. */
function reset(socket: Socket): void {
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > BODY_LIMIT ? null : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

function redact(body: unknown): unknown {
  if (!isObj(body) || !isObj(body.data) || !("password" in body.data)) return body;
  return { ...body, data: { ...body.data, password: "[redacted]" } };
}

function send(res: ServerResponse, status: number, body: Buffer | string, type: string): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** `dev`/`host` maps as arrays, a non-boolean flag, a numeric token; anything else wrapped in an array. */
function wrongShape(data: unknown): unknown {
  if (typeof data === "boolean") return data ? "yes" : "no";
  if (isObj(data)) {
    if (isObj(data.dev)) return { ...data, dev: Object.values(data.dev) };
    if (isObj(data.host)) return { ...data, host: Object.values(data.host) };
    if (typeof data.token === "string") return { ...data, token: 12345 };
  }
  return [data];
}

/** A >50 MB JSON body, streamed chunked with back-pressure from one shared 64 KiB buffer. */
function streamHuge(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.write('{"retCode":0,"retMsg":"OK","data":{"padding":"');
  let left = HUGE_BODY_BYTES;
  const pump = (): void => {
    while (left > 0) {
      if (res.destroyed) return;
      left -= PAD.length;
      if (!res.write(PAD)) {
        res.once("drain", pump);
        return;
      }
    }
    res.end('"}}');
  };
  pump();
}
