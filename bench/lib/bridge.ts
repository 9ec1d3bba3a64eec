/**
 * The real bridge as a child process: `node dist/src/main.js --config <generated yaml>`, so its CPU
 * time and RSS are its own, run either as the container image runs it (its NODE_OPTIONS) or as the
 * plain command (no NODE_OPTIONS at all, as `npx` or a systemd unit runs it). The YAML is what an
 * operator would write for the fleet.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { LogLevels } from "../../src/config/schema.js";
import { DEFAULT_NODE_OPTIONS } from "../../src/runtime.js";
import { configYaml } from "../../testkit/config-yaml.js";
import { DIST, spawnNode, stopChild, type LoggedChild } from "./child.js";
import { pduId } from "./sim-fleet.js";

export interface BridgeConfigOptions {
  readonly dir: string;
  readonly name: string;
  /** Ports of the PDUs to poll (instance i is `pdu-NNNN` on ports[i]). */
  readonly ports: readonly number[];
  readonly broker: { readonly host: string; readonly port: number };
  readonly pollIntervalS: number;
  /**
   * REST API on this port (with this key, when given); omitted: API off. `worker`: Api.Worker
   * (default false); `trustedProxies`: Api.TrustedProxies (default none).
   */
  readonly api?: {
    readonly port: number;
    readonly apiKey?: string;
    readonly worker?: boolean;
    readonly trustedProxies?: readonly string[];
  };
  /** ActionsEnabled (with the simulator's admin/admin credentials). */
  readonly actions?: boolean;
  readonly logLevel?: (typeof LogLevels)[number];
  /**
   * The health listener (and its Prometheus metrics) on, as in an operator's configuration where it
   * is on by default (on a free loopback port); default off.
   */
  readonly health?: boolean;
}

/** Writes the configuration file and returns its path. */
export function writeBridgeConfig(o: BridgeConfigOptions): string {
  const text = configYaml({
    Mqtt: {
      Connection: { Host: o.broker.host, Port: o.broker.port, Scheme: "mqtt" },
      ClientId: `bench-${o.name}-${process.pid}`,
      ParentTopic: "pdu-bridge",
    },
    Pdus: Object.fromEntries(
      o.ports.map((port, i) => [
        pduId(i),
        {
          Connection: { Host: "127.0.0.1", Port: port, Scheme: "http", Timeout: 15 },
          PollInterval: o.pollIntervalS,
          ActionsEnabled: o.actions === true,
          ...(o.actions === true ? { Credentials: { Username: "admin", Password: "admin" } } : {}),
        },
      ]),
    ),
    HomeAssistant: { DiscoveryEnabled: true, DiscoveryTopic: "homeassistant", SensorExpireAfterSeconds: 300 },
    Api: o.api
      ? {
          Enabled: true,
          Port: o.api.port,
          Bind: "127.0.0.1",
          ApiKey: o.api.apiKey ?? "",
          Worker: o.api.worker === true,
          TrustedProxies: [...(o.api.trustedProxies ?? [])],
        }
      : { Enabled: false },
    // wrk's 64 connections all come from 127.0.0.1: one client, as the listeners count clients.
    // Without the API the key is left out, so an earlier build (poll-cpu's --base) reads the file.
    ...(o.api ? { Http: { MaxConnectionsPerClient: 1024 } } : {}),
    Health: o.health === true ? { Enabled: true, Port: 0, Bind: "127.0.0.1" } : { Enabled: false },
    Logging: { Level: o.logLevel ?? "info" },
  });
  const file = join(o.dir, `${o.name}.yaml`);
  writeFileSync(file, text);
  return file;
}

export type BridgeFlags = "image" | "plain";

/** Starts the bridge on `configFile` and waits for "pdu-bridge started". */
export async function startBridge(options: {
  configFile: string;
  logFile: string;
  /** More node options (the runner's `--bridge-node-option`). */
  nodeArgs?: readonly string[];
  /**
   * "image" (default): NODE_OPTIONS as the container image and the Helm chart set it; "plain":
   * exactly `node dist/src/main.js --config F` with no NODE_OPTIONS (whatever flags the CLI applies
   * by itself still apply).
   */
  flags?: BridgeFlags;
  /** The dist/ folder of the build to run (default: this one's). */
  dist?: string;
  /** How long the start may take, ms (default 30 s). */
  startTimeoutMs?: number;
  /** Environment variables the scenario sets (secrets such as SERVICE_WEBHOOK_0_SECRET). */
  env?: Readonly<Record<string, string>>;
}): Promise<LoggedChild> {
  const nodeArgs = options.nodeArgs ?? [];
  const env = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_") && k !== "NODE_OPTIONS"),
    ),
    ...options.env,
  };
  const bridge = spawnNode(resolve(options.dist ?? DIST, "src/main.js"), ["--config", options.configFile], {
    logFile: options.logFile,
    nodeArgs,
    // The API key and PDU credentials are in the file; keep SERVICE_* from the caller's shell out.
    // NODE_OPTIONS as the container image and the Helm chart set it (`--bridge-node-option` flags
    // come later on the command line and win).
    env: options.flags === "plain" ? env : { ...env, NODE_OPTIONS: DEFAULT_NODE_OPTIONS },
  });
  await bridge.waitForLog("pdu-bridge started", options.startTimeoutMs ?? 30_000);
  return bridge;
}

/** {@link startBridge} as a measured process: its pid, and how to stop it. */
export async function bridgeProcess(
  configFile: string,
  logFile: string,
  nodeArgs: readonly string[],
  flags: BridgeFlags = "image",
): Promise<{ pid: number; stop: () => Promise<void> }> {
  const child = await startBridge({ configFile, logFile, nodeArgs, flags });
  return { pid: child.pid, stop: () => stopChild(child.child) };
}
