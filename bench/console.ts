/**
 * Console event streams on a 1,000-PDU fleet: `node dist/bench/console.js [--quick]`.
 *
 * The bridge (its own process, as the image runs it) polls 1000 simulated 24-outlet PDUs every 10 s
 * and publishes to mosquitto, with the REST API on. Its CPU and RSS are measured over the same
 * window three times: with no event stream open; with 50 streams as console pages open them (25
 * fleet views, `?snapshots=false`, and 25 PDU views, `?instance=<one PDU>`); and with 50 streams that
 * take every snapshot (no filter: the worst case). The streams are read by this process.
 */
import http from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { DEFAULT_NODE_OPTIONS } from "../src/runtime.js";
import { writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, killAllStarted, sleep, spawnNode, stopChild } from "./lib/child.js";
import { ProcMonitor } from "./lib/proc.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";
import { freePort } from "../testkit/mosquitto.js";

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } }, strict: true });
const quick = values.quick === true;
const pdus = quick ? 50 : 1000;
const windowS = quick ? 10 : 60;
const intervalS = 10;
const log = (line: string) => process.stdout.write(`${line}\n`);
process.on("SIGINT", () => {
  killAllStarted();
  process.exit(130);
});

interface Stream {
  bytes: number;
  events: number;
  readonly request: http.ClientRequest;
}

function openStream(port: number, path: string): Stream {
  const stream: Stream = { bytes: 0, events: 0, request: null as unknown as http.ClientRequest };
  const request = http.get({ host: "127.0.0.1", port, path, agent: false }, (response) => {
    if (response.statusCode !== 200) log(`console: ${path} answered HTTP ${response.statusCode}`);
    response.on("data", (chunk: Buffer) => {
      stream.bytes += chunk.length;
      for (let i = chunk.indexOf("event: "); i >= 0; i = chunk.indexOf("event: ", i + 1)) stream.events++;
    });
  });
  request.on("error", () => undefined);
  return Object.assign(stream, { request });
}

const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-bench-console-"));
const broker = await startBroker("mosquitto");
const fleet = await startSimFleet({ pdus, processes: quick ? 2 : 4, outlets: 24 });
const apiPort = await freePort();
const configFile = writeBridgeConfig({
  dir,
  name: "console",
  ports: fleet.ports,
  broker,
  pollIntervalS: intervalS,
  api: { port: apiPort, apiKey: "bench-console-key-0123456789abcd" },
  logLevel: "info",
});
// As lib/bridge.ts starts it, with a longer wait: 1000 PDUs on a busy machine take a while.
const bridge = spawnNode(resolve(DIST, "src/main.js"), ["--config", configFile], {
  logFile: join(dir, "bridge.log"),
  env: {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_"))),
    NODE_OPTIONS: DEFAULT_NODE_OPTIONS,
  },
});
await bridge.waitForLog("pdu-bridge started", 180_000).catch(async (error: unknown) => {
  killAllStarted();
  await fleet.close();
  await broker.close();
  throw error;
});
const monitor = new ProcMonitor(bridge.pid, 500);
const rows: Record<string, unknown>[] = [];
try {
  log(`console: ${pdus} PDUs × 24 outlets every ${intervalS} s; windows of ${windowS} s`);
  await fleet.waitForPolls(2, 120_000);
  await sleep(intervalS * 1000); // history rings allocated, steady state

  const measure = async (name: string, paths: string[]) => {
    const streams = paths.map((p) => openStream(apiPort, p));
    await sleep(2000);
    for (const s of streams) {
      s.bytes = 0;
      s.events = 0;
    }
    monitor.begin();
    await sleep(windowS * 1000);
    const usage = monitor.end();
    const bytes = streams.reduce((n, s) => n + s.bytes, 0);
    const events = streams.reduce((n, s) => n + s.events, 0);
    for (const s of streams) s.request.destroy();
    const row = {
      name,
      streams: paths.length,
      cpuPercent: Math.round((usage.cpuSeconds / usage.seconds) * 1000) / 10,
      rssPeakMiB: Math.round(usage.rssPeakBytes / 2 ** 20),
      rssLastMiB: Math.round(usage.rssLastBytes / 2 ** 20),
      eventsPerSecond: Math.round(events / usage.seconds),
      streamedMiBPerSecond: Math.round((bytes / usage.seconds / 2 ** 20) * 100) / 100,
    };
    rows.push(row);
    log(JSON.stringify(row));
    await sleep(3000);
  };

  await measure("no streams", []);
  await measure(
    "50 console pages (25 fleet, 25 PDU views)",
    Array.from({ length: 50 }, (_, i) =>
      i < 25 ? "/api/v1/events?snapshots=false" : `/api/v1/events?instance=${pduId((i * 17) % pdus)}`,
    ),
  );
  await measure(
    "50 streams of every snapshot",
    Array.from({ length: 50 }, () => "/api/v1/events"),
  );
  const file = join(
    process.cwd(),
    "bench",
    "results",
    `console-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(file, JSON.stringify({ pdus, intervalS, windowS, rows }, null, 2));
  log(`console: results in ${file}`);
} finally {
  monitor.stop();
  await stopChild(bridge.child);
  await fleet.close();
  await broker.close();
}
