/**
 * Scenario `api`: wrk against the REST API (`GET /api/v1/readings?instance=<one 24-outlet PDU>` and
 * `GET /api/v1/health`) while the bridge polls 200 PDUs, against a bare node:http server in its own
 * process answering the very same bodies (fetched from the bridge once). The bridge keeps polling
 * during the baseline's runs too, so both see the same machine load; runs alternate bridge/baseline.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort } from "../testkit/repo.js";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, spawnNode, stopChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { row, type Row } from "./lib/report.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";
import { mean, ratio } from "./lib/stats.js";
import { runWrk, type WrkResult } from "./lib/wrk.js";

interface Endpoint {
  readonly name: "readings" | "health";
  readonly path: string;
  /** Minimum bridge/baseline requests-per-second ratio. */
  readonly minRatio: number;
}

export async function runApi(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 10 : 200;
  const intervalS = ctx.quick ? 2 : 10;
  const seconds = ctx.quick ? 3 : 10;
  const rounds = ctx.quick ? 1 : 2;
  const wrkOptions = { connections: 64, threads: 2, seconds };
  const wrk = ctx.tools.wrk;
  if (wrk === null) throw new Error("wrk is missing");
  ctx.log(
    `api: bridge polling ${pdus} PDUs every ${intervalS} s; wrk -c64 -t2 -d${seconds}s, ${rounds} round(s)`,
  );

  const endpoints: Endpoint[] = [
    { name: "readings", path: `/api/v1/readings?instance=${pduId(0)}`, minRatio: 0.6 },
    { name: "health", path: "/api/v1/health", minRatio: 0.8 },
  ];

  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus, processes: ctx.quick ? 1 : 2, outlets: 24 });
  const apiPort = await freePort();
  const configFile = writeBridgeConfig({
    dir: ctx.workDir,
    name: "api-bridge",
    ports: fleet.ports,
    broker,
    pollIntervalS: intervalS,
    api: { port: apiPort },
  });
  let bridge: Awaited<ReturnType<typeof startBridge>> | null = null;
  let baseline: ReturnType<typeof spawnNode> | null = null;
  try {
    await fleet.reset();
    bridge = await startBridge({
      configFile,
      logFile: join(ctx.workDir, "api-bridge.log"),
      nodeArgs: ctx.bridgeNodeArgs,
    });
    await fleet.waitForPolls(2, intervalS * 3000 + 60_000);

    // The baseline answers exactly what the bridge answered.
    const routes: Record<string, string> = {};
    for (const e of endpoints) {
      const response = await fetch(`http://127.0.0.1:${apiPort}${e.path}`);
      const body = await response.text();
      if (response.status !== 200) throw new Error(`GET ${e.path}: HTTP ${response.status}: ${body}`);
      routes[e.path] = body;
    }
    const routesFile = join(ctx.workDir, "baseline-http.json");
    writeFileSync(routesFile, JSON.stringify({ routes }));
    baseline = spawnNode(resolve(DIST, "bench/baseline-http.js"), [routesFile], {
      logFile: join(ctx.workDir, "baseline-http.log"),
    });
    await baseline.waitForLog(/listening \d+/, 10_000);
    const basePort = Number(/listening (\d+)/.exec(baseline.log())![1]);

    const results: Record<string, { bridge: WrkResult[]; baseline: WrkResult[] }> = {};
    for (const e of endpoints) results[e.name] = { bridge: [], baseline: [] };
    for (let r = 0; r < rounds; r++) {
      for (const e of endpoints) {
        for (const [who, port] of [
          ["bridge", apiPort],
          ["baseline", basePort],
        ] as const) {
          const result = await runWrk(wrk, `http://127.0.0.1:${port}${e.path}`, wrkOptions);
          results[e.name]![who].push(result);
          ctx.log(
            `  ${e.name} ${who}: ${result.requestsPerSecond.toFixed(0)} req/s, p99 ${result.p99Ms?.toFixed(2)} ms` +
              `${result.errors > 0 ? `, ${result.errors} errors` : ""}`,
          );
        }
      }
    }

    const rows: Row[] = [];
    for (const e of endpoints) {
      const { bridge: b, baseline: base } = results[e.name]!;
      const rps = mean(b.map((x) => x.requestsPerSecond));
      const baseRps = mean(base.map((x) => x.requestsPerSecond));
      const p99 = worst(b.map((x) => x.p99Ms));
      const baseP99 = worst(base.map((x) => x.p99Ms));
      const errors = b.reduce((n, x) => n + x.errors, 0);
      const rpsRatio = ratio(rps, baseRps);
      rows.push(
        row({
          scenario: "api",
          metric: `${e.name} throughput`,
          unit: "req/s",
          target: `≥ ${e.minRatio}× baseline`,
          measured: rps,
          baseline: baseRps,
          baselineLabel: "bare node:http",
          ratio: rpsRatio,
          pass: rpsRatio !== null && rpsRatio >= e.minRatio && errors === 0,
          ...(errors > 0 ? { note: `${errors} wrk errors` } : {}),
        }),
        row({
          scenario: "api",
          metric: `${e.name} latency p99 @64 conns`,
          unit: "ms",
          target: "< 20 ms",
          measured: p99,
          baseline: baseP99,
          baselineLabel: "bare node:http",
          ratio: ratio(p99, baseP99),
          pass: p99 !== null && p99 < 20,
        }),
      );
    }
    const strip = (list: WrkResult[]) => list.map(({ raw: _raw, ...rest }) => rest);
    return {
      rows,
      details: {
        pdus,
        intervalS,
        wrk: wrkOptions,
        rounds,
        bodyBytes: Object.fromEntries(Object.entries(routes).map(([k, v]) => [k, Buffer.byteLength(v)])),
        results: Object.fromEntries(
          Object.entries(results).map(([k, v]) => [
            k,
            { bridge: strip(v.bridge), baseline: strip(v.baseline) },
          ]),
        ),
      },
      notes: [
        `api: baseline = bench/baseline-http.ts, a bare node:http server answering the same bodies (readings ${Buffer.byteLength(routes[endpoints[0]!.path]!)} bytes); throughput is the mean of ${rounds} alternating run(s), p99 the worst.`,
      ],
    };
  } finally {
    if (baseline) await stopChild(baseline.child);
    if (bridge) await stopChild(bridge.child);
    await fleet.close();
    await broker.close();
  }
}

function worst(values: readonly (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : Math.max(...present);
}
