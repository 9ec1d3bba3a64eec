/**
 * A stand-in for the Kubernetes API server's Lease endpoints (`coordination.k8s.io/v1`), stored in
 * a real etcd with the API server's semantics: a Lease is the key `<root>/leases/<ns>/<name>`, its
 * `resourceVersion` is the key's etcd `mod_revision`, a list's is the etcd revision, and watches are
 * etcd watches. It serves HTTPS on 127.0.0.1 with the process's self-signed certificate and writes a
 * service-account directory (token, ca.crt, namespace) that trusts it, as a pod has.
 *
 * What it answers, with the API server's status codes and Status objects:
 * - GET one (200, 404), list with a label selector (=, ==, !=, key, !key), watch (ADDED / MODIFIED /
 *   DELETED from a resourceVersion, or the current state first without one; ERROR 410 Expired when
 *   etcd has compacted that history; `timeoutSeconds`),
 * - POST (201; 409 AlreadyExists; 400 when the namespace or a MicroTime is malformed; 422 Invalid),
 * - PUT (200; 409 Conflict when `metadata.resourceVersion` is not the stored one; 404 when absent;
 *   unconditional without a resourceVersion, as for Leases),
 * - DELETE with `preconditions.resourceVersion` (200 Status Success; 409 Conflict; 404),
 * - 401 without the bearer token of the service-account directory.
 * PATCH and other verbs answer 405. test/cluster/kube-lease-api-replay.test.ts holds these answers
 * against recorded answers of a real API server.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EtcdGateway, prefixRangeEnd, WatchEnded } from "../src/cluster/etcd.js";
import { selfSignedCertificate } from "../src/simulator/cert.js";

const GROUP = "coordination.k8s.io";
const API_VERSION = `${GROUP}/v1`;
const PATH = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** RFC 3339 with exactly six fractional digits: what the API server's MicroTime decoding accepts. */
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
}

type Json = Record<string, unknown>;

interface StoredKv {
  readonly key: string;
  readonly value?: string;
  readonly mod_revision?: string;
  readonly create_revision?: string;
}

export interface KubeLeaseApiOptions {
  /** etcd client URLs the Leases are stored in. */
  readonly etcd: readonly string[];
  /** The namespace written to the service-account directory (default `pdu`). */
  readonly namespace?: string;
  /** Key root in etcd (default a fresh `/registry-<uuid>`, so that stand-ins sharing an etcd do not meet). */
  readonly root?: string;
}

export class KubeLeaseApi {
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  readonly saDir: string;
  readonly namespace: string;
  readonly #server: Server;
  readonly #etcd: EtcdGateway;
  readonly #root: string;
  #token = `lease-token-${randomUUID()}`;
  readonly #watches = new Set<{ close(): void }>();
  readonly #open = new Set<ServerResponse>();

  private constructor(server: Server, saDir: string, etcd: EtcdGateway, root: string, namespace: string) {
    this.#server = server;
    this.saDir = saDir;
    this.#etcd = etcd;
    this.#root = root;
    this.namespace = namespace;
  }

  static async start(options: KubeLeaseApiOptions): Promise<KubeLeaseApi> {
    const { key, cert } = await selfSignedCertificate();
    const namespace = options.namespace ?? "pdu";
    const saDir = await mkdtemp(join(tmpdir(), "pdu-bridge-lease-sa-"));
    const server = createServer({ key, cert });
    const etcd = new EtcdGateway({ endpoints: options.etcd, attemptTimeoutMs: 3000 });
    const api = new KubeLeaseApi(server, saDir, etcd, options.root ?? `/registry-${randomUUID()}`, namespace);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      api.#open.add(res);
      res.on("close", () => api.#open.delete(res));
      api.#handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) api.#status(res, 500, "InternalError", String(error));
        else res.end();
      });
    });
    await Promise.all([
      writeFile(join(saDir, "token"), api.#token),
      writeFile(join(saDir, "ca.crt"), cert),
      writeFile(join(saDir, "namespace"), namespace),
      new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)),
    ]);
    return api;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** What a pod sees: the service host and port, and the service-account directory. */
  get env(): Record<string, string> {
    return {
      KUBERNETES_SERVICE_HOST: "127.0.0.1",
      KUBERNETES_SERVICE_PORT: String(this.port),
      SERVICE_K8S_SA_DIR: this.saDir,
    };
  }

  get token(): string {
    return this.#token;
  }

  /** Ends every open watch stream (as the API server does when a watch times out or it restarts). */
  endWatches(): void {
    for (const watch of this.#watches) watch.close();
    this.#watches.clear();
  }

  async close(): Promise<void> {
    this.endWatches();
    for (const res of this.#open) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await this.#etcd.close();
    await rm(this.saDir, { recursive: true, force: true });
  }

  #key(namespace: string, name: string): Buffer {
    return Buffer.from(`${this.#root}/leases/${namespace}/${name}`, "utf8");
  }

  #prefix(namespace: string): Buffer {
    return Buffer.from(`${this.#root}/leases/${namespace}/`, "utf8");
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    this.requests.push({ method: req.method ?? "", path: url.pathname, query: url.searchParams });
    const body = await readBody(req);
    if (req.headers.authorization !== `Bearer ${this.#token}`) {
      return this.#status(res, 401, "Unauthorized", "Unauthorized");
    }
    const match = PATH.exec(url.pathname);
    if (match === null)
      return this.#status(res, 404, "NotFound", "the server could not find the requested resource");
    const namespace = decodeURIComponent(match[1]!);
    const name = match[2] === undefined ? null : decodeURIComponent(match[2]);
    const method = req.method ?? "GET";
    if (name === null && method === "GET") {
      const watch = url.searchParams.get("watch");
      if (watch === "true" || watch === "1") return this.#watch(res, namespace, url.searchParams);
      return this.#list(res, namespace, url.searchParams);
    }
    if (name === null && method === "POST") return this.#create(res, namespace, body, url.searchParams);
    if (name !== null && method === "GET") return this.#get(res, namespace, name);
    if (name !== null && method === "PUT") return this.#replace(res, namespace, name, body, url.searchParams);
    if (name !== null && method === "DELETE") return this.#delete(res, namespace, name, body);
    return this.#status(res, 405, "MethodNotAllowed", `the stand-in does not serve ${method} here`);
  }

  async #get(res: ServerResponse, namespace: string, name: string): Promise<void> {
    const kv = await this.#read(namespace, name);
    if (kv === null) return this.#notFound(res, name);
    this.#json(res, 200, leaseFromKv(kv));
  }

  async #list(res: ServerResponse, namespace: string, query: URLSearchParams): Promise<void> {
    const selector = parseSelector(query.get("labelSelector") ?? "");
    if (selector === null)
      return this.#status(res, 400, "BadRequest", "unable to parse requirement: invalid label selector");
    const prefix = this.#prefix(namespace);
    const answer = await this.#etcd.range(prefix, prefixRangeEnd(prefix), AbortSignal.timeout(10_000));
    const items = (answer.kvs ?? [])
      .map((kv) => leaseFromKv(kv, false))
      .filter((lease) => selector(labelsOf(lease)));
    this.#json(res, 200, {
      kind: "LeaseList",
      apiVersion: API_VERSION,
      metadata: { resourceVersion: answer.header?.revision ?? "0" },
      items,
    });
  }

  async #create(res: ServerResponse, namespace: string, body: string, query: URLSearchParams): Promise<void> {
    const lease = this.#decode(res, body, namespace);
    if (lease === null) return;
    const metadata = lease.metadata as Json;
    const name = metadata.name;
    if (typeof name !== "string" || name === "") {
      return this.#status(
        res,
        422,
        "Invalid",
        "Lease.coordination.k8s.io is invalid: metadata.name: Required value: name or generateName is required",
      );
    }
    if (this.#invalid(res, name, lease)) return;
    const now = nowSeconds();
    const stored: Json = {
      ...lease,
      apiVersion: API_VERSION,
      kind: "Lease",
      metadata: {
        ...withoutServerFields(metadata),
        namespace,
        uid: randomUUID(),
        creationTimestamp: now,
        managedFields: managedFields(lease, query, now),
      },
    };
    const key = this.#key(namespace, name).toString("base64");
    const answer = await this.#etcd.txn(
      {
        compare: [{ key, result: "EQUAL", target: "CREATE", create_revision: "0" }],
        success: [{ request_put: { key, value: Buffer.from(JSON.stringify(stored)).toString("base64") } }],
      },
      AbortSignal.timeout(10_000),
    );
    if (answer.succeeded !== true) {
      return this.#status(res, 409, "AlreadyExists", `leases.${GROUP} "${name}" already exists`, name);
    }
    this.#json(res, 201, withVersion(stored, answer.header?.revision ?? "0"));
  }

  async #replace(
    res: ServerResponse,
    namespace: string,
    name: string,
    body: string,
    query: URLSearchParams,
  ): Promise<void> {
    const lease = this.#decode(res, body, namespace);
    if (lease === null) return;
    const metadata = lease.metadata as Json;
    if (metadata.name !== name) {
      return this.#status(
        res,
        400,
        "BadRequest",
        `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    if (this.#invalid(res, name, lease)) return;
    const current = await this.#read(namespace, name);
    if (current === null) return this.#notFound(res, name);
    const old = JSON.parse(Buffer.from(current.value ?? "", "base64").toString("utf8")) as Json;
    const oldMetadata = old.metadata as Json;
    const wanted = metadata.resourceVersion;
    const version = typeof wanted === "string" && wanted !== "" ? wanted : current.mod_revision!;
    if (version !== current.mod_revision) return this.#conflict(res, name);
    const stored: Json = {
      ...lease,
      apiVersion: API_VERSION,
      kind: "Lease",
      metadata: {
        ...withoutServerFields(metadata),
        namespace,
        uid: oldMetadata.uid,
        creationTimestamp: oldMetadata.creationTimestamp,
        managedFields: managedFields(lease, query, nowSeconds()),
      },
    };
    const key = this.#key(namespace, name).toString("base64");
    const answer = await this.#etcd.txn(
      {
        compare: [{ key, result: "EQUAL", target: "MOD", mod_revision: version }],
        success: [{ request_put: { key, value: Buffer.from(JSON.stringify(stored)).toString("base64") } }],
      },
      AbortSignal.timeout(10_000),
    );
    if (answer.succeeded !== true) return this.#conflict(res, name);
    this.#json(res, 200, withVersion(stored, answer.header?.revision ?? "0"));
  }

  async #delete(res: ServerResponse, namespace: string, name: string, body: string): Promise<void> {
    let options: Json = {};
    if (body.trim() !== "") {
      const parsed = parseJson(body);
      if (parsed === null) return this.#status(res, 400, "BadRequest", "the DeleteOptions are not JSON");
      options = parsed;
    }
    const current = await this.#read(namespace, name);
    if (current === null) return this.#notFound(res, name);
    const preconditions = isObject(options.preconditions) ? options.preconditions : {};
    const wanted = preconditions.resourceVersion;
    if (typeof wanted === "string" && wanted !== current.mod_revision) {
      return this.#status(
        res,
        409,
        "Conflict",
        `Operation cannot be fulfilled on leases.${GROUP} "${name}": Precondition failed: ResourceVersion in precondition: ${wanted}, ResourceVersion in object meta: ${current.mod_revision}`,
        name,
      );
    }
    const key = this.#key(namespace, name).toString("base64");
    const answer = await this.#etcd.txn(
      {
        compare: [{ key, result: "EQUAL", target: "MOD", mod_revision: current.mod_revision }],
        success: [{ request_delete_range: { key } }],
      },
      AbortSignal.timeout(10_000),
    );
    if (answer.succeeded !== true) return this.#conflict(res, name);
    const uid = (leaseFromKv(current).metadata as Json).uid;
    this.#json(res, 200, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: { name, group: GROUP, kind: "leases", uid },
    });
  }

  #watch(res: ServerResponse, namespace: string, query: URLSearchParams): void {
    const selector = parseSelector(query.get("labelSelector") ?? "");
    if (selector === null)
      return this.#status(res, 400, "BadRequest", "unable to parse requirement: invalid label selector");
    const from = query.get("resourceVersion") ?? "";
    const timeoutSeconds = Number(query.get("timeoutSeconds") ?? "0");
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.flushHeaders();
    const send = (type: string, object: Json) => {
      if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
    };
    const prefix = this.#prefix(namespace);
    let handle: { close(): void } | null = null;
    const stop = () => {
      handle?.close();
      if (handle !== null) this.#watches.delete(handle);
      if (!res.writableEnded) res.end();
    };
    const watchFrom = (start: string) => {
      handle = this.#etcd.watch(
        prefix,
        prefixRangeEnd(prefix),
        start,
        (result) => {
          const events = Array.isArray(result.events) ? (result.events as Json[]) : [];
          for (const event of events) {
            const kv = event.kv as StoredKv;
            if (event.type === "DELETE") {
              const previous = event.prev_kv as StoredKv | undefined;
              if (previous === undefined) continue;
              const lease = withVersion(leaseFromKv(previous), kv.mod_revision ?? "0");
              if (selector(labelsOf(lease))) send("DELETED", lease);
            } else {
              const lease = leaseFromKv(kv);
              if (!selector(labelsOf(lease))) continue;
              send(kv.create_revision === kv.mod_revision ? "ADDED" : "MODIFIED", lease);
            }
          }
        },
        (error) => {
          if (error instanceof WatchEnded && error.compactRevision !== null) {
            send("ERROR", {
              kind: "Status",
              apiVersion: "v1",
              metadata: {},
              status: "Failure",
              message: `too old resource version: ${from} (${error.compactRevision})`,
              reason: "Expired",
              code: 410,
            });
          }
          stop();
        },
        { prevKv: true },
      );
      this.#watches.add({ close: stop });
    };
    if (timeoutSeconds > 0) {
      const timer = setTimeout(stop, timeoutSeconds * 1000);
      res.on("close", () => clearTimeout(timer));
    }
    res.on("close", () => {
      handle?.close();
    });
    if (from === "" || from === "0") {
      // No resourceVersion: the current state as ADDED events, then what changes after it.
      this.#etcd.range(prefix, prefixRangeEnd(prefix), AbortSignal.timeout(10_000)).then(
        (answer) => {
          for (const kv of answer.kvs ?? []) {
            const lease = leaseFromKv(kv);
            if (selector(labelsOf(lease))) send("ADDED", lease);
          }
          watchFrom((BigInt(answer.header?.revision ?? "0") + 1n).toString());
        },
        () => stop(),
      );
    } else if (/^\d+$/.test(from)) {
      watchFrom((BigInt(from) + 1n).toString());
    } else {
      send("ERROR", {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `invalid resource version: ${from}`,
        reason: "BadRequest",
        code: 400,
      });
      stop();
    }
  }

  async #read(namespace: string, name: string): Promise<StoredKv | null> {
    const answer = await this.#etcd.range(this.#key(namespace, name), null, AbortSignal.timeout(10_000));
    return answer.kvs?.[0] ?? null;
  }

  /** The body as a Lease of this namespace, or null after answering 400. */
  #decode(res: ServerResponse, body: string, namespace: string): Json | null {
    const lease = parseJson(body);
    if (lease === null || !isObject(lease.metadata)) {
      this.#status(res, 400, "BadRequest", "the body is not a Lease object");
      return null;
    }
    if (lease.kind !== undefined && lease.kind !== "Lease") {
      this.#status(res, 400, "BadRequest", `the body is a ${JSON.stringify(lease.kind)}, not a Lease`);
      return null;
    }
    const given = lease.metadata.namespace;
    if (given !== undefined && given !== namespace) {
      this.#status(
        res,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
      return null;
    }
    const spec = isObject(lease.spec) ? lease.spec : {};
    for (const field of ["acquireTime", "renewTime"]) {
      const value = spec[field];
      if (value !== undefined && value !== null && (typeof value !== "string" || !MICRO_TIME.test(value))) {
        this.#status(
          res,
          400,
          "BadRequest",
          `Lease in version "v1" cannot be handled as a Lease: parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse`,
        );
        return null;
      }
    }
    return lease;
  }

  /** Answers 422 Invalid and returns true when the Lease breaks the API server's validation. */
  #invalid(res: ServerResponse, name: string, lease: Json): boolean {
    const spec = isObject(lease.spec) ? lease.spec : {};
    const causes: { field: string; message: string }[] = [];
    if (!NAME.test(name)) {
      causes.push({
        field: "metadata.name",
        message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      });
    }
    const duration = spec.leaseDurationSeconds;
    if (duration !== undefined && duration !== null && (typeof duration !== "number" || duration <= 0)) {
      causes.push({
        field: "spec.leaseDurationSeconds",
        message: `Invalid value: ${JSON.stringify(duration)}: must be greater than 0`,
      });
    }
    const transitions = spec.leaseTransitions;
    if (
      transitions !== undefined &&
      transitions !== null &&
      (typeof transitions !== "number" || transitions < 0)
    ) {
      causes.push({
        field: "spec.leaseTransitions",
        message: `Invalid value: ${JSON.stringify(transitions)}: must be greater than or equal to 0`,
      });
    }
    if (causes.length === 0) return false;
    this.#json(res, 422, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `Lease.${GROUP} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`,
      reason: "Invalid",
      details: {
        name,
        group: GROUP,
        kind: "Lease",
        causes: causes.map((c) => ({ reason: "FieldValueInvalid", message: c.message, field: c.field })),
      },
      code: 422,
    });
    return true;
  }

  #notFound(res: ServerResponse, name: string): void {
    this.#status(res, 404, "NotFound", `leases.${GROUP} "${name}" not found`, name);
  }

  #conflict(res: ServerResponse, name: string): void {
    this.#status(
      res,
      409,
      "Conflict",
      `Operation cannot be fulfilled on leases.${GROUP} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      name,
    );
  }

  #status(res: ServerResponse, code: number, reason: string, message: string, name?: string): void {
    this.#json(res, code, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      ...(name === undefined ? {} : { details: { name, group: GROUP, kind: "leases" } }),
      code,
    });
  }

  #json(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }
}

function leaseFromKv(kv: StoredKv, withType = true): Json {
  const stored = JSON.parse(Buffer.from(kv.value ?? "", "base64").toString("utf8")) as Json;
  const lease = withVersion(stored, kv.mod_revision ?? "0");
  if (withType) return lease;
  // List items carry no kind and apiVersion (the list has them).
  const { kind: _kind, apiVersion: _apiVersion, ...item } = lease;
  return item;
}

function withVersion(lease: Json, resourceVersion: string): Json {
  const metadata = lease.metadata as Json;
  const { managedFields, ...rest } = metadata;
  // The API server's field order: resourceVersion after uid, managedFields last.
  return { ...lease, metadata: { ...rest, resourceVersion, managedFields } };
}

function withoutServerFields(metadata: Json): Json {
  const {
    resourceVersion: _rv,
    uid: _uid,
    creationTimestamp: _created,
    managedFields: _managed,
    generation: _generation,
    ...rest
  } = metadata;
  return rest;
}

/** A managedFields entry like the API server's (the fields this write set). */
function managedFields(lease: Json, query: URLSearchParams, time: string): Json[] {
  const metadata = lease.metadata as Json;
  const spec = isObject(lease.spec) ? lease.spec : {};
  const fields = (o: unknown): Json =>
    isObject(o) ? Object.fromEntries(Object.keys(o).map((k) => [`f:${k}`, {}])) : {};
  const fieldsV1: Json = { "f:spec": fields(spec) };
  const meta: Json = {};
  if (isObject(metadata.labels)) meta["f:labels"] = fields(metadata.labels);
  if (isObject(metadata.annotations)) meta["f:annotations"] = fields(metadata.annotations);
  if (Object.keys(meta).length > 0) fieldsV1["f:metadata"] = meta;
  return [
    {
      manager: query.get("fieldManager") ?? "node-fetch",
      operation: "Update",
      apiVersion: API_VERSION,
      time,
      fieldsType: "FieldsV1",
      fieldsV1,
    },
  ];
}

const nowSeconds = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");

function labelsOf(lease: Json): Record<string, string> {
  const metadata = lease.metadata as Json;
  return isObject(metadata.labels) ? (metadata.labels as Record<string, string>) : {};
}

/** A label selector of equality requirements as a predicate; null when it cannot be parsed. */
export function parseSelector(text: string): ((labels: Record<string, string>) => boolean) | null {
  const requirements: ((labels: Record<string, string>) => boolean)[] = [];
  for (const part of text.split(",").map((p) => p.trim())) {
    if (part === "") continue;
    const m = /^(!?)([A-Za-z0-9./_-]+)(?:\s*(==|=|!=)\s*([A-Za-z0-9._-]*))?$/.exec(part);
    if (m === null) return null;
    const [, not, key, op, value] = m as unknown as [
      string,
      string,
      string,
      string | undefined,
      string | undefined,
    ];
    if (op === undefined) requirements.push(not === "!" ? (l) => !(key in l) : (l) => key in l);
    else if (not === "!") return null;
    else if (op === "!=") requirements.push((l) => l[key] !== value);
    else requirements.push((l) => l[key] === value);
  }
  return (labels) => requirements.every((r) => r(labels));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of req as AsyncIterable<Buffer>) {
    body += chunk.toString("utf8");
    if (body.length > 3 * 1024 * 1024) throw new Error("request body too large");
  }
  return body;
}

function parseJson(text: string): Json | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
