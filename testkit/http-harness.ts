/**
 * Test harness for the HTTP listeners: real configuration (through the real loader), a real
 * SnapshotStore, MQTT and Home Assistant status a test sets, a settable clock, captured log lines,
 * and a small HTTP client that records every response (for the OpenAPI contract check).
 */
import http from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { EventBus } from "../src/bus.js";
import { parseConfigText } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import type { ControlService } from "../src/control/types.js";
import type { HttpDeps } from "../src/http/types.js";
import type { HomeAssistantStatus, MqttStatus } from "../src/mqtt/types.js";
import { SnapshotStore } from "../src/poller/store.js";
import { consoleRoutes } from "../src/ui/routes.js";
import { LogCapture } from "./log-capture.js";

/** A configuration parsed by the real loader (no environment: secrets only from the text). */
export function configFrom(yaml: string, env: Record<string, string> = {}): Promise<Config> {
  return parseConfigText(yaml, "test-config.yaml", env);
}

export interface Harness {
  readonly deps: HttpDeps;
  readonly store: SnapshotStore;
  /** The store's bus, also the deps'. */
  readonly bus: EventBus;
  /** Current time of the deps' clock (epoch ms); assign to move it. */
  clock: { now: number };
  mqtt: MqttStatus;
  homeAssistant: HomeAssistantStatus;
  /** Every log line written so far. */
  readonly log: LogCapture;
}

export interface HarnessOptions {
  control?: ControlService;
  /** Start of the clock (default: the real time). */
  now?: number;
  /** Process start (default: the clock's start). */
  startedAt?: number;
}

export function harness(config: Config, options: HarnessOptions = {}): Harness {
  const log = new LogCapture();
  const logger = log.logger;
  const start = options.now ?? Date.now();
  const state = {
    clock: { now: start },
    mqtt: {
      connected: true,
      broker: "mqtt://127.0.0.1:1883",
      embedded: true,
      lastError: null,
      since: start,
    } as MqttStatus,
    homeAssistant: {
      enabled: true,
      discoveryTopic: "homeassistant",
      lastDiscoveryUtc: null,
    } as HomeAssistantStatus,
  };
  const bus = new EventBus({ logger });
  const store = new SnapshotStore(
    config.instances.map((i) => i.id),
    { bus, now: () => state.clock.now },
  );
  const deps: HttpDeps = {
    config,
    store,
    bus,
    logger,
    startedAt: options.startedAt ?? start,
    mqttStatus: () => state.mqtt,
    homeAssistantStatus: () => state.homeAssistant,
    now: () => state.clock.now,
    consoleRoutes: consoleRoutes(),
    ...(options.control ? { control: options.control } : {}),
  };
  return Object.assign(state, { deps, store, bus, log });
}

export interface HttpResponse {
  readonly method: string;
  /** Path and query as sent. */
  readonly path: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The body parsed as JSON (throws when it is not JSON). */
  json<T = unknown>(): T;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; anything else as JSON with Content-Type application/json. */
  body?: unknown;
  /** Connect from this local address (e.g. "::1" with a host of "::1"). */
  host?: string;
}

/** A client for one listener that records every response it got. */
export class Client {
  readonly responses: HttpResponse[] = [];
  readonly port: number;
  readonly host: string;

  constructor(port: number, host = "127.0.0.1") {
    this.port = port;
    this.host = host;
  }

  get origin(): string {
    return `http://${this.host.includes(":") ? `[${this.host}]` : this.host}:${this.port}`;
  }

  get(path: string, headers: Record<string, string> = {}): Promise<HttpResponse> {
    return this.send(path, { headers });
  }

  post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> {
    return this.send(path, { method: "POST", body, headers });
  }

  send(path: string, options: SendOptions = {}): Promise<HttpResponse> {
    const method = options.method ?? "GET";
    const headers: Record<string, string> = { ...options.headers };
    let payload: Buffer | undefined;
    if (typeof options.body === "string" || Buffer.isBuffer(options.body))
      payload = Buffer.from(options.body);
    else if (options.body !== undefined) {
      payload = Buffer.from(JSON.stringify(options.body));
      if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
        headers["content-type"] = "application/json";
      }
    }
    if (payload) headers["content-length"] = String(payload.length);
    return new Promise((resolve, reject) => {
      const request = http.request(
        { host: options.host ?? this.host, port: this.port, path, method, headers, agent: false },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (c: Buffer) => chunks.push(c));
          response.on("error", reject);
          response.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const result: HttpResponse = {
              method,
              path,
              status: response.statusCode ?? 0,
              headers: response.headers,
              text,
              json: <T>() => JSON.parse(text) as T,
            };
            this.responses.push(result);
            resolve(result);
          });
        },
      );
      request.on("error", reject);
      request.end(payload);
    });
  }
}
