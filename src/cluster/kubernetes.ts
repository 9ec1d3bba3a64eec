/**
 * The Kubernetes engine of the lease seam: `coordination.k8s.io/v1` Leases in one namespace,
 * through `@kubernetes/client-node` (1.x: it runs on Node 20 and 24; 2.x needs Node ≥ 22.19). This
 * module is imported only when `Cluster.Backend` is `kubernetes` (engines.ts): the client is large.
 *
 * - A seam lease `<name>` is the Lease `<LeasePrefix>-<name>`, labelled
 *   `pdu-bridge/lease-prefix: <LeasePrefix>` (the list and the watch select by it, so other Leases in
 *   the namespace are never read). The record is the Lease's spec (`holderIdentity`,
 *   `leaseDurationSeconds`, `acquireTime`, `renewTime`, `leaseTransitions`); the payload is the
 *   annotation `pdu-bridge/payload`.
 * - The version is `metadata.resourceVersion`. An update is a PUT carrying the version last seen,
 *   which the API server refuses with 409 Conflict when the Lease changed since; a delete carries it
 *   as a precondition. 409 on create means the Lease exists; 404 on update means it is gone.
 * - In a pod: the API server at `KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT`, the service
 *   account's token (re-read every minute, as the kubelet rotates it) and CA, and the namespace from
 *   the service-account directory unless configured.
 */
import { join } from "node:path";
import {
  ApiException,
  CoordinationV1Api,
  KubeConfig,
  V1MicroTime,
  Watch,
  Observable,
  type ObservableMiddleware,
  type V1Lease,
} from "@kubernetes/client-node";
import {
  assertWritable,
  checkRecord,
  describeError,
  LEASE_NAME_PATTERN,
  LeaseConflictError,
  LeaseStoreError,
  MAX_PAYLOAD_LENGTH,
  type LeaseEvent,
  type LeaseList,
  type LeaseRecord,
  type LeaseStore,
  type LeaseWatch,
  type StoredLease,
} from "./store.js";

/** The label every Lease of an installation carries, with its LeasePrefix as the value. */
export const PREFIX_LABEL = "pdu-bridge/lease-prefix";
/** The annotation holding a lease's payload. */
export const PAYLOAD_ANNOTATION = "pdu-bridge/payload";

export interface KubernetesOptions {
  /** API server base URL (`https://host:port`). */
  readonly server: string;
  /** Directory with the service account's `token` and `ca.crt`. */
  readonly serviceAccountDir: string;
  readonly namespace: string;
  /** `Cluster.Kubernetes.LeasePrefix`. */
  readonly leasePrefix: string;
  /** Longest payload a record may carry (default the leases' MAX_PAYLOAD_LENGTH; the journal's is larger). */
  readonly maxPayload?: number;
}

const GROUP = "coordination.k8s.io";

export class KubernetesLeaseStore implements LeaseStore {
  readonly description: string;
  readonly #api: CoordinationV1Api;
  readonly #config: KubeConfig;
  readonly #namespace: string;
  readonly #prefix: string;
  readonly #watches = new Set<AbortController>();
  readonly #maxPayload: number;

  constructor(options: KubernetesOptions) {
    this.#maxPayload = options.maxPayload ?? MAX_PAYLOAD_LENGTH;
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [
        {
          name: "in-cluster",
          server: options.server,
          caFile: join(options.serviceAccountDir, "ca.crt"),
          skipTLSVerify: false,
        },
      ],
      users: [
        {
          name: "service-account",
          authProvider: {
            name: "tokenFile",
            config: { tokenFile: join(options.serviceAccountDir, "token") },
          },
        },
      ],
      contexts: [
        { name: "in-cluster", cluster: "in-cluster", user: "service-account", namespace: options.namespace },
      ],
      currentContext: "in-cluster",
    });
    this.#config = config;
    this.#api = config.makeApiClient(CoordinationV1Api);
    this.#namespace = options.namespace;
    this.#prefix = options.leasePrefix;
    this.description = `kubernetes ${options.namespace}/${options.leasePrefix}`;
  }

  #name(name: string): string {
    return `${this.#prefix}-${name}`;
  }

  /** A Lease of ours as a stored lease; null for anything else (the label says ours, the name must too). */
  #lease(lease: V1Lease | undefined): StoredLease | null {
    const metadata = lease?.metadata;
    const full = metadata?.name;
    const version = metadata?.resourceVersion;
    if (typeof full !== "string" || typeof version !== "string" || !full.startsWith(`${this.#prefix}-`))
      return null;
    const name = full.slice(this.#prefix.length + 1);
    if (!LEASE_NAME_PATTERN.test(name)) return null;
    const spec = lease?.spec ?? {};
    const time = (value: unknown): unknown =>
      value === undefined || value === null ? null : value instanceof Date ? value.toISOString() : value;
    const record = checkRecord(
      {
        holder: spec.holderIdentity ?? "",
        durationSeconds: spec.leaseDurationSeconds ?? 0,
        acquireTime: time(spec.acquireTime),
        renewTime: time(spec.renewTime),
        transitions: spec.leaseTransitions ?? 0,
        payload: metadata?.annotations?.[PAYLOAD_ANNOTATION] ?? "",
      },
      this.#maxPayload,
    );
    return { name, record, version };
  }

  #body(name: string, record: LeaseRecord, version: string | null): V1Lease {
    const microTime = (text: string | null) => {
      if (text === null) return undefined;
      const ms = Date.parse(text);
      return Number.isNaN(ms) ? undefined : new V1MicroTime(ms);
    };
    return {
      apiVersion: `${GROUP}/v1`,
      kind: "Lease",
      metadata: {
        name: this.#name(name),
        namespace: this.#namespace,
        labels: { [PREFIX_LABEL]: this.#prefix, "app.kubernetes.io/managed-by": "pdu-bridge" },
        annotations: { [PAYLOAD_ANNOTATION]: record.payload },
        ...(version === null ? {} : { resourceVersion: version }),
      },
      spec: {
        ...(record.holder === "" ? {} : { holderIdentity: record.holder }),
        ...(record.durationSeconds > 0 ? { leaseDurationSeconds: record.durationSeconds } : {}),
        acquireTime: microTime(record.acquireTime),
        renewTime: microTime(record.renewTime),
        leaseTransitions: record.transitions,
      },
    };
  }

  async get(name: string, signal: AbortSignal): Promise<StoredLease | null> {
    try {
      const lease = await this.#api.readNamespacedLease(
        { name: this.#name(name), namespace: this.#namespace },
        withSignal(signal),
      );
      return this.#lease(lease);
    } catch (error) {
      if (status(error) === 404) return null;
      throw this.#error("read", name, error);
    }
  }

  async create(name: string, record: LeaseRecord, signal: AbortSignal): Promise<StoredLease> {
    assertWritable(name, record, this.#maxPayload);
    try {
      const lease = await this.#api.createNamespacedLease(
        { namespace: this.#namespace, body: this.#body(name, record, null) },
        withSignal(signal),
      );
      return this.#written(name, lease);
    } catch (error) {
      if (status(error) === 409) throw new LeaseConflictError(name, "it exists already");
      throw this.#error("create", name, error);
    }
  }

  async update(
    name: string,
    record: LeaseRecord,
    version: string,
    signal: AbortSignal,
  ): Promise<StoredLease> {
    assertWritable(name, record, this.#maxPayload);
    try {
      const lease = await this.#api.replaceNamespacedLease(
        { name: this.#name(name), namespace: this.#namespace, body: this.#body(name, record, version) },
        withSignal(signal),
      );
      return this.#written(name, lease);
    } catch (error) {
      if (status(error) === 409) throw new LeaseConflictError(name, `its version is no longer ${version}`);
      if (status(error) === 404) throw new LeaseConflictError(name, "it is gone");
      throw this.#error("update", name, error);
    }
  }

  async delete(name: string, version: string, signal: AbortSignal): Promise<void> {
    try {
      await this.#api.deleteNamespacedLease(
        {
          name: this.#name(name),
          namespace: this.#namespace,
          body: { preconditions: { resourceVersion: version } },
        },
        withSignal(signal),
      );
    } catch (error) {
      if (status(error) === 404) return;
      if (status(error) === 409) throw new LeaseConflictError(name, `its version is no longer ${version}`);
      throw this.#error("delete", name, error);
    }
  }

  async list(signal: AbortSignal): Promise<LeaseList> {
    try {
      const list = await this.#api.listNamespacedLease(
        { namespace: this.#namespace, labelSelector: `${PREFIX_LABEL}=${this.#prefix}` },
        withSignal(signal),
      );
      const revision = list.metadata?.resourceVersion;
      if (typeof revision !== "string") throw new Error("the list has no resourceVersion");
      return { leases: list.items.flatMap((l) => this.#lease(l) ?? []), revision };
    } catch (error) {
      throw this.#error("list", "", error);
    }
  }

  watch(revision: string, onEvent: (event: LeaseEvent) => void, onEnd: (error: Error) => void): LeaseWatch {
    let controller: AbortController | null = null;
    let closed = false;
    let ended = false;
    const end = (error: Error) => {
      if (closed || ended) return;
      ended = true;
      onEnd(error);
    };
    const path = `/apis/${GROUP}/v1/namespaces/${encodeURIComponent(this.#namespace)}/leases`;
    new Watch(this.#config)
      .watch(
        path,
        {
          labelSelector: `${PREFIX_LABEL}=${this.#prefix}`,
          resourceVersion: revision,
          allowWatchBookmarks: true,
        },
        (type, object: unknown) => {
          if (closed || ended) return;
          if (type === "ERROR") {
            const message = isObject(object) && typeof object.message === "string" ? object.message : "";
            end(new LeaseStoreError(`the API server ended the watch: ${message}`));
            return;
          }
          const lease = this.#lease(object as V1Lease);
          if (lease === null) return;
          if (type === "DELETED") onEvent({ type: "delete", name: lease.name });
          else if (type === "ADDED" || type === "MODIFIED") onEvent({ type: "put", lease });
        },
        (error: unknown) => {
          if (controller !== null) this.#watches.delete(controller);
          end(
            error === null || error === undefined
              ? new LeaseStoreError("the API server ended the watch")
              : new LeaseStoreError(`the watch failed: ${describeError(error)}`, { cause: error }),
          );
        },
      )
      .then(
        (c) => {
          controller = c;
          if (closed) c.abort();
          else this.#watches.add(c);
        },
        (error: unknown) => end(new LeaseStoreError(`the watch failed: ${describeError(error)}`)),
      );
    return {
      close: () => {
        closed = true;
        if (controller !== null) {
          this.#watches.delete(controller);
          controller.abort();
        }
      },
    };
  }

  close(): Promise<void> {
    for (const controller of this.#watches) controller.abort();
    this.#watches.clear();
    return Promise.resolve();
  }

  #written(name: string, lease: V1Lease): StoredLease {
    const stored = this.#lease(lease);
    if (stored === null || stored.record === null) {
      throw new LeaseStoreError(
        `the API server answered a write of lease ${name} with an object that is not it`,
      );
    }
    return stored;
  }

  #error(what: string, name: string, error: unknown): LeaseStoreError {
    const code = status(error);
    const lease = name === "" ? "leases" : `lease ${this.#name(name)}`;
    const where = `${this.description}: ${what} ${lease}`;
    if (code === undefined) return new LeaseStoreError(`${where}: ${describeError(error)}`, { cause: error });
    const hint =
      code === 401
        ? "unauthorized: the service-account token was refused"
        : code === 403
          ? "forbidden: the service account may not use Leases here (check the Role and RoleBinding)"
          : "the API server refused it";
    const message = statusMessage(error);
    return new LeaseStoreError(`${where}: HTTP ${code}, ${hint}${message === "" ? "" : ` (${message})`}`);
  }
}

/** The HTTP status of an API error, if it is one. */
function status(error: unknown): number | undefined {
  return error instanceof ApiException && typeof error.code === "number" ? error.code : undefined;
}

function statusMessage(error: unknown): string {
  if (!(error instanceof ApiException)) return "";
  const body: unknown = error.body;
  if (isObject(body) && typeof body.message === "string") return body.message.slice(0, 300);
  if (typeof body === "string") {
    try {
      const parsed: unknown = JSON.parse(body);
      if (isObject(parsed) && typeof parsed.message === "string") return parsed.message.slice(0, 300);
    } catch {
      return "";
    }
  }
  return "";
}

/** Per-request options that put the caller's signal on the request. */
function withSignal(signal: AbortSignal): {
  middleware: ObservableMiddleware[];
  middlewareMergeStrategy: "append";
} {
  return {
    middleware: [
      {
        pre: (context) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: "append",
  };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
