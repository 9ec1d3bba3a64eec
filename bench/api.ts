/**
 * Scenario `api`: wrk against the REST API (`GET /api/v1/readings?instance=<one 24-outlet PDU>` and
 * `GET /api/v1/health`) while the bridge polls 1000 PDUs (`BENCH_API_PDUS=200` for a smaller
 * fleet), against a bare node:http server in its own process answering the very
 * same bodies (fetched from the bridge once). The bridge keeps polling during the baseline's runs
 * too, so both see the same machine load; runs alternate bridge/baseline.
 *
 * The simulators record every poll's arrival throughout, so the scenario also shows what hammering
 * the API does to polling: the lateness of the polls that arrived while wrk hammered the bridge,
 * against those that arrived while it hammered the baseline (the bridge then only polls).
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort } from "../testkit/repo.js";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, IpcChild, sleep, spawnNode, stopChild } from "./lib/child.js";
import { settle, type BenchContext, type ScenarioResult } from "./lib/measure.js";
import { sampleProc } from "./lib/proc.js";
import { row, type Row } from "./lib/report.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";
import { mean, percentile, pollLateness, ratio } from "./lib/stats.js";
import { runWrk, type WrkResult } from "./lib/wrk.js";

interface Endpoint {
  readonly name: "readings" | "health";
  readonly path: string;
  /** Minimum bridge/baseline requests-per-second ratio. */
  readonly minRatio: number;
}

/** A span of time (epoch ms, the simulators' clock) during which wrk hammered one server. */
interface Span {
  readonly from: number;
  readonly to: number;
}

/** CPU seconds the bridge and the baseline used during one wrk run. */
interface RunCpu {
  readonly seconds: number;
  readonly bridge: number;
  readonly baseline: number;
}

/** Lateness p99 the polls may show while the API is hammered. */
const LATENESS_P99_MS = 50;

export async function runApi(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 10 : fleetSize(process.env.BENCH_API_PDUS);
  const intervalS = ctx.quick ? 2 : 10;
  const seconds = ctx.quick ? 3 : 10;
  const rounds = ctx.quick ? 1 : 2;
  const wrkOptions = { connections: 64, threads: 2, seconds };
  const wrk = ctx.tools.wrk;
  if (wrk === null) throw new Error("wrk is missing");
  ctx.log(
    `api: bridge polling ${pdus} PDUs every ${intervalS} s (Api.Worker: ${apiWorker()}); ` +
      `wrk -c64 -t2 -d${seconds}s, ${rounds} round(s)`,
  );

  const endpoints: Endpoint[] = [
    { name: "readings", path: `/api/v1/readings?instance=${pduId(0)}`, minRatio: 0.6 },
    { name: "health", path: "/api/v1/health", minRatio: 0.8 },
  ];

  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus, processes: Math.ceil(pdus / 250), outlets: 24 });
  const apiPort = await freePort();
  const configFile = writeBridgeConfig({
    dir: ctx.workDir,
    name: "api-bridge",
    ports: fleet.ports,
    broker,
    pollIntervalS: intervalS,
    api: { port: apiPort, worker: apiWorker() },
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
    // As in the fleet scenario: three polls each, the discovery burst over (2 s without a
    // homeassistant/# message), then one more interval (the values republished after discovery).
    await fleet.waitForPolls(3, intervalS * 4000 + 60_000);
    const counter = new IpcChild(resolve(DIST, "bench/lib/mqtt-counter.js"), [broker.url]);
    try {
      await counter.ready();
      if (!(await settle(counter, "homeassistant", 90_000)))
        ctx.log("  homeassistant/# still busy after 90 s; measuring anyway");
    } finally {
      await counter.request("close").catch(() => undefined);
      await counter.stop();
    }
    await sleep(intervalS * 1000);

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
    const hammered: Record<"bridge" | "baseline", Span[]> = { bridge: [], baseline: [] };
    const cpu: Record<string, { bridge: RunCpu[]; baseline: RunCpu[] }> = {};
    for (const e of endpoints) cpu[e.name] = { bridge: [], baseline: [] };
    const cpuOf = (pid: number) => sampleProc(pid)?.cpuSeconds ?? Number.NaN;
    const bridgePid = bridge.pid;
    const basePid = baseline.pid;
    await fleet.reset();
    for (let r = 0; r < rounds; r++) {
      for (const e of endpoints) {
        for (const [who, port] of [
          ["bridge", apiPort],
          ["baseline", basePort],
        ] as const) {
          const from = Date.now();
          const before = { bridge: cpuOf(bridgePid), baseline: cpuOf(basePid) };
          const result = await runWrk(wrk, `http://127.0.0.1:${port}${e.path}`, wrkOptions);
          cpu[e.name]![who].push({
            seconds: (Date.now() - from) / 1000,
            bridge: cpuOf(bridgePid) - before.bridge,
            baseline: cpuOf(basePid) - before.baseline,
          });
          hammered[who].push({ from, to: Date.now() });
          results[e.name]![who].push(result);
          ctx.log(
            `  ${e.name} ${who}: ${result.requestsPerSecond.toFixed(0)} req/s, p99 ${result.p99Ms?.toFixed(2)} ms` +
              `${result.errors > 0 ? `, ${result.errors} errors` : ""}`,
          );
        }
      }
    }

    // One more interval, so that every PDU's last hammered poll has a successor on the grid.
    await sleep(intervalS * 1000);
    const times = await fleet.times();
    const polling = {
      bridge: pollsDuring(times, intervalS, hammered.bridge, pdus),
      baseline: pollsDuring(times, intervalS, hammered.baseline, pdus),
    };
    ctx.log(
      `  polls while hammered: bridge ${polling.bridge.polls}/${polling.bridge.due.toFixed(0)} due, ` +
        `lateness p99 ${fmt(polling.bridge.p99Ms)} ms; while the baseline was hammered ` +
        `${polling.baseline.polls}/${polling.baseline.due.toFixed(0)}, p99 ${fmt(polling.baseline.p99Ms)} ms`,
    );

    // While wrk hammers the baseline, the bridge only polls: its CPU rate then is what polling
    // costs, and the rest of its CPU while hammered is what the API cost.
    const all = Object.values(cpu).flatMap((c) => c.baseline);
    const pollingCpuRate =
      all.reduce((n, c) => n + c.bridge, 0) /
      Math.max(
        1e-9,
        all.reduce((n, c) => n + c.seconds, 0),
      );
    const cpuPerRequest: Record<string, { bridgeUs: number | null; baselineUs: number | null }> = {};

    const rows: Row[] = [];
    for (const e of endpoints) {
      const { bridge: b, baseline: base } = results[e.name]!;
      const c = cpu[e.name]!;
      const bridgeUs = perRequestUs(
        c.bridge.reduce((n, x) => n + x.bridge - pollingCpuRate * x.seconds, 0),
        b.reduce((n, x) => n + x.requests, 0),
      );
      const baselineUs = perRequestUs(
        c.baseline.reduce((n, x) => n + x.baseline, 0),
        base.reduce((n, x) => n + x.requests, 0),
      );
      cpuPerRequest[e.name] = { bridgeUs, baselineUs };
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
          pass: p99 !== null && p99 < 20 && errors === 0,
        }),
        row({
          scenario: "api",
          metric: `${e.name} CPU per request`,
          unit: "µs",
          target: "info",
          measured: bridgeUs,
          baseline: baselineUs,
          baselineLabel: "bare node:http",
          ratio: ratio(bridgeUs, baselineUs),
          pass: null,
        }),
      );
    }
    const complete = polling.bridge.polls >= 0.99 * polling.bridge.due;
    rows.push(
      row({
        scenario: "api",
        metric: "poll lateness p99 while hammered",
        unit: "ms",
        target: `< ${LATENESS_P99_MS} ms`,
        measured: polling.bridge.p99Ms,
        baseline: polling.baseline.p99Ms,
        baselineLabel: "while node:http hammered",
        ratio: ratio(polling.bridge.p99Ms, polling.baseline.p99Ms),
        pass: complete && polling.bridge.p99Ms !== null && polling.bridge.p99Ms < LATENESS_P99_MS,
        ...(complete
          ? {}
          : {
              note: `${polling.bridge.polls} of ${polling.bridge.due.toFixed(0)} due polls came while the API was hammered`,
            }),
      }),
    );
    const strip = (list: WrkResult[]) => list.map(({ raw: _raw, ...rest }) => rest);
    return {
      rows,
      details: {
        pdus,
        intervalS,
        wrk: wrkOptions,
        rounds,
        polling,
        pollingCpuPercent: 100 * pollingCpuRate,
        cpuPerRequest,
        cpu,
        bodyBytes: Object.fromEntries(Object.entries(routes).map(([k, v]) => [k, Buffer.byteLength(v)])),
        results: Object.fromEntries(
          Object.entries(results).map(([k, v]) => [
            k,
            { bridge: strip(v.bridge), baseline: strip(v.baseline) },
          ]),
        ),
      },
      notes: [
        `api: baseline = bench/baseline-http.ts, a bare node:http server answering the same bodies (readings ${Buffer.byteLength(routes[endpoints[0]!.path]!)} bytes, health ${Buffer.byteLength(routes["/api/v1/health"]!)} bytes); throughput is the mean of ${rounds} alternating run(s), p99 the worst.`,
        `api: CPU per request = the server process's CPU during its wrk runs / requests answered; for the bridge, less what polling cost at the same time (its CPU rate while the baseline was hammered: ${(100 * pollingCpuRate).toFixed(0)} % of a core). Less sensitive to a busy machine than requests/s.`,
        `api: lateness = polls of the ${pdus} PDUs that arrived while wrk hammered the bridge (${polling.bridge.polls} of ${polling.bridge.due.toFixed(0)} due), each against its PDU's best-aligned poll of the whole scenario; baseline = the polls that arrived while wrk hammered the bare server.`,
      ],
    };
  } finally {
    if (baseline) await stopChild(baseline.child);
    if (bridge) await stopChild(bridge.child);
    await fleet.close();
    await broker.close();
  }
}

/**
 * The REST API as the service runs it by default, with its worker thread (`Api.Worker: true`);
 * `BENCH_API_WORKER=0` measures it without, every request on the main thread beside polling.
 */
function apiWorker(): boolean {
  return process.env.BENCH_API_WORKER !== "0";
}

/** `BENCH_API_PDUS`: the fleet size (default 1000). */
function fleetSize(text: string | undefined): number {
  if (text === undefined || text === "") return 1000;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 4000)
    throw new Error(`BENCH_API_PDUS must be a whole number from 1 to 4000, not ${JSON.stringify(text)}`);
  return n;
}

/** The polls that arrived within these spans, how many were due in them, and their lateness. */
function pollsDuring(
  times: readonly (readonly number[])[],
  intervalS: number,
  spans: readonly Span[],
  pdus: number,
): { polls: number; due: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null } {
  const within = (t: number) => spans.some((s) => t >= s.from && t < s.to);
  const late = pollLateness(times.slice(0, pdus), intervalS * 1000, within);
  const seconds = spans.reduce((n, s) => n + (s.to - s.from) / 1000, 0);
  return {
    polls: late.polls,
    due: (pdus * seconds) / intervalS,
    p50Ms: percentile(late.lateness, 50),
    p99Ms: percentile(late.lateness, 99),
    maxMs: percentile(late.lateness, 100),
  };
}

const perRequestUs = (cpuSeconds: number, requests: number): number | null =>
  requests > 0 && Number.isFinite(cpuSeconds) ? (cpuSeconds * 1e6) / requests : null;

const fmt = (v: number | null) => (v === null ? "–" : v.toFixed(1));

function worst(values: readonly (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : Math.max(...present);
}
