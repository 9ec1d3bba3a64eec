/**
 * `npm run bench`: the performance scenarios of pdu-bridge, each against a baseline measured in
 * the same run (the machine is noisy, so only ratios to a same-run baseline mean anything).
 *
 *   node dist/bench/run.js [--quick] [--only fleet,api,control,peer,metrics] [--no-profile]
 *
 * --quick: a few PDUs and short windows (a smoke run of the whole harness, about a minute).
 * --only: run only these scenarios (comma-separated or repeated).
 * --no-profile: skip the profiled bridge run of the fleet scenario.
 * --bridge-import FILE: preload FILE into every bridge child (`node --import`), for what-if
 *   experiments such as dist/bench/lib/experiment-qos0-nocb.js; results are then marked EXPERIMENT.
 * --bridge-node-option OPT: pass OPT to node for every bridge child (repeatable), e.g.
 *   --bridge-node-option=--max-old-space-size=320; also marks the results EXPERIMENT.
 * Configurations, logs and the .cpuprofile stay in a scratch directory under the OS temp dir.
 *
 * Prints a table (target, measured, baseline, ratio, pass/fail) and writes
 * bench/results/<scenario>-<timestamp>.json per scenario. Exits 0 even when targets are missed
 * (a benchmark reports, it does not gate); 1 when a scenario could not run.
 * Method and the latest figures: docs/performance.md.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { runApi } from "./api.js";
import { runControl } from "./control.js";
import { runFleet } from "./fleet.js";
import { killAllStarted } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { formatMarkdown, formatTable, machine, writeResult, type Row } from "./lib/report.js";
import { ensureTools } from "./lib/tools.js";
import { runMetrics } from "./metrics.js";
import { runPeer } from "./peer.js";

const SCENARIOS: Readonly<Record<string, (ctx: BenchContext) => Promise<ScenarioResult>>> = {
  fleet: runFleet,
  api: runApi,
  control: runControl,
  peer: runPeer,
  metrics: runMetrics,
};

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string", multiple: true },
    "no-profile": { type: "boolean", default: false },
    "bridge-import": { type: "string" },
    "bridge-node-option": { type: "string", multiple: true },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(
    "usage: node dist/bench/run.js [--quick] [--only fleet,api,control,peer,metrics] [--no-profile] [--bridge-import FILE]\n",
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

const bridgeNodeArgs = [
  ...(values["bridge-import"] === undefined
    ? []
    : ["--import", pathToFileURL(resolve(values["bridge-import"])).href]),
  ...(values["bridge-node-option"] ?? []),
];
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
};

const rows: Row[] = [];
const notes: string[] = [];
let failed = false;
for (const name of selected) {
  const t = performance.now();
  log(`== ${name}`);
  try {
    const result = await SCENARIOS[name]!(ctx);
    const seconds = (performance.now() - t) / 1000;
    const file = writeResult(experiment === undefined ? name : `${name}-experiment`, stamp, {
      scenario: name,
      mode: values.quick ? "quick" : "full",
      experiment: experiment ?? null,
      startedUtc: new Date(Date.now() - seconds * 1000).toISOString(),
      seconds,
      machine: { ...machine(), loadavgAtStart: machineBefore.loadavg },
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
