/**
 * A stand-in for the Kubernetes API server, enough for the ConfigMap configuration source: a real
 * HTTPS server on 127.0.0.1 (self-signed certificate) that serves ConfigMaps by GET and streams
 * watch events, plus a service-account directory (token, ca.crt, namespace) that trusts it.
 *
 * Requests without the current bearer token get 401, like the real one. The test changes ConfigMaps
 * with {@link KubeApiStandIn.setConfigMap}, which bumps the resourceVersion and pushes MODIFIED (or
 * ADDED) to every open watch on that ConfigMap.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { selfSignedCertificate } from "../src/simulator/cert.js";

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly authorization: string | undefined;
}

interface StoredConfigMap {
  resourceVersion: number;
  data: Record<string, string>;
}

interface OpenWatch {
  readonly key: string;
  readonly response: ServerResponse;
}

export class KubeApiStandIn {
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  readonly saDir: string;
  #token = "token-1";
  readonly #server: Server;
  #resourceVersion = 100;
  readonly #configMaps = new Map<string, StoredConfigMap>();
  readonly #watches = new Set<OpenWatch>();
  #forcedAnswer: { code: number; message: string } | null = null;

  private constructor(server: Server, saDir: string) {
    this.#server = server;
    this.saDir = saDir;
  }

  static async start(namespace = "pdu"): Promise<KubeApiStandIn> {
    const { key, cert } = await selfSignedCertificate();
    const saDir = await mkdtemp(join(tmpdir(), "pdu-bridge-sa-"));
    const server = createServer({ key, cert });
    const api = new KubeApiStandIn(server, saDir);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => api.#handle(req, res));
    await Promise.all([
      writeFile(join(saDir, "token"), `${api.#token}\n`),
      writeFile(join(saDir, "ca.crt"), cert),
      writeFile(join(saDir, "namespace"), namespace),
      new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)),
    ]);
    return api;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
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

  /** Writes a new token to the service-account directory (the kubelet rotating it). */
  async rotateToken(token: string): Promise<void> {
    this.#token = token;
    await writeFile(join(this.saDir, "token"), token);
  }

  /** Creates or replaces a ConfigMap and tells open watches (ADDED or MODIFIED). */
  setConfigMap(namespace: string, name: string, data: Record<string, string>): void {
    const key = `${namespace}/${name}`;
    const type = this.#configMaps.has(key) ? "MODIFIED" : "ADDED";
    const stored = { resourceVersion: ++this.#resourceVersion, data };
    this.#configMaps.set(key, stored);
    this.#push(key, { type, object: this.#object(namespace, name, stored) });
  }

  /** Sends a watch ERROR event (e.g. 410 Gone) to open watches of the ConfigMap and ends them. */
  pushWatchError(namespace: string, name: string, code: number, message: string): void {
    const key = `${namespace}/${name}`;
    this.#push(key, { type: "ERROR", object: { kind: "Status", status: "Failure", code, message } });
    this.endWatches();
  }

  /** Ends every open watch stream, as the API server does when a watch times out. */
  endWatches(): void {
    for (const watch of this.#watches) watch.response.end();
    this.#watches.clear();
  }

  /** From now on, every request is answered with this status (null: serve normally again). */
  answerAll(status: { code: number; message: string } | null): void {
    this.#forcedAnswer = status;
  }

  /** Resolves once exactly `count` watches are open. */
  async waitForWatches(count: number, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#watches.size !== count) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${count} open watch(es), ${this.#watches.size} open`);
      await sleep(10);
    }
  }

  async close(): Promise<void> {
    this.endWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await rm(this.saDir, { recursive: true, force: true });
  }

  #object(namespace: string, name: string, stored: StoredConfigMap) {
    return {
      kind: "ConfigMap",
      apiVersion: "v1",
      metadata: { name, namespace, resourceVersion: String(stored.resourceVersion) },
      data: stored.data,
    };
  }

  #push(key: string, event: unknown): void {
    for (const watch of this.#watches) {
      if (watch.key === key) watch.response.write(`${JSON.stringify(event)}\n`);
    }
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    this.requests.push({
      method: req.method ?? "",
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
    });
    const fail = (code: number, message: string) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, code }));
    };
    if (req.headers.authorization !== `Bearer ${this.#token}`) return fail(401, "Unauthorized");
    if (this.#forcedAnswer !== null) return fail(this.#forcedAnswer.code, this.#forcedAnswer.message);

    const one = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/.exec(url.pathname);
    const list = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps$/.exec(url.pathname);
    if (req.method === "GET" && one !== null) {
      const [namespace, name] = [decodeURIComponent(one[1]!), decodeURIComponent(one[2]!)];
      const stored = this.#configMaps.get(`${namespace}/${name}`);
      if (stored === undefined) return fail(404, `configmaps "${name}" not found`);
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify(this.#object(namespace, name, stored)));
    }
    const name = /^metadata\.name=(.+)$/.exec(url.searchParams.get("fieldSelector") ?? "")?.[1];
    if (
      req.method === "GET" &&
      list !== null &&
      url.searchParams.get("watch") === "true" &&
      name !== undefined
    ) {
      const key = `${decodeURIComponent(list[1]!)}/${name}`;
      const since = Number(url.searchParams.get("resourceVersion"));
      const stored = this.#configMaps.get(key);
      res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
      res.flushHeaders();
      // A change the client has not seen yet arrives first, as the real server replays it.
      if (stored !== undefined && stored.resourceVersion > since) {
        const [namespace, configMapName] = key.split("/") as [string, string];
        res.write(
          `${JSON.stringify({ type: "MODIFIED", object: this.#object(namespace, configMapName, stored) })}\n`,
        );
      }
      const watch = { key, response: res };
      this.#watches.add(watch);
      res.on("close", () => this.#watches.delete(watch));
      return;
    }
    fail(404, `the stand-in does not serve ${req.method} ${url.pathname}`);
  }
}
