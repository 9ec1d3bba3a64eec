/**
 * Scenario `fleet`: 1000 simulated 24-outlet PDUs (4 child processes × 250), polled every 10 s by
 * the bridge (its own process, publishing to mosquitto), against the naive floor of
 * bench/baseline-fleet.ts on the same simulators and broker. In order:
 * 0. starts as a user sees them (lib/starts.ts), each on a broker of its own: the time until every
 *    instance's discovery is retained and every value was published once, read from outside the
 *    bridge; MQTT errors and reconnects in its log; its whole-life peak RSS. Mosquitto with its
 *    default limits and with unlimited queues, the plain command and the image's flags, a clean
 *    start and a restart over the retained configs;
 * 1. each alone: the floor, then the bridge as the plain command (no NODE_OPTIONS), then the bridge
 *    with the image's flags: start-up, memory, lateness, messages and shutdown, each program with the
 *    machine to itself;
 * 2. the share of values that change from one poll to the next (sampled from the simulators);
 * 3. a profiled run of the bridge (V8's sampling profiler through the inspector, see
 *    lib/inspector-profile.ts: `--cpu-prof` writes nothing when the process cannot exit cleanly);
 * 4. CPU per poll: the plain bridge and the floor at the same time, the floor on a twin fleet (the
 *    same PDUs in their own simulator processes), both measured over the same window
 *    (lib/fleet-rig.ts withFloorBeside). Measured one after the other, minutes apart, the ratio moved
 *    by ±15 % on a shared machine; over the same window, whatever else loads the machine loads both;
 * 5. "nothing changes": a fleet of frozen simulators (every value stands still), step 4 on it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fleetShapeRows, measureChangingShare, type ChangingShare } from "./lib/changes.js";
import {
  OUTLETS,
  measureBaseline,
  measureBridge,
  withFloorBeside,
  withRig,
  type Rig,
} from "./lib/fleet-rig.js";
import type { BenchContext, PollerRun, ScenarioResult } from "./lib/measure.js";
import { InspectorProfiler } from "./lib/inspector-profile.js";
import {
  formatSummary,
  summariseProfile,
  type CpuProfile,
  type ProfileSummary,
} from "./lib/profile-summary.js";
import { row, type Row } from "./lib/report.js";
import { PASS_EVERY_MS } from "./lib/expected.js";
import { describeStart, measureStarts, startRows, type StartRun } from "./lib/starts.js";
import { ratio } from "./lib/stats.js";
import { DEFAULT_NODE_OPTIONS } from "../src/runtime.js";

interface FleetRuns {
  readonly baseline: PollerRun;
  readonly plain: PollerRun;
  readonly image: PollerRun;
  /** The plain bridge with the floor beside it (`companion`), the CPU row's figures. */
  readonly paired: PollerRun;
  /** The same on the frozen fleet. */
  readonly frozen: PollerRun;
  readonly changing: ChangingShare;
  readonly frozenChanging: ChangingShare;
  /** Starts as a user sees them (lib/starts.ts). */
  readonly starts: readonly StartRun[];
}

export async function runFleet(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 20 : 1000;
  const intervalS = ctx.quick ? 2 : 10;
  const windowSeconds = ctx.quick ? 8 : 60;
  const shortWindowSeconds = ctx.quick ? 6 : 30;
  ctx.log(`fleet: ${pdus} PDUs × ${OUTLETS} outlets, every ${intervalS} s`);

  const living = await withRig(ctx, { name: "fleet", pdus, intervalS }, async (rig) => {
    const starts = await measureStarts(rig);
    const baseline = await measureBaseline(rig, { tag: "before", windowSeconds });
    const plain = await measureBridge(rig, { tag: "plain command", windowSeconds, flags: "plain" });
    const image = await measureBridge(rig, {
      tag: "image flags",
      windowSeconds: shortWindowSeconds,
      flags: "image",
    });
    const changing = await measureChangingShare(rig.fleet.ports, rig.intervalMs);
    ctx.log(
      `  ${(changing.share * 100).toFixed(1)} % of ${changing.values} sampled values change per poll; ` +
        `answers of ${changing.answerBytes.min}–${changing.answerBytes.max} bytes`,
    );

    let profile: { file: string; summary: ProfileSummary; run: PollerRun } | null = null;
    if (ctx.profile) {
      const file = join(ctx.workDir, "fleet-bridge-window.cpuprofile");
      let cpuProfile: CpuProfile | null = null;
      const run = await measureBridge(rig, {
        tag: "profiled",
        windowSeconds: shortWindowSeconds,
        flags: "image",
        nodeArgs: ["--inspect=127.0.0.1:0"],
        attach: async (child) => {
          const profiler = await InspectorProfiler.attach(() => child.log());
          return {
            windowStart: () => profiler.start(),
            windowEnd: async () => {
              cpuProfile = await profiler.stop();
              profiler.close();
            },
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
    const paired = await measurePaired(rig, "values change", windowSeconds);
    return { starts, baseline, plain, image, paired, changing, profile };
  });

  const still = await withRig(ctx, { name: "fleet-frozen", pdus, intervalS, frozen: true }, async (rig) => {
    const frozen = await measurePaired(rig, "nothing changes", windowSeconds);
    const frozenChanging = await measureChangingShare(rig.fleet.ports, rig.intervalMs);
    return { frozen, frozenChanging };
  });

  const runs: FleetRuns = { ...living, ...still };
  return {
    rows: [...fleetRows(runs, ctx.quick), ...startRows("fleet", runs.starts, { rssTargets: true })],
    details: {
      pdus,
      outlets: OUTLETS,
      intervalS,
      windowSeconds,
      shortWindowSeconds,
      imageNodeOptions: DEFAULT_NODE_OPTIONS,
      ...runs,
      profile: living.profile,
    },
    notes: [
      `fleet: baseline = bench/baseline-fleet.ts, the naive floor (fetch, JSON.parse, publish every measurement), same broker. CPU per poll: the plain bridge and the floor AT THE SAME TIME, the floor on a twin fleet (same PDUs, own simulator processes), both over the same ${windowSeconds} s window (floor ${fmtMs(runs.paired.companion?.cpuMsPerPoll ?? null)} ms changing, ${fmtMs(runs.frozen.companion?.cpuMsPerPoll ?? null)} ms frozen). The other rows: each program alone, the floor measured just before the bridge.`,
      `fleet: "plain command" = exactly \`node dist/src/main.js --config F\` with no NODE_OPTIONS; "image flags" = NODE_OPTIONS="${DEFAULT_NODE_OPTIONS}" as the image and the chart set it. CPU and memory are summed over the process tree (a CLI that re-spawns itself is measured whole).`,
      `fleet: "nothing changes" = a second fleet of frozen simulators (startSimulator({ frozen: true })), plain bridge and floor measured at the same time on it as above.`,
      `fleet: share of changing values = two reads of ${runs.changing.pdus} PDUs' /api one interval apart, compared value by value.`,
      `fleet: sawtooth = (max − 5th percentile) / 5th percentile of the process tree's RSS sampled every ${runs.plain.rssSampleMs} ms over the window.`,
      `fleet: start-up = from spawning the process until every PDU was polled once; shutdown = SIGTERM until the process exited (SIGKILL after 6 s).`,
      `fleet: lateness = each poll's arrival at its simulator minus the PDU's best-aligned poll on the ${intervalS} s grid.`,
      `fleet: messages/s counts the poller's own topics (bridge: pdu-bridge/# and homeassistant/#; baseline: baseline/#).`,
      `fleet: starts as a user sees them = the plain command (or NODE_OPTIONS="${DEFAULT_NODE_OPTIONS}") with an operator's configuration (discovery and the health listener on) on a broker of its own, read from outside from its spawn: discovery = every instance's retained configs exactly those it should have (built with the product's buildDiscovery from each PDU's answer), read per instance every ${PASS_EVERY_MS / 1000} s; values = every measurement topic of every instance seen once on pdu-bridge/#; then a restart on the same broker over the retained configs plus one ghost and one stale config per instance. Targets: ${runs.starts[0]?.targetSeconds ?? 60} s, 0 MQTT errors and reconnects, VmHWM over the whole life ≤ 250 MB plain and ≤ 200 MB with the image's flags.`,
      ...runs.starts.map((r) => `fleet: start ${describeStart(r)}`),
    ],
  };
}

/** The plain bridge with the naive floor beside it on a twin fleet, over one window. */
function measurePaired(rig: Rig, tag: string, windowSeconds: number): Promise<PollerRun> {
  return withFloorBeside(rig, tag, (floor) =>
    measureBridge(rig, {
      tag: `plain command, ${tag}, floor beside`,
      windowSeconds,
      flags: "plain",
      beside: floor,
    }),
  );
}

function fleetRows(r: FleetRuns, quick: boolean): Row[] {
  const s = "fleet";
  const naive = "naive";
  const bridge = r.plain;
  const baseline = r.baseline;
  // Lateness is measured on the polls that happened: it only means something when none were lost.
  const complete = bridge.polls >= 0.99 * bridge.duePolls;
  const pairedFloor = r.paired.companion?.cpuMsPerPoll ?? null;
  const frozenFloor = r.frozen.companion?.cpuMsPerPoll ?? null;
  const cpuRatio = ratio(r.paired.cpuMsPerPoll, pairedFloor);
  const frozenRatio = ratio(r.frozen.cpuMsPerPoll, frozenFloor);
  // Both programs of a paired window must have kept up, or CPU per poll compares unlike work.
  const keptUp = (run: PollerRun) =>
    run.companion !== undefined &&
    run.polls >= 0.99 * run.duePolls &&
    run.companion.polls >= 0.99 * run.companion.duePolls;
  const msgRatio = ratio(bridge.ownMessagesPerSecond, baseline.ownMessagesPerSecond);
  const pct = (v: number) => Math.round(v * 1000) / 10;
  const exitedNote = (run: PollerRun, log: string) =>
    run.exited
      ? { note: `the bridge process exited during the run (see ${log} in the scratch directory)` }
      : run.settled
        ? {}
        : { note: "the bridge never reached steady state; measured as it was" };
  const rss = (metric: string, run: PollerRun, limit: number, log: string) =>
    row({
      scenario: s,
      metric,
      unit: "MB",
      target: `≤ ${limit} MB`,
      measured: run.rssHwmMb,
      baseline: baseline.rssHwmMb,
      baselineLabel: naive,
      ratio: ratio(run.rssHwmMb, baseline.rssHwmMb),
      pass: !run.exited && run.rssHwmMb <= limit,
      ...exitedNote(run, log),
    });
  const sawtooth = (metric: string, run: PollerRun, target: boolean) =>
    row({
      scenario: s,
      metric,
      unit: "%",
      target: target ? "≤ 20 %" : "info",
      measured: run.rssSawtooth === null ? null : pct(run.rssSawtooth),
      baseline: baseline.rssSawtooth === null ? null : pct(baseline.rssSawtooth),
      baselineLabel: naive,
      ratio: null,
      pass: target ? run.rssSawtooth !== null && run.rssSawtooth <= 0.2 : null,
    });
  return [
    row({
      scenario: s,
      metric: `bridge CPU per poll, ${pct(r.changing.share)} % of values changing`,
      unit: "ms",
      target: "≤ 1.0× baseline",
      measured: r.paired.cpuMsPerPoll,
      baseline: pairedFloor,
      baselineLabel: "naive, same window",
      ratio: cpuRatio,
      pass: cpuRatio !== null && cpuRatio <= 1.0 && keptUp(r.paired),
      ...exitedNote(r.paired, "fleet-bridge-plain-command-values-change-floor-beside.log"),
    }),
    row({
      scenario: s,
      metric: `bridge CPU per poll, nothing changes (${pct(r.frozenChanging.share)} % changing)`,
      unit: "ms",
      target: "≤ 0.8× baseline",
      measured: r.frozen.cpuMsPerPoll,
      baseline: frozenFloor,
      baselineLabel: "naive, same window",
      ratio: frozenRatio,
      pass: frozenRatio !== null && frozenRatio <= 0.8 && keptUp(r.frozen),
      ...exitedNote(r.frozen, "fleet-frozen-bridge-plain-command-nothing-changes-floor-beside.log"),
    }),
    row({
      scenario: s,
      metric: "bridge CPU per poll, plain command, each alone",
      unit: "ms",
      target: "info",
      measured: bridge.cpuMsPerPoll,
      baseline: baseline.cpuMsPerPoll,
      baselineLabel: "naive, just before",
      ratio: ratio(bridge.cpuMsPerPoll, baseline.cpuMsPerPoll),
      pass: null,
    }),
    row({
      scenario: s,
      metric: "bridge CPU per poll, image flags, each alone",
      unit: "ms",
      target: "info",
      measured: r.image.cpuMsPerPoll,
      baseline: baseline.cpuMsPerPoll,
      baselineLabel: "naive, just before",
      ratio: ratio(r.image.cpuMsPerPoll, baseline.cpuMsPerPoll),
      pass: null,
    }),
    ...fleetShapeRows(s, r.changing, {
      judgeShare: !quick,
      ...(quick ? { shareNote: "quick run: polls every 2 s change fewer values than every 10 s" } : {}),
    }),
    row({
      scenario: s,
      metric: "start-up: all PDUs polled once",
      unit: "s",
      target: "info",
      measured: bridge.startupSeconds,
      baseline: baseline.startupSeconds,
      baselineLabel: naive,
      ratio: ratio(bridge.startupSeconds, baseline.startupSeconds),
      pass: null,
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
      metric: "shutdown: SIGTERM to exit",
      unit: "s",
      target: "< 6 s (no SIGKILL)",
      measured: bridge.shutdownSeconds,
      baseline: baseline.shutdownSeconds,
      baselineLabel: naive,
      ratio: ratio(bridge.shutdownSeconds, baseline.shutdownSeconds),
      pass: bridge.shutdownSeconds !== null && bridge.shutdownSeconds < 6,
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
      target: `≥ 99% of due (${fmtRate(bridge.duePolls / Math.max(1, bridge.windowSeconds))}/s)`,
      measured: bridge.pollsPerSecond,
      baseline: baseline.pollsPerSecond,
      baselineLabel: naive,
      ratio: ratio(bridge.pollsPerSecond, baseline.pollsPerSecond),
      pass: complete,
    }),
    rss("RSS peak, plain command (VmHWM)", bridge, 250, "fleet-bridge-plain-command.log"),
    rss("RSS peak, image flags (VmHWM)", r.image, 200, "fleet-bridge-image-flags.log"),
    sawtooth("RSS sawtooth, plain command", bridge, true),
    sawtooth("RSS sawtooth, image flags", r.image, false),
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
