/**
 * The Kubernetes configuration source (contract §2 "Configuration from Kubernetes"): with
 * `SERVICE_CONFIG_SOURCE=kubernetes` the configuration is the `config.yaml` key of the ConfigMap
 * `SERVICE_CONFIG_CONFIGMAP` (namespace `SERVICE_CONFIG_NAMESPACE`, else the pod's own), read through
 * the Kubernetes API with the pod's service account, then watched.
 *
 * A change the running service can take (an instance's `PollInterval`, `Logging.Level`) is handed to
 * `onChange`; any other change goes to `onRestartRequired`: the app stops cleanly and exits 0, and
 * Kubernetes restarts the container, which reads the new configuration. An invalid new configuration (secrets
 * in the ConfigMap included) goes to `onError` and the service keeps running on the one it has.
 */
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { silentLogger, type Logger } from "../log.js";
import { ConfigError } from "./errors.js";
import { parseConfigText, type Env } from "./load.js";
import type { Config } from "./schema.js";
import { ioReason } from "./secrets.js";
import { isPlainObject } from "./validate.js";

export const DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The ConfigMap key that holds the configuration file. */
export const CONFIG_KEY = "config.yaml";

export type ConfigSource = "file" | "kubernetes";

/** `SERVICE_CONFIG_SOURCE`: unset or `file` reads the file; `kubernetes` reads the ConfigMap. */
export function configSource(env: Env): ConfigSource {
  const value = env.SERVICE_CONFIG_SOURCE ?? "";
  if (value === "" || value === "file") return "file";
  if (value === "kubernetes") return "kubernetes";
  throw new ConfigError("SERVICE_CONFIG_SOURCE", `must be file or kubernetes (got ${JSON.stringify(value)})`);
}

export interface KubernetesSourceOptions {
  /** Directory with `token`, `ca.crt` and `namespace`; default `SERVICE_K8S_SA_DIR`, else the standard mount. */
  readonly serviceAccountDir?: string;
  /** API server base URL; default `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`. */
  readonly apiUrl?: string;
  /** Watch reconnect delay: `initial` ms after a failure, doubling up to `max` (default 1 s and 30 s). */
  readonly backoffMs?: { readonly initial: number; readonly max: number };
  /** Timeout of a GET (default 10 s). */
  readonly requestTimeoutMs?: number;
  /** How long the API server keeps one watch open before it ends it and we reconnect (default 300 s). */
  readonly watchTimeoutSeconds?: number;
}

/** Changes that apply to the running service. */
export interface LiveChanges {
  /** The new `PollInterval` (seconds) of each instance whose interval changed, by instance id. */
  readonly pollIntervals: ReadonlyMap<string, number>;
  /** The new `Logging.Level`; undefined when it did not change. */
  readonly logLevel?: Config["Logging"]["Level"];
}

export interface ConfigDiff {
  /** Every changed key, dotted (`Pdus.rack-a.PollInterval`); `Pdus.<id>` for an added or removed instance. */
  readonly changed: readonly string[];
  /** The changed keys that need a restart; empty when everything applies live. */
  readonly restart: readonly string[];
  readonly live: LiveChanges;
}

export interface ConfigWatchHandlers {
  /** A valid new configuration whose changes all apply live: apply `live`; `next` is the new whole. */
  onChange(next: Config, live: LiveChanges): void;
  /** A valid new configuration that needs a restart (`reason` names the keys). Watching has stopped. */
  onRestartRequired(reason: string): void;
  /** Invalid new configuration (a ConfigError), ConfigMap deleted, or the watch failed (it retries). */
  onError(error: Error): void;
}

export interface ConfigWatch {
  /** Ends the watch; resolves once its connection is closed. */
  stop(): Promise<void>;
}

export interface KubernetesConfigSource {
  /** The configuration read at start. */
  readonly config: Config;
  /** `namespace/name` of the ConfigMap. */
  readonly configMap: string;
  /**
   * Starts watching the ConfigMap for changes (once). `logger` gets one line per change applied or
   * restart asked for, and reconnects at debug level; errors go to `onError`, not to the logger.
   */
  watch(handlers: ConfigWatchHandlers, logger?: Logger): ConfigWatch;
}

/** What changed from `prev` to `next`, and which of it the running service can apply. */
export function diffConfig(prev: Config, next: Config): ConfigDiff {
  const paths: string[][] = [];
  const { instances: prevInstances, origin: _prevOrigin, ...prevSections } = prev;
  const { instances: nextInstances, origin: _nextOrigin, ...nextSections } = next;
  collectChanges(prevSections, nextSections, [], paths);

  const prevById = new Map(prevInstances.map((i) => [i.id, i]));
  const nextById = new Map(nextInstances.map((i) => [i.id, i]));
  for (const id of new Set([...prevById.keys(), ...nextById.keys()])) {
    const a = prevById.get(id);
    const b = nextById.get(id);
    if (a === undefined || b === undefined) {
      paths.push(["Pdus", id]);
      continue;
    }
    const { id: _a, primary: _ap, ...aFields } = a;
    const { id: _b, primary: _bp, ...bFields } = b;
    collectChanges(aFields, bFields, ["Pdus", id], paths);
  }
  // Same instances in another order: the primary and the order of every listing change.
  const sameIds =
    prevInstances.length === nextInstances.length && prevInstances.every((i) => nextById.has(i.id));
  if (sameIds && prevInstances.some((i, n) => nextInstances[n]?.id !== i.id)) paths.push(["Pdus"]);

  const pollIntervals = new Map<string, number>();
  let logLevel: Config["Logging"]["Level"] | undefined;
  const restart: string[] = [];
  for (const path of paths) {
    const id = path[1];
    if (path.length === 3 && path[0] === "Pdus" && path[2] === "PollInterval" && id !== undefined) {
      pollIntervals.set(id, nextById.get(id)!.PollInterval);
    } else if (path.join(".") === "Logging.Level") {
      logLevel = next.Logging.Level;
    } else {
      restart.push(path.join("."));
    }
  }
  return {
    changed: paths.map((p) => p.join(".")),
    restart,
    live: logLevel === undefined ? { pollIntervals } : { pollIntervals, logLevel },
  };
}

function collectChanges(a: unknown, b: unknown, path: string[], out: string[][]): void {
  if (Object.is(a, b)) return;
  const bothObjects = typeof a === "object" && a !== null && typeof b === "object" && b !== null;
  if (!bothObjects || Array.isArray(a) !== Array.isArray(b)) {
    out.push(path);
    return;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
    collectChanges(left[key], right[key], [...path, key], out);
  }
}

/** Where the ConfigMap is and how to reach the API server, resolved from the environment. */
interface Target {
  readonly api: ApiClient;
  readonly namespace: string;
  readonly name: string;
}

const where = (t: Target) => `${t.namespace}/${t.name}`;

/**
 * Reads the configuration from the ConfigMap named by `SERVICE_CONFIG_CONFIGMAP`. Every problem is a
 * {@link ConfigError} (exit 2): unreachable API, 401/403/404, no `config.yaml` key, invalid content.
 */
export async function loadKubernetesConfig(
  env: Env,
  options: KubernetesSourceOptions = {},
): Promise<KubernetesConfigSource> {
  const target = await resolveTarget(env, options);
  let configMap: ConfigMapObject;
  try {
    configMap = await target.api.getConfigMap(target.namespace, target.name);
  } catch (error) {
    throw new ConfigError(
      "SERVICE_CONFIG_CONFIGMAP",
      `cannot read configmap ${where(target)} through the Kubernetes API at ${target.api.base}: ${describeApiError(error)}`,
    );
  }
  const text = configText(target, configMap);
  if (text instanceof ConfigError) throw text;
  const config = await parseConfigText(text, `configmap ${where(target)}`, env, { source: "kubernetes" });

  let watching = false;
  return {
    config,
    configMap: where(target),
    watch(handlers, logger = silentLogger()) {
      if (watching) throw new Error("the ConfigMap is already being watched");
      watching = true;
      const current = { config, text, resourceVersion: configMap.resourceVersion };
      return startWatch(target, env, options, current, handlers, logger);
    },
  };
}

async function resolveTarget(env: Env, options: KubernetesSourceOptions): Promise<Target> {
  const name = env.SERVICE_CONFIG_CONFIGMAP ?? "";
  if (name === "") {
    throw new ConfigError(
      "SERVICE_CONFIG_CONFIGMAP",
      "must name the ConfigMap when SERVICE_CONFIG_SOURCE=kubernetes",
    );
  }
  const saDir = options.serviceAccountDir ?? nonEmpty(env.SERVICE_K8S_SA_DIR) ?? DEFAULT_SERVICE_ACCOUNT_DIR;
  let namespace = nonEmpty(env.SERVICE_CONFIG_NAMESPACE);
  if (namespace === undefined) {
    const file = join(saDir, "namespace");
    try {
      namespace = (await readFile(file, "utf8")).trim();
    } catch (cause) {
      throw new ConfigError(
        "SERVICE_CONFIG_NAMESPACE",
        `not set, and ${file} cannot be read (${ioReason(cause)})`,
      );
    }
  }
  let apiUrl = options.apiUrl;
  if (apiUrl === undefined) {
    const host = nonEmpty(env.KUBERNETES_SERVICE_HOST);
    if (host === undefined) {
      throw new ConfigError(
        "KUBERNETES_SERVICE_HOST",
        "not set: SERVICE_CONFIG_SOURCE=kubernetes works only inside a Kubernetes pod",
      );
    }
    apiUrl = `https://${host.includes(":") ? `[${host}]` : host}:${nonEmpty(env.KUBERNETES_SERVICE_PORT) ?? "443"}`;
  }
  return { api: new ApiClient(apiUrl, saDir, options.requestTimeoutMs ?? 10_000), namespace, name };
}

const nonEmpty = (value: string | undefined): string | undefined => (value === "" ? undefined : value);

/** The `config.yaml` text of a ConfigMap, or the ConfigError that says it has none. */
function configText(target: Target, configMap: ConfigMapObject): string | ConfigError {
  const text = configMap.data[CONFIG_KEY];
  if (text !== undefined) return text;
  const keys = Object.keys(configMap.data);
  return new ConfigError(
    "SERVICE_CONFIG_CONFIGMAP",
    `configmap ${where(target)} has no key ${CONFIG_KEY} (${keys.length === 0 ? "it has no data" : `it has ${keys.join(", ")}`})`,
  );
}

interface Current {
  config: Config;
  /** The last `config.yaml` text seen, valid or not, so a repeated event is not reported twice. */
  text: string;
  /** null: the watch must start from a fresh read (after 410 Gone). */
  resourceVersion: string | null;
}

function startWatch(
  target: Target,
  env: Env,
  options: KubernetesSourceOptions,
  current: Current,
  handlers: ConfigWatchHandlers,
  logger: Logger,
): ConfigWatch {
  const backoff = options.backoffMs ?? { initial: 1000, max: 30_000 };
  const timeoutSeconds = options.watchTimeoutSeconds ?? 300;
  const abort = new AbortController();
  const { signal } = abort;
  const origin = `configmap ${where(target)}`;

  /** Calls a handler; one that throws is logged, it must not end the watch. */
  const call = (name: keyof ConfigWatchHandlers, invoke: () => void) => {
    try {
      invoke();
    } catch (error) {
      logger.warn({ err: error }, `configuration watch: the ${name} handler failed`);
    }
  };
  const report = (error: unknown) => {
    if (!signal.aborted) {
      call("onError", () => handlers.onError(error instanceof Error ? error : new Error(String(error))));
    }
  };

  /** Applies one new state of the ConfigMap. */
  const consider = async (configMap: ConfigMapObject): Promise<void> => {
    const text = configText(target, configMap);
    if (text instanceof ConfigError) return report(text);
    if (text === current.text) return;
    current.text = text;
    let next: Config;
    try {
      next = await parseConfigText(text, origin, env, { source: "kubernetes" });
    } catch (error) {
      return report(error);
    }
    if (signal.aborted) return;
    const diff = diffConfig(current.config, next);
    if (diff.changed.length === 0) return;
    if (diff.restart.length > 0) {
      const reason = `configuration changed (${diff.restart.join(", ")})`;
      logger.info({ configMap: where(target), changed: diff.changed }, `${reason}: restarting`);
      abort.abort();
      call("onRestartRequired", () => handlers.onRestartRequired(reason));
      return;
    }
    current.config = next;
    logger.info({ configMap: where(target), changed: diff.changed }, "configuration changed: applied live");
    call("onChange", () => handlers.onChange(next, diff.live));
  };

  const run = async (): Promise<void> => {
    let delay = backoff.initial;
    while (!signal.aborted) {
      try {
        if (current.resourceVersion === null) {
          const configMap = await target.api.getConfigMap(target.namespace, target.name, signal);
          current.resourceVersion = configMap.resourceVersion;
          await consider(configMap);
          if (signal.aborted) break;
        }
        const stream = await target.api.watchConfigMap(
          target,
          current.resourceVersion,
          timeoutSeconds,
          signal,
        );
        delay = backoff.initial;
        for await (const event of stream) {
          // The server reports watch failures (410 Gone included) as an ERROR event carrying a Status.
          if (event.type === "ERROR") throw new KubernetesApiError(event.code, event.message);
          current.resourceVersion = event.object.resourceVersion;
          if (event.type === "ADDED" || event.type === "MODIFIED") await consider(event.object);
          if (event.type === "DELETED") {
            report(
              new ConfigError(
                "SERVICE_CONFIG_CONFIGMAP",
                `${origin} was deleted; still running on the last configuration`,
              ),
            );
          }
          if (signal.aborted) break;
        }
        logger.debug({ configMap: where(target) }, "configuration watch ended; reconnecting");
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubernetesApiError && error.status === 410) {
          current.resourceVersion = null; // Gone: too old to resume from, read the ConfigMap afresh
        } else {
          report(new Error(`watching ${origin}: ${describeApiError(error)}; retrying in ${delay} ms`));
          await sleep(delay, undefined, { signal }).catch(() => undefined);
          delay = Math.min(delay * 2, backoff.max);
          continue;
        }
      }
      await sleep(backoff.initial, undefined, { signal }).catch(() => undefined);
    }
  };

  const done = run().catch((error: unknown) => report(error));
  return {
    async stop() {
      abort.abort();
      await done;
    },
  };
}

/** An HTTP status from the API server, with the message of its Status object when it sent one. */
class KubernetesApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

function describeApiError(error: unknown): string {
  if (error instanceof KubernetesApiError) {
    const hint =
      {
        401: "unauthorized: the service-account token was refused",
        403: "forbidden: the service account may not read this ConfigMap (check the Role and RoleBinding)",
        404: "not found: check SERVICE_CONFIG_CONFIGMAP and SERVICE_CONFIG_NAMESPACE",
      }[error.status] ?? "the API server refused the request";
    return `HTTP ${error.status}, ${hint}${error.message === "" ? "" : ` (${error.message})`}`;
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== "string" || error.message.includes(code)) return error.message;
    return error.message === "" ? code : `${error.message} (${code})`;
  }
  return String(error);
}

interface ConfigMapObject {
  readonly resourceVersion: string;
  readonly data: Readonly<Record<string, string>>;
}

type WatchEvent =
  | { readonly type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"; readonly object: ConfigMapObject }
  | { readonly type: "ERROR"; readonly code: number; readonly message: string };

function toConfigMap(value: unknown): ConfigMapObject {
  const metadata = isPlainObject(value) ? value.metadata : undefined;
  const resourceVersion = isPlainObject(metadata) ? metadata.resourceVersion : undefined;
  if (typeof resourceVersion !== "string")
    throw new Error("the API server sent an object without a resourceVersion");
  const data = isPlainObject(value) && isPlainObject(value.data) ? value.data : {};
  return {
    resourceVersion,
    data: Object.fromEntries(
      Object.entries(data).filter((e): e is [string, string] => typeof e[1] === "string"),
    ),
  };
}

function toWatchEvent(line: string): WatchEvent {
  const event: unknown = JSON.parse(line);
  if (!isPlainObject(event)) throw new Error("the API server sent a watch event that is not an object");
  const { type, object } = event;
  if (type === "ERROR") {
    const status = isPlainObject(object) ? object : {};
    return {
      type,
      code: typeof status.code === "number" ? status.code : 500,
      message: typeof status.message === "string" ? status.message : "",
    };
  }
  if (type === "ADDED" || type === "MODIFIED" || type === "DELETED" || type === "BOOKMARK") {
    return { type, object: toConfigMap(object) };
  }
  throw new Error(`the API server sent a watch event of unknown type ${JSON.stringify(type)}`);
}

/** The few Kubernetes API calls we need, over HTTPS with the service account's token and CA. */
class ApiClient {
  readonly base: string;
  readonly #saDir: string;
  readonly #timeoutMs: number;

  constructor(base: string, saDir: string, timeoutMs: number) {
    this.base = base.replace(/\/+$/, "");
    this.#saDir = saDir;
    this.#timeoutMs = timeoutMs;
  }

  async getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMapObject> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`;
    const response = await this.#open(path, this.#timeoutMs, signal);
    return toConfigMap(JSON.parse(await readBody(response)));
  }

  /** The watch's events as they arrive; ends when the server ends the stream. */
  async watchConfigMap(
    target: Target,
    resourceVersion: string,
    timeoutSeconds: number,
    signal: AbortSignal,
  ): Promise<AsyncGenerator<WatchEvent>> {
    const query = new URLSearchParams({
      watch: "true",
      fieldSelector: `metadata.name=${target.name}`,
      resourceVersion,
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutSeconds),
    });
    const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/configmaps?${query.toString()}`;
    // Idle limit a little past the server's own timeout, so a silently dead connection is noticed.
    const response = await this.#open(path, (timeoutSeconds + 30) * 1000, signal);
    return (async function* () {
      for await (const line of lines(response)) yield toWatchEvent(line);
    })();
  }

  /** Sends a GET and resolves with a 2xx response; other statuses become a KubernetesApiError. */
  async #open(path: string, idleTimeoutMs: number, signal?: AbortSignal): Promise<IncomingMessage> {
    // Read on every request: the kubelet rotates the token (and may rotate the CA bundle).
    const [token, ca] = await Promise.all([this.#read("token"), this.#read("ca.crt")]);
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        `${this.base}${path}`,
        { headers: { Authorization: `Bearer ${token.trim()}`, Accept: "application/json" }, ca, signal },
        resolve,
      );
      req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`no answer within ${idleTimeoutMs} ms`)));
      req.on("error", reject);
      req.end();
    });
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    const body = await readBody(response).catch(() => "");
    let message = "";
    try {
      const parsed: unknown = JSON.parse(body);
      if (isPlainObject(parsed) && typeof parsed.message === "string") message = parsed.message;
    } catch {
      message = body.slice(0, 200);
    }
    throw new KubernetesApiError(status, message);
  }

  async #read(file: string): Promise<string> {
    const path = join(this.#saDir, file);
    try {
      return await readFile(path, "utf8");
    } catch (cause) {
      throw new Error(`cannot read the service-account file ${path} (${ioReason(cause)})`);
    }
  }
}

const MAX_BODY = 4 * 1024 * 1024;

async function readBody(response: IncomingMessage): Promise<string> {
  response.setEncoding("utf8");
  let body = "";
  for await (const chunk of response as AsyncIterable<string>) {
    body += chunk;
    if (body.length > MAX_BODY) throw new Error("the API server's answer is too large");
  }
  return body;
}

/** The lines of a newline-delimited stream, without empty ones. */
async function* lines(response: IncomingMessage): AsyncGenerator<string> {
  response.setEncoding("utf8");
  let buffer = "";
  for await (const chunk of response as AsyncIterable<string>) {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (line !== "") yield line;
    }
    if (buffer.length > MAX_BODY) throw new Error("the API server sent a watch event that is too large");
  }
  if (buffer.trim() !== "") yield buffer.trim();
}
