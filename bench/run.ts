/**
 * `npm run bench`: the performance scenarios of pdu-bridge, each against a baseline measured in
 * the same run (the machine is noisy, so only ratios to a same-run baseline mean anything).
 *
 *   node dist/bench/run.js [--quick] [--only fleet,scale,api,control,peer,metrics,snmp,cluster,energy,webhooks,assets,traps] [--no-profile]
 *                          [--sizes 250,500,4000@30] [--write-docs] [--cluster-instances 100]
 *                          [--cluster-kills 10] [--cluster-buckets 64] [--cluster-window 60]
 *                          [--cluster-timings 6,4,1] [--cluster-poll 10]
 *
 * --quick: a few PDUs and short windows (a smoke run of the whole harness, a few minutes).
 * --only: run only these scenarios (comma-separated or repeated).
 * --sizes: fleet sizes of the scale scenario, PDUs with an optional `@` poll interval in seconds
 *   (default 250,500,1000,2000,4000@30; quick 10,20,40@4).
 * --write-docs: also write the charts shown by the docs (docs/images/scale.svg); the chart always
 *   goes to bench/results/scale-<timestamp>.svg.
 * --no-profile: skip the profiled bridge run of the fleet scenario.
 * --cluster-*: the cluster scenario's instances per replica (3 replicas), kills, buckets, CPU window
 *   (s), lease timings of its failover runs (LeaseDuration,RenewDeadline,RetryPeriod in s) and poll
 *   interval (s); bench/lib/cluster-options.ts has the defaults (quick: 10 instances, 2 kills).
 * --bridge-node-option OPT: pass OPT to node for every bridge child (repeatable), e.g.
 *   --bridge-node-option=--max-old-space-size=320; the results are then marked EXPERIMENT.
 * Configurations, logs and the .cpuprofile stay in a scratch directory under the OS temp dir.
 *
 * Prints a table (target, measured, baseline, ratio, pass/fail; a row per scenario with the
 * machine's load average at its start and end) and writes
 * bench/results/<scenario>-<timestamp>.json per scenario. Exits 0 even when targets are missed
 * (a benchmark reports, it does not gate); 1 when a scenario could not run.
 * Method and the latest figures: docs/performance.md.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runApi } from "./api.js";
import { runAssets } from "./assets-poll.js";
import { runCluster } from "./cluster.js";
import { runControl } from "./control.js";
import { runEnergy } from "./energy.js";
import { runFleet } from "./fleet.js";
import { killAllStarted } from "./lib/child.js";
import { clusterOptions, type ClusterBenchOptions } from "./lib/cluster-options.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { formatMarkdown, formatTable, machine, row, writeResult, type Row } from "./lib/report.js";
import { ensureTools } from "./lib/tools.js";
import { runMetrics } from "./metrics.js";
import { runPeer } from "./peer.js";
import { parseSizes, runScale } from "./scale.js";
import { runSnmp } from "./snmp.js";
import { runWebhooks } from "./webhooks.js";
import { runTraps } from "./traps.js";

const SCENARIOS: Readonly<Record<string, (ctx: BenchContext) => Promise<ScenarioResult>>> = {
  fleet: runFleet,
  scale: runScale,
  api: runApi,
  control: runControl,
  peer: runPeer,
  metrics: runMetrics,
  snmp: runSnmp,
  cluster: runCluster,
  energy: runEnergy,
  webhooks: runWebhooks,
  assets: runAssets,
  traps: runTraps,
};

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string", multiple: true },
    "no-profile": { type: "boolean", default: false },
    "bridge-node-option": { type: "string", multiple: true },
    sizes: { type: "string" },
    "write-docs": { type: "boolean", default: false },
    "cluster-instances": { type: "string" },
    "cluster-kills": { type: "string" },
    "cluster-buckets": { type: "string" },
    "cluster-window": { type: "string" },
    "cluster-timings": { type: "string" },
    "cluster-poll": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(
    "usage: node dist/bench/run.js [--quick] [--only fleet,scale,api,control,peer,metrics,snmp,cluster,energy,webhooks,assets,traps] [--no-profile]\n" +
      "                              [--sizes 250,500,4000@30] [--write-docs] [--bridge-node-option OPT]\n",
  );
  process.exit(0);
}

const selected = (values.only ?? Object.keys(SCENARIOS)).flatMap((s) => s.split(",")).filter(Boolean);
for (const name of selected) {
  if (!(name in SCENARIOS)) {
    process.stderr.write(`bench: unknown scenario "${name}" (known: ${Object.keys(SCENARIOS).join(", ")})\n`);
    process.exit(2);
  }
}

let scaleSizes: ReturnType<typeof parseSizes> | undefined;
try {
  scaleSizes = values.sizes === undefined ? undefined : parseSizes(values.sizes, values.quick ? 2 : 10);
} catch (error) {
  process.stderr.write(`bench: --sizes: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}

let cluster: ClusterBenchOptions;
try {
  cluster = clusterOptions(values.quick, {
    instances: values["cluster-instances"],
    kills: values["cluster-kills"],
    buckets: values["cluster-buckets"],
    window: values["cluster-window"],
    timings: values["cluster-timings"],
    poll: values["cluster-poll"],
  });
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}

const log = (line: string) => process.stdout.write(`${line}\n`);
const started = performance.now();
const stamp = new Date().toISOString().replace(/[:.]/g, "-").replace(/Z$/, "Z");
const workDir = mkdtempSync(join(tmpdir(), "pdu-bridge-bench-"));

process.on("SIGINT", () => {
  killAllStarted();
  process.exit(130);
});

const tools = ensureTools(selected.includes("api"), log);
const machineBefore = machine();
log(
  `pdu-bridge bench (${values.quick ? "quick" : "full"}): ${selected.join(", ")}\n` +
    `machine: ${machineBefore.nproc} CPUs (${machineBefore.cpuModel}), ${machineBefore.memoryGiB} GiB, ` +
    `node ${machineBefore.node}, load ${machineBefore.loadavg.join(" ")}\n` +
    `scratch (configs, logs, profile): ${workDir}\n`,
);

const bridgeNodeArgs = values["bridge-node-option"] ?? [];
const experiment = bridgeNodeArgs.length > 0 ? bridgeNodeArgs.join(" ") : undefined;
if (experiment !== undefined) log(`EXPERIMENT: every bridge child runs with node ${experiment}\n`);
const ctx: BenchContext = {
  quick: values.quick,
  profile: !values["no-profile"],
  tools,
  workDir,
  stamp,
  bridgeNodeArgs,
  log,
  scaleSizes,
  writeDocs: values["write-docs"],
  cluster,
};

const rows: Row[] = [];
const notes: string[] = [];
let failed = false;
for (const name of selected) {
  const t = performance.now();
  const loadAtStart = machine().loadavg;
  log(`== ${name} (load ${loadAtStart.join(" ")})`);
  try {
    const result = await SCENARIOS[name]!(ctx);
    const seconds = (performance.now() - t) / 1000;
    const loadEnd = machine().loadavg;
    result.rows.push(loadRow(name, loadAtStart, loadEnd));
    const file = writeResult(experiment === undefined ? name : `${name}-experiment`, stamp, {
      scenario: name,
      mode: values.quick ? "quick" : "full",
      experiment: experiment ?? null,
      startedUtc: new Date(Date.now() - seconds * 1000).toISOString(),
      seconds,
      machine: { ...machine(), loadavgAtStart: loadAtStart, loadavgAtBenchStart: machineBefore.loadavg },
      rows: result.rows,
      notes: result.notes ?? [],
      details: result.details,
    });
    rows.push(...result.rows);
    notes.push(...(result.notes ?? []));
    log(`   ${name} done in ${seconds.toFixed(0)} s → ${file}\n`);
  } catch (error) {
    failed = true;
    log(`   ${name} FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    killAllStarted();
  }
}

log(`\n${formatTable(rows)}\n`);
if (experiment !== undefined) log(`EXPERIMENT run: every bridge child ran with node ${experiment}\n`);
for (const r of rows) if (r.note !== undefined) log(`- ${r.scenario} ${r.metric}: ${r.note}`);
for (const note of notes) log(`- ${note}`);
if (process.env.BENCH_MARKDOWN === "1") log(`\n${formatMarkdown(rows)}\n`);
const missed = rows.filter((r) => r.pass === false);
log(
  `\n${rows.filter((r) => r.pass === true).length} targets met, ${missed.length} missed` +
    `${missed.length > 0 ? ` (${missed.map((r) => `${r.scenario}: ${r.metric}`).join("; ")})` : ""}; ` +
    `total ${((performance.now() - started) / 1000).toFixed(0)} s; load now ${machine().loadavg.join(" ")}`,
);
process.exitCode = failed ? 1 : 0;

/** The machine's 1-minute load average at the start and end of a scenario, as a table row. */
function loadRow(scenario: string, start: readonly number[], end: readonly number[]): Row {
  return row({
    scenario,
    metric: "machine load average (1 min), end",
    unit: "",
    target: "info",
    measured: end[0] ?? null,
    baseline: start[0] ?? null,
    baselineLabel: "at start",
    ratio: null,
    pass: null,
  });
}
