/**
 * Scenario `fleet`: 1000 simulated 24-outlet PDUs (4 child processes × 250), polled every 10 s by
 * the bridge (its own process, publishing to mosquitto), against the naive floor of
 * bench/baseline-fleet.ts on the same simulators and broker, measured once before and once after
 * the bridge: the CPU ratio is taken against the mean of the two, so a machine that drifts during the
 * scenario weighs on both sides. Then another run of the bridge with a CPU profile of its measured
 * window (V8's sampling profiler through the inspector, see lib/inspector-profile.ts: `--cpu-prof`
 * writes nothing when the process cannot exit cleanly).
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { bridgeProcess, startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, IpcChild, spawnNode, stopChild } from "./lib/child.js";
import { measurePoller, type BenchContext, type PollerRun, type ScenarioResult } from "./lib/measure.js";
import { InspectorProfiler } from "./lib/inspector-profile.js";
import {
  formatSummary,
  summariseProfile,
  type CpuProfile,
  type ProfileSummary,
} from "./lib/profile-summary.js";
import { row, type Row } from "./lib/report.js";
import { startSimFleet } from "./lib/sim-fleet.js";
import { ratio } from "./lib/stats.js";

export async function runFleet(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 20 : 1000;
  const processes = ctx.quick ? 2 : 4;
  const intervalS = ctx.quick ? 2 : 10;
  const windowSeconds = ctx.quick ? 8 : 60;
  const profileWindowSeconds = ctx.quick ? 6 : 30;
  const warmupPolls = 3;
  const intervalMs = intervalS * 1000;
  ctx.log(`fleet: ${pdus} PDUs × 24 outlets in ${processes} processes, every ${intervalS} s`);

  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus, processes, outlets: 24 });
  const counter = new IpcChild(resolve(DIST, "bench/lib/mqtt-counter.js"), [broker.url]);
  await counter.ready();
  const common = { fleet, pdus, broker, counter, intervalMs, warmupPolls, log: ctx.log };
  try {
    const settingsFile = join(ctx.workDir, "baseline-fleet.json");
    writeFileSync(settingsFile, JSON.stringify({ ports: fleet.ports, broker: broker.url, intervalMs }));
    const measureBaseline = (when: "before" | "after") =>
      measurePoller({
        ...common,
        name: `baseline (naive undici + JSON.parse + mqtt.js), ${when}`,
        windowSeconds,
        prefixes: ["baseline"],
        start: async () => {
          const child = spawnNode(resolve(DIST, "bench/baseline-fleet.js"), [settingsFile], {
            logFile: join(ctx.workDir, `baseline-fleet-${when}.log`),
          });
          await child.waitForLog("ready", 30_000);
          return { pid: child.pid, stop: () => stopChild(child.child) };
        },
      });
    const baseline = await measureBaseline("before");

    const configFile = writeBridgeConfig({
      dir: ctx.workDir,
      name: "fleet-bridge",
      ports: fleet.ports,
      broker,
      pollIntervalS: intervalS,
    });
    const bridge = await measurePoller({
      ...common,
      name: "pdu-bridge",
      windowSeconds,
      prefixes: ["pdu-bridge", "homeassistant"],
      settlePrefix: "homeassistant",
      start: () => bridgeProcess(configFile, join(ctx.workDir, "fleet-bridge.log"), ctx.bridgeNodeArgs),
    });
    const baselineAfter = await measureBaseline("after");

    let profile: { file: string; summary: ProfileSummary; run: PollerRun } | null = null;
    if (ctx.profile) {
      const file = join(ctx.workDir, "fleet-bridge-window.cpuprofile");
      let cpuProfile: CpuProfile | null = null;
      const run = await measurePoller({
        ...common,
        name: "pdu-bridge, profiled",
        windowSeconds: profileWindowSeconds,
        prefixes: ["pdu-bridge", "homeassistant"],
        settlePrefix: "homeassistant",
        start: async () => {
          const child = await startBridge({
            configFile,
            logFile: join(ctx.workDir, "fleet-bridge-profiled.log"),
            nodeArgs: [...ctx.bridgeNodeArgs, "--inspect=127.0.0.1:0"],
          });
          const profiler = await InspectorProfiler.attach(() => child.log());
          return {
            pid: child.pid,
            windowStart: () => profiler.start(),
            windowEnd: async () => {
              cpuProfile = await profiler.stop();
              profiler.close();
            },
            stop: () => stopChild(child.child),
          };
        },
      });
      if (cpuProfile !== null) {
        writeFileSync(file, JSON.stringify(cpuProfile));
        const summary = summariseProfile(cpuProfile, 30);
        ctx.log(`  profile of the window: ${file}\n${indent(formatSummary(summary, 15))}`);
        profile = { file, summary, run };
      }
    }

    const rows = fleetRows(bridge, baseline, baselineAfter);
    return {
      rows,
      details: {
        pdus,
        processes,
        outlets: 24,
        intervalS,
        windowSeconds,
        bridge,
        baseline,
        baselineAfter,
        profile,
      },
      notes: [
        `fleet: baseline = bench/baseline-fleet.ts, the naive floor (fetch, JSON.parse, publish every measurement), same simulators and broker, measured just before and just after the bridge; CPU per poll against the mean of the two (${fmtMs(baseline.cpuMsPerPoll)} and ${fmtMs(baselineAfter.cpuMsPerPoll)} ms), the other rows against the run before.`,
        `fleet: lateness = each poll's arrival at its simulator minus the PDU's best-aligned poll on the ${intervalS} s grid.`,
        `fleet: messages/s counts the poller's own topics (bridge: pdu-bridge/# and homeassistant/#; baseline: baseline/#).`,
      ],
    };
  } finally {
    await counter.request("close").catch(() => undefined);
    await counter.stop();
    await fleet.close();
    await broker.close();
  }
}

function fleetRows(bridge: PollerRun, baseline: PollerRun, baselineAfter: PollerRun): Row[] {
  const s = "fleet";
  const naive = "naive";
  // Lateness is measured on the polls that happened: it only means something when none were lost.
  const complete = bridge.polls >= 0.99 * bridge.duePolls;
  const baselineCpu =
    baseline.cpuMsPerPoll === null || baselineAfter.cpuMsPerPoll === null
      ? (baseline.cpuMsPerPoll ?? baselineAfter.cpuMsPerPoll)
      : (baseline.cpuMsPerPoll + baselineAfter.cpuMsPerPoll) / 2;
  const cpuRatio = ratio(bridge.cpuMsPerPoll, baselineCpu);
  const msgRatio = ratio(bridge.ownMessagesPerSecond, baseline.ownMessagesPerSecond);
  return [
    row({
      scenario: s,
      metric: "bridge CPU per poll",
      unit: "ms",
      target: "≤ 1.5× baseline",
      measured: bridge.cpuMsPerPoll,
      baseline: baselineCpu,
      baselineLabel: "naive, mean of 2",
      ratio: cpuRatio,
      pass: cpuRatio === null ? false : cpuRatio <= 1.5,
      ...(bridge.exited
        ? { note: "the bridge process exited during the run (see fleet-bridge.log in the scratch directory)" }
        : bridge.settled
          ? {}
          : { note: "the bridge never reached steady state; measured as it was" }),
    }),
    row({
      scenario: s,
      metric: "warm-up before the window",
      unit: "s",
      target: "info",
      measured: bridge.warmupSeconds,
      baseline: baseline.warmupSeconds,
      baselineLabel: naive,
      ratio: ratio(bridge.warmupSeconds, baseline.warmupSeconds),
      pass: null,
    }),
    row({
      scenario: s,
      metric: "poll lateness p50",
      unit: "ms",
      target: "info",
      measured: bridge.latenessP50Ms,
      baseline: baseline.latenessP50Ms,
      baselineLabel: naive,
      ratio: ratio(bridge.latenessP50Ms, baseline.latenessP50Ms),
      pass: null,
    }),
    row({
      scenario: s,
      metric: "poll lateness p99",
      unit: "ms",
      target: "< 500 ms",
      measured: bridge.latenessP99Ms,
      baseline: baseline.latenessP99Ms,
      baselineLabel: naive,
      ratio: ratio(bridge.latenessP99Ms, baseline.latenessP99Ms),
      pass: complete && bridge.latenessP99Ms !== null && bridge.latenessP99Ms < 500,
      ...(complete ? {} : { note: "polls were lost: lateness of the missing ones is not in the figure" }),
    }),
    row({
      scenario: s,
      metric: "polls completed",
      unit: "/s",
      target: `≥ 99% of due (${fmtRate(bridge.duePolls / bridge.windowSeconds)}/s)`,
      measured: bridge.pollsPerSecond,
      baseline: baseline.pollsPerSecond,
      baselineLabel: naive,
      ratio: ratio(bridge.pollsPerSecond, baseline.pollsPerSecond),
      pass: complete,
    }),
    row({
      scenario: s,
      metric: "RSS peak (VmHWM, whole run)",
      unit: "MB",
      target: "< 400 MB",
      measured: bridge.rssHwmMb,
      baseline: baseline.rssHwmMb,
      baselineLabel: naive,
      ratio: ratio(bridge.rssHwmMb, baseline.rssHwmMb),
      pass: !bridge.exited && bridge.rssHwmMb < 400,
    }),
    row({
      scenario: s,
      metric: "MQTT messages",
      unit: "/s",
      target: "< 1× baseline",
      measured: bridge.ownMessagesPerSecond,
      baseline: baseline.ownMessagesPerSecond,
      baselineLabel: naive,
      ratio: msgRatio,
      pass: complete && msgRatio !== null && msgRatio < 1,
    }),
    row({
      scenario: s,
      metric: "broker CPU",
      unit: "% core",
      target: "info",
      measured: bridge.brokerCpuPercent,
      baseline: baseline.brokerCpuPercent,
      baselineLabel: naive,
      ratio: ratio(bridge.brokerCpuPercent, baseline.brokerCpuPercent),
      pass: null,
    }),
  ];
}

const fmtRate = (v: number) => (v >= 10 ? v.toFixed(0) : v.toFixed(1));
const fmtMs = (v: number | null) => (v === null ? "–" : v.toFixed(2));

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");
