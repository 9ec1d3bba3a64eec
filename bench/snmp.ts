/**
 * The `snmp` scenario: SNMP polls of many units in one bridge process against the naive floor, a
 * bare net-snmp walk of the same tables, both running AT THE SAME TIME on the same simulated PDUs
 * (APC rPDU2 profile, 24 outlets, living values), so that whatever else loads the machine loads both
 * alike.
 *
 *   full: 1000 units, every unit polled every 30 s, a 120 s window after 75 s of warm-up
 *   --quick: 20 units every 5 s, a 20 s window
 *   BENCH_SNMP_UNITS, BENCH_SNMP_WINDOW_S, BENCH_SNMP_WARMUP_S: another size (e.g. 200 units for a
 *   quicker look on a busy machine; the ratio is the figure to compare, not the milliseconds)
 *
 * Then a mixed fleet, measured the same way after the first: units of every profile the simulator
 * serves (APC, Raritan, ServerTech Sentry4 and Sentry3, CyberPower, Eaton; 24 outlets per unit, two
 * units behind each Sentry3 and Eaton address), the floor walking each unit's own profile tables:
 * 270 units (quick: 9), BENCH_SNMP_MIXED_UNITS another size, 0 none.
 *
 * The units are served by a bench-only responder (lib/snmp-responder.ts): the project simulator's
 * units (their tables, types and living values) answered from pre-encoded varbinds, 500 units per
 * process, so that the agents take a few percent of a core and leave the machine to the two pollers
 * measured. The tests use the project's own simulator (`pdu-bridge simulate --snmp`) and snmpsim.
 *
 * Polls are counted and timed where they arrive: the responder sees every datagram with its
 * source, the bridge sending from 127.0.0.1 and the floor from 127.0.0.2, and a burst of requests
 * from one source port is one poll (one unit's walk; each poller keeps one socket per unit). Poll
 * lateness is when a poll's first request reaches the unit against the poller's own fixed-rate grid
 * (each unit's phase from its best-aligned poll of the window: stats.ts `pollLateness`), which is
 * what the bridge's scheduler promises (a poll due every interval after the previous was due) and
 * what a user sees as readings taken late; the completion lateness, the same for a poll's last
 * request, adds the walk's own delays (values in hand, then published). CPU per poll: each program's
 * CPU seconds (/proc) over its polls; both run under the image's Node options (DEFAULT_NODE_OPTIONS:
 * its young generation is a quarter of Node 20's default, which costs GC time per poll). Targets
 * (docs/snmp.md): CPU per poll at most 1.5× the floor's, lateness p99 under 50 ms.
 *
 * With the runner's profiling on (the default; `--no-profile` skips it), the bridge runs with the
 * inspector open and, after the measured window, one poll interval is profiled
 * (`snmp-bridge-window.cpuprofile` in the scratch directory, summary in the log).
 *
 * The floor is `node dist/bench/snmp.js --floor <json>`; the agents `--agent-child <fleet> <seed>`
 * (fleet: `profile:count,...`).
 */
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import snmp from "net-snmp";
import { DEFAULT_NODE_OPTIONS } from "../src/runtime.js";
import { configYaml, type PduDocument } from "../testkit/config-yaml.js";
import { startBroker } from "./lib/broker.js";
import { DIST, IpcChild, serveIpc, signalReady, sleep, spawnNode, stopChild } from "./lib/child.js";
import { InspectorProfiler } from "./lib/inspector-profile.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { sampleProc } from "./lib/proc.js";
import { formatSummary, summariseProfile } from "./lib/profile-summary.js";
import { row } from "./lib/report.js";
import { startResponder, type Responder } from "./lib/snmp-responder.js";
import { mean, percentile, pollLateness, ratio, round } from "./lib/stats.js";
import { profileById } from "../src/pdu/snmp/profiles.js";
import { SIM_PROFILES, type SimProfile } from "../src/simulator/snmp/units.js";

/** Units per responder process. */
const PER_CHILD = 500;
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
/** rPDU2IdentSerialNumber of the unit: each simulated unit answers a serial of its own. */
const SERIAL_OID = "1.3.6.1.4.1.318.1.1.26.2.1.9.1";

interface FloorSettings {
  readonly ports: readonly number[];
  /** The tables (entry OIDs) to walk of each port's unit; absent: {@link TABLES} for every one. */
  readonly tables?: readonly (readonly string[])[];
  readonly intervalMs: number;
  readonly concurrency: number;
}

/** Units of one profile in a fleet. */
interface FleetPart {
  readonly profile: SimProfile;
  readonly units: number;
}

/** `apc-rpdu2:500,eaton-epdu:30` ↔ the fleet's parts. */
const fleetArg = (fleet: readonly FleetPart[]) => fleet.map((p) => `${p.profile}:${p.units}`).join(",");
function parseFleet(arg: string): FleetPart[] {
  return arg.split(",").map((part) => {
    const [profile = "", count = ""] = part.split(":");
    if (!(SIM_PROFILES as readonly string[]).includes(profile)) throw new Error(`no profile ${profile}`);
    return { profile: profile as SimProfile, units: Number(count) };
  });
}

/** The mixed fleet: `units` spread over every profile the simulator serves (at least one each). */
function mixedFleet(units: number): FleetPart[] {
  const each = Math.max(1, Math.floor(units / SIM_PROFILES.length));
  return SIM_PROFILES.map((profile) => ({ profile, units: each }));
}

/** One source's polls as the units saw them: start, end (last request) and requests of each. */
type Bursts = [start: number, end: number, requests: number][];

/** A child holding the units of `fleet`; it records each source's polls (bursts of requests). */
async function agentChild(fleet: readonly FleetPart[], seed: number): Promise<void> {
  // source "address:port" → its bursts so far
  const sources = new Map<string, { address: string; bursts: Bursts }>();
  const onRequest = (address: string, port: number) => {
    const now = Date.now();
    const key = `${address}:${port}`;
    let s = sources.get(key);
    if (s === undefined) {
      s = { address, bursts: [] };
      sources.set(key, s);
    }
    const last = s.bursts.at(-1);
    if (last === undefined || now - last[1] > BURST_GAP_MS) s.bursts.push([now, now, 1]);
    else {
      last[1] = now;
      last[2]++;
    }
  };
  const responders: Responder[] = [];
  let offset = 0;
  for (const part of fleet) {
    responders.push(
      await startResponder({
        profile: part.profile,
        outlets: 24,
        units: part.units,
        seed: seed + offset,
        community: "bench",
        ...(part.profile === "apc-rpdu2" ? { serial: { oid: SERIAL_OID, prefix: "3F17" } } : {}),
        onRequest,
      }),
    );
    offset += part.units;
  }
  serveIpc((cmd, message) => {
    if (cmd === "bursts") {
      const since = Number(message.since);
      const until = Number(message.until);
      const out: Record<string, Bursts[]> = { [BRIDGE_ADDRESS]: [], [FLOOR_ADDRESS]: [] };
      for (const s of sources.values())
        out[s.address]?.push(s.bursts.filter(([start]) => start >= since && start < until));
      return Promise.resolve(out);
    }
    if (cmd === "close") return Promise.all(responders.map((r) => r.close())).then(() => null);
    return Promise.reject(new Error(`unknown command ${cmd}`));
  });
  signalReady(responders.flatMap((r) => r.ports));
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
  const pollOne = async (session: snmp.Session, tables: readonly string[]) => {
    await slot();
    try {
      for (const table of tables) await walk(session, table);
    } finally {
      free();
    }
  };
  sessions.forEach((session, i) => {
    const offset = (i * settings.intervalMs) / sessions.length;
    const tables = settings.tables?.[i] ?? TABLES;
    setTimeout(() => {
      void pollOne(session, tables);
      setInterval(() => void pollOne(session, tables), settings.intervalMs);
    }, offset);
  });
  process.stdout.write("ready\n");
}

if (process.argv[2] === "--agent-child") {
  await agentChild(parseFleet(process.argv[3] ?? ""), Number(process.argv[4]));
} else if (process.argv[2] === "--floor") {
  await floor(process.argv[3] ?? "");
}

/** A positive integer from the environment (0 too where `zero`), or `fallback`. */
function envNumber(name: string, fallback: number, zero = false): number {
  const n = Number(process.env[name]);
  return Number.isInteger(n) && (n > 0 || (zero && n === 0)) ? n : fallback;
}

/** One fleet measured: its file and id prefix, its units, and whether one interval is profiled after. */
interface FleetRun {
  readonly name: string;
  readonly fleet: readonly FleetPart[];
  /** Each unit's tables for the floor from its profile; false: {@link TABLES} (the apc-rpdu2 fleet). */
  readonly ownTables: boolean;
  readonly profile: boolean;
  readonly intervalS: number;
  readonly windowS: number;
  readonly warmupS: number;
}

interface FleetMeasure {
  /** SNMP addresses polled (one instance each). */
  readonly units: number;
  readonly agents: number;
  readonly bridgeMs: number | null;
  readonly floorMs: number | null;
  readonly cpuRatio: number | null;
  readonly p99: number | null;
  readonly floorP99: number | null;
  readonly endP99: number | null;
  readonly floorEndP99: number | null;
  readonly requests: number | null;
  readonly floorRequests: number | null;
  readonly agentPercent: number;
  readonly details: Record<string, unknown>;
}

/** The fleet cut into responder children of at most {@link PER_CHILD} units, with each one's first seed. */
function children(fleet: readonly FleetPart[]): { parts: FleetPart[]; seed: number }[] {
  const out: { parts: FleetPart[]; seed: number }[] = [];
  let seed = 0;
  let current: { parts: FleetPart[]; seed: number; units: number } | null = null;
  for (const part of fleet) {
    let left = part.units;
    while (left > 0) {
      if (current === null || current.units === PER_CHILD) {
        current = { parts: [], seed, units: 0 };
        out.push(current);
      }
      const take = Math.min(left, PER_CHILD - current.units);
      current.parts.push({ profile: part.profile, units: take });
      current.units += take;
      seed += take;
      left -= take;
    }
  }
  return out.map(({ parts, seed: first }) => ({ parts, seed: first }));
}

export async function runSnmp(ctx: BenchContext): Promise<ScenarioResult> {
  const units = envNumber("BENCH_SNMP_UNITS", ctx.quick ? 20 : 1000);
  const intervalS = ctx.quick ? 5 : 30;
  const windowS = envNumber("BENCH_SNMP_WINDOW_S", ctx.quick ? 20 : 120);
  const warmupS = envNumber("BENCH_SNMP_WARMUP_S", ctx.quick ? 12 : 75);
  const timings = { intervalS, windowS, warmupS };
  const main = await measureFleet(ctx, {
    name: "snmp",
    fleet: [{ profile: "apc-rpdu2", units }],
    ownTables: false,
    profile: ctx.profile,
    ...timings,
  });
  const rows = [
    row({
      scenario: "snmp",
      metric: `CPU per poll, ${units} SNMP units`,
      unit: "ms",
      target: "≤ 1.5× baseline",
      measured: round(main.bridgeMs, 3),
      baseline: round(main.floorMs, 3),
      ratio: round(main.cpuRatio, 3),
      pass: main.cpuRatio !== null && main.cpuRatio <= 1.5,
      baselineLabel: "bare net-snmp walk, same run",
    }),
    row({
      scenario: "snmp",
      metric: `poll lateness p99, ${units} SNMP units`,
      unit: "ms",
      target: "< 50 ms",
      measured: round(main.p99, 1),
      baseline: round(main.floorP99, 1),
      ratio: null,
      pass: main.p99 !== null && main.p99 < 50,
      baselineLabel: "the floor's lateness",
    }),
    row({
      scenario: "snmp",
      metric: `poll completion lateness p99 (last request), ${units} SNMP units`,
      unit: "ms",
      target: "info",
      measured: round(main.endP99, 1),
      baseline: round(main.floorEndP99, 1),
      ratio: null,
      pass: null,
      baselineLabel: "the floor's",
    }),
    row({
      scenario: "snmp",
      metric: "requests per poll",
      unit: "",
      target: "info",
      measured: round(main.requests, 1),
      baseline: round(main.floorRequests, 1),
      ratio: round(ratio(main.requests, main.floorRequests), 3),
      pass: null,
      baselineLabel: "the floor's",
    }),
    row({
      scenario: "snmp",
      metric: `simulated units' CPU (${main.agents} responder processes)`,
      unit: "% of a core",
      target: "info",
      measured: round(main.agentPercent, 1),
      baseline: null,
      ratio: null,
      pass: null,
    }),
  ];
  const mixedUnits = envNumber("BENCH_SNMP_MIXED_UNITS", ctx.quick ? SIM_PROFILES.length : 270, true);
  let mixed: FleetMeasure | null = null;
  if (mixedUnits > 0) {
    mixed = await measureFleet(ctx, {
      name: "snmp-mixed",
      fleet: mixedFleet(mixedUnits),
      ownTables: true,
      profile: false,
      ...timings,
    });
    rows.push(
      row({
        scenario: "snmp",
        metric: `CPU per poll, mixed fleet of ${mixed.units} SNMP units (${SIM_PROFILES.length} profiles)`,
        unit: "ms",
        target: "≤ 1.5× baseline",
        measured: round(mixed.bridgeMs, 3),
        baseline: round(mixed.floorMs, 3),
        ratio: round(mixed.cpuRatio, 3),
        pass: mixed.cpuRatio !== null && mixed.cpuRatio <= 1.5,
        baselineLabel: "bare net-snmp walk of each profile's tables, same run",
      }),
      row({
        scenario: "snmp",
        metric: `poll lateness p99, mixed fleet of ${mixed.units} SNMP units`,
        unit: "ms",
        target: "< 50 ms",
        measured: round(mixed.p99, 1),
        baseline: round(mixed.floorP99, 1),
        ratio: null,
        pass: mixed.p99 !== null && mixed.p99 < 50,
        baselineLabel: "the floor's lateness",
      }),
    );
  }
  return {
    rows,
    details: { ...main.details, ...(mixed === null ? {} : { mixed: mixed.details }) },
  };
}

/** Serves `run.fleet`, runs the bridge and the floor on it at once, and measures one window. */
async function measureFleet(ctx: BenchContext, run: FleetRun): Promise<FleetMeasure> {
  const { name, intervalS, windowS, warmupS } = run;
  const script = resolve(DIST, "bench/snmp.js");
  const parts = children(run.fleet);
  const agents = parts.map((c) => new IpcChild(script, ["--agent-child", fleetArg(c.parts), String(c.seed)]));
  // Each port's profile, in the order the children and their responders list their ports.
  const profiles = parts.flatMap((c) => c.parts.flatMap((p) => Array<SimProfile>(p.units).fill(p.profile)));
  const broker = await startBroker(ctx.tools.mosquitto);
  const started: { child: ChildProcess }[] = [];
  try {
    const ports = (await Promise.all(agents.map((a) => a.ready<number[]>()))).flat();
    const units = ports.length;
    // The bridge: one snmp instance per unit, communities from the environment.
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_") && k !== "NODE_OPTIONS"),
    );
    env.NODE_OPTIONS = DEFAULT_NODE_OPTIONS;
    const pdus: Record<string, PduDocument> = {};
    ports.forEach((port, i) => {
      const id = `${name}-${String(i).padStart(4, "0")}`;
      pdus[id] = {
        Driver: "snmp",
        Connection: { Host: BRIDGE_ADDRESS, Port: port, Timeout: 5 },
        Snmp: { Profile: profiles[i] ?? "apc-rpdu2" },
        PollInterval: intervalS,
      };
      env[`SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}_COMMUNITY`] = "bench";
    });
    const config = join(ctx.workDir, `${name}-bridge.yaml`);
    writeFileSync(
      config,
      configYaml({
        Mqtt: {
          Connection: { Host: broker.host, Port: broker.port, Scheme: "mqtt" },
          ClientId: `bench-${name}-${process.pid}`,
        },
        Pdus: pdus,
        Api: { Enabled: false },
        Health: { Enabled: false },
        Logging: { Level: "info" },
      }),
    );
    const floorFile = join(ctx.workDir, `${name}-floor.json`);
    const tables = run.ownTables
      ? profiles.map((p) => (profileById(p)?.tables ?? []).map((t) => t.oid))
      : undefined;
    writeFileSync(
      floorFile,
      JSON.stringify({ ports, intervalMs: intervalS * 1000, concurrency: 64, ...(tables ? { tables } : {}) }),
    );
    // The floor runs under the same Node options as the bridge (the image's heap settings): the
    // ratio is the bridge's code against a bare walk, not one runtime configuration against another.
    const floorChild = spawnNode(script, ["--floor", floorFile], {
      logFile: join(ctx.workDir, `${name}-floor.log`),
      env: { ...env, NODE_OPTIONS: DEFAULT_NODE_OPTIONS },
    });
    started.push(floorChild);
    await floorChild.waitForLog("ready", 30_000);
    const bridge = spawnNode(resolve(DIST, "src/main.js"), ["--config", config], {
      logFile: join(ctx.workDir, `${name}-bridge.log`),
      nodeArgs: [...ctx.bridgeNodeArgs, ...(run.profile ? ["--inspect=127.0.0.1:0"] : [])],
      env,
    });
    started.push(bridge);
    await bridge.waitForLog("pdu-bridge started", 60_000);
    ctx.log(`${name}: ${units} units every ${intervalS} s, bridge and floor at once; warm-up ${warmupS} s`);
    await sleep(warmupS * 1000);
    const since = Date.now();
    const b0 = sampleProc(bridge.pid);
    const f0 = sampleProc(floorChild.pid);
    const a0 = agents.map((a) => sampleProc(a.pid));
    const load0 = loadavg()[0] ?? 0;
    await sleep(windowS * 1000);
    const until = Date.now();
    const b1 = sampleProc(bridge.pid);
    const f1 = sampleProc(floorChild.pid);
    const a1 = agents.map((a) => sampleProc(a.pid));
    const load1 = loadavg()[0] ?? 0;
    // The polls that started in the window, once the last of them has ended.
    await sleep(BURST_GAP_MS + 500);
    const seen = await Promise.all(
      agents.map((a) => a.request<Record<string, Bursts[]>>("bursts", { since, until })),
    );
    if (b0 === null || b1 === null || f0 === null || f1 === null) throw new Error("a program died");
    const of = (address: string) => seen.flatMap((s) => s[address] ?? []);
    const timing = (address: string) => {
      const bursts = of(address);
      const starts = pollLateness(
        bursts.map((b) => b.map(([start]) => start)),
        intervalS * 1000,
      );
      const ends = pollLateness(
        bursts.map((b) => b.map(([, end]) => end)),
        intervalS * 1000,
      );
      const requests = mean(bursts.flatMap((b) => b.map(([, , n]) => n)));
      return { starts, ends, requests };
    };
    const bridgeTimes = timing(BRIDGE_ADDRESS);
    const floorTimes = timing(FLOOR_ADDRESS);
    const bridgeCpu = b1.cpuSeconds - b0.cpuSeconds;
    const floorCpu = f1.cpuSeconds - f0.cpuSeconds;
    let agentCpu = 0;
    a0.forEach((s, i) => (agentCpu += (a1[i]?.cpuSeconds ?? 0) - (s?.cpuSeconds ?? 0)));
    const agentPercent = (agentCpu * 100) / ((until - since) / 1000);
    const perPoll = (cpu: number, polls: number) => (polls === 0 ? null : (cpu * 1000) / polls);
    const bridgeMs = perPoll(bridgeCpu, bridgeTimes.starts.polls);
    const floorMs = perPoll(floorCpu, floorTimes.starts.polls);
    const cpuRatio = ratio(bridgeMs, floorMs);
    const p99 = percentile(bridgeTimes.starts.lateness, 99);
    const floorP99 = percentile(floorTimes.starts.lateness, 99);
    const endP99 = percentile(bridgeTimes.ends.lateness, 99);
    const floorEndP99 = percentile(floorTimes.ends.lateness, 99);
    const due = (units * windowS) / intervalS;
    ctx.log(
      `${name}: bridge ${bridgeCpu.toFixed(2)} s CPU, ${bridgeTimes.starts.polls}/${due} polls (${bridgeMs?.toFixed(3) ?? "-"} ms/poll, ${bridgeTimes.requests?.toFixed(1) ?? "-"} requests each); ` +
        `floor ${floorCpu.toFixed(2)} s, ${floorTimes.starts.polls} polls (${floorMs?.toFixed(3) ?? "-"} ms/poll, ${floorTimes.requests?.toFixed(1) ?? "-"} requests each); ` +
        `ratio ${cpuRatio?.toFixed(3) ?? "-"}; lateness p99 ${p99?.toFixed(1) ?? "-"} ms (floor ${floorP99?.toFixed(1) ?? "-"}), ` +
        `completion p99 ${endP99?.toFixed(1) ?? "-"} ms (floor ${floorEndP99?.toFixed(1) ?? "-"}); ` +
        `agents ${agentPercent.toFixed(1)} % of a core; load ${load0.toFixed(2)} → ${load1.toFixed(2)}`,
    );

    let profile: { file: string; summary: string } | null = null;
    if (run.profile) {
      const file = join(ctx.workDir, `${name}-bridge-window.cpuprofile`);
      const profiler = await InspectorProfiler.attach(() => bridge.log());
      try {
        await profiler.start();
        await sleep(intervalS * 1000);
        const cpuProfile = await profiler.stop();
        writeFileSync(file, JSON.stringify(cpuProfile));
        const summary = formatSummary(summariseProfile(cpuProfile, 30), 30);
        ctx.log(`  profile of one interval after the window: ${file}\n${summary}`);
        profile = { file, summary };
      } finally {
        profiler.close();
      }
    }

    const details = {
      units,
      intervalS,
      windowS,
      bridge: {
        cpuSeconds: bridgeCpu,
        polls: bridgeTimes.starts.polls,
        skipped: bridgeTimes.starts.skipped,
        msPerPoll: bridgeMs,
        requestsPerPoll: bridgeTimes.requests,
        rssMb: b1.rssBytes / 2 ** 20,
      },
      floor: {
        cpuSeconds: floorCpu,
        polls: floorTimes.starts.polls,
        skipped: floorTimes.starts.skipped,
        msPerPoll: floorMs,
        requestsPerPoll: floorTimes.requests,
      },
      agents: { processes: agents.length, cpuSeconds: agentCpu, percentOfCore: agentPercent },
      latenessP50Ms: percentile(bridgeTimes.starts.lateness, 50),
      latenessP99Ms: p99,
      completionLatenessP50Ms: percentile(bridgeTimes.ends.lateness, 50),
      completionLatenessP99Ms: endP99,
      floorLatenessP99Ms: floorP99,
      floorCompletionLatenessP99Ms: floorEndP99,
      duePolls: due,
      loadavg1: { start: load0, end: load1 },
      ...(profile === null ? {} : { profile }),
    };
    return {
      units,
      agents: agents.length,
      bridgeMs,
      floorMs,
      cpuRatio,
      p99,
      floorP99,
      endP99,
      floorEndP99,
      requests: bridgeTimes.requests,
      floorRequests: floorTimes.requests,
      agentPercent,
      details,
    };
  } finally {
    for (const c of started) await stopChild(c.child);
    await Promise.all(agents.map((a) => a.request("close").catch(() => undefined)));
    await Promise.all(agents.map((a) => a.stop()));
    await broker.close();
  }
}
