/**
 * Where the bridge's heap goes: starts a fleet of simulated 24-outlet PDUs, a mosquitto and the
 * bridge (HA discovery on, API off, as in scenario fleet), waits for a few polls of every PDU,
 * takes a heap snapshot through the inspector and prints the live heap by part (retained sizes)
 * and by kind of string, per PDU.
 *
 *   node dist/bench/heap-breakdown.js [--pdus 250] [--interval 10] [--polls 3] [--save FILE]
 *   node dist/bench/heap-breakdown.js --snapshot FILE.heapsnapshot --pdus 250   (analyse only)
 *   ... --explain Buffer   (also: who holds the instances of a class, by chain of dominators)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { killAllStarted, stopChild } from "./lib/child.js";
import { breakdown, formatBreakdown, takeHeapSnapshot } from "./lib/heap-snapshot.js";
import { startSimFleet } from "./lib/sim-fleet.js";
import { ensureTools } from "./lib/tools.js";

const { values } = parseArgs({
  options: {
    pdus: { type: "string", default: "250" },
    interval: { type: "string", default: "10" },
    polls: { type: "string", default: "3" },
    snapshot: { type: "string" },
    save: { type: "string" },
    explain: { type: "string" },
  },
});
const pdus = Number(values.pdus);
const prefixes = ["pdu-bridge/", "homeassistant/"];

async function snapshotOfFleet(): Promise<string> {
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
    const bridge = await startBridge({
      configFile,
      logFile: join(dir, "bridge.log"),
      nodeArgs: ["--inspect=127.0.0.1:0"],
    });
    try {
      await fleet.reset();
      await fleet.waitForPolls(Number(values.polls), (Number(values.polls) + 3) * intervalS * 1000 + 60_000);
      return await takeHeapSnapshot(() => bridge.log());
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
  const json =
    values.snapshot === undefined ? await snapshotOfFleet() : readFileSync(values.snapshot, "utf8");
  if (values.save !== undefined) writeFileSync(values.save, json);
  process.stdout.write(`${formatBreakdown(breakdown(json, prefixes, 20, values.explain), pdus)}\n`);
} catch (error) {
  killAllStarted();
  process.stderr.write(`heap-breakdown: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
}
