/**
 * The `snmp` scenario: SNMP polls of many units in one bridge process against the naive floor, a
 * bare net-snmp walk of the same tables, both running AT THE SAME TIME on the same simulated PDUs
 * (the project's SNMP simulator, APC rPDU2 profile, 24 outlets, living values), so that whatever
 * else loads the machine loads both alike.
 *
 *   full: 1000 units, every unit polled every 30 s, a 120 s window
 *   --quick: 20 units every 5 s, a 20 s window
 *
 * Polls are counted and timed where they arrive: the agents see every datagram with its source, the
 * bridge sending from 127.0.0.1 and the floor from 127.0.0.2, and a burst of requests from one
 * source port is one poll (one unit's walk). Lateness is the pollers' scheduling jitter
 * (stats.ts `pollLateness`). CPU per poll: each program's CPU seconds (/proc) over its polls.
 * Targets (docs/snmp.md): CPU per poll at most 1.5× the floor's, lateness p99 under 50 ms.
 *
 * The floor is `node dist/bench/snmp.js --floor <json>`; the agents `--agent-child <count> <seed>`.
 */
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import snmp from "net-snmp";
import { DEFAULT_NODE_OPTIONS } from "../src/runtime.js";
import { startSnmpSimulator, type SnmpSimulator } from "../src/simulator/snmp/agent.js";
import { startBroker } from "./lib/broker.js";
import { DIST, IpcChild, serveIpc, signalReady, sleep, spawnNode, stopChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { sampleProc } from "./lib/proc.js";
import { row } from "./lib/report.js";
import { percentile, pollLateness, ratio, round } from "./lib/stats.js";

const PER_CHILD = 100;
const BRIDGE_ADDRESS = "127.0.0.1";
const FLOOR_ADDRESS = "127.0.0.2";
/** Requests from one source port closer together than this are one poll. */
const BURST_GAP_MS = 1000;
/** The tables the bridge's apc-rpdu2 profile walks (their entry OIDs). */
const TABLES = [
  "1.3.6.1.4.1.318.1.1.26.2.1",
  "1.3.6.1.4.1.318.1.1.26.4.2.1",
  "1.3.6.1.4.1.318.1.1.26.4.3.1",
  "1.3.6.1.4.1.318.1.1.26.6.3.1",
  "1.3.6.1.4.1.318.1.1.26.8.3.1",
  "1.3.6.1.4.1.318.1.1.26.9.2.1.1",
  "1.3.6.1.4.1.318.1.1.26.9.2.3.1",
  "1.3.6.1.4.1.318.1.1.26.9.2.4.1",
  "1.3.6.1.4.1.318.1.1.26.9.4.3.1",
  "1.3.6.1.4.1.318.1.1.26.10.2.2.1",
];
const MAX_REPETITIONS = 24;

interface FloorSettings {
  readonly ports: readonly number[];
  readonly intervalMs: number;
  readonly concurrency: number;
}

/** A child holding `count` simulated units; it records when each source began a poll. */
async function agentChild(count: number, seed: number): Promise<void> {
  const sims: SnmpSimulator[] = [];
  // source "address:port" → poll start times (ms) and the time of its last request
  const sources = new Map<string, { address: string; starts: number[]; last: number }>();
  const onRequest = (address: string, port: number) => {
    const now = Date.now();
    const key = `${address}:${port}`;
    let s = sources.get(key);
    if (s === undefined) {
      s = { address, starts: [], last: 0 };
      sources.set(key, s);
    }
    if (now - s.last > BURST_GAP_MS) s.starts.push(now);
    s.last = now;
  };
  for (let i = 0; i < count; i++) {
    sims.push(
      await startSnmpSimulator({
        profile: "apc-rpdu2",
        outlets: 24,
        port: 0,
        seed: seed + i,
        community: "bench",
        writeCommunity: "bench-write",
        onRequest,
      }),
    );
  }
  serveIpc((cmd, message) => {
    if (cmd === "starts") {
      const since = Number(message.since);
      const out: Record<string, number[][]> = { [BRIDGE_ADDRESS]: [], [FLOOR_ADDRESS]: [] };
      for (const s of sources.values()) out[s.address]?.push(s.starts.filter((t) => t >= since));
      return Promise.resolve(out);
    }
    if (cmd === "close") return Promise.all(sims.map((s) => s.close())).then(() => null);
    return Promise.reject(new Error(`unknown command ${cmd}`));
  });
  signalReady(sims.map((s) => s.port));
}

/** The naive floor: every interval, a bare net-snmp walk of the same tables of every unit. */
async function floor(file: string): Promise<void> {
  const { readFileSync } = await import("node:fs");
  const settings = JSON.parse(readFileSync(file, "utf8")) as FloorSettings;
  const sessions = settings.ports.map((port) =>
    snmp.createSession("127.0.0.1", "bench", {
      port,
      version: snmp.Version2c,
      timeout: 5000,
      retries: 1,
      sourceAddress: FLOOR_ADDRESS,
    }),
  );
  let running = 0;
  const queue: (() => void)[] = [];
  const slot = async () => {
    if (running < settings.concurrency) {
      running++;
      return;
    }
    await new Promise<void>((r) => queue.push(r));
  };
  const free = () => {
    const next = queue.shift();
    if (next) next();
    else running--;
  };
  const walk = (session: snmp.Session, oid: string) =>
    new Promise<number>((resolveWalk) => {
      let n = 0;
      session.subtree(
        oid,
        MAX_REPETITIONS,
        (varbinds) => {
          n += varbinds.length;
        },
        () => resolveWalk(n),
      );
    });
  const pollOne = async (session: snmp.Session) => {
    await slot();
    try {
      for (const table of TABLES) await walk(session, table);
    } finally {
      free();
    }
  };
  sessions.forEach((session, i) => {
    const offset = (i * settings.intervalMs) / sessions.length;
    setTimeout(() => {
      void pollOne(session);
      setInterval(() => void pollOne(session), settings.intervalMs);
    }, offset);
  });
  process.stdout.write("ready\n");
}

if (process.argv[2] === "--agent-child") {
  await agentChild(Number(process.argv[3]), Number(process.argv[4]));
} else if (process.argv[2] === "--floor") {
  await floor(process.argv[3] ?? "");
}

export async function runSnmp(ctx: BenchContext): Promise<ScenarioResult> {
  const units = ctx.quick ? 20 : 1000;
  const intervalS = ctx.quick ? 5 : 30;
  const windowS = ctx.quick ? 20 : 120;
  const warmupS = ctx.quick ? 12 : 75;
  const script = resolve(DIST, "bench/snmp.js");
  const agents: IpcChild[] = [];
  for (let seed = 0; seed < units; seed += PER_CHILD) {
    agents.push(
      new IpcChild(script, ["--agent-child", String(Math.min(PER_CHILD, units - seed)), String(seed)]),
    );
  }
  const broker = await startBroker(ctx.tools.mosquitto);
  const children: { child: ChildProcess }[] = [];
  try {
    const ports = (await Promise.all(agents.map((a) => a.ready<number[]>()))).flat();
    // The bridge: one snmp instance per unit, communities from the environment.
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_") && k !== "NODE_OPTIONS"),
    );
    env.NODE_OPTIONS = DEFAULT_NODE_OPTIONS;
    const lines = [
      "Mqtt:",
      `  Connection: { Host: ${broker.host}, Port: ${broker.port}, Scheme: mqtt }`,
      `  ClientId: bench-snmp-${process.pid}`,
      "Pdus:",
    ];
    ports.forEach((port, i) => {
      const id = `snmp-${String(i).padStart(4, "0")}`;
      lines.push(
        `  ${id}:`,
        "    Driver: snmp",
        `    Connection: { Host: ${BRIDGE_ADDRESS}, Port: ${port}, Timeout: 5 }`,
        "    Snmp: { Profile: apc-rpdu2 }",
        `    PollInterval: ${intervalS}`,
      );
      env[`SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}_COMMUNITY`] = "bench";
    });
    lines.push("Api: { Enabled: false }", "Health: { Enabled: false }", "Logging: { Level: info }");
    const config = join(ctx.workDir, "snmp-bridge.yaml");
    writeFileSync(config, `${lines.join("\n")}\n`);
    const floorFile = join(ctx.workDir, "snmp-floor.json");
    writeFileSync(floorFile, JSON.stringify({ ports, intervalMs: intervalS * 1000, concurrency: 64 }));
    const floorChild = spawnNode(script, ["--floor", floorFile], {
      logFile: join(ctx.workDir, "snmp-floor.log"),
    });
    children.push(floorChild);
    await floorChild.waitForLog("ready", 30_000);
    const bridge = spawnNode(resolve(DIST, "src/main.js"), ["--config", config], {
      logFile: join(ctx.workDir, "snmp-bridge.log"),
      nodeArgs: ctx.bridgeNodeArgs,
      env,
    });
    children.push(bridge);
    await bridge.waitForLog("pdu-bridge started", 60_000);
    ctx.log(`snmp: ${units} units every ${intervalS} s, bridge and floor at once; warm-up ${warmupS} s`);
    await sleep(warmupS * 1000);

    const since = Date.now();
    const b0 = sampleProc(bridge.pid);
    const f0 = sampleProc(floorChild.pid);
    const load0 = loadavg()[0] ?? 0;
    await sleep(windowS * 1000);
    const b1 = sampleProc(bridge.pid);
    const f1 = sampleProc(floorChild.pid);
    const starts = await Promise.all(
      agents.map((a) => a.request<Record<string, number[][]>>("starts", { since })),
    );
    if (b0 === null || b1 === null || f0 === null || f1 === null) throw new Error("a program died");
    const of = (address: string) => starts.flatMap((s) => s[address] ?? []);
    const bridgeTimes = pollLateness(of(BRIDGE_ADDRESS), intervalS * 1000);
    const floorTimes = pollLateness(of(FLOOR_ADDRESS), intervalS * 1000);
    const bridgeCpu = b1.cpuSeconds - b0.cpuSeconds;
    const floorCpu = f1.cpuSeconds - f0.cpuSeconds;
    const perPoll = (cpu: number, polls: number) => (polls === 0 ? null : (cpu * 1000) / polls);
    const bridgeMs = perPoll(bridgeCpu, bridgeTimes.polls);
    const floorMs = perPoll(floorCpu, floorTimes.polls);
    const cpuRatio = ratio(bridgeMs, floorMs);
    const p99 = percentile(bridgeTimes.lateness, 99);
    const due = (units * windowS) / intervalS;
    ctx.log(
      `snmp: bridge ${bridgeCpu.toFixed(2)} s CPU, ${bridgeTimes.polls}/${due} polls (${bridgeMs?.toFixed(3) ?? "-"} ms/poll); ` +
        `floor ${floorCpu.toFixed(2)} s, ${floorTimes.polls} polls (${floorMs?.toFixed(3) ?? "-"} ms/poll); ` +
        `ratio ${cpuRatio?.toFixed(3) ?? "-"}; lateness p99 ${p99?.toFixed(1) ?? "-"} ms; load ${load0.toFixed(2)} → ${(loadavg()[0] ?? 0).toFixed(2)}`,
    );
    return {
      rows: [
        row({
          scenario: "snmp",
          metric: `CPU per poll, ${units} SNMP units`,
          unit: "ms",
          target: "≤ 1.5× baseline",
          measured: round(bridgeMs, 3),
          baseline: round(floorMs, 3),
          ratio: round(cpuRatio, 3),
          pass: cpuRatio !== null && cpuRatio <= 1.5,
          baselineLabel: "bare net-snmp walk, same run",
        }),
        row({
          scenario: "snmp",
          metric: `poll lateness p99, ${units} SNMP units`,
          unit: "ms",
          target: "< 50 ms",
          measured: round(p99, 1),
          baseline: round(percentile(floorTimes.lateness, 99), 1),
          ratio: null,
          pass: p99 !== null && p99 < 50,
          baselineLabel: "the floor's lateness",
        }),
      ],
      details: {
        units,
        intervalS,
        windowS,
        bridge: {
          cpuSeconds: bridgeCpu,
          polls: bridgeTimes.polls,
          skipped: bridgeTimes.skipped,
          msPerPoll: bridgeMs,
          rssMb: b1.rssBytes / 2 ** 20,
        },
        floor: {
          cpuSeconds: floorCpu,
          polls: floorTimes.polls,
          skipped: floorTimes.skipped,
          msPerPoll: floorMs,
        },
        latenessP50Ms: percentile(bridgeTimes.lateness, 50),
        latenessP99Ms: p99,
        duePolls: due,
      },
    };
  } finally {
    for (const c of children) await stopChild(c.child);
    await Promise.all(agents.map((a) => a.request("close").catch(() => undefined)));
    await Promise.all(agents.map((a) => a.stop()));
    await broker.close();
  }
}
