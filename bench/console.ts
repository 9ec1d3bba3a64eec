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
import { parseArgs } from "node:util";
import { sleep } from "./lib/child.js";
import { log, startConsoleRig } from "./lib/console-rig.js";
import { ProcMonitor } from "./lib/proc.js";
import { pduId } from "./lib/sim-fleet.js";

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } }, strict: true });
const rig = await startConsoleRig({
  name: "console",
  quick: values.quick === true,
  apiKey: "bench-console-key-0123456789abcd",
  // Each stream comes as from its own browser behind a reverse proxy on loopback: the service allows
  // a few streams per client address, and every stream here leaves from 127.0.0.1.
  trustedProxies: ["127.0.0.1"],
});
const { pdus, windowS, intervalS, apiPort, bridge } = rig;

interface Stream {
  bytes: number;
  events: number;
  /** The stream was refused (its answer was not 200). */
  refused: boolean;
  readonly request: http.ClientRequest;
}

/**
 * Opens an event stream as the `n`th browser: its X-Forwarded-For names a documentation address
 * (198.51.100.0/24, never contacted: it is only the header's text) that the proxy would have seen.
 */
function openStream(port: number, path: string, n: number): Stream {
  const stream: Stream = {
    bytes: 0,
    events: 0,
    refused: false,
    request: null as unknown as http.ClientRequest,
  };
  const headers = { "x-forwarded-for": `198.51.100.${1 + (n % 250)}` };
  const request = http.get({ host: "127.0.0.1", port, path, headers, agent: false }, (response) => {
    if (response.statusCode !== 200) {
      stream.refused = true;
      log(`console: ${path} answered HTTP ${response.statusCode}`);
    }
    response.on("data", (chunk: Buffer) => {
      stream.bytes += chunk.length;
      for (let i = chunk.indexOf("event: "); i >= 0; i = chunk.indexOf("event: ", i + 1)) stream.events++;
    });
  });
  request.on("error", () => undefined);
  return Object.assign(stream, { request });
}

const monitor = new ProcMonitor(bridge.pid, 500);
const rows: Record<string, unknown>[] = [];
try {
  log(`console: ${pdus} PDUs × 24 outlets every ${intervalS} s; windows of ${windowS} s`);
  await rig.steady(2);

  const measure = async (name: string, paths: string[]) => {
    const streams = paths.map((p, n) => openStream(apiPort, p, n));
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
    const refused = streams.filter((s) => s.refused).length;
    if (refused > 0) throw new Error(`${name}: ${refused} of ${streams.length} streams refused`);
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
  rig.writeResults({ pdus, intervalS, windowS, rows });
} finally {
  monitor.stop();
  await rig.close();
}
