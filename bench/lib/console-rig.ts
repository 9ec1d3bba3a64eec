/**
 * The set-up the console benches share (bench/console.ts, bench/console-page.ts): mosquitto, a
 * simulated fleet of 24-outlet PDUs polled every 10 s, and the bridge (its own process, with the
 * image's NODE_OPTIONS) with the REST API on a free loopback port. `--quick`: 50 PDUs and 10 s
 * windows instead of 1000 and 60 s.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../testkit/repo.js";
import { startBridge, writeBridgeConfig } from "./bridge.js";
import { startBroker, type Broker } from "./broker.js";
import { killAllStarted, sleep, stopChild, type LoggedChild } from "./child.js";
import { startSimFleet, type SimFleet } from "./sim-fleet.js";

export const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

export interface ConsoleRig {
  readonly pdus: number;
  /** Seconds of each measured window. */
  readonly windowS: number;
  /** Every PDU's PollInterval, seconds. */
  readonly intervalS: number;
  readonly broker: Broker;
  readonly fleet: SimFleet;
  readonly apiPort: number;
  /** `http://127.0.0.1:<apiPort>`. */
  readonly origin: string;
  readonly bridge: LoggedChild;
  /** Waits for `polls` polls of every PDU, then one more poll interval: the history rings allocated. */
  steady(polls: number): Promise<void>;
  /** Writes `bench/results/<name>-<timestamp>.json` and says where. */
  writeResults(data: unknown): void;
  /** Stops the bridge, the fleet and the broker. */
  close(): Promise<void>;
}

/** Starts the rig of the bench `name` (its files and results are named after it). */
export async function startConsoleRig(o: {
  readonly name: string;
  readonly quick: boolean;
  /** The REST API's key (default none: control off). */
  readonly apiKey?: string;
  /** Api.TrustedProxies (default none). */
  readonly trustedProxies?: readonly string[];
}): Promise<ConsoleRig> {
  process.on("SIGINT", () => {
    killAllStarted();
    process.exit(130);
  });
  const pdus = o.quick ? 50 : 1000;
  const intervalS = 10;
  const dir = mkdtempSync(join(tmpdir(), `pdu-bridge-bench-${o.name}-`));
  const broker = await startBroker("mosquitto");
  const fleet = await startSimFleet({ pdus, processes: o.quick ? 2 : 4, outlets: 24 });
  const apiPort = await freePort();
  const configFile = writeBridgeConfig({
    dir,
    name: o.name,
    ports: fleet.ports,
    broker,
    pollIntervalS: intervalS,
    api: {
      port: apiPort,
      ...(o.apiKey === undefined ? {} : { apiKey: o.apiKey }),
      ...(o.trustedProxies === undefined ? {} : { trustedProxies: o.trustedProxies }),
    },
    logLevel: "info",
  });
  // A longer wait than the other scenarios: 1000 PDUs on a busy machine take a while.
  const bridge = await startBridge({
    configFile,
    logFile: join(dir, "bridge.log"),
    startTimeoutMs: 180_000,
  }).catch(async (error: unknown) => {
    killAllStarted();
    await fleet.close();
    await broker.close();
    throw error;
  });
  return {
    pdus,
    windowS: o.quick ? 10 : 60,
    intervalS,
    broker,
    fleet,
    apiPort,
    origin: `http://127.0.0.1:${apiPort}`,
    bridge,
    async steady(polls) {
      await fleet.waitForPolls(polls, 120_000);
      await sleep(intervalS * 1000);
    },
    writeResults(data) {
      const stamp = new Date().toISOString().replace(/[:.]/g, "-");
      const file = join(process.cwd(), "bench", "results", `${o.name}-${stamp}.json`);
      writeFileSync(file, JSON.stringify(data, null, 2));
      log(`${o.name}: results in ${file}`);
    },
    async close() {
      await stopChild(bridge.child);
      await fleet.close();
      await broker.close();
    },
  };
}
