/**
 * Access to the ConfigMap through the Kubernetes API: a GET and a watch, over HTTPS with the pod's
 * service-account token and CA. Two calls do not justify @kubernetes/client-node (docs/deployment.md).
 */
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { ioReason } from "../secrets.js";
import { isPlainObject } from "../validate.js";

/** The ConfigMap key that holds the configuration file. */
export const CONFIG_KEY = "config.yaml";

/** Where the ConfigMap is and how to reach the API server, resolved from the environment. */
export interface Target {
  readonly api: ApiClient;
  readonly namespace: string;
  readonly name: string;
}

export const where = (t: Target) => `${t.namespace}/${t.name}`;

/** The `config.yaml` text of a ConfigMap, or the ConfigError that says it has none. */
export function configText(target: Target, configMap: ConfigMapObject): string | ConfigError {
  const text = configMap.data[CONFIG_KEY];
  if (text !== undefined) return text;
  const keys = Object.keys(configMap.data);
  return new ConfigError(
    "SERVICE_CONFIG_CONFIGMAP",
    `configmap ${where(target)} has no key ${CONFIG_KEY} (${keys.length === 0 ? "it has no data" : `it has ${keys.join(", ")}`})`,
  );
}

/** An HTTP status from the API server, with the message of its Status object when it sent one. */
export class KubernetesApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function describeApiError(error: unknown): string {
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

export interface ConfigMapObject {
  readonly resourceVersion: string;
  readonly data: Readonly<Record<string, string>>;
}

export type WatchEvent =
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
export class ApiClient {
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
    target: { readonly namespace: string; readonly name: string },
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
