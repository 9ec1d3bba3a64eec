/**
 * The real service for the hostile-input and security tests: a real simulator, a configuration read
 * by the real loader (the API key through the environment, as in production), the real App with
 * every log line captured (debug level, raw JSON text, so a secret can be searched for in exactly
 * what would have been written), and keep-alive HTTP clients from chosen local addresses.
 */
import fc from "fast-check";
import { Client as UndiciClient, type Dispatcher } from "undici";
import type { App } from "../src/app.js";
import type { Config } from "../src/config/schema.js";
import type { Simulator, SimulatorOptions } from "../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness } from "./app-harness.js";
import type { LogCapture } from "./log-capture.js";

export interface BridgeOptions {
  /** Configured API key (through SERVICE_API_KEY, as in production); "" leaves control disabled. */
  readonly apiKey: string;
  /** Instance id -> ActionsEnabled; every instance polls the same simulator every second. */
  readonly instances: Readonly<Record<string, boolean>>;
  readonly sim?: SimulatorOptions;
  /** Api.Bind, default 127.0.0.1. */
  readonly apiBind?: string;
  /** `RelayProtection` of every instance, in seconds; default the service's. */
  readonly relayProtection?: number;
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
 * Simulator + App through testkit/app-harness.ts, every log line captured at debug level; resolves
 * once every instance has its first snapshot.
 */
export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  const h = await startAppHarness<"sim">({
    sims: { sim: { requestLogLimit: 100_000, ...options.sim } },
    yaml: (sims) =>
      appYaml({
        pdus: Object.entries(options.instances).map(([id, actionsEnabled]) =>
          pduYaml(id, sims.sim, {
            actionsEnabled,
            pollInterval: 1,
            ...(options.relayProtection === undefined ? {} : { relayProtection: options.relayProtection }),
          }),
        ),
        api: { key: "", ...(options.apiBind === undefined ? {} : { bind: options.apiBind }) },
      }),
    env: options.apiKey === "" ? {} : { SERVICE_API_KEY: options.apiKey },
    subscribeAll: false,
    waitForFirstPolls: true,
  });
  try {
    const { apiPort, healthPort } = h.app.endpoints;
    if (apiPort === null || healthPort === null) throw new Error("the App did not start every listener");
    const deviceId = h.sims.sim.deviceIds()[0];
    if (deviceId === undefined) throw new Error("the simulator has no device");
    return {
      sim: h.sims.sim,
      app: h.app,
      config: h.config,
      log: h.log,
      apiPort,
      healthPort,
      broker: h.broker,
      deviceId,
      close: () => h.close(),
    };
  } catch (error) {
    await h.close();
    throw error;
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
