/**
 * Where the bridge's heap goes: starts a fleet of simulated 24-outlet PDUs, a mosquitto and the
 * bridge (HA discovery on, API off, as in scenario fleet), waits for a few polls of every PDU,
 * takes a heap snapshot through the inspector and prints the live heap by part (retained sizes)
 * and by kind of string, per PDU.
 *
 *   node dist/bench/heap-breakdown.js [--pdus 250] [--interval 10] [--polls 3] [--save FILE]
 *   node dist/bench/heap-breakdown.js --snapshot FILE.heapsnapshot --pdus 250   (analyse only)
 *   ... --explain Buffer   (also: who holds the instances of a class, by chain of dominators)
 *   ... --at 16   (the snapshot 16 s after the bridge started instead of after the polls: start-up)
 *   node dist/bench/heap-breakdown.js --rss [--plain] [--main PATH] --pdus 1000 --polls 6
 *     no snapshot: peak RSS (VmHWM) of the bridge and any child it started, after the polls; with
 *     --plain without NODE_OPTIONS (as `npx pdu-bridge` runs it), else with the image's; --main runs
 *     another build's dist/src/main.js (a before/after comparison in the same conditions)
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, killAllStarted, sleep, spawnNode, stopChild, type LoggedChild } from "./lib/child.js";
import { breakdown, formatBreakdown, takeHeapSnapshot } from "./lib/heap-snapshot.js";
import { startSimFleet } from "./lib/sim-fleet.js";
import { DEFAULT_NODE_OPTIONS } from "../src/runtime.js";
import { ensureTools } from "./lib/tools.js";

const { values } = parseArgs({
  options: {
    pdus: { type: "string", default: "250" },
    interval: { type: "string", default: "10" },
    polls: { type: "string", default: "3" },
    snapshot: { type: "string" },
    save: { type: "string" },
    explain: { type: "string" },
    rss: { type: "boolean", default: false },
    plain: { type: "boolean", default: false },
    main: { type: "string" },
    at: { type: "string" },
  },
});
const pdus = Number(values.pdus);
const prefixes = ["pdu-bridge/", "homeassistant/"];

/** VmHWM (MB) of `pid` and of every process below it. */
function peakRssMb(pid: number): number {
  let kb = 0;
  const visit = (p: number) => {
    try {
      kb += Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
      for (const task of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
        for (const c of children === "" ? [] : children.split(" ")) visit(Number(c));
      }
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return Math.round(kb / 1024);
}

/** Runs `measure` on a bridge polling a fleet of `pdus` simulated PDUs, after `polls` polls of each. */
async function withFleet<T>(measure: (bridge: LoggedChild) => Promise<T>): Promise<T> {
  const intervalS = Number(values.interval);
  const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-heap-"));
  const tools = ensureTools(false, (line) => process.stderr.write(`${line}\n`));
  const broker = await startBroker(tools.mosquitto);
  const fleet = await startSimFleet({ pdus, processes: Math.min(4, Math.ceil(pdus / 250)), outlets: 24 });
  try {
    const configFile = writeBridgeConfig({
      dir,
      name: "heap",
      ports: fleet.ports,
      broker,
      pollIntervalS: intervalS,
    });
    const logFile = join(dir, "bridge.log");
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")));
    if (values.plain) delete env.NODE_OPTIONS;
    const bridge = values.rss
      ? spawnNode(values.main ?? join(DIST, "src/main.js"), ["--config", configFile], {
          logFile,
          env: values.plain ? env : { ...env, NODE_OPTIONS: DEFAULT_NODE_OPTIONS },
        })
      : await startBridge({ configFile, logFile, nodeArgs: ["--inspect=127.0.0.1:0"] });
    if (values.rss) await bridge.waitForLog("pdu-bridge started", 60_000);
    try {
      await fleet.reset();
      if (values.at !== undefined) await sleep(Number(values.at) * 1000);
      else
        await fleet.waitForPolls(
          Number(values.polls),
          (Number(values.polls) + 3) * intervalS * 1000 + 60_000,
        );
      return await measure(bridge);
    } finally {
      await stopChild(bridge.child);
    }
  } finally {
    await fleet.close();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  if (values.rss) {
    const mb = await withFleet((bridge) => Promise.resolve(peakRssMb(bridge.pid)));
    const how = values.plain ? "plain" : `NODE_OPTIONS="${DEFAULT_NODE_OPTIONS}"`;
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(" ");
    process.stdout.write(
      `peak RSS ${mb} MB: ${values.main ?? "this build"}, ${how}, ${pdus} PDUs after ${values.polls} polls, load ${load}\n`,
    );
  } else {
    const json =
      values.snapshot === undefined
        ? await withFleet((bridge) => takeHeapSnapshot(() => bridge.log()))
        : readFileSync(values.snapshot, "utf8");
    if (values.save !== undefined) writeFileSync(values.save, json);
    process.stdout.write(`${formatBreakdown(breakdown(json, prefixes, 20, values.explain), pdus)}\n`);
  }
} catch (error) {
  killAllStarted();
  process.stderr.write(`heap-breakdown: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
}
