/**
 * The etcd v3 engine of the lease seam, through etcd's JSON gateway (`POST /v3/kv/range`,
 * `/v3/kv/txn`, `/v3/watch`, `/v3/auth/authenticate`; keys and values base64, 64-bit numbers as
 * strings), over undici. etcd 3.4 (Debian's) and later serve it on the client port.
 *
 * Why the gateway and not a gRPC client: the seam needs six calls; the gateway is part of every
 * etcd server since 3.3 and undici is already the service's HTTP client, where the maintained
 * Node clients bring gRPC (`@grpc/grpc-js` and protobuf loading) for the same six calls.
 *
 * - A lease is the key `<Prefix><name>`; its value is the record as JSON. Its version is the key's
 *   `mod_revision`; create is a transaction on `create_revision == 0`, update and delete are
 *   transactions on `mod_revision == version`.
 * - Several endpoints: a request goes to the endpoint that answered last; when it cannot be reached,
 *   times out, or answers that the cluster has no leader, the same request goes to the next one
 *   (a conditional write sent twice cannot apply twice: the second finds another version).
 * - TLS: `https://` endpoints, with a private CA when one is given.
 * - Auth: with a user name, a token from `/v3/auth/authenticate` per endpoint, fetched again when
 *   the server says it is no longer valid.
 */
import { Agent, request, type Dispatcher } from "undici";
import { readBoundedText } from "./bounded-body.js";
import {
  assertWritable,
  checkRecord,
  describeError,
  LEASE_NAME_PATTERN,
  LeaseConflictError,
  MAX_PAYLOAD_LENGTH,
  LeaseStoreError,
  type LeaseEvent,
  type LeaseList,
  type LeaseRecord,
  type LeaseStore,
  type LeaseWatch,
  type StoredLease,
} from "./store.js";

export interface EtcdOptions {
  /** Client URLs (`http://host:port`, `https://host:port`). */
  readonly endpoints: readonly string[];
  /** Key prefix of every lease (`/pdu-bridge/`). */
  readonly prefix: string;
  /** PEM CA for https endpoints (null: the system's). */
  readonly ca?: string | null;
  /** PEM client certificate and its key, for etcd with `--client-cert-auth` (both or neither). */
  readonly cert?: string | null;
  readonly key?: string | null;
  readonly username?: string | null;
  readonly password?: string | null;
  /** Time one endpoint gets for one request before the next endpoint is asked (default 1000 ms). */
  readonly attemptTimeoutMs?: number;
  /** Longest payload a record may carry (default the leases' MAX_PAYLOAD_LENGTH; the journal's is larger). */
  readonly maxPayload?: number;
}

/** Largest answer read from etcd (a list of every lease of an installation is a few hundred kB at most). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** An etcd failure worth trying on the next endpoint. */
class Unavailable extends Error {}

/** etcd cancelled a watch; `compactRevision` is set when the history it asked for is compacted. */
export class WatchEnded extends Error {
  readonly compactRevision: string | null;
  constructor(message: string, compactRevision: string | null) {
    super(message);
    this.compactRevision = compactRevision;
  }
}

interface EtcdKv {
  readonly key: string;
  readonly value?: string;
  readonly mod_revision?: string;
  readonly create_revision?: string;
}

interface TxnAnswer {
  readonly header?: { readonly revision?: string };
  readonly succeeded?: boolean;
}

interface RangeAnswer {
  readonly header?: { readonly revision?: string };
  readonly kvs?: readonly EtcdKv[];
}

const b64 = (text: string | Buffer) => Buffer.from(text).toString("base64");

/** The smallest key after every key starting with `prefix` (etcd's range end for a prefix). */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every key
}

/**
 * The gateway's calls with failover and authentication; the lease store below and the tests'
 * Kubernetes stand-in (testkit) use it.
 */
export class EtcdGateway {
  readonly endpoints: readonly string[];
  readonly #agent: Agent;
  readonly #username: string | null;
  readonly #password: string | null;
  readonly #attemptTimeoutMs: number;
  /** Index of the endpoint that answered last. */
  #current = 0;
  readonly #tokens = new Map<string, Promise<string | null>>();

  constructor(options: Omit<EtcdOptions, "prefix">) {
    if (options.endpoints.length === 0) throw new Error("etcd needs at least one endpoint");
    this.endpoints = options.endpoints.map((e) => e.replace(/\/+$/, ""));
    this.#agent = new Agent({
      connect: {
        ...(options.ca === null || options.ca === undefined ? {} : { ca: options.ca }),
        ...(options.cert === null ||
        options.cert === undefined ||
        options.key === null ||
        options.key === undefined
          ? {}
          : { cert: options.cert, key: options.key }),
      },
      keepAliveTimeout: 30_000,
    });
    this.#username = options.username ?? null;
    this.#password = options.password ?? null;
    this.#attemptTimeoutMs = options.attemptTimeoutMs ?? 1000;
  }

  /** The endpoint requests go to first. */
  get current(): string {
    return this.endpoints[this.#current]!;
  }

  range(key: Buffer, rangeEnd: Buffer | null, signal: AbortSignal): Promise<RangeAnswer> {
    const body: Record<string, string> = { key: b64(key) };
    if (rangeEnd !== null) body.range_end = b64(rangeEnd);
    return this.call("/v3/kv/range", body, signal) as Promise<RangeAnswer>;
  }

  txn(body: unknown, signal: AbortSignal): Promise<TxnAnswer> {
    return this.call("/v3/kv/txn", body, signal) as Promise<TxnAnswer>;
  }

  /** One gateway call, on the current endpoint and then the others. */
  async call(path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const failures: string[] = [];
    const count = this.endpoints.length;
    const first = this.#current;
    for (let i = 0; i < count; i++) {
      const index = (first + i) % count;
      const endpoint = this.endpoints[index]!;
      try {
        const answer = await this.#callOne(endpoint, path, body, signal);
        this.#current = index;
        return answer;
      } catch (error) {
        // The next call starts at the next endpoint: one that hangs is not asked first again.
        if (error instanceof Unavailable || signal.aborted) this.#current = (index + 1) % count;
        if (signal.aborted) {
          throw new LeaseStoreError(`etcd ${endpoint}${path}: no answer in time`, { cause: error });
        }
        if (!(error instanceof Unavailable)) throw error;
        failures.push(`${endpoint}: ${error.message}`);
      }
    }
    throw new LeaseStoreError(`no etcd endpoint answered ${path} (${failures.join("; ")})`);
  }

  async #callOne(endpoint: string, path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.#token(endpoint, signal);
      const answer = await this.#post(endpoint, path, body, token, signal);
      if (answer.ok) return answer.json;
      const { code, message } = answer;
      // 16 Unauthenticated: the token expired (or the member restarted); ask for a new one once.
      if (code === 16 && token !== null && attempt === 0) {
        this.#tokens.delete(endpoint);
        continue;
      }
      if (
        code === 14 ||
        /no leader|leader changed|request timed out|not capable|too many requests/.test(message)
      ) {
        throw new Unavailable(message);
      }
      throw new LeaseStoreError(`etcd ${endpoint}${path}: ${message}`);
    }
  }

  async #post(
    endpoint: string,
    path: string,
    body: unknown,
    token: string | null,
    signal: AbortSignal,
    attemptMs: number = this.#attemptTimeoutMs,
  ): Promise<{ ok: true; json: unknown } | { ok: false; code: number; message: string }> {
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(attemptMs)]);
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${endpoint}${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: token }) },
        dispatcher: this.#agent,
        signal: attempt,
      });
    } catch (error) {
      throw new Unavailable(attempt.aborted ? "no answer in time" : describeError(error));
    }
    let text: string;
    try {
      text = await readBoundedText(response.body, MAX_ANSWER_BYTES);
    } catch (error) {
      throw new Unavailable(attempt.aborted ? "no answer in time" : describeError(error));
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      if (response.statusCode >= 500) throw new Unavailable(`HTTP ${response.statusCode}`);
      throw new LeaseStoreError(`etcd ${endpoint}${path}: HTTP ${response.statusCode}, not JSON`);
    }
    if (response.statusCode === 200) return { ok: true, json };
    const error = isObject(json) ? json : {};
    const code = typeof error.code === "number" ? error.code : 0;
    const message = typeof error.message === "string" ? error.message : `HTTP ${response.statusCode}`;
    if (response.statusCode >= 500 && code === 0) throw new Unavailable(message);
    return { ok: false, code, message };
  }

  /**
   * The endpoint's auth token (null without credentials, or when the server has auth off). etcd
   * checks a password with bcrypt, which a busy member takes its time over (seconds on a loaded
   * machine): the authentication runs under its own deadline ({@link AUTH_TIMEOUT_MS}), shared by
   * every request that needs it, and a request whose own deadline passes first stops waiting for it
   * without cancelling it, so the next request finds the token ready instead of starting over.
   */
  #token(endpoint: string, signal: AbortSignal): Promise<string | null> {
    if (this.#username === null) return Promise.resolve(null);
    let token = this.#tokens.get(endpoint);
    if (token === undefined) {
      token = this.#authenticate(endpoint);
      this.#tokens.set(endpoint, token);
      token.catch(() => this.#tokens.delete(endpoint));
    }
    return untilAborted(token, signal);
  }

  async #authenticate(endpoint: string): Promise<string | null> {
    const answer = await this.#post(
      endpoint,
      "/v3/auth/authenticate",
      { name: this.#username, password: this.#password ?? "" },
      null,
      AbortSignal.timeout(AUTH_TIMEOUT_MS),
      AUTH_TIMEOUT_MS,
    );
    if (answer.ok) {
      const token = isObject(answer.json) ? answer.json.token : undefined;
      if (typeof token !== "string" || token === "") {
        throw new LeaseStoreError(`etcd ${endpoint}: authenticate answered without a token`);
      }
      return token;
    }
    if (/authentication is not enabled/.test(answer.message)) return null;
    if (answer.code === 14) throw new Unavailable(answer.message);
    throw new LeaseStoreError(
      `etcd ${endpoint} refused the credentials of SERVICE_ETCD_USERNAME/SERVICE_ETCD_PASSWORD (${answer.message})`,
    );
  }

  /**
   * A watch of `[key, rangeEnd)` from `startRevision` on the current endpoint: `onMessage` gets each
   * `result` object; `onEnd` once when the stream ends or fails (not after `close()`).
   */
  watch(
    key: Buffer,
    rangeEnd: Buffer,
    startRevision: string,
    onMessage: (result: Record<string, unknown>) => void,
    onEnd: (error: Error) => void,
    options: { prevKv?: boolean } = {},
  ): { close(): void } {
    const controller = new AbortController();
    const endpoint = this.current;
    const body = {
      create_request: {
        key: b64(key),
        range_end: b64(rangeEnd),
        start_revision: startRevision,
        ...(options.prevKv === true ? { prev_kv: true } : {}),
      },
    };
    const run = async () => {
      const token = await this.#token(endpoint, controller.signal);
      const response = await request(`${endpoint}/v3/watch`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: token }) },
        dispatcher: this.#agent,
        signal: controller.signal,
        bodyTimeout: 0,
      });
      if (response.statusCode !== 200) {
        await response.body.dump();
        throw new Error(`etcd ${endpoint}/v3/watch: HTTP ${response.statusCode}`);
      }
      let buffer = "";
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        buffer += chunk.toString("utf8");
        if (buffer.length > MAX_ANSWER_BYTES) throw new Error("etcd sent a watch message that is too large");
        let end: number;
        while ((end = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, end).trim();
          buffer = buffer.slice(end + 1);
          if (line === "") continue;
          const message: unknown = JSON.parse(line);
          const result = isObject(message) ? message.result : undefined;
          if (!isObject(result)) {
            const why = isObject(message) && isObject(message.error) ? message.error.message : undefined;
            throw new Error(`etcd watch failed: ${typeof why === "string" ? why : "unexpected message"}`);
          }
          if (result.canceled === true) {
            const reason = typeof result.cancel_reason === "string" ? result.cancel_reason : "canceled";
            if (/auth/.test(reason)) this.#tokens.delete(endpoint);
            const compacted = typeof result.compact_revision === "string" ? result.compact_revision : null;
            throw new WatchEnded(`etcd ended the watch: ${reason}`, compacted);
          }
          onMessage(result);
        }
      }
      throw new Error(`etcd ${endpoint} ended the watch stream`);
    };
    run().catch((error: unknown) => {
      if (controller.signal.aborted) return;
      onEnd(error instanceof Error ? error : new Error(String(error)));
    });
    return { close: () => controller.abort() };
  }

  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

/** How long an authentication may take (it is shared, and not cut by one request's deadline). */
export const AUTH_TIMEOUT_MS = 10_000;

/** `promise`, or a rejection ("no answer in time") as soon as `signal` aborts; the promise runs on. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Unavailable("no answer in time"));
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(new Unavailable("no answer in time"));
    signal.addEventListener("abort", abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Where the records kept beside the leases begin under the prefix (./engines.ts, `createRecordStore`). */
export const RECORDS_MARK = "~";

/** The lease store on etcd. */
export class EtcdLeaseStore implements LeaseStore {
  readonly description: string;
  readonly gateway: EtcdGateway;
  readonly #prefix: Buffer;
  readonly #rangeEnd: Buffer;
  readonly #watches = new Set<{ close(): void }>();
  readonly #maxPayload: number;

  constructor(options: EtcdOptions) {
    this.gateway = new EtcdGateway(options);
    this.#maxPayload = options.maxPayload ?? MAX_PAYLOAD_LENGTH;
    this.#prefix = Buffer.from(options.prefix, "utf8");
    // Lease names begin with a letter or digit: keys under the prefix from `~` on are not leases
    // (the records beside them, ./records.ts) and stay out of every list and watch.
    this.#rangeEnd = Buffer.concat([this.#prefix, Buffer.from(RECORDS_MARK, "utf8")]);
    this.description = `etcd ${this.gateway.endpoints.join(",")} ${options.prefix}`;
  }

  #key(name: string): Buffer {
    return Buffer.concat([this.#prefix, Buffer.from(name, "utf8")]);
  }

  /** A key-value of ours as a stored lease; null for keys under the prefix that are not leases. */
  #lease(kv: EtcdKv): StoredLease | null {
    const key = Buffer.from(kv.key, "base64");
    if (!key.subarray(0, this.#prefix.length).equals(this.#prefix)) return null;
    const name = key.subarray(this.#prefix.length).toString("utf8");
    if (!LEASE_NAME_PATTERN.test(name) || typeof kv.mod_revision !== "string") return null;
    return { name, record: decodeRecord(kv.value, this.#maxPayload), version: kv.mod_revision };
  }

  async get(name: string, signal: AbortSignal): Promise<StoredLease | null> {
    const answer = await this.gateway.range(this.#key(name), null, signal);
    const kv = answer.kvs?.[0];
    return kv === undefined ? null : this.#lease(kv);
  }

  async create(name: string, record: LeaseRecord, signal: AbortSignal): Promise<StoredLease> {
    assertWritable(name, record, this.#maxPayload);
    const key = b64(this.#key(name));
    const answer = await this.gateway.txn(
      {
        compare: [{ key, result: "EQUAL", target: "CREATE", create_revision: "0" }],
        success: [{ request_put: { key, value: encodeRecord(record) } }],
      },
      signal,
    );
    if (answer.succeeded !== true) throw new LeaseConflictError(name, "it exists already");
    return { name, record, version: revisionOf(answer) };
  }

  async update(
    name: string,
    record: LeaseRecord,
    version: string,
    signal: AbortSignal,
  ): Promise<StoredLease> {
    assertWritable(name, record, this.#maxPayload);
    const key = b64(this.#key(name));
    const answer = await this.gateway.txn(
      {
        compare: [{ key, result: "EQUAL", target: "MOD", mod_revision: version }],
        success: [{ request_put: { key, value: encodeRecord(record) } }],
      },
      signal,
    );
    if (answer.succeeded !== true) throw new LeaseConflictError(name, `its version is no longer ${version}`);
    return { name, record, version: revisionOf(answer) };
  }

  async delete(name: string, version: string, signal: AbortSignal): Promise<void> {
    const key = b64(this.#key(name));
    const answer = await this.gateway.txn(
      {
        compare: [{ key, result: "EQUAL", target: "MOD", mod_revision: version }],
        success: [{ request_delete_range: { key } }],
      },
      signal,
    );
    if (answer.succeeded === true) return;
    if ((await this.get(name, signal)) === null) return;
    throw new LeaseConflictError(name, `its version is no longer ${version}`);
  }

  async list(signal: AbortSignal): Promise<LeaseList> {
    const answer = await this.gateway.range(this.#prefix, this.#rangeEnd, signal);
    const leases = (answer.kvs ?? []).flatMap((kv) => this.#lease(kv) ?? []);
    return { leases, revision: answer.header?.revision ?? "0" };
  }

  watch(revision: string, onEvent: (event: LeaseEvent) => void, onEnd: (error: Error) => void): LeaseWatch {
    const start = (BigInt(/^\d+$/.test(revision) ? revision : "0") + 1n).toString();
    const handle = this.gateway.watch(
      this.#prefix,
      this.#rangeEnd,
      start,
      (result) => {
        const events = Array.isArray(result.events) ? (result.events as unknown[]) : [];
        for (const event of events) {
          if (!isObject(event) || !isObject(event.kv) || typeof event.kv.key !== "string") continue;
          const kv = event.kv as unknown as EtcdKv;
          if (event.type === "DELETE") {
            const lease = this.#lease({ ...kv, mod_revision: kv.mod_revision ?? "0" });
            if (lease !== null) onEvent({ type: "delete", name: lease.name });
          } else {
            const lease = this.#lease(kv);
            if (lease !== null) onEvent({ type: "put", lease });
          }
        }
      },
      (error) => {
        this.#watches.delete(handle);
        onEnd(error);
      },
    );
    this.#watches.add(handle);
    return {
      close: () => {
        this.#watches.delete(handle);
        handle.close();
      },
    };
  }

  async close(): Promise<void> {
    for (const watch of this.#watches) watch.close();
    this.#watches.clear();
    await this.gateway.close();
  }
}

function revisionOf(answer: TxnAnswer): string {
  const revision = answer.header?.revision;
  if (typeof revision !== "string")
    throw new LeaseStoreError("etcd answered a transaction without a revision");
  return revision;
}

function encodeRecord(record: LeaseRecord): string {
  return b64(
    JSON.stringify({
      holder: record.holder,
      durationSeconds: record.durationSeconds,
      acquireTime: record.acquireTime,
      renewTime: record.renewTime,
      transitions: record.transitions,
      payload: record.payload,
    }),
  );
}

function decodeRecord(value: string | undefined, maxPayload: number): LeaseRecord | null {
  if (value === undefined || value.length > 4 * Math.max(65_536, maxPayload)) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    if (!isObject(parsed)) return null;
    return checkRecord(
      {
        holder: parsed.holder,
        durationSeconds: parsed.durationSeconds,
        acquireTime: parsed.acquireTime,
        renewTime: parsed.renewTime,
        transitions: parsed.transitions,
        payload: parsed.payload,
      },
      maxPayload,
    );
  } catch {
    return null;
  }
}
