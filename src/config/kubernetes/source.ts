/**
 * The Kubernetes configuration source (docs/deployment.md, "Configuration from the Kubernetes
 * API"): with `SERVICE_CONFIG_SOURCE=kubernetes` the configuration is the `config.yaml` key of the
 * ConfigMap `SERVICE_CONFIG_CONFIGMAP` (namespace `SERVICE_CONFIG_NAMESPACE`, else the pod's own),
 * read through the Kubernetes API with the pod's service account, then watched.
 *
 * A change the running service can take (the keys the schema marks `appliesLive`) is handed to
 * `onChange`; any other change goes to `onRestartRequired`: the app stops cleanly and exits 0, and
 * Kubernetes restarts the container, which reads the new configuration. An invalid new
 * configuration (secrets in the ConfigMap included) goes to `onError` and the service keeps running
 * on the one it has.
 *
 * Parts: ./diff.ts (what changed, what applies live), ./watch.ts (the watch loop), ./api.ts (the
 * two API calls). This file reads the environment and starts them.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { silentLogger, type Logger } from "../../log.js";
import { ConfigError } from "../errors.js";
import { parseConfigText, type Env } from "../load.js";
import type { Config } from "../schema.js";
import { ioReason } from "../secrets.js";
import { ApiClient, configText, describeApiError, where, type ConfigMapObject, type Target } from "./api.js";
import { startWatch, type ConfigWatch, type ConfigWatchHandlers } from "./watch.js";

export { CONFIG_KEY } from "./api.js";
export { diffConfig, type ConfigDiff, type LiveChanges } from "./diff.js";
export type { ConfigWatch, ConfigWatchHandlers } from "./watch.js";

export const DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

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
      const watchOptions = {
        backoffMs: options.backoffMs ?? { initial: 1000, max: 30_000 },
        watchTimeoutSeconds: options.watchTimeoutSeconds ?? 300,
      };
      return startWatch(target, env, watchOptions, current, handlers, logger);
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
