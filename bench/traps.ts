/**
 * `--only traps`: the SNMP trap receiver under load (docs/events.md, docs/performance.md).
 *
 * N simulated SNMP PDUs (quick 20, full 1,000) polled every 10 s by the bridge (in this process, as
 * bench/assets.ts runs its core), with `Traps.Enabled`:
 *
 * 1. baseline: the lateness of every poll (interval between two polls of an instance minus 10 s),
 *    p99, with no traps;
 * 2. flood: 1,000 traps/s from a configured PDU's address (127.0.0.1, the first instance) and 1,000/s
 *    from an unknown one (::1), for 30 s (quick 8 s): the lateness p99 of the other instances' polls
 *    against the baseline's, the heap before and after, and the counters (events of the first
 *    instance and unknown-source drops against the traps sent; its extra polls against the seconds);
 * 3. latency: outlets switched at a simulated PDU's panel (its trap sent to the bridge), the time
 *    until the new state is on MQTT as a subscriber sees it: median and p95.
 */
import { execFile } from "node:child_process";
import { createSocket } from "node:dgram";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { startAppHarness } from "../testkit/app-harness.js";
import { waitFor } from "../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../src/simulator/snmp/agent.js";
import { DIST } from "./lib/child.js";
import { percentile } from "./lib/stats.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { row, type Row } from "./lib/report.js";

const COMMUNITY = "bench-traps";
const run = promisify(execFile);
const INTERVAL_S = 10;

async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp6");
  await new Promise<void>((resolve) => socket.bind(0, resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/**
 * Sends `perSecond` traps a second from `host` to the receiver for `ms`, from a process of its own
 * (bench/trap-flood-child.ts: the sending costs the bridge's loop nothing); resolves to the count.
 */
async function flood(host: string, port: number, perSecond: number, ms: number): Promise<number> {
  const script = resolve(DIST, "bench/trap-flood-child.js");
  const { stdout } = await run(process.execPath, [
    script,
    host,
    String(port),
    String(perSecond),
    String(ms),
    COMMUNITY,
  ]);
  return (JSON.parse(stdout) as { sent: number }).sent;
}

function metric(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

export async function runTraps(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 20 : 1000;
  const floodMs = ctx.quick ? 8_000 : 30_000;
  const baselineMs = ctx.quick ? 25_000 : 60_000;
  const samples = ctx.quick ? 8 : 40;
  const trapPort = await freeUdpPort();
  const trapTo = { host: "127.0.0.1", port: trapPort, community: COMMUNITY };
  const sims: SnmpSimulator[] = [];
  // Each PDU on an address of its own (all of 127.0.0.0/8 is loopback): the bridge knows a trap's
  // PDU by its source address.
  const hostOf = (i: number) => `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  for (let i = 0; i < pdus; i++) {
    const host = i === 0 ? "127.0.0.1" : hostOf(i);
    sims.push(
      await startSnmpSimulator({
        profile: "apc-rpdu2",
        host,
        port: 0,
        community: "lab",
        frozen: true,
        trapTo,
      }),
    );
  }
  const env: Record<string, string> = { SERVICE_TRAP_COMMUNITIES: COMMUNITY };
  const h = await startAppHarness({
    yaml: () =>
      [
        "Mqtt:",
        "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
        "Pdus:",
        ...sims.flatMap((sim, i) => [
          `  p${i}:`,
          "    Driver: snmp",
          `    Connection: { Host: ${sim.host}, Port: ${sim.port}, Timeout: 5 }`,
          `    PollInterval: ${INTERVAL_S}`,
          "    Snmp: { Community: lab }",
        ]),
        `Traps: { Enabled: true, Port: ${trapPort} }`,
      ].join("\n"),
    env,
    captureLogs: false,
  });
  try {
    // At the full size the first polls of every PDU take longer than the harness's own wait.
    await waitFor(
      () => h.app.store.list().every((status) => status.snapshot !== null && status.snapshot !== undefined),
      `the first poll of all ${pdus} PDUs`,
      180_000,
      200,
    );
    const lastPoll = new Map<string, number>();
    let phase: "baseline" | "flood" | "off" = "baseline";
    const lateness = { baseline: [] as number[], flood: [] as number[] };
    h.app.bus.on("pollDone", ({ instanceId }) => {
      const now = Date.now();
      const last = lastPoll.get(instanceId);
      lastPoll.set(instanceId, now);
      if (last === undefined || phase === "off" || instanceId === "p0") return;
      lateness[phase].push(now - last - INTERVAL_S * 1000);
    });
    ctx.log(`traps: ${pdus} PDUs, baseline ${baselineMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, baselineMs));
    const metricsBefore = (await h.health.get("/metrics")).text;
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    phase = "flood";
    ctx.log(`traps: flood 2 × 1,000/s for ${floodMs / 1000} s`);
    const [fromPdu, fromUnknown] = await Promise.all([
      flood("127.0.0.1", trapPort, 1000, floodMs),
      flood("::1", trapPort, 1000, floodMs),
    ]);
    // The polls due in the flood's last interval come in after it.
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_S * 1000));
    phase = "off";
    global.gc?.();
    const heapAfter = process.memoryUsage().heapUsed;
    const text = (await h.health.get("/metrics")).text;
    const delta = (series: string) => metric(text, series) - metric(metricsBefore, series);
    const events = delta('pdu_trap_events_total{instance="p0",kind="outlet-switched"}');
    const unknown = delta('pdu_trap_dropped_total{reason="unknown-source"}');
    const polls = delta('pdu_trap_polls_total{instance="p0"}');

    ctx.log(`traps: latency, ${samples} switches at the panel`);
    const latencies: number[] = [];
    for (let s = 0; s < samples; s++) {
      const i = 1 + (s % (pdus - 1));
      const id = `p${i}`;
      const device = h.app.store.get(id)?.snapshot?.devices[0]?.id ?? "";
      const topic = `${h.parent}/${id}/${device}/outlets/0/state`;
      const want = h.mqtt.last(topic)?.payload === "on" ? "off" : "on";
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const started = Date.now();
      sims[i]!.panelSwitch(1, want);
      const deadline = started + INTERVAL_S * 2000;
      while (h.mqtt.last(topic)?.payload !== want && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (h.mqtt.last(topic)?.payload === want) latencies.push(Date.now() - started);
    }

    const baseP99 = percentile(lateness.baseline, 99);
    const floodP99 = percentile(lateness.flood, 99);
    const seconds = floodMs / 1000;
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
        metric: "heap growth over the flood",
        unit: "MB",
        target: "< 50 MB",
        measured: (heapAfter - heapBefore) / 2 ** 20,
        baseline: heapBefore / 2 ** 20,
        ratio: null,
        pass: (heapAfter - heapBefore) / 2 ** 20 < 50,
        baselineLabel: "heap before",
      }),
      row({
        scenario: "traps",
        metric: "events counted / traps sent from the PDU",
        unit: "ratio",
        target: "1 (UDP loss aside)",
        measured: events / Math.max(1, fromPdu),
        baseline: null,
        ratio: null,
        pass: events <= fromPdu,
      }),
      row({
        scenario: "traps",
        metric: "unknown-source drops / traps sent from ::1",
        unit: "ratio",
        target: "1 (UDP loss aside)",
        measured: unknown / Math.max(1, fromUnknown),
        baseline: null,
        ratio: null,
        pass: unknown <= fromUnknown,
      }),
      row({
        scenario: "traps",
        metric: "extra polls of the flooded PDU per second",
        unit: "/s",
        target: "≤ 1",
        measured: polls / seconds,
        baseline: null,
        ratio: null,
        pass: polls <= seconds + 2,
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
        floodMs,
        fromPdu,
        fromUnknown,
        events,
        unknown,
        polls,
        latencies,
        heapBefore,
        heapAfter,
      },
    };
  } finally {
    await h.close();
    await Promise.all(sims.map((s) => s.close()));
  }
}
