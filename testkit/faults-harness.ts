/**
 * The bridge as a real child process for the fault-injection suite (test/faults/): the real CLI
 * `node dist/src/main.js --config F` (started with testkit/cli-process.ts) against real simulators
 * and a real mosquitto, with the REST API and the health listener on free ports (port 0; the ports
 * are read from the `pdu-bridge started` log line, so there is no race for them). Also: a small
 * HTTP client with headers, a waiting helper, and a TCP relay that can freeze a broker.
 *
 * The child is watched by testkit/no-unhandled.ts: its output is scanned for crashes and its exit
 * code checked when the test file ends.
 */
import http from "node:http";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import type { Simulator } from "../src/simulator/index.js";
import { childEnv, CliProcess, tempDir, type LogLine } from "./cli-process.js";
import { configYaml } from "./config-yaml.js";
import { watch, type ChildExit, type WatchedChild } from "./no-unhandled.js";
import { waitFor as until } from "./wait.js";

export const API_KEY = "faults-suite-api-key-0123456789";

export interface PduSpec {
  readonly id: string;
  readonly sim: Simulator;
  /** Seconds, default 1. */
  readonly pollInterval?: number;
  /** Seconds per request, default 15 (the product default). */
  readonly timeout?: number;
  readonly actionsEnabled?: boolean;
  /** Default admin / admin (the simulator's default user). */
  readonly username?: string;
  readonly password?: string;
}

export interface BridgeSpec {
  /** The external broker; with `embedded`, where the bridge's embedded broker listens. */
  readonly broker: { readonly host: string; readonly port: number };
  /** Run the embedded broker on `broker` instead of connecting to an external one (default false). */
  readonly embedded?: boolean;
  readonly pdus: readonly PduSpec[];
  readonly parentTopic?: string;
  /** Default info. */
  readonly logLevel?: "trace" | "debug" | "info" | "warn" | "error";
  /** Home Assistant discovery, default on. */
  readonly discovery?: boolean;
}

/** The YAML configuration of a bridge: external broker, API (with a key) and health on port 0. */
export function bridgeYaml(spec: BridgeSpec): string {
  const broker = { Host: spec.broker.host, Port: spec.broker.port };
  return configYaml({
    Mqtt: {
      ...(spec.embedded === true
        ? { Embedded: { Bind: broker.Host, Port: broker.Port } }
        : { Connection: { ...broker, Scheme: "mqtt" } }),
      ParentTopic: spec.parentTopic ?? "pdu-bridge",
      ClientId: `faults-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
      KeepAlive: 10,
    },
    Pdus: Object.fromEntries(
      spec.pdus.map((p) => [
        p.id,
        {
          Connection: { Host: p.sim.host, Port: p.sim.port, Scheme: p.sim.scheme, Timeout: p.timeout ?? 15 },
          Credentials: { Username: p.username ?? "admin", Password: p.password ?? "admin" },
          PollInterval: p.pollInterval ?? 1,
          ActionsEnabled: p.actionsEnabled ?? false,
        },
      ]),
    ),
    HomeAssistant: { DiscoveryEnabled: spec.discovery ?? true },
    Api: { Enabled: true, Bind: "127.0.0.1", Port: 0, ApiKey: API_KEY },
    Health: { Enabled: true, Bind: "127.0.0.1", Port: 0 },
    Logging: { Level: spec.logLevel ?? "info" },
  });
}

export interface HttpResult {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

export interface HttpOptions {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Reject with an error when no complete answer arrived in time (default 10 s). */
  readonly timeoutMs?: number;
}

/** One request on a fresh connection (no keep-alive pool left open). */
export function httpRequest(url: string, options: HttpOptions = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (options.body !== undefined) headers["content-length"] = String(Buffer.byteLength(options.body));
    const req = http.request(url, { method: options.method ?? "GET", headers, agent: false });
    req.setTimeout(options.timeoutMs ?? 10_000, () =>
      req.destroy(new Error(`no answer from ${url} within ${options.timeoutMs ?? 10_000} ms`)),
    );
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    req.end(options.body);
  });
}

export { waitFor as until } from "./wait.js";

export interface HealthInstance {
  readonly id: string;
  readonly lastPollUtc: string | null;
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
}

export interface HealthReport {
  readonly mqttConnected: boolean;
  readonly instances: readonly HealthInstance[];
}

export interface SnapshotInfo {
  readonly instanceId: string;
  readonly timestampUtc: string | null;
  readonly ageSeconds: number | null;
}

export interface Reading {
  readonly instanceId: string;
  readonly deviceId: string;
  readonly sourceType: string;
  readonly outletIndex: number | null;
  readonly entityKey: string | null;
  readonly type: string;
  readonly value: number;
  readonly units: string;
  readonly timestampUtc: string;
}

/** A running `pdu-bridge --config F` child process (a {@link CliProcess}, watched for crashes). */
export class BridgeProcess {
  readonly cli: CliProcess;
  /** The same process, watched by testkit/no-unhandled.ts; signals go through it. */
  readonly child: WatchedChild;
  readonly apiPort: number;
  readonly healthPort: number;
  readonly configPath: string;
  readonly #removeDir: () => Promise<void>;

  private constructor(
    cli: CliProcess,
    child: WatchedChild,
    ports: { apiPort: number; healthPort: number },
    configPath: string,
    removeDir: () => Promise<void>,
  ) {
    this.cli = cli;
    this.child = child;
    this.apiPort = ports.apiPort;
    this.healthPort = ports.healthPort;
    this.configPath = configPath;
    this.#removeDir = removeDir;
  }

  /**
   * Writes the configuration, starts the CLI and waits for its `pdu-bridge started` line. `options`:
   * node's own arguments (before the script), variables added to the environment, and whether the
   * process is watched for crashes (testkit/no-unhandled.ts; default true).
   */
  static async start(
    spec: BridgeSpec,
    name = "pdu-bridge",
    options: { nodeArgs?: readonly string[]; env?: Readonly<Record<string, string>>; watch?: boolean } = {},
  ): Promise<BridgeProcess> {
    const dir = await tempDir();
    const config = await dir.write("config.yaml", bridgeYaml(spec));
    // Nothing from the test runner's environment may change the bridge's configuration.
    const cli = CliProcess.spawn(["--config", config], childEnv(options.env), name, options.nodeArgs);
    const child = options.watch === false ? cli.watched : watch(cli.watched);
    try {
      const { apiPort, healthPort } = await cli.started(15_000);
      if (apiPort === null || healthPort === null) {
        throw new Error(`no listener ports in the start line\n${cli.output}`);
      }
      return new BridgeProcess(cli, child, { apiPort, healthPort }, config, () => dir.remove());
    } catch (error) {
      child.kill("SIGKILL");
      await child.exited;
      await dir.remove();
      throw error;
    }
  }

  /** The bridge's JSON log lines so far. */
  logLines(): LogLine[] {
    return this.cli.logs();
  }

  api(path: string, options: HttpOptions = {}): Promise<HttpResult> {
    return httpRequest(`http://127.0.0.1:${this.apiPort}${path}`, options);
  }

  health(path: string, options: HttpOptions = {}): Promise<HttpResult> {
    return httpRequest(`http://127.0.0.1:${this.healthPort}${path}`, options);
  }

  async apiJson<T>(path: string): Promise<T> {
    const res = await this.api(path);
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
    return JSON.parse(res.text) as T;
  }

  /** `/readyz`: status and body. */
  readyz(): Promise<HttpResult> {
    return this.health("/readyz");
  }

  healthReport(): Promise<HealthReport> {
    return this.apiJson<HealthReport>("/api/v1/health");
  }

  async instanceHealth(id: string): Promise<HealthInstance> {
    const report = await this.healthReport();
    const found = report.instances.find((i) => i.id === id);
    if (found === undefined) throw new Error(`no instance ${id} in /api/v1/health`);
    return found;
  }

  snapshots(): Promise<SnapshotInfo[]> {
    return this.apiJson<SnapshotInfo[]>("/api/v1/snapshots");
  }

  readings(instance: string): Promise<Reading[]> {
    return this.apiJson<Reading[]>(`/api/v1/readings?instance=${encodeURIComponent(instance)}`);
  }

  /** REST control of one outlet, with the API key. */
  control(instance: string, deviceId: string, index: number, action: string, timeoutMs = 30_000) {
    const path = `/api/v1/instances/${encodeURIComponent(instance)}/outlets/${encodeURIComponent(deviceId)}/${index}/control`;
    return this.api(path, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
      body: JSON.stringify({ action }),
      timeoutMs,
    });
  }

  /** Waits until every listed instance had a successful poll (lastPollUtc set, no error). */
  async waitPolled(ids: readonly string[], timeoutMs = 15_000): Promise<void> {
    await until(
      async () => {
        const report = await this.healthReport();
        return ids.every((id) => {
          const i = report.instances.find((x) => x.id === id);
          return i !== undefined && i.lastPollUtc !== null && i.lastError === null;
        });
      },
      `a first good poll of ${ids.join(", ")}`,
      timeoutMs,
    );
  }

  /** Sends SIGTERM and waits for the exit; `ms` from the signal to the exit. */
  async terminate(): Promise<{ ms: number; exit: ChildExit }> {
    const sent = Date.now();
    this.child.kill("SIGTERM");
    const exit = await this.child.exited;
    return { ms: exit.at - sent, exit };
  }

  /** Stops the process if it still runs (SIGTERM, then SIGKILL) and removes its files. */
  async close(): Promise<void> {
    await this.child.finish();
    await this.#removeDir();
  }
}

/** GET /api requests the simulator recorded (the polls of a single unit). */
export function pollCount(sim: Simulator): number {
  return sim.requests.filter((r) => r.method === "GET" && r.path === "/api").length;
}

/**
 * A TCP relay in front of a server (a broker) that can freeze: while frozen it keeps every
 * connection open but forwards nothing either way, like a broker that hangs or a network that
 * drops packets without resetting anything.
 */
export class FreezableRelay {
  readonly host = "127.0.0.1";
  frozen = false;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(target: { readonly host: string; readonly port: number }): Promise<FreezableRelay> {
    const server = createServer();
    const relay = new FreezableRelay(server);
    server.on("connection", (client) => {
      const upstream = connect(target.port, target.host);
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        relay.#sockets.add(from);
        from.on("data", (chunk: Buffer) => {
          if (!relay.frozen) to.write(chunk);
        });
        from.on("error", () => undefined);
        from.on("close", () => {
          relay.#sockets.delete(from);
          to.destroy();
        });
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return relay;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
