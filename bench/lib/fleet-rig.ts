/**
 * The set-up the `fleet` and `scale` scenarios share: a mosquitto, a simulated fleet of 24-outlet
 * PDUs in a few child processes and a subscriber counting the broker's traffic, plus the two
 * pollers measured on it: the naive floor (bench/baseline-fleet.ts) and the bridge (`node
 * dist/src/main.js --config <yaml>`, with the image's NODE_OPTIONS or as the plain command).
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startBridge, writeBridgeConfig, type BridgeFlags } from "./bridge.js";
import { startBroker, type Broker } from "./broker.js";
import { DIST, IpcChild, spawnNode, stopChild, type LoggedChild } from "./child.js";
import { measurePoller, type BenchContext, type Poller, type PollerRun } from "./measure.js";
import { startSimFleet, type SimFleet } from "./sim-fleet.js";

export const OUTLETS = 24;

export interface Rig {
  readonly ctx: BenchContext;
  /** Names the files of this rig in the scratch directory. */
  readonly name: string;
  readonly pdus: number;
  readonly intervalMs: number;
  readonly warmupPolls: number;
  readonly fleet: SimFleet;
  readonly broker: Broker;
  readonly counter: IpcChild;
  /** The bridge's configuration for this fleet. */
  readonly configFile: string;
}

/** Starts a rig, runs `body` on it, and always tears it down. */
export async function withRig<T>(
  ctx: BenchContext,
  o: { name: string; pdus: number; intervalS: number; frozen?: boolean; warmupPolls?: number },
  body: (rig: Rig) => Promise<T>,
): Promise<T> {
  const processes = Math.max(1, Math.min(8, Math.ceil(o.pdus / 250)));
  const broker = await startBroker(ctx.tools.mosquitto);
  let fleet: SimFleet | null = null;
  let counter: IpcChild | null = null;
  try {
    fleet = await startSimFleet({ pdus: o.pdus, processes, outlets: OUTLETS, frozen: o.frozen === true });
    counter = new IpcChild(resolve(DIST, "bench/lib/mqtt-counter.js"), [broker.url]);
    await counter.ready();
    const configFile = writeBridgeConfig({
      dir: ctx.workDir,
      name: `${o.name}-bridge`,
      ports: fleet.ports,
      broker,
      pollIntervalS: o.intervalS,
    });
    return await body({
      ctx,
      name: o.name,
      pdus: o.pdus,
      intervalMs: o.intervalS * 1000,
      warmupPolls: o.warmupPolls ?? 3,
      fleet,
      broker,
      counter,
      configFile,
    });
  } finally {
    if (counter !== null) {
      await counter.request("close").catch(() => undefined);
      await counter.stop();
    }
    await fleet?.close();
    await broker.close();
  }
}

const common = (rig: Rig) => ({
  fleet: rig.fleet,
  pdus: rig.pdus,
  broker: rig.broker,
  counter: rig.counter,
  intervalMs: rig.intervalMs,
  warmupPolls: rig.warmupPolls,
  log: rig.ctx.log,
});

/** Measures the naive floor on the rig; `tag` names the run and its log file. */
export function measureBaseline(rig: Rig, o: { tag: string; windowSeconds: number }): Promise<PollerRun> {
  const settingsFile = join(rig.ctx.workDir, `${rig.name}-baseline.json`);
  writeFileSync(
    settingsFile,
    JSON.stringify({ ports: rig.fleet.ports, broker: rig.broker.url, intervalMs: rig.intervalMs }),
  );
  return measurePoller({
    ...common(rig),
    name: `naive floor, ${o.tag}`,
    windowSeconds: o.windowSeconds,
    prefixes: ["baseline"],
    start: async () => {
      const child = spawnNode(resolve(DIST, "bench/baseline-fleet.js"), [settingsFile], {
        logFile: join(rig.ctx.workDir, `${rig.name}-baseline-${o.tag.replace(/\W+/g, "-")}.log`),
      });
      await child.waitForLog("ready", 30_000);
      return { pid: child.pid, stop: () => stopChild(child.child) };
    },
  });
}

/**
 * Measures the bridge on the rig. `attach` may hook into the started child (e.g. a profiler) and
 * add `windowStart` / `windowEnd` steps.
 */
export function measureBridge(
  rig: Rig,
  o: {
    tag: string;
    windowSeconds: number;
    flags: BridgeFlags;
    nodeArgs?: readonly string[];
    attach?: (child: LoggedChild) => Promise<Pick<Poller, "windowStart" | "windowEnd">>;
  },
): Promise<PollerRun> {
  return measurePoller({
    ...common(rig),
    name: `pdu-bridge, ${o.tag}`,
    windowSeconds: o.windowSeconds,
    prefixes: ["pdu-bridge", "homeassistant"],
    settlePrefix: "homeassistant",
    start: async () => {
      const child = await startBridge({
        configFile: rig.configFile,
        logFile: join(rig.ctx.workDir, `${rig.name}-bridge-${o.tag.replace(/\W+/g, "-")}.log`),
        nodeArgs: [...rig.ctx.bridgeNodeArgs, ...(o.nodeArgs ?? [])],
        flags: o.flags,
      });
      const hooks = (await o.attach?.(child)) ?? {};
      return { pid: child.pid, ...hooks, stop: () => stopChild(child.child) };
    },
  });
}

/** The mean CPU per poll of two runs of the floor (either alone when the other has none). */
export function meanCpu(a: PollerRun, b?: PollerRun): number | null {
  const x = a.cpuMsPerPoll;
  const y = b?.cpuMsPerPoll ?? null;
  return x === null || y === null ? (x ?? y) : (x + y) / 2;
}
