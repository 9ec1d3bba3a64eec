/**
 * `--only traps`: the SNMP trap receiver under load (docs/events.md, docs/performance.md).
 *
 * N SNMP PDUs (quick 20, full 1,000; BENCH_TRAPS_PDUS another size, e.g. 200) polled every 10 s by
 * the bridge as a child process (bench/lib/bridge.ts: the image's NODE_OPTIONS, mosquitto from
 * bench/lib/broker.ts, the health listener on), with `Traps.Enabled` on a free port. Nothing
 * simulated runs in the bench's own process, so that what is measured is the bridge:
 *
 * - most PDUs are the bench's pre-encoded responder (lib/snmp-responder.ts, APC rPDU2, 24 outlets)
 *   in child processes of 500 units (bench/trap-agents-child.ts `--responders`), which note when
 *   each poll's first request reaches each unit;
 * - the flooded PDU and the latency PDUs (quick 8, full 40) are the project's own simulator in a
 *   child process of their own (`--simulators`), each on its own loopback address (the receiver
 *   matches a trap to its instance by source address), switched at the panel over IPC, the unit
 *   then sending its trap from its own address.
 *
 * 1. baseline: the lateness of the responder PDUs' polls (when each poll's first request reached
 *    the unit against the unit's own 10 s grid, lib/stats.ts `pollLateness`'s method), p99, with no
 *    traps;
 * 2. flood: 1,000 traps/s from the flooded PDU's address and 1,000/s from an unknown one (::1), for
 *    30 s (quick 8 s), each from a process of its own (bench/trap-flood-child.ts): the lateness p99
 *    of the polls due in the flood against the baseline's, the bridge's RSS (/proc) before and at
 *    its peak during the flood, and the counters of its /metrics (events of the flooded PDU and
 *    unknown-source drops against the traps sent; its extra polls against the seconds);
 * 3. latency: outlet 1 of a latency PDU switched at its panel, the time until the outlet's new state
 *    reaches a subscriber of mosquitto in the bench's process: median and p95.
 */
import { execFile } from "node:child_process";
import { createSocket } from "node:dgram";
import { loadavg } from "node:os";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { configYaml, type PduDocument } from "../testkit/config-yaml.js";
import { freePort } from "../testkit/repo.js";
import { startBroker } from "./lib/broker.js";
import { startBridge } from "./lib/bridge.js";
import { DIST, IpcChild, sleep, stopChild, type LoggedChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { RawMqttClient, readPublish } from "./lib/mqtt-wire.js";
import { ProcMonitor, sampleProc } from "./lib/proc.js";
import { percentile, round } from "./lib/stats.js";
import { row, type Row } from "./lib/report.js";
import { BENCH_COMMUNITY } from "./trap-agents-child.js";

const TRAP_COMMUNITY = "bench-traps";
const run = promisify(execFile);
const INTERVAL_S = 10;
/** Responder units per child process. */
const PER_CHILD = 500;
const AGENTS = () => resolve(DIST, "bench/trap-agents-child.js");

async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp6");
  await new Promise<void>((resolve) => socket.bind(0, resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/**
 * Sends `perSecond` traps a second from `from` to the receiver on `to`:`port` for `ms`, from a
 * process of its own (bench/trap-flood-child.ts); resolves to the count.
 */
async function flood(to: string, from: string, port: number, perSecond: number, ms: number): Promise<number> {
  const script = resolve(DIST, "bench/trap-flood-child.js");
  const { stdout } = await run(process.execPath, [
    script,
    to,
    from,
    String(port),
    String(perSecond),
    String(ms),
    TRAP_COMMUNITY,
  ]);
  return (JSON.parse(stdout) as { sent: number }).sent;
}

function metric(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  return response.text();
}

/**
 * The lateness of each unit's polls due in each window (`[from, to)`, epoch ms): the unit's grid
 * phase from its best-aligned poll of all, as lib/stats.ts `pollLateness` takes it; a poll is
 * counted in the window its due time (arrival minus lateness) falls in.
 */
function latenessIn(
  starts: readonly (readonly number[])[],
  windows: readonly (readonly [number, number])[],
): number[][] {
  const out = windows.map(() => [] as number[]);
  const interval = INTERVAL_S * 1000;
  for (const times of starts) {
    if (times.length === 0) continue;
    const t0 = times[0]!;
    const deviations = times.map((t) => t - t0 - Math.round((t - t0) / interval) * interval);
    const best = Math.min(...deviations);
    times.forEach((t, i) => {
      const late = deviations[i]! - best;
      const due = t - late;
      windows.forEach(([from, to], w) => {
        if (due >= from && due < to) out[w]!.push(late);
      });
    });
  }
  return out;
}

interface Unit {
  readonly host: string;
  readonly port: number;
}

const pduId = (i: number) => `pdu-${String(i).padStart(4, "0")}`;

/** The bridge's configuration: instance i on `units[i]`, its community from the environment. */
function bridgeConfig(
  dir: string,
  units: readonly Unit[],
  broker: { host: string; port: number },
  trapPort: number,
  healthPort: number,
): { file: string; env: Record<string, string> } {
  const env: Record<string, string> = { SERVICE_TRAP_COMMUNITIES: TRAP_COMMUNITY };
  const pdus: Record<string, PduDocument> = {};
  units.forEach((unit, i) => {
    const id = pduId(i);
    pdus[id] = {
      Driver: "snmp",
      Connection: { Host: unit.host, Port: unit.port, Timeout: 5 },
      Snmp: { Profile: "apc-rpdu2" },
      PollInterval: INTERVAL_S,
    };
    env[`SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}_COMMUNITY`] = BENCH_COMMUNITY;
  });
  const file = join(dir, "traps-bridge.yaml");
  writeFileSync(
    file,
    configYaml({
      Mqtt: {
        Connection: { Host: broker.host, Port: broker.port, Scheme: "mqtt" },
        ClientId: `bench-traps-${process.pid}`,
        ParentTopic: "pdu-bridge",
      },
      Pdus: pdus,
      Traps: { Enabled: true, Port: trapPort },
      Api: { Enabled: false },
      Health: { Enabled: true, Port: healthPort, Bind: "127.0.0.1" },
      Logging: { Level: "info" },
    }),
  );
  return { file, env };
}

/** The outlet-1 state messages of every instance as a subscriber of the broker sees them. */
async function watchStates(url: string): Promise<{
  client: RawMqttClient;
  /** The last state of `instance`'s outlet 1, and when it arrived (epoch ms). */
  last(instance: string): { payload: string; at: number } | undefined;
}> {
  const seen = new Map<string, { payload: string; at: number }>();
  const client = await RawMqttClient.connect(
    url,
    `bench-traps-watch-${process.pid}`,
    (first, buf, start, length) => {
      const p = readPublish(first, buf, start, length);
      seen.set(p.topic.split("/")[1] ?? "", { payload: p.payload.toString("utf8"), at: Date.now() });
    },
  );
  await client.subscribe(["pdu-bridge/+/+/outlets/0/state"]);
  return { client, last: (instance) => seen.get(instance) };
}

/** A positive integer from the environment, or `fallback`. */
function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** The responder children: `units` units, at most {@link PER_CHILD} per process. */
function responderChildren(units: number): IpcChild[] {
  const out: IpcChild[] = [];
  for (let seed = 0; seed < units; seed += PER_CHILD) {
    const n = Math.min(PER_CHILD, units - seed);
    out.push(new IpcChild(AGENTS(), ["--responders", String(n), String(seed)]));
  }
  return out;
}

/** Each responder unit's poll start times (epoch ms), across the children, in instance order. */
async function pollStarts(agents: readonly IpcChild[]): Promise<number[][]> {
  return (await Promise.all(agents.map((a) => a.request<number[][]>("polls")))).flat();
}

/** Until every responder unit was polled twice and every simulator's outlet 1 is on MQTT. */
async function warmUp(
  agents: readonly IpcChild[],
  hasState: (instance: number) => boolean,
  sims: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const starts = await pollStarts(agents);
    const polled = starts.every((s) => s.length >= 2);
    const states = Array.from({ length: sims }, (_, i) => i).every(hasState);
    if (polled && states) return;
    if (Date.now() > deadline) {
      const twice = starts.filter((s) => s.length >= 2).length;
      throw new Error(`warm-up: ${twice}/${starts.length} responder units polled twice, states ${states}`);
    }
    await sleep(2000);
  }
}

export async function runTraps(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = Math.max(4, envNumber("BENCH_TRAPS_PDUS", ctx.quick ? 20 : 1000));
  const latencyPdus = Math.min(ctx.quick ? 8 : 40, pdus - 2);
  const floodMs = ctx.quick ? 8_000 : 30_000;
  const baselineMs = ctx.quick ? 25_000 : 60_000;
  const samples = latencyPdus;
  const trapPort = await freeUdpPort();
  const healthPort = await freePort();
  // Instance 0 is the flooded PDU, 1 … latencyPdus the latency PDUs, the rest responder units.
  const sims = new IpcChild(AGENTS(), [
    "--simulators",
    String(1 + latencyPdus),
    String(trapPort),
    TRAP_COMMUNITY,
  ]);
  const agents = responderChildren(pdus - 1 - latencyPdus);
  const broker = await startBroker(ctx.tools.mosquitto);
  let bridge: LoggedChild | null = null;
  let watch: Awaited<ReturnType<typeof watchStates>> | null = null;
  try {
    const simUnits = await sims.ready<Unit[]>();
    const units = [...simUnits, ...(await Promise.all(agents.map((a) => a.ready<Unit[]>()))).flat()];
    const flooded = simUnits[0]!.host;
    watch = await watchStates(broker.url);
    const { file, env } = bridgeConfig(ctx.workDir, units, broker, trapPort, healthPort);
    bridge = await startBridge({
      configFile: file,
      logFile: join(ctx.workDir, "traps-bridge.log"),
      nodeArgs: ctx.bridgeNodeArgs,
      env,
      startTimeoutMs: 120_000,
    });
    const w = watch;
    await warmUp(agents, (i) => w.last(pduId(i)) !== undefined, simUnits.length, 300_000);

    ctx.log(
      `traps: ${pdus} PDUs every ${INTERVAL_S} s (bridge pid ${bridge.pid}), baseline ${baselineMs / 1000} s`,
    );
    const baseline: [number, number] = [Date.now(), Date.now() + baselineMs];
    const cpu0 = sampleProc(bridge.pid);
    const load0 = loadavg()[0] ?? 0;
    await sleep(baselineMs);
    const cpu1 = sampleProc(bridge.pid);
    const metricsBefore = await scrape(healthPort);
    const monitor = new ProcMonitor(bridge.pid, 250);
    monitor.begin();
    ctx.log(`traps: flood 2 × 1,000/s for ${floodMs / 1000} s (from ${flooded} and from ::1)`);
    const floodWindow: [number, number] = [Date.now(), Date.now() + floodMs];
    const [fromPdu, fromUnknown] = await Promise.all([
      flood("127.0.0.1", flooded, trapPort, 1000, floodMs),
      flood("::1", "::1", trapPort, 1000, floodMs),
    ]);
    const floodCpu = monitor.end();
    monitor.stop();
    const load1 = loadavg()[0] ?? 0;
    // The polls due in the flood's last interval, late or not, reach their units after it.
    await sleep(INTERVAL_S * 1000 + 2500);
    const text = await scrape(healthPort);
    const [baseLate = [], floodLate = []] = latenessIn(await pollStarts(agents), [baseline, floodWindow]);
    const delta = (series: string) => metric(text, series) - metric(metricsBefore, series);
    const events = delta(`pdu_trap_events_total{instance="${pduId(0)}",kind="outlet-switched"}`);
    const unknown = delta('pdu_trap_dropped_total{reason="unknown-source"}');
    const polls = delta(`pdu_trap_polls_total{instance="${pduId(0)}"}`);

    ctx.log(`traps: latency, ${samples} switches at the panel`);
    const latencies: number[] = [];
    for (let s = 0; s < samples; s++) {
      const i = 1 + (s % latencyPdus);
      const want = w.last(pduId(i))?.payload === "on" ? "off" : "on";
      await sleep(500);
      const at = await sims.request<number>("switch", { index: i, action: want });
      const deadline = at + INTERVAL_S * 2000;
      let seen = w.last(pduId(i));
      while (!(seen !== undefined && seen.payload === want && seen.at >= at) && Date.now() < deadline) {
        await sleep(5);
        seen = w.last(pduId(i));
      }
      if (seen !== undefined && seen.payload === want && seen.at >= at) latencies.push(seen.at - at);
    }

    const baseP99 = percentile(baseLate, 99);
    const floodP99 = percentile(floodLate, 99);
    // The limiter polls at once on the first trap, then at most once at the end of each second with
    // traps: the polls the flood asks for span its seconds and one more.
    const seconds = floodMs / 1000;
    const rssBefore = floodCpu.rssSamples[0] ?? 0;
    const rssGrowth = (floodCpu.rssPeakBytes - rssBefore) / 2 ** 20;
    const baseCpuPercent =
      cpu0 !== null && cpu1 !== null
        ? ((cpu1.cpuSeconds - cpu0.cpuSeconds) * 100) / (baselineMs / 1000)
        : null;
    const floodCpuPercent = (floodCpu.cpuSeconds * 100) / floodCpu.seconds;
    ctx.log(
      `traps: lateness p99 ${baseP99?.toFixed(1) ?? "-"} ms baseline (${baseLate.length} polls), ${floodP99?.toFixed(1) ?? "-"} ms flood (${floodLate.length}); ` +
        `bridge CPU ${baseCpuPercent?.toFixed(1) ?? "-"} % → ${floodCpuPercent.toFixed(1)} % of a core; RSS ${(rssBefore / 2 ** 20).toFixed(0)} MB, peak +${rssGrowth.toFixed(1)} MB; ` +
        `events ${events}/${fromPdu}, unknown ${unknown}/${fromUnknown}, extra polls ${polls}; ` +
        `latency ${latencies.length}/${samples} median ${percentile(latencies, 50)?.toFixed(0) ?? "-"} ms p95 ${percentile(latencies, 95)?.toFixed(0) ?? "-"} ms; load ${load0.toFixed(2)} → ${load1.toFixed(2)}`,
    );
    const rows: Row[] = [
      row({
        scenario: "traps",
        metric: "poll lateness p99 of the other PDUs under the flood",
        unit: "ms",
        target: "≤ baseline p99 (+ 50 ms)",
        measured: floodP99,
        baseline: baseP99,
        ratio: floodP99 !== null && baseP99 !== null && baseP99 > 0 ? floodP99 / baseP99 : null,
        pass: floodP99 !== null && baseP99 !== null ? floodP99 <= baseP99 + 50 : null,
        baselineLabel: "no traps",
      }),
      row({
        scenario: "traps",
        metric: "bridge RSS growth over the flood (peak − before)",
        unit: "MB",
        target: "< 50 MB",
        measured: rssGrowth,
        baseline: rssBefore / 2 ** 20,
        ratio: null,
        pass: rssGrowth < 50,
        baselineLabel: "RSS before",
      }),
      row({
        scenario: "traps",
        metric: "events counted / traps sent from the PDU",
        unit: "ratio",
        target: "1 (≤ 1 % lost to UDP, none counted twice)",
        measured: events / Math.max(1, fromPdu),
        baseline: null,
        ratio: null,
        pass: fromPdu > 0 && events <= fromPdu && events >= 0.99 * fromPdu,
      }),
      row({
        scenario: "traps",
        metric: "unknown-source drops / traps sent from ::1",
        unit: "ratio",
        target: "1 (≤ 1 % lost to UDP, none counted twice)",
        measured: unknown / Math.max(1, fromUnknown),
        baseline: null,
        ratio: null,
        pass: fromUnknown > 0 && unknown <= fromUnknown && unknown >= 0.99 * fromUnknown,
      }),
      row({
        scenario: "traps",
        metric: "extra polls of the flooded PDU per second (the flood's seconds + 1)",
        unit: "/s",
        target: "≤ 1",
        measured: round(polls / (seconds + 1), 2),
        baseline: null,
        ratio: null,
        pass: polls <= seconds + 1,
      }),
      row({
        scenario: "traps",
        metric: `trap to MQTT latency median (${pdus} PDUs every ${INTERVAL_S} s)`,
        unit: "ms",
        target: "< 1000 ms",
        measured: percentile(latencies, 50),
        baseline: null,
        ratio: null,
        pass: (percentile(latencies, 50) ?? Infinity) < 1000,
      }),
      row({
        scenario: "traps",
        metric: "trap to MQTT latency p95",
        unit: "ms",
        target: "< 1000 ms",
        measured: percentile(latencies, 95),
        baseline: null,
        ratio: null,
        pass: latencies.length === samples && (percentile(latencies, 95) ?? Infinity) < 1000,
      }),
    ];
    return {
      rows,
      details: {
        pdus,
        latencyPdus,
        floodMs,
        baselineMs,
        fromPdu,
        fromUnknown,
        events,
        unknown,
        polls,
        latencies,
        baselinePolls: baseLate.length,
        floodPolls: floodLate.length,
        latenessP50Ms: { baseline: percentile(baseLate, 50), flood: percentile(floodLate, 50) },
        rssBeforeMb: rssBefore / 2 ** 20,
        rssPeakGrowthMb: rssGrowth,
        bridgeCpuPercent: { baseline: baseCpuPercent, flood: floodCpuPercent },
        loadavg1: { start: load0, end: load1 },
      },
    };
  } finally {
    await watch?.client.close();
    if (bridge !== null) await stopChild(bridge.child);
    await Promise.all([sims, ...agents].map((a) => a.request("close").catch(() => undefined)));
    await Promise.all([sims, ...agents].map((a) => a.stop()));
    await broker.close();
  }
}
