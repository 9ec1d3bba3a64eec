/**
 * CPU per poll, bridge against the naive floor, both running AT THE SAME TIME on the same simulated
 * PDUs and the same mosquitto, so that whatever else loads the machine loads both alike: the ratio
 * of their CPU seconds over one window is the A/B figure for work on the poll path.
 * `npm run bench -- --only fleet` measures them one after the other, which on a shared machine puts
 * minutes of drift into the ratio.
 *
 *   node dist/bench/poll-cpu.js [--pdus 250] [--window 40] [--frozen] [--profile] [--rounds 1] [--base DIR] [--base-first] [--starts 1]
 *
 * --base DIR: also runs the bridge of another build (DIR is its dist/, e.g. of the commit before a
 * change) beside the others, started the same way (same environment, same options), and prints this
 * build's CPU over that one's per round and their mean over the unprofiled rounds.
 * --base-first: starts the base build before this one (in the first start; the order alternates).
 * --starts N: starts both bridges N times, each time fresh, with its warm-up and `--rounds` windows,
 * and prints the mean of the starts' means with its standard error. The rounds of one start agree
 * closely, but a start fixes where each program polls against the others and the simulators, which
 * moves the ratio by several percent: the figure of an A/B comparison is a mean over many starts.
 * An A/A run (`--base` of this build's own dist/) shows what is left of a program's place in the
 * run (docs/performance.md).
 * --frozen: the simulators' `frozen` option, so no value ever changes (the "nothing changes" case).
 * --profile: also writes CPU profiles of the bridge, the naive floor and the base build over the
 * last window (slows them: the ratio of a profiled round is printed but is not the figure).
 * Both programs poll every PDU every 10 s; the simulators count every `GET /api`, which is about twice
 * the PDUs per interval when both keep up (printed as a check).
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { startSimulator, type Simulator } from "../src/simulator/index.js";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import {
  DIST,
  IpcChild,
  killAllStarted,
  serveIpc,
  signalReady,
  sleep,
  spawnNode,
  stopChild,
  type LoggedChild,
} from "./lib/child.js";
import { InspectorProfiler } from "./lib/inspector-profile.js";
import { sampleProc } from "./lib/proc.js";
import { formatSummary, summariseProfile } from "./lib/profile-summary.js";
import { mean, standardError } from "./lib/stats.js";
import { ensureTools } from "./lib/tools.js";

const PER_CHILD = 250;
const INTERVAL_S = 10;

if (process.argv[2] === "--sim-child") {
  const [count, firstSeed, frozen] = process.argv.slice(3).map(Number) as [number, number, number];
  const sims: Simulator[] = [];
  for (let i = 0; i < count; i++) {
    sims.push(
      await startSimulator({
        outlets: 24,
        seed: firstSeed + i,
        requestLogLimit: 100,
        frozen: frozen === 1,
      }),
    );
  }
  let base = 0;
  const polls = () =>
    sims.reduce(
      (n, sim) => n + sim.requests.filter((r) => r.method === "GET" && r.path === "/api").length,
      0,
    );
  serveIpc((cmd) => {
    if (cmd === "reset") {
      for (const sim of sims) sim.clearRequests();
      base = 0;
      return Promise.resolve(null);
    }
    if (cmd === "polls") return Promise.resolve(polls() - base);
    if (cmd === "close") return Promise.all(sims.map((sim) => sim.close())).then(() => null);
    return Promise.reject(new Error(`unknown command ${cmd}`));
  });
  signalReady(sims.map((sim) => sim.port));
} else {
  try {
    await main();
  } catch (error) {
    // A program that did not start leaves the others running: stop every child before failing.
    killAllStarted();
    throw error;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      pdus: { type: "string", default: "250" },
      window: { type: "string", default: "40" },
      rounds: { type: "string", default: "1" },
      frozen: { type: "boolean", default: false },
      profile: { type: "boolean", default: false },
      base: { type: "string" },
      "base-first": { type: "boolean", default: false },
      starts: { type: "string", default: "1" },
    },
  });
  const pdus = Number(values.pdus);
  const windowS = Number(values.window);
  const rounds = Number(values.rounds);
  const starts = Number(values.starts);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-poll-cpu-"));
  const tools = ensureTools(false, log);
  const broker = await startBroker(tools.mosquitto);
  const script = resolve(DIST, "bench/poll-cpu.js");
  const sims: IpcChild[] = [];
  for (let seed = 0; seed < pdus; seed += PER_CHILD) {
    const n = Math.min(PER_CHILD, pdus - seed);
    sims.push(new IpcChild(script, ["--sim-child", String(n), String(seed), values.frozen ? "1" : "0"]));
  }
  const ports = (await Promise.all(sims.map((s) => s.ready<number[]>()))).flat();
  const settings = join(dir, "baseline.json");
  writeFileSync(settings, JSON.stringify({ ports, broker: broker.url, intervalMs: INTERVAL_S * 1000 }));
  const baseline = spawnNode(resolve(DIST, "bench/baseline-fleet.js"), [settings], {
    logFile: join(dir, "baseline.log"),
    nodeArgs: values.profile ? ["--inspect=127.0.0.1:0"] : [],
  });
  await baseline.waitForLog("ready", 30_000);
  const config = writeBridgeConfig({ dir, name: "bridge", ports, broker, pollIntervalS: INTERVAL_S });
  const startThis = (start: number) =>
    startBridge({
      configFile: config,
      logFile: join(dir, `bridge-${start}.log`),
      nodeArgs: values.profile ? ["--inspect=127.0.0.1:0"] : [],
    });
  // --base <dist>: the same bridge from another build (e.g. the commit before a change), running
  // beside it, so that a change is measured against the code it replaces in the same window.
  const baseConfig = writeBridgeConfig({ dir, name: "base", ports, broker, pollIntervalS: INTERVAL_S });
  const startBase = (dist: string, start: number) =>
    startBridge({
      configFile: baseConfig,
      logFile: join(dir, `base-${start}.log`),
      nodeArgs: values.profile ? ["--inspect=127.0.0.1:0"] : [],
      dist,
    });
  const run: Run = { sims, baseline, pdus, windowS, rounds, dir, log };
  log(
    `poll-cpu: ${pdus} PDUs${values.frozen ? " (frozen: nothing changes)" : ""}, bridge and naive floor at once` +
      `${values.base === undefined ? "" : `, base build ${values.base}`}, ${starts} start(s); scratch ${dir}`,
  );
  const byStart: { baseFirst: boolean; mean: number }[] = [];
  let running: LoggedChild[] = [];
  try {
    for (let s = 1; s <= starts; s++) {
      // Each start puts the programs in a new place against each other and the simulators; the
      // order alternates so that neither build is always the one started first.
      const baseFirst = values["base-first"] !== (s % 2 === 0);
      let base: LoggedChild | null = null;
      if (values.base !== undefined && baseFirst) running.push((base = await startBase(values.base, s)));
      const bridge = await startThis(s);
      running.push(bridge);
      if (values.base !== undefined && !baseFirst) running.push((base = await startBase(values.base, s)));
      const profiling = values.profile && s === starts;
      // Warm-up: discovery is out and every PDU was polled a few times by both.
      await sleep(Math.max(45, pdus / 25) * 1000);
      const ratios = await measureRounds(run, bridge, base, profiling);
      if (ratios.length > 0) {
        const m = mean(ratios)!;
        byStart.push({ baseFirst, mean: m });
        log(
          `start ${s}, ${baseFirst ? "base started first" : "this build started first"}: bridge/base over ` +
            `${ratios.length} unprofiled round(s) mean ${m.toFixed(3)}, min ${Math.min(...ratios).toFixed(3)}, ` +
            `max ${Math.max(...ratios).toFixed(3)}`,
        );
      }
      await Promise.all(running.map((c) => stopChild(c.child)));
      running = [];
    }
    if (byStart.length > 1) {
      const means = byStart.map((b) => b.mean);
      const m = mean(means)!;
      const se = standardError(means)!;
      const inOrder = (first: boolean) => {
        const of = byStart.filter((b) => b.baseFirst === first).map((b) => b.mean);
        return mean(of)?.toFixed(3) ?? "-";
      };
      log(
        `bridge/base over ${byStart.length} starts: mean ${m.toFixed(3)} ± ${se.toFixed(3)} ` +
          `(standard error), min ${Math.min(...means).toFixed(3)}, max ${Math.max(...means).toFixed(3)}; ` +
          `this build first ${inOrder(false)}, base first ${inOrder(true)}`,
      );
    }
  } finally {
    await Promise.all(running.map((c) => stopChild(c.child)));
    await stopChild(baseline.child);
    await Promise.all(sims.map((s) => s.request("close").catch(() => undefined)));
    await Promise.all(sims.map((s) => s.stop()));
    await broker.close();
  }
}

interface Run {
  readonly sims: readonly IpcChild[];
  readonly baseline: LoggedChild;
  readonly pdus: number;
  readonly windowS: number;
  readonly rounds: number;
  readonly dir: string;
  readonly log: (line: string) => void;
}

/**
 * The rounds of one start: each round's CPU seconds of the bridge, the naive floor and the base
 * build over one window, printed; returns bridge/base of every unprofiled round. With `profile`, the
 * last round is profiled (its ratio is printed but not returned).
 */
async function measureRounds(
  run: Run,
  bridge: LoggedChild,
  base: LoggedChild | null,
  profile: boolean,
): Promise<number[]> {
  const { sims, baseline, pdus, windowS, rounds, dir, log } = run;
  const profiler = profile ? await InspectorProfiler.attach(() => bridge.log()) : null;
  const naiveProfiler = profile ? await InspectorProfiler.attach(() => baseline.log()) : null;
  const baseProfiler = profile && base !== null ? await InspectorProfiler.attach(() => base.log()) : null;
  const ratios: number[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const profiling = profiler !== null && round === rounds;
      if (profiling) await Promise.all([profiler.start(), naiveProfiler?.start(), baseProfiler?.start()]);
      await Promise.all(sims.map((s) => s.request("reset")));
      const a0 = base === null ? null : sampleProc(base.pid);
      const b0 = sampleProc(bridge.pid);
      const n0 = sampleProc(baseline.pid);
      const load0 = loadavg()[0]!;
      await sleep(windowS * 1000);
      const b1 = sampleProc(bridge.pid);
      const a1 = base === null ? null : sampleProc(base.pid);
      const n1 = sampleProc(baseline.pid);
      const polls = (await Promise.all(sims.map((s) => s.request<number>("polls")))).reduce(
        (a, b) => a + b,
        0,
      );
      if (b0 === null || b1 === null || n0 === null || n1 === null) throw new Error("a program died");
      const bridgeCpu = b1.cpuSeconds - b0.cpuSeconds;
      const naiveCpu = n1.cpuSeconds - n0.cpuSeconds;
      const programs = base === null ? 2 : 3;
      const expected = (programs * pdus * windowS) / INTERVAL_S;
      const perPoll = (cpu: number) => ((cpu * 1000) / (polls / programs)).toFixed(3);
      const baseCpu = a0 === null || a1 === null ? null : a1.cpuSeconds - a0.cpuSeconds;
      if (baseCpu !== null && !profiling) ratios.push(bridgeCpu / baseCpu);
      log(
        `round ${round}${profiling ? " (profiled)" : ""}: bridge ${bridgeCpu.toFixed(2)} s (${perPoll(bridgeCpu)} ms/poll), ` +
          `naive ${naiveCpu.toFixed(2)} s (${perPoll(naiveCpu)} ms/poll), ratio ${(bridgeCpu / naiveCpu).toFixed(3)}; ` +
          (baseCpu === null
            ? ""
            : `base build ${baseCpu.toFixed(2)} s (${perPoll(baseCpu)} ms/poll, ratio ${(baseCpu / naiveCpu).toFixed(3)}), bridge/base ${(bridgeCpu / baseCpu).toFixed(3)}; `) +
          `polls ${polls}/${expected} expected; load ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}; ` +
          `bridge RSS ${(b1.rssBytes / 2 ** 20).toFixed(0)} MB`,
      );
      if (profiling) {
        const [bridgeProfile, naive] = await Promise.all([profiler.stop(), naiveProfiler!.stop()]);
        const file = join(dir, "bridge.cpuprofile");
        writeFileSync(file, JSON.stringify(bridgeProfile));
        writeFileSync(join(dir, "naive.cpuprofile"), JSON.stringify(naive));
        log(`profile: ${file}\n${formatSummary(summariseProfile(bridgeProfile, 30), 30)}`);
        log(`naive profile:\n${formatSummary(summariseProfile(naive, 15), 15)}`);
        if (baseProfiler !== null) {
          const baseProfile = await baseProfiler.stop();
          const baseFile = join(dir, "base.cpuprofile");
          writeFileSync(baseFile, JSON.stringify(baseProfile));
          log(`base build profile: ${baseFile}\n${formatSummary(summariseProfile(baseProfile, 30), 30)}`);
        }
      }
    }
  } finally {
    profiler?.close();
    naiveProfiler?.close();
    baseProfiler?.close();
  }
  return ratios;
}
