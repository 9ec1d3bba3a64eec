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
import { measurePoller, type BenchContext, type Companion, type Poller, type PollerRun } from "./measure.js";
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
  /** Child processes of the fleet, and whether its values stand still: a twin fleet starts alike. */
  readonly fleetProcesses: number;
  readonly frozen: boolean;
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
      fleetProcesses: processes,
      frozen: o.frozen === true,
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
  return measurePoller({
    ...common(rig),
    name: `naive floor, ${o.tag}`,
    windowSeconds: o.windowSeconds,
    prefixes: ["baseline"],
    start: () => startBaseline(rig, rig.fleet, o.tag),
  });
}

/** Spawns the naive floor polling `fleet` and publishing to the rig's broker. */
async function startBaseline(rig: Rig, fleet: SimFleet, tag: string): Promise<Poller> {
  const file = `${rig.name}-baseline-${tag.replace(/\W+/g, "-")}`;
  const settingsFile = join(rig.ctx.workDir, `${file}.json`);
  writeFileSync(
    settingsFile,
    JSON.stringify({ ports: fleet.ports, broker: rig.broker.url, intervalMs: rig.intervalMs }),
  );
  const child = spawnNode(resolve(DIST, "bench/baseline-fleet.js"), [settingsFile], {
    logFile: join(rig.ctx.workDir, `${file}.log`),
  });
  await child.waitForLog("ready", 30_000);
  return { pid: child.pid, stop: () => stopChild(child.child) };
}

/**
 * Runs `body` with the naive floor polling a twin of the rig's fleet (the same PDUs: seeds, outlets,
 * frozen or not; its own simulator processes) and publishing to the same broker, warmed up like a
 * measured poller: hand the companion to {@link measureBridge} (`beside`) and both are measured over
 * the same window. Stops the floor and the twin fleet afterwards.
 */
export async function withFloorBeside<T>(
  rig: Rig,
  tag: string,
  body: (floor: Companion) => Promise<T>,
): Promise<T> {
  const twin = await startSimFleet({
    pdus: rig.pdus,
    processes: rig.fleetProcesses,
    outlets: OUTLETS,
    frozen: rig.frozen,
  });
  try {
    const floor = await startBaseline(rig, twin, `beside ${tag}`);
    try {
      await twin.waitForPolls(rig.warmupPolls, rig.intervalMs * (rig.warmupPolls + 1) + 60_000);
      return await body({
        name: `naive floor, beside ${tag}`,
        pid: floor.pid,
        fleet: twin,
        prefixes: ["baseline"],
      });
    } finally {
      await floor.stop();
    }
  } finally {
    await twin.close();
  }
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
    /** A poller running beside the bridge, measured over the same window ({@link withFloorBeside}). */
    beside?: Companion;
  },
): Promise<PollerRun> {
  return measurePoller({
    ...common(rig),
    ...(o.beside === undefined ? {} : { companion: o.beside }),
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
