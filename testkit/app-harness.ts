/**
 * The one in-process bridge harness, for end-to-end tests: real simulators, the real configuration
 * loader (from a YAML string), the real composed {@link App} (poller, MQTT bridge with its embedded
 * broker or an external one, control core, REST API and health listeners on port 0), a real mqtt.js
 * subscriber, every log line captured (or none, on request), and one `close()` that stops
 * everything in reverse order.
 */
import { parse } from "yaml";
import { App } from "../src/app.js";
import { parseConfigText, type Env } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/index.js";
import { silentLogger } from "../src/log.js";
import type { ConsoleLimits } from "../src/ui/feed.js";
import { configYaml, yamlFragment, type ConfigDocument, type PduDocument } from "./config-yaml.js";
import { Client } from "./http-harness.js";
import { LogCapture, type LogLine } from "./log-capture.js";
import { Recorder } from "./mqtt-client.js";
import { waitFor } from "./wait.js";

/** How one instance of the configuration talks to its simulator. */
export interface PduOptions {
  readonly actionsEnabled?: boolean;
  /** Seconds per PDU request, default 5. */
  readonly timeout?: number;
  /** Seconds, default 5. */
  readonly pollInterval?: number;
  /** Default admin / admin (the simulator's default user); null: no Credentials at all. */
  readonly credentials?: { readonly username: string; readonly password: string } | null;
  /** `RelayProtection` in seconds; default the service's. */
  readonly relayProtection?: number;
  /** More keys of the entry (`Feed`, `OutletCircuits`, ...). */
  readonly more?: PduDocument;
}

/** The YAML lines of one `Pdus` entry pointing at `sim` (indented for the `Pdus:` map). */
export function pduYaml(id: string, sim: Simulator, o: PduOptions = {}): string {
  const credentials = o.credentials === undefined ? { username: "admin", password: "admin" } : o.credentials;
  const entry: PduDocument = {
    Connection: { Host: sim.host, Port: sim.port, Scheme: sim.scheme, Timeout: o.timeout ?? 5 },
    ...(credentials === null
      ? {}
      : { Credentials: { Username: credentials.username, Password: credentials.password } }),
    PollInterval: o.pollInterval ?? 5,
    ActionsEnabled: o.actionsEnabled ?? false,
    ...(o.relayProtection === undefined ? {} : { RelayProtection: o.relayProtection }),
    ...o.more,
  };
  return yamlFragment({ [id]: entry }, 2);
}

export interface AppYamlOptions {
  /** `Pdus` entries from {@link pduYaml}. */
  readonly pdus: readonly string[];
  /** The REST API: off when undefined; `key` "" leaves control disabled. Port default 0. */
  readonly api?: {
    readonly key: string;
    readonly bind?: string;
    readonly port?: number;
    readonly trustedProxies?: readonly string[];
    /**
     * `Api.Worker`; default: on when the environment has PDU_BRIDGE_TEST_API_WORKER=1, so that the
     * whole suite can run against the API worker (`PDU_BRIDGE_TEST_API_WORKER=1 npm test`).
     */
    readonly worker?: boolean;
    /** More keys of the `Api` flow mapping, as YAML (`Oidc: { ... }, PublicUrl: ...`). */
    readonly more?: string;
  };
  /** The health listener, default on, port default 0. */
  readonly health?: boolean | { readonly port: number };
  readonly parentTopic?: string;
  /** An external broker; default: the embedded broker on 127.0.0.1, port 0. */
  readonly broker?: { readonly host: string; readonly port: number };
  /** Appended as is (more top-level sections). */
  readonly extra?: string;
}

/** A complete configuration file for the service, every listener on port 0 unless given. */
export function appYaml(o: AppYamlOptions): string {
  const health =
    typeof o.health === "object"
      ? { Enabled: true, Port: o.health.port }
      : { Enabled: o.health ?? true, Port: 0 };
  const api = o.api;
  const text = configYaml({
    Mqtt: {
      ...(o.broker === undefined
        ? { Embedded: { Bind: "127.0.0.1", Port: 0 } }
        : { Connection: { Host: o.broker.host, Port: o.broker.port, Scheme: "mqtt" } }),
      ParentTopic: o.parentTopic ?? "pdu-bridge",
    },
    ...(api === undefined
      ? {}
      : {
          Api: {
            Enabled: true,
            Bind: api.bind ?? "127.0.0.1",
            Port: api.port ?? 0,
            ApiKey: api.key,
            ...(api.trustedProxies === undefined ? {} : { TrustedProxies: [...api.trustedProxies] }),
            Worker: api.worker ?? process.env.PDU_BRIDGE_TEST_API_WORKER === "1",
            ...(api.more === undefined ? {} : (parse(`{ ${api.more} }`) as ConfigDocument["Api"])),
          },
        }),
    Health: { ...health, Bind: "127.0.0.1" },
  });
  // The `Pdus` entries (pduYaml's, maybe with lines of the caller's) and `extra` are YAML text.
  return `${[text.trimEnd(), "Pdus:", ...o.pdus, ...(o.extra === undefined ? [] : [o.extra])].join("\n")}\n`;
}

export type { LogLine } from "./log-capture.js";

export interface AppHarness<S extends string> {
  readonly sims: Readonly<Record<S, Simulator>>;
  readonly app: App;
  readonly config: Config;
  /** A recording HTTP client of the REST API (throws when the API is off). */
  readonly api: Client;
  /** A recording HTTP client of the health listener (throws when it is off). */
  readonly health: Client;
  /** Where MQTT clients connect (the embedded broker, or the configured one). */
  readonly broker: { readonly host: string; readonly port: number };
  /** `Mqtt.ParentTopic`. */
  readonly parent: string;
  /** A subscriber to `<parent>/#`, connected before the harness was returned (see `subscribe`). */
  readonly mqtt: Recorder;
  /** The log capture (empty when `captureLogs` is false). */
  readonly log: LogCapture;
  /** Every log line so far, parsed. */
  logs(): LogLine[];
  /** Every log line so far, as written (to search for secrets). */
  logText(): string;
  /** The control audit lines (`audit: "control"`) so far. */
  audits(): LogLine[];
  /** The audit lines of MQTT commands so far, without the probes of {@link commandsReady}. */
  mqttAudits(): LogLine[];
  /**
   * Publishes one command (as {@link mqtt}) and returns the audit line it leaves: the next MQTT
   * audit line of `topic` (waiting for it).
   */
  publishCommand(topic: string, payload: string): Promise<LogLine>;
  /** Another subscriber (closed by `close()`). */
  subscribe(topics: readonly string[]): Promise<Recorder>;
  /** Waits until the instance has a snapshot polled at or after `since` (epoch ms, default: any). */
  waitForPoll(instanceId: string, since?: number, timeoutMs?: number): Promise<void>;
  /**
   * Waits until the bridge receives commands of `instanceId` (its subscriptions are made after the
   * connect, possibly after `App.start` returned): publishes a refused probe command (device
   * `probe`) until its audit line appears. Probe audit lines have `topic` {@link probeTopic}.
   */
  commandsReady(instanceId: string): Promise<void>;
  probeTopic(instanceId: string): string;
  close(): Promise<void>;
}

export interface AppHarnessOptions<S extends string> {
  /** Simulators to start first, by name. */
  readonly sims?: Readonly<Record<S, SimulatorOptions>>;
  /** Runs after the simulators started, before the App starts (e.g. inject a fault). */
  readonly beforeStart?: (sims: Readonly<Record<S, Simulator>>) => Promise<void> | void;
  /** The configuration file, given the running simulators. */
  readonly yaml: (sims: Readonly<Record<S, Simulator>>) => string;
  /** The environment the loader sees (secrets); default none. */
  readonly env?: Env;
  /** Keep every log line (default true); false logs nothing, for runs too long to keep it all. */
  readonly captureLogs?: boolean;
  /** The console's event-stream bounds (App option); default the service's. */
  readonly consoleLimits?: ConsoleLimits;
  /**
   * Subscribe {@link AppHarness.mqtt} to `<parent>/#` (default true); false subscribes it to
   * nothing, for runs whose every published message would otherwise be kept.
   */
  readonly subscribeAll?: boolean;
  /** Wait for the first successful poll of every instance before returning (default false). */
  readonly waitForFirstPolls?: boolean;
}

/**
 * A test's own configuration without a `Health` key gets the health listener on 127.0.0.1 port 0,
 * not the service's default 0.0.0.0:8081: a test listens on loopback only, on a port of its own.
 */
function withLoopbackHealth(text: string): string {
  const doc: unknown = parse(text);
  const hasHealth = typeof doc === "object" && doc !== null && "Health" in doc;
  return hasHealth ? text : `${text.trimEnd()}\nHealth: { Bind: 127.0.0.1, Port: 0 }\n`;
}

export async function startAppHarness<S extends string = never>(
  options: AppHarnessOptions<S>,
): Promise<AppHarness<S>> {
  const sims = {} as Record<S, Simulator>;
  const recorders: Recorder[] = [];
  const capture = new LogCapture();
  let app: App | null = null;
  const close = async (): Promise<void> => {
    await Promise.allSettled(recorders.map((r) => r.close()));
    await app?.stop();
    await Promise.allSettled(Object.values<Simulator>(sims).map((s) => s.close()));
  };
  try {
    for (const [name, simOptions] of Object.entries<SimulatorOptions>(options.sims ?? {})) {
      sims[name as S] = await startSimulator(simOptions);
    }
    await options.beforeStart?.(sims);
    const config = await parseConfigText(
      withLoopbackHealth(options.yaml(sims)),
      "app-test.yaml",
      options.env ?? {},
    );
    const logger = options.captureLogs === false ? silentLogger() : capture.logger;
    const started = await App.start(config, {
      logger,
      ...(options.consoleLimits === undefined ? {} : { consoleLimits: options.consoleLimits }),
    });
    app = started;
    const { apiPort, healthPort, embeddedBroker } = started.endpoints;
    const broker = embeddedBroker ?? {
      host: config.Mqtt.Connection.Host ?? "127.0.0.1",
      port: config.Mqtt.Connection.Port,
    };
    const parent = config.Mqtt.ParentTopic;
    const subscribe = async (topics: readonly string[]): Promise<Recorder> => {
      const recorder = await Recorder.connect(broker, topics);
      recorders.push(recorder);
      return recorder;
    };
    const mqtt = await subscribe(options.subscribeAll === false ? [] : [`${parent}/#`]);
    const api = apiPort === null ? null : new Client(apiPort);
    const health = healthPort === null ? null : new Client(healthPort);
    const audits = (): LogLine[] => capture.audits;
    const probeTopic = (id: string) => `${parent}/${id}/probe/outlets/0/set`;
    const mqttAudits = (): LogLine[] =>
      audits().filter((l) => l.source === "mqtt" && !String(l.topic).includes("/probe/"));
    if (options.waitForFirstPolls === true) {
      await waitFor(
        () => config.instances.every((i) => started.store.get(i.id)?.snapshot),
        "the first poll of every instance",
        15_000,
      );
    }
    return {
      sims,
      app: started,
      config,
      get api() {
        if (api === null) throw new Error("the REST API is not enabled in this configuration");
        return api;
      },
      get health() {
        if (health === null) throw new Error("the health listener is not enabled in this configuration");
        return health;
      },
      broker,
      parent,
      mqtt,
      log: capture,
      logs: () => capture.lines,
      logText: () => capture.text(),
      audits,
      mqttAudits,
      async publishCommand(topic, payload) {
        const ofTopic = () => mqttAudits().filter((l) => l.topic === topic);
        const seen = ofTopic().length;
        await mqtt.publish(topic, payload);
        return waitFor(() => ofTopic()[seen], `the audit line of ${topic} ${payload}`);
      },
      subscribe,
      async waitForPoll(instanceId, since = 0, timeoutMs = 15_000) {
        await waitFor(
          () => (started.store.get(instanceId)?.lastSuccessUtc ?? -1) >= since,
          `a successful poll of ${instanceId}`,
          timeoutMs,
        );
      },
      async commandsReady(instanceId) {
        const topic = probeTopic(instanceId);
        const seen = () => audits().some((l) => l.topic === topic);
        const deadline = Date.now() + 15_000;
        while (!seen()) {
          if (Date.now() > deadline) throw new Error(`the bridge never received commands of ${instanceId}`);
          await mqtt.publish(topic, "probe");
          await waitFor(seen, "the probe's audit line", 300).catch(() => undefined);
        }
      },
      probeTopic,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The App with the REST API in its worker thread (`Api.Worker`, API key `key`) polling one simulated
 * PDU, `lab` (3 outlets, control on, a 60 s poll interval), after its first poll.
 */
export async function startApiWorkerHarness(key: string): Promise<AppHarness<"lab">> {
  const h = await startAppHarness<"lab">({
    sims: { lab: { outlets: 3 } },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("lab", sims.lab, { actionsEnabled: true, pollInterval: 60 })],
        api: { key, worker: true },
      }),
  });
  await h.waitForPoll("lab");
  return h;
}
