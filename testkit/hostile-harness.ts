/**
 * The real service for the hostile-input and security tests: a real simulator, a configuration read
 * by the real loader (the API key through the environment, as in production), the real App with
 * every log line captured (debug level, raw JSON text, so a secret can be searched for in exactly
 * what would have been written), and keep-alive HTTP clients from chosen local addresses.
 */
import { Writable } from "node:stream";
import fc from "fast-check";
import { Client as UndiciClient, type Dispatcher } from "undici";
import { App } from "../src/app.js";
import { parseConfigText } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { createLogger } from "../src/log.js";
import { appYaml, pduYaml } from "./app-harness.js";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/index.js";

/**
 * Every line a logger wrote, as raw text (one JSON object per line), with the control audit lines
 * also kept parsed as they arrive (tests wait for them after every case, so re-parsing the whole
 * log each time would make a run of thousands of cases quadratic).
 */
export class LogCapture {
  readonly lines: string[] = [];
  readonly audits: Record<string, unknown>[] = [];
  readonly #waiters = new Set<{ count: number; resolve: () => void }>();
  readonly stream = new Writable({
    write: (chunk: Buffer | string, _encoding, callback) => {
      for (const line of chunk.toString().split("\n")) {
        if (line === "") continue;
        this.lines.push(line);
        if (line.includes('"audit":"control"')) this.audits.push(JSON.parse(line) as Record<string, unknown>);
      }
      for (const waiter of this.#waiters) if (this.audits.length >= waiter.count) waiter.resolve();
      callback();
    },
  });

  /** Resolves as soon as there are at least `count` audit lines; fails after `ms`. */
  waitForAudits(count: number, what: string, ms = 5000): Promise<void> {
    if (this.audits.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.#waiters.add(waiter);
    });
  }

  get text(): string {
    return this.lines.join("\n");
  }

  /** Parsed lines (pino JSON). */
  entries(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

export interface BridgeOptions {
  /** Configured API key (through SERVICE_API_KEY, as in production); "" leaves control disabled. */
  readonly apiKey: string;
  /** Instance id -> ActionsEnabled; every instance polls the same simulator every second. */
  readonly instances: Readonly<Record<string, boolean>>;
  readonly sim?: SimulatorOptions;
  /** Api.Bind, default 127.0.0.1. */
  readonly apiBind?: string;
}

export interface RunningBridge {
  readonly sim: Simulator;
  readonly app: App;
  readonly config: Config;
  readonly log: LogCapture;
  readonly apiPort: number;
  readonly healthPort: number;
  readonly broker: { readonly host: string; readonly port: number };
  /** The first device of the simulator (its outlets 0..7 exist). */
  readonly deviceId: string;
  close(): Promise<void>;
}

/**
 * Simulator + App (configuration from testkit/app-harness.ts's `appYaml`), every log line captured
 * at debug level; resolves once every instance has its first snapshot.
 */
export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  const sim = await startSimulator({ requestLogLimit: 100_000, ...options.sim });
  const log = new LogCapture();
  let app: App | undefined;
  try {
    const yaml = appYaml({
      pdus: Object.entries(options.instances).map(([id, actionsEnabled]) =>
        pduYaml(id, sim, { actionsEnabled, pollInterval: 1 }),
      ),
      api: { key: "", ...(options.apiBind === undefined ? {} : { bind: options.apiBind }) },
    });
    const env = options.apiKey === "" ? {} : { SERVICE_API_KEY: options.apiKey };
    const config = await parseConfigText(yaml, "hostile.yaml", env);
    app = await App.start(config, { logger: createLogger({ level: "debug", destination: log.stream }) });
    const running = app;
    await waitUntil(
      () => config.instances.every((i) => running.store.get(i.id)?.snapshot),
      "the first poll of every instance",
      15_000,
    );
    const { apiPort, healthPort, embeddedBroker } = running.endpoints;
    if (apiPort === null || healthPort === null || embeddedBroker === null)
      throw new Error("the App did not start every listener");
    const deviceId = sim.deviceIds()[0];
    if (deviceId === undefined) throw new Error("the simulator has no device");
    return {
      sim,
      app: running,
      config,
      log,
      apiPort,
      healthPort,
      broker: embeddedBroker,
      deviceId,
      close: async () => {
        await running.stop();
        await sim.close();
      },
    };
  } catch (error) {
    await app?.stop();
    await sim.close();
    throw error;
  }
}

/** Polls `check` every 10 ms until it is truthy; fails after `ms` (a deadline, not a speed check). */
export async function waitUntil(check: () => unknown, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/**
 * Keep-alive HTTP/1.1 clients (undici) to one listener, one per local source address, so tests can
 * come from many client addresses (all of 127.0.0.0/8 is loopback on Linux).
 */
export class ClientPool {
  readonly #origin: string;
  readonly #clients = new Map<string, UndiciClient>();

  constructor(host: string, port: number) {
    this.#origin = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  }

  /** The client from `localAddress` (default: whatever the system picks). */
  client(localAddress?: string): UndiciClient {
    const key = localAddress ?? "";
    let client = this.#clients.get(key);
    if (client === undefined) {
      client = new UndiciClient(this.#origin, {
        ...(localAddress === undefined ? {} : { localAddress }),
        keepAliveTimeout: 30_000,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  async request(options: Omit<Dispatcher.RequestOptions, "origin">, localAddress?: string): Promise<Answer> {
    const response = await this.client(localAddress).request(options);
    const body = await response.body.text();
    return { status: response.statusCode, headers: response.headers, body };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(value: string | string[] | undefined): string {
  const first = Array.isArray(value) ? value[0] : value;
  return (first ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
}

/** A copy of the plain object `value`, printed as `text` (cut to 300 characters) in fast-check's counterexamples. */
export function printedAs<T extends object>(value: T, text: string): T {
  const short = text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text;
  return Object.defineProperty({ ...value }, fc.toStringMethod, { value: () => short, enumerable: false });
}
