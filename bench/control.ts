/**
 * Scenario `control`: the REST control round trip (`POST /api/v1/instances/{id}/outlets/{dev}/{i}/control`,
 * on/off alternating, with the API key) through the bridge to a simulated PDU, against the same
 * write made directly with a GeistClient (what the bridge itself does inside). The overhead of the
 * REST path is the difference of the medians. Requests alternate REST/direct (order swapped every
 * iteration) so that drifting machine load hits both alike; each uses its own outlet.
 */
import { join } from "node:path";
import { Client } from "undici";
import { GeistClient } from "../src/pdu/geist/client.js";
import { freePort } from "../testkit/repo.js";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { sleep, stopChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { row } from "./lib/report.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";
import { percentile, ratio } from "./lib/stats.js";

const API_KEY = "bench-api-key-0123456789";

export async function runControl(ctx: BenchContext): Promise<ScenarioResult> {
  const iterations = ctx.quick ? 30 : 400;
  const warmup = ctx.quick ? 5 : 30;
  ctx.log(
    `control: ${iterations} REST round trips vs ${iterations} direct GeistClient writes (after ${warmup} each)`,
  );

  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus: 1, processes: 1, outlets: 24 });
  const port = fleet.ports[0]!;
  const apiPort = await freePort();
  const configFile = writeBridgeConfig({
    dir: ctx.workDir,
    name: "control-bridge",
    ports: fleet.ports,
    broker,
    pollIntervalS: 10,
    api: { port: apiPort, apiKey: API_KEY },
    actions: true,
  });
  const id = pduId(0);
  let bridge: Awaited<ReturnType<typeof startBridge>> | null = null;
  const direct = new GeistClient({
    id: "bench-direct",
    Connection: {
      Host: "127.0.0.1",
      Port: port,
      Scheme: "http",
      Timeout: 15,
      ValidateCertificate: true,
      CaFile: null,
    },
    Credentials: { Username: "admin", Password: "admin" },
  });
  const api = new Client(`http://127.0.0.1:${apiPort}`, { pipelining: 1 });
  try {
    bridge = await startBridge({
      configFile,
      logFile: join(ctx.workDir, "control-bridge.log"),
      nodeArgs: ctx.bridgeNodeArgs,
    });
    let deviceId: string | undefined;
    for (let i = 0; i < 100 && deviceId === undefined; i++) {
      const res = await api.request({ path: `/api/v1/readings?instance=${id}`, method: "GET" });
      const readings = (await res.body.json()) as { deviceId: string }[];
      deviceId = readings[0]?.deviceId;
      if (deviceId === undefined) await sleep(100);
    }
    if (deviceId === undefined) throw new Error("the bridge never polled the PDU");
    const dev = deviceId;

    const viaRest = async (action: "on" | "off"): Promise<number> => {
      const started = performance.now();
      const res = await api.request({
        path: `/api/v1/instances/${id}/outlets/${dev}/0/control`,
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": API_KEY },
        body: JSON.stringify({ action }),
      });
      const text = await res.body.text();
      const ms = performance.now() - started;
      if (res.statusCode !== 200) throw new Error(`REST control: HTTP ${res.statusCode}: ${text}`);
      return ms;
    };
    const viaClient = async (action: "on" | "off"): Promise<number> => {
      const started = performance.now();
      await direct.controlOutlet({ deviceId: dev, index: 1, route: null }, action);
      return performance.now() - started;
    };

    const rest: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < warmup + iterations; i++) {
      const action = i % 2 === 0 ? "off" : "on";
      let a: number;
      let b: number;
      if (i % 2 === 0) {
        a = await viaRest(action);
        b = await viaClient(action);
      } else {
        b = await viaClient(action);
        a = await viaRest(action);
      }
      if (i >= warmup) {
        rest.push(a);
        raw.push(b);
      }
    }
    const restMedian = percentile(rest, 50);
    const directMedian = percentile(raw, 50);
    const overhead = restMedian !== null && directMedian !== null ? restMedian - directMedian : null;
    const restP90 = percentile(rest, 90);
    const directP90 = percentile(raw, 90);
    ctx.log(
      `  REST median ${restMedian?.toFixed(2)} ms, direct median ${directMedian?.toFixed(2)} ms, ` +
        `overhead ${overhead?.toFixed(2)} ms`,
    );
    return {
      rows: [
        row({
          scenario: "control",
          metric: "round trip median",
          unit: "ms",
          target: "info",
          measured: restMedian,
          baseline: directMedian,
          baselineLabel: "direct GeistClient",
          ratio: ratio(restMedian, directMedian),
          pass: null,
        }),
        row({
          scenario: "control",
          metric: "median overhead (REST − direct)",
          unit: "ms",
          target: "< 2 ms",
          measured: overhead,
          baseline: null,
          ratio: null,
          pass: overhead !== null && overhead < 2,
        }),
        row({
          scenario: "control",
          metric: "round trip p90",
          unit: "ms",
          target: "info",
          measured: restP90,
          baseline: directP90,
          baselineLabel: "direct GeistClient",
          ratio: ratio(restP90, directP90),
          pass: null,
        }),
      ],
      details: {
        iterations,
        warmup,
        restMs: { p50: restMedian, p90: restP90, p99: percentile(rest, 99) },
        directMs: { p50: directMedian, p90: directP90, p99: percentile(raw, 99) },
        overheadMs: overhead,
      },
      notes: [
        "control: baseline = the same outlet write made directly with GeistClient from the benchmark process (keep-alive, cached token); REST = POST .../control through the bridge (API key check, validation, lock, write, latch, audit log line).",
      ],
    };
  } finally {
    await api.close();
    await direct.close();
    if (bridge) await stopChild(bridge.child);
    await fleet.close();
    await broker.close();
  }
}
