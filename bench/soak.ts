/**
 * Soak: a long run of the real bridge against a fleet of simulated PDUs, looking for leaks and
 * degradation (a benchmark-style run, not a test). `npm run soak -- [--minutes 10] [--pdus 200]
 * [--rps 40] [--warmup 60]`.
 *
 * Three processes, so each one's figures are its own:
 *   - bench/sim-fleet.ts: N simulated PDUs (8 outlets each by default), one port each;
 *   - bench/soak-child.ts: the App (every instance polled every second, embedded MQTT broker with
 *     Home Assistant discovery, REST API with a key, health listener), sampled over IPC;
 *   - this process: an MQTT subscriber to everything the bridge publishes, a rate-limited keep-alive
 *     HTTP load on both listeners (reads, control with the right key, an occasional wrong key from
 *     another address), MQTT commands, and the sampling.
 *
 * After the warm-up a forced-GC heap figure is the baseline; at the end another one is compared
 * with it. Writes bench/results/soak-<date>.json and prints a table. `--heap-snapshots DIR` also
 * writes heap snapshots of the bridge at both points (they pause it for seconds: diagnostics only).
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { connectAsync, type MqttClient } from "mqtt";
import { Pool } from "undici";
import { sleep } from "../testkit/repo.js";
import { configYaml } from "../testkit/config-yaml.js";
import type { ChildMessage, ChildSample, ParentMessage } from "./soak-child.js";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    pdus: { type: "string", default: "200" },
    outlets: { type: "string", default: "8" },
    rps: { type: "string", default: "40" },
    warmup: { type: "string", default: "60" },
    "sample-every": { type: "string", default: "10" },
    "gc-every": { type: "string", default: "60" },
    out: { type: "string", default: "bench/results" },
    /** Directory for two heap snapshots (after forced GCs, at warm-up and at the end), for leak hunting. */
    "heap-snapshots": { type: "string" },
  },
  strict: true,
});
const MINUTES = Number(args.minutes);
const PDUS = Number(args.pdus);
const OUTLETS = Number(args.outlets);
const RPS = Number(args.rps);
const WARMUP_S = Number(args.warmup);
const SAMPLE_S = Number(args["sample-every"]);
const GC_S = Number(args["gc-every"]);
/** Instances with ActionsEnabled (the first ones). */
const CONTROLLED = Math.min(10, PDUS);
const API_KEY = `soak-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;
const MIB = 1024 * 1024;

for (const [name, v] of Object.entries({ MINUTES, PDUS, OUTLETS, RPS, WARMUP_S, SAMPLE_S, GC_S })) {
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name.toLowerCase()} must be a positive number`);
}

const now = () => Date.now();
const id = (n: number) => `pdu-${String(n + 1).padStart(3, "0")}`;
const log = (text: string) =>
  process.stdout.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${text}\n`);

// ---------------------------------------------------------------- processes

async function startFleet(): Promise<{ child: ChildProcess; ports: number[] }> {
  const child = spawn(
    process.execPath,
    ["dist/bench/sim-fleet.js", "--count", String(PDUS), "--outlets", String(OUTLETS)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    const parsed = JSON.parse(line) as { ports?: number[] };
    if (parsed.ports !== undefined) {
      lines.close();
      return { child, ports: parsed.ports };
    }
  }
  throw new Error("the simulator fleet exited before it listened");
}

function bridgeConfig(ports: readonly number[]): string {
  return configYaml({
    Mqtt: { ClientId: "pdu-bridge-soak", Embedded: { Bind: "127.0.0.1", Port: 0 } },
    Pdus: Object.fromEntries(
      ports.map((port, n) => [
        id(n),
        {
          Connection: { Host: "127.0.0.1", Port: port, Scheme: "http", Timeout: 5 },
          PollInterval: 1,
          ActionsEnabled: n < CONTROLLED,
          ...(n < CONTROLLED ? { Credentials: { Username: "admin", Password: "admin" } } : {}),
        },
      ]),
    ),
    Api: { Enabled: true, Bind: "127.0.0.1", Port: 0 },
    Health: { Enabled: true, Bind: "127.0.0.1", Port: 0 },
    Logging: { Level: "info" },
  });
}

class Bridge {
  readonly child: ChildProcess;
  readonly #waiting: ((m: ChildMessage) => boolean)[] = [];
  constructor(configPath: string) {
    this.child = fork("dist/bench/soak-child.js", [configPath], {
      execArgv: ["--expose-gc", "--trace-warnings"],
      env: { ...process.env, SERVICE_API_KEY: API_KEY },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child.on("message", (m: ChildMessage) => {
      if (m.type === "error") log(`bridge error: ${m.message}`);
      const i = this.#waiting.findIndex((w) => w(m));
      if (i >= 0) this.#waiting.splice(i, 1);
    });
  }

  next<T extends ChildMessage["type"]>(
    type: T,
    timeoutMs = 60_000,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} from the bridge in time`)), timeoutMs);
      const onExit = () => reject(new Error(`the bridge exited while waiting for ${type}`));
      this.child.once("exit", onExit);
      this.#waiting.push((m) => {
        if (m.type !== type) return false;
        clearTimeout(timer);
        this.child.off("exit", onExit);
        resolve(m as Extract<ChildMessage, { type: T }>);
        return true;
      });
    });
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  async sample(gc: boolean): Promise<Sample> {
    const reply = this.next("sample");
    this.send({ type: "sample", gc });
    const { sample } = await reply;
    return { ...sample, proc: procFigures(this.child.pid ?? 0) };
  }
}

/** The kernel's view of the bridge process (cross-checks the child's own figures). */
function procFigures(pid: number): { vmRssKiB: number; vmHwmKiB: number; threads: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return {
    vmRssKiB: field("VmRSS"),
    vmHwmKiB: field("VmHWM"),
    threads: field("Threads"),
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

type Sample = ChildSample & { proc: ReturnType<typeof procFigures> };

// ---------------------------------------------------------------- load

interface Category {
  count: number;
  statuses: Record<string, number>;
  errors: number;
  /** Answers other than the expected status. */
  unexpected: number;
  latencies: number[];
}

class Load {
  readonly categories = new Map<string, Category>();
  inFlight = 0;
  skipped = 0;
  readonly lastErrors: string[] = [];

  constructor(
    readonly api: Pool,
    readonly health: Pool,
  ) {}

  category(name: string): Category {
    let c = this.categories.get(name);
    if (c === undefined) {
      c = { count: 0, statuses: {}, errors: 0, unexpected: 0, latencies: [] };
      this.categories.set(name, c);
    }
    return c;
  }

  fire(name: string, pool: Pool, options: Parameters<Pool["request"]>[0], expected = 200): void {
    if (this.inFlight >= 32) {
      this.skipped++;
      return;
    }
    this.inFlight++;
    const c = this.category(name);
    const started = performance.now();
    c.count++;
    pool
      .request(options)
      .then(async (response) => {
        await response.body.dump();
        const status = String(response.statusCode);
        c.statuses[status] = (c.statuses[status] ?? 0) + 1;
        if (response.statusCode !== expected) {
          c.unexpected++;
          this.note(`${name}: HTTP ${status}`);
        }
        if (c.latencies.length < 200_000) c.latencies.push(performance.now() - started);
      })
      .catch((error: unknown) => {
        c.errors++;
        this.note(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => this.inFlight--);
  }

  note(text: string): void {
    this.lastErrors.push(`${new Date().toISOString()} ${text}`);
    if (this.lastErrors.length > 20) this.lastErrors.shift();
  }
}

const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

/** Least-squares slope of y over x. */
function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

// ---------------------------------------------------------------- run

async function main(): Promise<void> {
  const startedAt = new Date();
  log(`starting ${PDUS} simulated PDUs (${OUTLETS} outlets each)`);
  const fleet = await startFleet();
  const dir = mkdtempSync(join(tmpdir(), "pdu-soak-"));
  const configPath = join(dir, "config.yaml");
  writeFileSync(configPath, bridgeConfig(fleet.ports));

  const bridge = new Bridge(configPath);
  let mqtt: MqttClient | null = null;
  let api: Pool | null = null;
  let health: Pool | null = null;
  let wrong: Pool | null = null;
  try {
    const ready = await bridge.next("ready", 120_000);
    log(
      `bridge pid ${bridge.child.pid}: API :${ready.apiPort}, health :${ready.healthPort}, broker :${ready.broker.port}`,
    );
    api = new Pool(`http://127.0.0.1:${ready.apiPort}`, { connections: 16, keepAliveTimeout: 60_000 });
    health = new Pool(`http://127.0.0.1:${ready.healthPort}`, { connections: 4, keepAliveTimeout: 60_000 });
    wrong = new Pool(`http://127.0.0.1:${ready.apiPort}`, {
      connections: 1,
      connect: { localAddress: "127.0.0.2" },
    });

    // Everything the bridge publishes, as Home Assistant would see it.
    const mqttStats = { messages: 0, bytes: 0, lastAt: 0 };
    const client = await connectAsync({
      host: ready.broker.host,
      port: ready.broker.port,
      clientId: "soak-subscriber",
      reconnectPeriod: 1000,
    });
    mqtt = client;
    client.on("message", (_topic, payload) => {
      mqttStats.messages++;
      mqttStats.bytes += payload.length;
      mqttStats.lastAt = now();
    });
    await client.subscribeAsync(["pdu-bridge/#", "homeassistant/#"], { qos: 0 });

    // Every instance polled once, and the controlled instances' device ids.
    const deadline = now() + 120_000;
    for (;;) {
      const r = await api.request({ path: "/api/v1/snapshots", method: "GET" });
      const snapshots = (await r.body.json()) as { timestampUtc: string | null }[];
      if (snapshots.every((s) => s.timestampUtc !== null)) break;
      if (now() > deadline) throw new Error("not every instance was polled within 120 s");
      await sleep(1000);
    }
    const devices: string[] = [];
    for (let n = 0; n < CONTROLLED; n++) {
      const r = await api.request({ path: `/api/v1/readings?instance=${id(n)}`, method: "GET" });
      const readings = (await r.body.json()) as { deviceId: string }[];
      const device = readings[0]?.deviceId;
      if (device === undefined) throw new Error(`no readings for ${id(n)}`);
      devices.push(device);
    }
    log(`every instance polled; load ${RPS} req/s for ${MINUTES} min (warm-up ${WARMUP_S} s)`);

    const snapshotDir = args["heap-snapshots"];
    const snapshot = async (name: string): Promise<void> => {
      if (snapshotDir === undefined) return;
      mkdirSync(snapshotDir, { recursive: true });
      const written = bridge.next("heap-snapshot", 120_000);
      bridge.send({ type: "heap-snapshot", path: join(snapshotDir, `bridge-${name}.heapsnapshot`) });
      log(`heap snapshot written: ${(await written).path}`);
    };
    const load = new Load(api, health);
    const reads: [string, Pool, string][] = [
      ["GET /api/v1/readings?instance=", api, ""],
      ["GET /api/v1/readings?instance=", api, ""],
      ["GET /api/v1/readings?instance=", api, ""],
      ["GET /api/v1/instances", api, "/api/v1/instances"],
      ["GET /api/v1/health", api, "/api/v1/health"],
      ["GET /api/v1/snapshots", api, "/api/v1/snapshots"],
      ["GET /healthz", health, "/healthz"],
      ["GET /readyz", health, "/readyz"],
      ["GET /health/integrations", health, "/health/integrations"],
    ];
    const end = now() + MINUTES * 60_000;
    const warmEnd = now() + WARMUP_S * 1000;
    let tick = 0;
    let controls = 0;
    let mqttCommands = 0;
    const samples: Sample[] = [];
    let warm: Sample | null = null;
    let nextSample = now();
    let nextGc = warmEnd + GC_S * 1000;
    let sampling: Promise<void> = Promise.resolve();
    const period = 1000 / RPS;
    let next = now();

    while (now() < end) {
      tick++;
      const [name, pool, path] = reads[tick % reads.length]!;
      const target = path === "" ? `/api/v1/readings?instance=${id(tick % PDUS)}` : path;
      load.fire(name, pool, { path: target, method: "GET" });
      // Every 2 s a control request with the right key (alternating on/off over the outlets).
      if (tick % Math.max(1, Math.round(2 * RPS)) === 0) {
        const n = controls % CONTROLLED;
        const index = Math.floor(controls / CONTROLLED) % OUTLETS;
        const action = Math.floor(controls / (CONTROLLED * OUTLETS)) % 2 === 0 ? "off" : "on";
        controls++;
        load.fire("POST control (right key)", api, {
          path: `/api/v1/instances/${id(n)}/outlets/${devices[n]}/${index}/control`,
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": API_KEY },
          body: JSON.stringify({ action }),
        });
      }
      // Every 10 s a wrong key from 127.0.0.2 (6 per minute: never enough to lock it out).
      if (tick % Math.max(1, Math.round(10 * RPS)) === 0) {
        load.fire(
          "POST control (wrong key)",
          wrong,
          {
            path: `/api/v1/instances/${id(0)}/outlets/${devices[0]}/0/control`,
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": "wrong-key" },
            body: '{"action":"on"}',
          },
          401,
        );
      }
      // Every 30 s the full readings of every instance (a large answer).
      if (tick % Math.max(1, Math.round(30 * RPS)) === 0) {
        load.fire("GET /api/v1/readings (all)", api, { path: "/api/v1/readings", method: "GET" });
      }
      // Every 5 s an MQTT command (reboot of the last outlet of a controlled instance).
      if (tick % Math.max(1, Math.round(5 * RPS)) === 0) {
        const n = mqttCommands++ % CONTROLLED;
        client
          .publishAsync(`pdu-bridge/${id(n)}/${devices[n]}/outlets/${OUTLETS - 1}/reboot`, "", { qos: 1 })
          .catch((error: unknown) => load.note(`MQTT command: ${String(error)}`));
      }

      if (now() >= nextSample) {
        nextSample += SAMPLE_S * 1000;
        const t = now();
        const isWarm = warm === null && t >= warmEnd;
        const isGc = isWarm || (warm !== null && t >= nextGc);
        if (isGc && !isWarm) nextGc += GC_S * 1000;
        sampling = sampling.then(async () => {
          if (isWarm) bridge.send({ type: "reset-totals" });
          const s = await bridge.sample(isGc);
          samples.push(s);
          if (isWarm) {
            warm = s;
            await snapshot("warm");
          }
          log(
            `${isWarm ? "warm-up done " : ""}rss ${(s.rss / MIB).toFixed(0)} MiB, heap ${(s.heapUsed / MIB).toFixed(1)} MiB${
              s.gc ? " (after GC)" : ""
            }, fds ${s.fds}, loop p99 ${s.loopDelay.p99Ms.toFixed(1)} ms, polls ${s.polls.ok}/${s.polls.failed} failed, ` +
              `mqtt ${mqttStats.messages} msgs, http in flight ${load.inFlight}`,
          );
        });
      }
      next += period;
      const wait = next - now();
      if (wait > 0) await sleep(wait);
      else if (wait < -1000) next = now(); // the loop fell behind (a stalled machine): do not burst
    }

    // Drain, then the final figures after a forced GC.
    while (load.inFlight > 0) await sleep(50);
    await sampling;
    const final = await bridge.sample(true);
    await snapshot("end");
    samples.push(final);
    const baseline: Sample = warm ?? samples[0] ?? final;

    const gcSamples = samples.filter((s) => s.gc && s.at >= baseline.at);
    const heapSlope = slope(gcSamples.map((s) => [(s.at - baseline.at) / 3_600_000, s.heapUsed / MIB]));
    const growth = final.heapUsed - baseline.heapUsed;
    const allowed = Math.max(4 * MIB, 0.05 * baseline.heapUsed);
    const verdict =
      growth <= allowed
        ? "heap did not grow after warm-up"
        : `heap grew after warm-up by ${(growth / MIB).toFixed(1)} MiB (more than ${(allowed / MIB).toFixed(1)} MiB allowed)`;
    const http = Object.fromEntries(
      [...load.categories].map(([name, c]) => [
        name,
        {
          count: c.count,
          statuses: c.statuses,
          transportErrors: c.errors,
          unexpected: c.unexpected,
          p50Ms: Number(percentile(c.latencies, 50).toFixed(2)),
          p99Ms: Number(percentile(c.latencies, 99).toFixed(2)),
        },
      ]),
    );
    const totals = [...load.categories.values()].reduce(
      (t, c) => ({ requests: t.requests + c.count, unexpected: t.unexpected + c.unexpected + c.errors }),
      { requests: 0, unexpected: 0 },
    );
    const pollsAfterWarm = {
      ok: final.polls.ok - baseline.polls.ok,
      failed: final.polls.failed - baseline.polls.failed,
    };
    const durationS = (now() - startedAt.getTime()) / 1000;
    const result = {
      kind: "soak",
      startedUtc: startedAt.toISOString(),
      durationSeconds: Math.round(durationS),
      machine: {
        hostname: hostname(),
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? "?",
        memoryGiB: Number((totalmem() / 1024 ** 3).toFixed(1)),
        kernel: release(),
        node: process.version,
      },
      parameters: {
        minutes: MINUTES,
        pdus: PDUS,
        outletsPerPdu: OUTLETS,
        pollIntervalSeconds: 1,
        actionsEnabledInstances: CONTROLLED,
        restRequestsPerSecond: RPS,
        warmupSeconds: WARMUP_S,
      },
      bridge: {
        rssMiB: { warm: round(baseline.rss / MIB), end: round(final.rss / MIB) },
        heapUsedAfterGcMiB: { warm: round(baseline.heapUsed / MIB), end: round(final.heapUsed / MIB) },
        heapGrowthMiB: round(growth / MIB),
        heapSlopeMiBPerHour: round(heapSlope),
        externalMiB: { warm: round(baseline.external / MIB), end: round(final.external / MIB) },
        fds: { warm: baseline.fds, end: final.fds, max: Math.max(...samples.map((s) => s.fds)) },
        procRssKiB: { warm: baseline.proc.vmRssKiB, end: final.proc.vmRssKiB, peak: final.proc.vmHwmKiB },
        eventLoopDelayAfterWarmMs: final.loopDelayTotal,
        eventLoopDelayWorstIntervalP99Ms: round(
          Math.max(...samples.filter((s) => s.at > baseline.at).map((s) => s.loopDelay.p99Ms), 0),
        ),
        cpuSeconds: round((final.cpuUserMs + final.cpuSystemMs) / 1000),
        polls: { total: final.polls, afterWarm: pollsAfterWarm },
        logLines: final.logs,
        controlAudits: final.audits,
        lastWarnings: final.lastWarnings,
      },
      mqtt: { messages: mqttStats.messages, bytes: mqttStats.bytes, commandsSent: mqttCommands },
      http: { totals, skippedBecauseBusy: load.skipped, byEndpoint: http, lastErrors: load.lastErrors },
      verdict,
      samples: samples.map((s) => ({
        at: new Date(s.at).toISOString(),
        gc: s.gc,
        rssMiB: round(s.rss / MIB),
        heapUsedMiB: round(s.heapUsed / MIB),
        fds: s.fds,
        loopP99Ms: round(s.loopDelay.p99Ms),
        pollsOk: s.polls.ok,
        pollsFailed: s.polls.failed,
      })),
    };
    mkdirSync(args.out, { recursive: true });
    const file = join(args.out, `soak-${startedAt.toISOString().replace(/[:.]/g, "-").slice(0, 19)}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    printTable(result);
    log(`written ${file}`);
  } finally {
    await Promise.allSettled([api?.close(), health?.close(), wrong?.close(), mqtt?.endAsync()]);
    if (bridge.child.exitCode === null) {
      const stopped = bridge.next("stopped", 10_000).catch(() => undefined);
      bridge.send({ type: "stop" });
      await stopped;
      if (bridge.child.exitCode === null) bridge.child.kill("SIGKILL");
    }
    fleet.child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

const round = (n: number) => Number(n.toFixed(2));

function printTable(r: {
  durationSeconds: number;
  machine: { cpus: number; memoryGiB: number; node: string };
  parameters: { pdus: number; restRequestsPerSecond: number };
  bridge: {
    rssMiB: { warm: number; end: number };
    heapUsedAfterGcMiB: { warm: number; end: number };
    heapGrowthMiB: number;
    heapSlopeMiBPerHour: number;
    fds: { warm: number; end: number; max: number };
    eventLoopDelayAfterWarmMs: { p50Ms: number; p99Ms: number; maxMs: number };
    polls: { afterWarm: { ok: number; failed: number } };
    cpuSeconds: number;
  };
  mqtt: { messages: number };
  http: { totals: { requests: number; unexpected: number } };
  verdict: string;
}): void {
  const b = r.bridge;
  const rows: [string, string][] = [
    ["duration", `${(r.durationSeconds / 60).toFixed(1)} min, ${r.parameters.pdus} PDUs at 1 s polls`],
    ["machine", `${r.machine.cpus} cores, ${r.machine.memoryGiB} GiB, node ${r.machine.node}`],
    ["RSS warm → end", `${b.rssMiB.warm} → ${b.rssMiB.end} MiB`],
    [
      "heap after GC warm → end",
      `${b.heapUsedAfterGcMiB.warm} → ${b.heapUsedAfterGcMiB.end} MiB (${b.heapGrowthMiB >= 0 ? "+" : ""}${b.heapGrowthMiB} MiB; slope ${b.heapSlopeMiBPerHour} MiB/h)`,
    ],
    ["open fds warm → end (max)", `${b.fds.warm} → ${b.fds.end} (${b.fds.max})`],
    [
      "event-loop delay p50 / p99 / max",
      `${b.eventLoopDelayAfterWarmMs.p50Ms.toFixed(1)} / ${b.eventLoopDelayAfterWarmMs.p99Ms.toFixed(1)} / ${b.eventLoopDelayAfterWarmMs.maxMs.toFixed(1)} ms`,
    ],
    ["polls after warm-up ok / failed", `${b.polls.afterWarm.ok} / ${b.polls.afterWarm.failed}`],
    ["bridge CPU", `${b.cpuSeconds} s`],
    ["MQTT messages received", String(r.mqtt.messages)],
    ["HTTP requests / unexpected", `${r.http.totals.requests} / ${r.http.totals.unexpected}`],
    ["verdict", r.verdict],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`\n${rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n")}\n\n`);
}

await main();
