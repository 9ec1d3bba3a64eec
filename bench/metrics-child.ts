/**
 * The serving side of the `metrics` scenario, in its own process (run with --expose-gc) so that its
 * CPU and heap are its own: `bridge` mode is the real health listener with the real BridgeMetrics over
 * a store holding `--pdus` snapshots of a real 24-outlet simulator poll (device ids varied per PDU);
 * `baseline` mode is a bare node:http server answering the bytes in `--body`.
 *
 * IPC commands: `cpu` (process.cpuUsage, µs), `heap` (after a full GC: heapUsed), `peak-start` (GC,
 * then sample heapUsed every millisecond) and `peak-stop` (the highest sample minus the heap at the
 * start: what the scrapes in between needed at their peak, garbage included).
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createLogger } from "../src/log.js";
import { startMetricsFleet } from "../testkit/metrics-fleet.js";
import { serveIpc, signalReady } from "./lib/child.js";

const { values } = parseArgs({
  options: {
    mode: { type: "string", default: "bridge" },
    pdus: { type: "string", default: "1000" },
    outlets: { type: "string", default: "24" },
    body: { type: "string" },
  },
  strict: true,
});

const gc = (globalThis as { gc?: () => void }).gc;
const heapAfterGc = (): number => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};

let port: number;
let peak = { base: 0, max: 0, timer: null as NodeJS.Timeout | null };

if (values.mode === "baseline") {
  const body = readFileSync(values.body!);
  const server = createServer((_req, res) => {
    res.writeHead(200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
      "content-length": body.length,
    });
    res.end(body);
  });
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
} else {
  const fleet = await startMetricsFleet({
    pdus: Number(values.pdus),
    outlets: Number(values.outlets),
    logger: createLogger({ level: "warn" }),
  });
  port = fleet.port;
}

serveIpc((cmd) => {
  if (cmd === "cpu") {
    const { user, system } = process.cpuUsage();
    return Promise.resolve(user + system);
  }
  if (cmd === "heap") return Promise.resolve(heapAfterGc());
  if (cmd === "peak-start") {
    const base = heapAfterGc();
    peak = {
      base,
      max: base,
      timer: setInterval(() => {
        peak.max = Math.max(peak.max, process.memoryUsage().heapUsed);
      }, 1),
    };
    return Promise.resolve(base);
  }
  if (cmd === "peak-stop") {
    if (peak.timer) clearInterval(peak.timer);
    peak.max = Math.max(peak.max, process.memoryUsage().heapUsed);
    return Promise.resolve(peak.max - peak.base);
  }
  return Promise.reject(new Error(`unknown command ${cmd}`));
});
signalReady({ port });
