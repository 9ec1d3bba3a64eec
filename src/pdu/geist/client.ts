/**
 * The Geist HTTP client for one configured PDU instance: polls the
 * unit (or a OneView master) into a {@link Snapshot}, and performs outlet writes with lazy login.
 *
 * - Reads (the OneView probe and polls, which never overlap) go over one undici Client; writes over
 *   an undici Pool per target port (the unit's own, OneView members' proxy ports), created on the
 *   first write, so a group's writes run side by side and a slow poll never holds a command up.
 *   Both are kept for the client's life, with keep-alive, TLS options (ValidateCertificate, CaFile
 *   read once) and connect/header/body timeouts from `Connection.Timeout`, plus an overall deadline
 *   per request. Polls at least {@link READ_KEEP_ALIVE_MS} apart ask for the read connection to be
 *   closed after each answer: it would only sit idle until the keep-alive ran out. Not an undici
 *   Agent: it discards an origin's pool whenever its last connection closes, with a poll interval
 *   longer than the keep-alive that is every poll, and each discarded pool becomes old-generation
 *   garbage. Not a Pool for reads: its 2048-slot queue is 16 KiB per PDU kept for nothing.
 * - Every failure is a {@link PduError}: `unreachable`, `timeout`, `http-status`, `ret-code`,
 *   `malformed` (a {@link ParseError} from the parser passes through). When the caller's signal
 *   aborts, its reason is thrown as is.
 * - A request that fails with a reset or a closed keep-alive connection before any answer is retried
 *   once on a fresh connection (units drop idle keep-alive connections). Except writes that must not
 *   run twice (`reboot`, `resetStats`): they go over a fresh connection of their own and are never
 *   re-sent once any byte of the request may have reached the PDU; a failure after that point is a
 *   `outcome-unknown` PduError. Device ids become URL segments only when they are safe names
 *   (src/names.ts), so `.`/`..` can never turn a write into another path.
 * - Tokens are cached per target port; a write answered with retCode 1001 drops the token, logs in
 *   again and is retried once. Concurrent writes to one port share one login.
 * - Secrets (password, tokens) are never logged nor put in error messages.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Client, Pool, type Dispatcher } from "undici";
import type { InstanceConfig, PduScheme } from "../../config/schema.js";
import { silentLogger, type Logger } from "../../log.js";
import { describeError, isPduError, ParseError, PduError } from "../errors.js";
import { AnswerTooLarge, Exchange } from "../http-request.js";
import type {
  CredentialsVerdict,
  LabelTarget,
  OutletSettings,
  OutletTarget,
  PduDriver,
  SwitchAction,
} from "../driver.js";
import { MEMBER_HEADER } from "../driver.js";
import { restamp, type DeviceRoute, type Snapshot } from "../model.js";
import { pathSegment } from "../../names.js";
import { parseApiTree, parseOneView } from "./parse.js";
import {
  commandBody,
  decodeEnvelope,
  describeRetCode,
  GEIST_VENDOR,
  hostPort,
  isProxyRoute,
  loginBody,
  RetCode,
  type Envelope,
  type WriteCommand,
} from "./wire.js";

export type OutletAction = SwitchAction;
/** An outlet to write to: its device's `route` (a {@link ProxyRoute} from the snapshot) decides the port. */
export type { OutletTarget };

/**
 * What the client reads of an {@link InstanceConfig}; every InstanceConfig fits. Spelled out so the
 * client (and its tests) depend only on these fields.
 */
export interface ClientInstance {
  readonly id: string;
  readonly Connection: {
    readonly Host: string;
    readonly Port: number;
    readonly Scheme: PduScheme;
    /** Seconds per request. */
    readonly Timeout: number;
    readonly ValidateCertificate: boolean;
    readonly CaFile: string | null;
  };
  readonly Credentials: { readonly Username: string | null; readonly Password: string | null };
  /** Seconds between polls; longer than {@link READ_KEEP_ALIVE_MS}: reads close their connection. */
  readonly PollInterval?: number;
}

export interface GeistClientOptions {
  logger?: Logger;
  /** Largest response body read; bigger answers fail as `malformed` without being read. Default 16 MiB. */
  maxBodyBytes?: number;
  /** This replica's member name, sent as {@link MEMBER_HEADER} on every request (several replicas). */
  member?: string;
}

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * How long an idle connection is kept for the next request (undici's default, set explicitly). A
 * poll interval at least this long finds the read connection closed anyway, so polls then ask the
 * unit to close it after each answer (`Connection: close`): the unit gets its connection slot back
 * at once instead of holding it idle, the next poll never meets a connection the unit dropped in the
 * meantime, and the connection's objects are garbage while young instead of after four seconds in
 * the old generation: less live heap and fewer full collections (docs/performance.md, "Measurements behind the code").
 */
export const READ_KEEP_ALIVE_MS = 4000;

/** The headers of a GET (a POST adds its body's type and length). */
const ACCEPT_JSON: Readonly<Record<string, string>> = { accept: "application/json" };

const OUTLET_ACTIONS: ReadonlySet<string> = new Set<OutletAction>(["on", "off", "reboot"]);

/** TLS verification failures (Node's OpenSSL codes). */
const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/** Transport failures that happen before a request's first byte is sent. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_CLOSED",
]);

function isTlsFailure(code: string): boolean {
  return CERTIFICATE_CODES.has(code) || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_");
}

/** Transport failures after which the request is retried once on a fresh connection. */
const RETRYABLE_CODES: ReadonlySet<string> = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  UND_ERR_SOCKET: "connection closed by the PDU",
  ENOTFOUND: "host name not found",
  EAI_AGAIN: "host name lookup failed",
  EAI_NONAME: "host name not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  UND_ERR_DESTROYED: "client closed",
  UND_ERR_CLOSED: "client closed",
};

/** The code and message of the error that explains a transport failure (looks through causes). */
function innermost(e: unknown): { code: string; message: string } {
  let cur: unknown = e;
  for (let depth = 0; depth < 4 && cur instanceof Error; depth++) {
    const code: unknown = (cur as NodeJS.ErrnoException).code;
    if (typeof code === "string" && code !== "UND_ERR_SOCKET") return { code, message: cur.message };
    const next: unknown = cur instanceof AggregateError && cur.errors.length > 0 ? cur.errors[0] : cur.cause;
    if (next === undefined) return { code: typeof code === "string" ? code : "", message: cur.message };
    cur = next;
  }
  return { code: "", message: describeError(e) };
}

/** Whether polls `ms` apart close their connection after each answer. */
function closesReads(ms: number): boolean {
  return ms >= READ_KEEP_ALIVE_MS;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface Credentials {
  readonly username: string;
  readonly password: string;
}

export class GeistClient implements PduDriver {
  readonly instanceId: string;
  readonly vendor = GEIST_VENDOR;
  private readonly host: string;
  private readonly port: number;
  private readonly scheme: PduScheme;
  private readonly timeoutMs: number;
  private readonly timeoutText: string;
  private readonly maxBodyBytes: number;
  private readonly logger: Logger;
  private readonly clientOptions: Pool.Options;
  /** The connection of reads (to the configured port); null until the first and after {@link close}. */
  #reader: Client | null = null;
  /** Connection pools of writes, per target port; none after {@link close}. */
  readonly #writers = new Map<number, Pool>();
  #closed = false;
  readonly #credentials: Credentials | null;
  /** Login token per target port. */
  readonly #tokens = new Map<number, string>();
  /** Logins in flight per target port, shared by concurrent writes. */
  readonly #logins = new Map<number, Promise<string>>();
  /**
   * The last successful poll: its path, its answer's length, the SHA-256 of its answer (base64, 44
   * characters: not the answer; null when it was not hashed) and its snapshot (the one the store holds
   * anyway). Null before the first and after an answer that failed.
   */
  #lastPoll: {
    readonly path: string;
    readonly bytes: number;
    readonly digest: string | null;
    readonly snapshot: Snapshot;
  } | null = null;
  /** Answer of /api/conf/oneview/enabled once it succeeded. */
  private oneview: boolean | undefined;
  /** Reads close their connection after each answer (the poll interval outlasts the keep-alive). */
  #closeReads: boolean;
  /** The headers of a GET: {@link ACCEPT_JSON}, with the member name among several replicas. */
  readonly #getHeaders: Readonly<Record<string, string>>;

  constructor(instance: ClientInstance | InstanceConfig, options: GeistClientOptions = {}) {
    const c = instance.Connection;
    this.instanceId = instance.id;
    this.host = c.Host;
    this.port = c.Port;
    this.scheme = c.Scheme;
    this.timeoutMs = Math.max(1, Math.round(c.Timeout * 1000));
    this.timeoutText = `${c.Timeout}s`;
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.#getHeaders =
      options.member === undefined ? ACCEPT_JSON : { ...ACCEPT_JSON, [MEMBER_HEADER]: options.member };
    this.#closeReads = instance.PollInterval !== undefined && closesReads(instance.PollInterval * 1000);
    this.logger = (options.logger ?? silentLogger()).child({ instance: instance.id });
    const user = instance.Credentials.Username;
    const password = instance.Credentials.Password;
    this.#credentials =
      user !== null && user !== "" && password !== null ? { username: user, password } : null;
    let ca: string | undefined;
    if (c.CaFile !== null && c.CaFile !== "") {
      try {
        ca = readFileSync(c.CaFile, "utf8");
      } catch (e) {
        throw new Error(`cannot read CaFile ${c.CaFile} of PDU ${instance.id}: ${describeError(e)}`, {
          cause: e,
        });
      }
    }
    this.clientOptions = {
      connect: { rejectUnauthorized: c.ValidateCertificate, ...(ca === undefined ? {} : { ca }) },
      connectTimeout: this.timeoutMs,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      keepAliveTimeout: READ_KEEP_ALIVE_MS,
    };
  }

  /**
   * One poll: probe OneView once (until that succeeds), then GET /oneview or /api and parse. An
   * answer byte for byte the previous successful one (a Geist answer carries no time of its own) is
   * not parsed again: the previous snapshot comes back restamped, its parts the same objects
   * ({@link sameContent}), so the store and the publisher can skip their work too.
   */
  async poll(signal?: AbortSignal): Promise<Snapshot> {
    this.oneview ??= await this.probeOneView(signal);
    const path = this.oneview ? "/oneview" : "/api";
    const body = await this.exchangeBody("GET", this.port, path, undefined, signal);
    const timestamp = Date.now();
    const last = this.#lastPoll;
    let bytes = 0;
    for (const chunk of body) bytes += chunk.length;
    // An answer of another length than the last one is another answer: it is not hashed (most
    // answers of a PDU whose values change are not the same length twice running). The next answer
    // of its length is then parsed even if it is the same, and hashed for the one after.
    let digest: string | null = null;
    if (last === null || last.path !== path || last.bytes === bytes) {
      const hash = createHash("sha256");
      for (const chunk of body) hash.update(chunk);
      digest = hash.digest("base64");
      if (last !== null && last.path === path && last.digest === digest) {
        return restamp(last.snapshot, timestamp);
      }
    }
    this.#lastPoll = null;
    const envelope = this.expectOk(this.#decode(body, "GET", path, this.port), "GET", path, this.port);
    let snapshot: Snapshot;
    try {
      snapshot = this.oneview
        ? parseOneView(envelope.data, this.instanceId, timestamp)
        : parseApiTree(envelope.data, this.instanceId, timestamp);
    } catch (e) {
      // Name the PDU and the request, like every other error: the JSON path alone does not say which.
      if (e instanceof ParseError)
        throw new ParseError(e.path, e.problem, `GET ${path} from ${this.where(this.port)}`);
      throw e;
    }
    this.#lastPoll = { path, bytes, digest, snapshot };
    return snapshot;
  }

  setPollInterval(ms: number): void {
    this.#closeReads = closesReads(ms);
  }

  async controlOutlet(target: OutletTarget, action: OutletAction, signal?: AbortSignal): Promise<void> {
    if (!OUTLET_ACTIONS.has(action)) throw new RangeError(`unknown outlet action ${JSON.stringify(action)}`);
    await this.write(target, "control", { action, delay: false }, signal);
  }

  /** Resets the outlet's accumulated energy. */
  async resetOutletEnergy(target: OutletTarget, signal?: AbortSignal): Promise<void> {
    await this.write(target, "reset", { target: "energy" }, signal);
  }

  /** Changes outlet settings (`set` on the outlet); a repeated `set` does no harm, so it may be retried. */
  async setOutletSettings(
    target: OutletTarget,
    settings: OutletSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.write(target, "set", { ...settings }, signal);
  }

  /** Renames a device or an entity (through the device's port) or a OneView group (on the master). */
  async setLabel(target: LabelTarget, label: string, signal?: AbortSignal): Promise<void> {
    if (target.kind === "group") {
      const path = `/oneview/group/${pathSegment(target.groupKey, "group key")}`;
      await this.post(this.port, path, "set", { label }, signal, false);
      return;
    }
    const device = `/api/dev/${pathSegment(target.deviceId, "device id")}`;
    const path =
      target.kind === "device" ? device : `${device}/entity/${pathSegment(target.entityKey, "entity key")}`;
    await this.post(this.portFor(target.route), path, "set", { label }, signal, false);
  }

  /** Closes every connection; requests still in flight fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const dispatchers: Dispatcher[] = [...this.#writers.values()];
    if (this.#reader !== null) dispatchers.push(this.#reader);
    this.#reader = null;
    this.#writers.clear();
    await Promise.all(dispatchers.map((d) => d.destroy()));
  }

  // ---- reads ----

  private async probeOneView(signal: AbortSignal | undefined): Promise<boolean> {
    const path = "/api/conf/oneview/enabled";
    const envelope = await this.exchange("GET", this.port, path, undefined, signal).catch((e: unknown) => {
      throw this.notGeist(e);
    });
    // A unit without OneView support may not know the path at all: then it is not a master.
    if (envelope.retCode === RetCode.pathNotFound) return false;
    const data = this.expectOk(envelope, "GET", path, this.port).data;
    if (data === true || data === "true") return true;
    if (data === false || data === "false") return false;
    throw new PduError("malformed", `GET ${path} on ${this.where(this.port)} did not answer a boolean`);
  }

  /**
   * The first request's failure, with a hint when what answered is a web server but not a Geist
   * unit's API (a status saying the path is not there, or an answer that is not the API's JSON
   * envelope): a Geist unit answers every `/api` path with its envelope, even one it does not know.
   * A 5xx or a refused login is the unit's own and stays as it is.
   */
  private notGeist(e: unknown): unknown {
    if (!(e instanceof PduError)) return e;
    const notThere = e.kind === "http-status" && [400, 404, 405, 501].includes(e.status ?? 0);
    if (!notThere && e.kind !== "malformed") return e;
    return new PduError(
      e.kind,
      `${e.message}: this does not look like a Geist PDU's API; check Pdus.${this.instanceId}.Connection ` +
        "(Host, Port, Scheme: the unit's web interface), and Driver (snmp for an SNMP PDU)",
      { ...(e.status === undefined ? {} : { status: e.status }), cause: e },
    );
  }

  // ---- writes ----

  /**
   * The port that reaches a device: the member's proxy port on the master's host, else the
   * configured one. A member without a usable proxy port for this scheme is refused rather than
   * written through the master's port.
   */
  private portFor(route: DeviceRoute | null): number {
    if (!isProxyRoute(route)) return this.port;
    const p = this.scheme === "https" ? route.httpsPort : route.webPort;
    if (Number.isInteger(p) && p > 0 && p <= 65535) return p;
    throw new PduError(
      "malformed",
      `OneView member ${route.hostKey} has no usable ${this.scheme} proxy port (${this.scheme === "https" ? "httpsPort" : "webPort"} ${String(p)})`,
    );
  }

  private async write(
    target: OutletTarget,
    cmd: WriteCommand,
    data: Readonly<Record<string, unknown>>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (!Number.isSafeInteger(target.index) || target.index < 0) {
      throw new RangeError(`outlet index must be a non-negative integer, got ${target.index}`);
    }
    const port = this.portFor(target.route);
    const path = `/api/dev/${pathSegment(target.deviceId, "device id")}/outlet/${target.index}`;
    // A reboot or a statistics reset must never run twice: sent once, over its own connection.
    const once = cmd === "reset" || (cmd === "control" && data.action === "reboot");
    await this.post(port, path, cmd, data, signal, once);
  }

  /** One token-checked write (`{"cmd","token","data"}` with Content-Length) to `path` on `port`. */
  private async post(
    port: number,
    path: string,
    cmd: WriteCommand,
    data: Readonly<Record<string, unknown>>,
    signal: AbortSignal | undefined,
    once: boolean,
  ): Promise<void> {
    const credentials = this.#credentials;
    if (credentials === null) {
      throw new PduError(
        "ret-code",
        `PDU ${this.instanceId} has no credentials: set Credentials.Username and Credentials.Password to control it`,
      );
    }
    let token = await this.token(port, credentials, signal);
    let envelope = await this.exchange("POST", port, path, commandBody(cmd, token, data), signal, once);
    if (envelope.retCode === RetCode.notAuthorised) {
      // The token expired (or the unit restarted): log in again and retry once. The PDU answered
      // that it did not act, so this repeats nothing.
      if (this.#tokens.get(port) === token) this.#tokens.delete(port);
      this.logger.debug({ port }, "PDU token rejected, logging in again");
      token = await this.token(port, credentials, signal);
      envelope = await this.exchange("POST", port, path, commandBody(cmd, token, data), signal, once);
    }
    this.expectOk(envelope, "POST", path, port);
  }

  /**
   * One login on the configured port (the one a write to the polled unit uses; a OneView member's
   * proxy port takes the same user), which also caches its token. A wrong password is retCode 1004,
   * an unknown or disabled user or one without the Control permission 1001.
   */
  async verifyCredentials(signal?: AbortSignal): Promise<CredentialsVerdict> {
    const credentials = this.#credentials;
    if (credentials === null) {
      return { ok: false, refused: "user", reason: `PDU ${this.instanceId} has no credentials` };
    }
    try {
      await this.token(this.port, credentials, signal);
      return { ok: true };
    } catch (error) {
      const reason = describeError(error);
      if (isPduError(error) && error.kind === "ret-code") {
        if (error.retCode === RetCode.wrongPassword) return { ok: false, refused: "password", reason };
        if (error.retCode === RetCode.notAuthorised) return { ok: false, refused: "user", reason };
      }
      return { ok: false, refused: null, reason };
    }
  }

  private async token(
    port: number,
    credentials: Credentials,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const cached = this.#tokens.get(port);
    if (cached !== undefined) return cached;
    let pending = this.#logins.get(port);
    if (pending === undefined) {
      pending = this.login(port, credentials, signal).finally(() => this.#logins.delete(port));
      this.#logins.set(port, pending);
    }
    return pending;
  }

  private async login(
    port: number,
    credentials: Credentials,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const { username } = credentials;
    const path = `/api/auth/${encodeURIComponent(username)}`;
    const envelope = await this.exchange("POST", port, path, loginBody(credentials.password), signal);
    const { retCode, retMsg } = envelope;
    if (retCode !== RetCode.ok) {
      const why =
        retCode === RetCode.wrongPassword
          ? "wrong password"
          : retCode === RetCode.notAuthorised
            ? "user unknown, disabled or without permission"
            : describeRetCode(retCode, retMsg);
      throw new PduError(
        "ret-code",
        `login to PDU ${this.where(port)} as "${username}" failed: ${why} (retCode ${retCode})`,
        { retCode, retMsg },
      );
    }
    const data = envelope.data;
    const token = isObject(data) ? data.token : undefined;
    if (typeof token !== "string" || token === "") {
      throw new PduError("malformed", `login answer from ${this.where(port)} has no token`);
    }
    this.#tokens.set(port, token);
    this.logger.debug({ port, username }, "logged in to PDU");
    return token;
  }

  // ---- transport ----

  /** The dispatcher of a request: the reader for GETs to the configured port, else the port's writer pool. */
  #dispatcher(method: "GET" | "POST", port: number): Dispatcher {
    if (this.#closed) throw new PduError("unreachable", `cannot reach ${this.where(port)}: client closed`);
    if (method === "GET" && port === this.port) {
      return (this.#reader ??= new Client(this.#origin(port), this.clientOptions));
    }
    let pool = this.#writers.get(port);
    if (pool === undefined) {
      pool = new Pool(this.#origin(port), this.clientOptions);
      this.#writers.set(port, pool);
    }
    return pool;
  }

  private where(port: number): string {
    return hostPort(this.host, port);
  }

  /** `scheme://host:port` of a target port. */
  #origin(port: number): string {
    return `${this.scheme}://${this.where(port)}`;
  }

  private expectOk(envelope: Envelope, method: string, path: string, port: number): Envelope {
    const { retCode, retMsg } = envelope;
    if (retCode === RetCode.ok) return envelope;
    throw new PduError(
      "ret-code",
      `PDU refused: ${describeRetCode(retCode, retMsg)} (retCode ${retCode}) for ${method} ${path} on ${this.where(port)}`,
      { retCode, retMsg },
    );
  }

  /** One request and its envelope (any retCode); see {@link exchangeBody}. */
  private async exchange(
    method: "GET" | "POST",
    port: number,
    path: string,
    body: Buffer | undefined,
    signal: AbortSignal | undefined,
    once = false,
  ): Promise<Envelope> {
    if (once) return this.#exchangeOnce(port, path, body, signal);
    return this.#decode(await this.exchangeBody(method, port, path, body, signal), method, path, port);
  }

  #decode(answer: Answer, method: string, path: string, port: number): Envelope {
    return decodeEnvelope(joined(answer), `${this.where(port)} (${method} ${path})`);
  }

  /**
   * One request and its answer's body (a 2xx), in chunks. Retries once on a fresh connection when the
   * connection was reset or closed before an answer arrived.
   */
  private async exchangeBody(
    method: "GET" | "POST",
    port: number,
    path: string,
    body: Buffer | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    try {
      return await this.attempt(this.#dispatcher(method, port), method, port, path, body, signal);
    } catch (e) {
      if (!(e instanceof RetryableError)) throw e;
      this.logger.debug(
        { method, path, port, error: e.message },
        "PDU connection dropped, retrying on a new one",
      );
    }
    const fresh = new Client(this.#origin(port), this.clientOptions);
    try {
      return await this.attempt(fresh, method, port, path, body, signal);
    } catch (e) {
      throw e instanceof RetryableError ? e.error : e;
    } finally {
      await fresh.destroy();
    }
  }

  /**
   * A POST that must not be repeated: over a fresh connection (never a pooled keep-alive one the
   * PDU may have dropped meanwhile), never retried. A failure before the request can have been
   * sent (refused, unresolvable, unreachable, TLS) stays what it is; a broken connection or an
   * unreadable answer after that becomes `outcome-unknown`; no answer in time stays `timeout`.
   */
  async #exchangeOnce(
    port: number,
    path: string,
    body: Buffer | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Envelope> {
    if (this.#closed) throw new PduError("unreachable", `cannot reach ${this.where(port)}: client closed`);
    const fresh = new Client(this.#origin(port), this.clientOptions);
    try {
      return this.#decode(await this.attempt(fresh, "POST", port, path, body, signal), "POST", path, port);
    } catch (e) {
      const error = e instanceof RetryableError ? e.error : e;
      if (!(error instanceof PduError)) throw error; // the caller's abort, as is
      if (error.kind !== "unreachable" && error.kind !== "malformed") throw error;
      if (error.kind === "unreachable" && NOT_SENT_CODES.has(innermost(error.cause).code)) throw error;
      if (error.kind === "unreachable" && isTlsFailure(innermost(error.cause).code)) throw error;
      throw new PduError(
        "outcome-unknown",
        `POST ${path} on ${this.where(port)}: ${error.message}; the request may have reached the PDU, so it was not sent again`,
        { cause: error },
      );
    } finally {
      await fresh.destroy();
    }
  }

  private async attempt(
    dispatcher: Dispatcher,
    method: "GET" | "POST",
    port: number,
    path: string,
    body: Buffer | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const where = this.where(port);
    const started = performance.now();
    const headers =
      body === undefined
        ? this.#getHeaders
        : { ...this.#getHeaders, "content-type": "application/json", "content-length": String(body.length) };
    const exchange = new Exchange({
      method,
      path,
      headers,
      body,
      maxBodyBytes: this.maxBodyBytes,
      timeoutMs: this.timeoutMs,
      signal,
      close: this.#closeReads && dispatcher === this.#reader,
    });
    try {
      const { status, chunks } = await exchange.run(dispatcher);
      if (status < 200 || status > 299) {
        throw new PduError("http-status", `HTTP ${status} from ${where} (${method} ${path})`, { status });
      }
      this.#logRequest(method, port, path, started, status, null);
      return chunks;
    } catch (e) {
      const { status } = exchange;
      this.#logRequest(method, port, path, started, status, e);
      if (signal?.aborted === true) throw signal.reason;
      if (e instanceof PduError) throw e;
      if (e instanceof AnswerTooLarge) {
        throw new PduError(
          "malformed",
          `answer from ${where} (${method} ${path}) is larger than the limit of ${e.limit} bytes`,
        );
      }
      throw this.transportError(e, where, exchange.timedOut, status === undefined);
    }
  }

  /** The debug line of one request (`error` null: it succeeded); built only when debug is on. */
  #logRequest(
    method: string,
    port: number,
    path: string,
    started: number,
    status: number | undefined,
    error: unknown,
  ): void {
    if (!this.logger.isLevelEnabled("debug")) return;
    const fields = {
      method,
      url: `${this.#origin(port)}${path}`,
      status,
      ms: Math.round(performance.now() - started),
    };
    if (error === null) this.logger.debug(fields, "PDU request");
    else this.logger.debug({ ...fields, error: describeError(error) }, "PDU request failed");
  }

  private transportError(e: unknown, where: string, deadlineHit: boolean, beforeAnswer: boolean): Error {
    const { code, message } = innermost(e);
    if (deadlineHit || TIMEOUT_CODES.has(code)) {
      return new PduError("timeout", `no answer from ${where} within ${this.timeoutText}`, { cause: e });
    }
    let reason = REASONS[code];
    if (CERTIFICATE_CODES.has(code)) reason = `certificate verification failed: ${message}`;
    else if (code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_")) reason = `TLS failure: ${message}`;
    else if (code.startsWith("HPE_")) {
      return new PduError("malformed", `invalid HTTP answer from ${where}: ${message}`, { cause: e });
    }
    const error = new PduError("unreachable", `cannot reach ${where}: ${reason ?? message}`, { cause: e });
    return beforeAnswer && RETRYABLE_CODES.has(code) ? new RetryableError(error) : error;
  }
}

/**
 * An answer's body as read, in the chunks it came in: a poll only hashes them when the answer is
 * the previous one, without copying them into one buffer.
 */
type Answer = readonly Buffer[];

function joined(answer: Answer): Buffer {
  return answer.length === 1 && answer[0] !== undefined ? answer[0] : Buffer.concat(answer);
}

/** Internal: a transport failure worth one retry on a fresh connection; carries the final error. */
class RetryableError extends Error {
  constructor(readonly error: PduError) {
    super(error.message);
  }
}
