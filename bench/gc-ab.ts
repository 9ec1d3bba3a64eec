/**
 * Bridge variants side by side: the same build under different node options, polling the same
 * simulated PDUs at the same time, so that each one's peak RSS and CPU per poll compare as ratios in
 * one window whatever else loads the machine (GC policy and heap flags).
 *
 *   node dist/bench/gc-ab.js [--pdus 400] [--warmup 40] [--window 60] [--retained] --variant NAME=OPTIONS ...
 *
 * OPTIONS are the variant's node options, given on its command line (some V8 flags, such as
 * --heap-growing-percent, are not allowed in NODE_OPTIONS), and NAME=VALUE words its environment
 * (e.g. MALLOC_ARENA_MAX=2); "" or "plain": none at all, as
 * `node dist/src/main.js` runs. "@DIR OPTIONS": the build in DIR (another dist/, e.g. of the commit
 * before a change) with those options. RSS is the process tree's (a service that starts itself again counts both processes),
 * sampled every 500 ms over the window, and its peak over the whole life (VmHWM, start-up included);
 * CPU is the tree's over the window, per poll of the variant.
 * --retained: a bridge of this build polls the same PDUs for 40 s first and stops, so that every
 * variant starts as after a restart, with its retained topics and discovery configs on the broker.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { DIST, IpcChild, sleep, spawnNode, stopChild, type LoggedChild } from "./lib/child.js";
import { sampleProc } from "./lib/proc.js";
import { ensureTools } from "./lib/tools.js";

const PER_CHILD = 250;
const INTERVAL_S = 10;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    pdus: { type: "string", default: "400" },
    warmup: { type: "string", default: "40" },
    window: { type: "string", default: "60" },
    variant: { type: "string", multiple: true, default: [] },
    retained: { type: "boolean", default: false },
  },
});
const pdus = Number(values.pdus);
const log = (line: string) => process.stdout.write(`${line}\n`);
const variants = values.variant.map((v) => {
  const eq = v.indexOf("=");
  let options = eq < 0 ? "" : v.slice(eq + 1);
  let dist = DIST;
  if (options.startsWith("@")) {
    const space = options.indexOf(" ");
    dist = resolve(options.slice(1, space < 0 ? undefined : space));
    options = space < 0 ? "" : options.slice(space + 1);
  }
  // Words like NAME=VALUE (no leading dashes) are the variant's environment, e.g. MALLOC_ARENA_MAX=2.
  const words = (options === "plain" ? "" : options).split(" ").filter((w) => w !== "");
  const env = Object.fromEntries(
    words
      .filter((w) => /^[A-Z_][A-Z0-9_]*=/.test(w))
      .map((w) => [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)]),
  );
  const nodeArgs = words.filter((w) => !/^[A-Z_][A-Z0-9_]*=/.test(w));
  return { name: eq < 0 ? v : v.slice(0, eq), options: words.join(" "), nodeArgs, env, dist };
});
if (variants.length === 0) throw new Error("give at least one --variant NAME=OPTIONS");

const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-gc-ab-"));
const tools = ensureTools(false, log);
const broker = await startBroker(tools.mosquitto);
// The simulators of poll-cpu (its --sim-child mode): values change as in the fleet scenario.
const sims: IpcChild[] = [];
for (let seed = 0; seed < pdus; seed += PER_CHILD) {
  const n = Math.min(PER_CHILD, pdus - seed);
  sims.push(new IpcChild(resolve(DIST, "bench/poll-cpu.js"), ["--sim-child", String(n), String(seed), "0"]));
}
const ports = (await Promise.all(sims.map((s) => s.ready<number[]>()))).flat();
writeFileSync(join(dir, "variants.json"), JSON.stringify(variants));
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_") && k !== "NODE_OPTIONS"),
);
const bridges: LoggedChild[] = [];
try {
  if (values.retained) {
    const config = writeBridgeConfig({ dir, name: "before", ports, broker, pollIntervalS: INTERVAL_S });
    const before = spawnNode(resolve(DIST, "src/main.js"), ["--config", config], {
      logFile: join(dir, "before.log"),
      env,
    });
    await before.waitForLog("pdu-bridge started", 60_000);
    await sleep(40_000);
    await stopChild(before.child);
  }
  for (const v of variants) {
    const config = writeBridgeConfig({ dir, name: v.name, ports, broker, pollIntervalS: INTERVAL_S });
    const child = spawnNode(resolve(v.dist, "src/main.js"), ["--config", config], {
      logFile: join(dir, `${v.name}.log`),
      env: { ...env, ...v.env },
      nodeArgs: v.nodeArgs,
    });
    bridges.push(child);
  }
  await Promise.all(bridges.map((b) => b.waitForLog("pdu-bridge started", 60_000)));
  log(`gc-ab: ${pdus} PDUs, ${variants.length} variants at once; scratch ${dir}`);
  await sleep(Number(values.warmup) * 1000);
  await Promise.all(sims.map((s) => s.request("reset")));
  const load0 = loadavg()[0]!;
  const first = bridges.map((b) => sampleProc(b.pid));
  const peak = bridges.map(() => 0);
  const low = bridges.map(() => Infinity);
  const end = Date.now() + Number(values.window) * 1000;
  while (Date.now() < end) {
    bridges.forEach((b, i) => {
      const s = sampleProc(b.pid);
      if (s === null) throw new Error(`${variants[i]!.name} died:\n${b.log().slice(-2000)}`);
      peak[i] = Math.max(peak[i]!, s.rssBytes);
      low[i] = Math.min(low[i]!, s.rssBytes);
    });
    await sleep(500);
  }
  const polls = (await Promise.all(sims.map((s) => s.request<number>("polls")))).reduce((a, b) => a + b, 0);
  const perVariant = polls / variants.length;
  const last = bridges.map((b) => sampleProc(b.pid)!);
  const cpu = last.map((s, i) => s.cpuSeconds - first[i]!.cpuSeconds);
  const hwm = last.map((s) => s.hwmBytes);
  const mb = (n: number) => (n / 2 ** 20).toFixed(0);
  log(
    `load ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}; polls ${polls} (${perVariant.toFixed(0)} per variant, ${((pdus * Number(values.window)) / INTERVAL_S).toFixed(0)} expected)`,
  );
  variants.forEach((v, i) => {
    const sawtooth = ((peak[i]! - low[i]!) / peak[i]!) * 100;
    log(
      `${v.name.padEnd(12)} peak RSS ${mb(peak[i]!)} MB (whole life ${mb(hwm[i]!)} MB), low ${mb(low[i]!)} MB (sawtooth ${sawtooth.toFixed(0)} %), ` +
        `CPU ${cpu[i]!.toFixed(2)} s = ${((cpu[i]! * 1000) / perVariant).toFixed(3)} ms/poll, ` +
        `vs first ${(cpu[i]! / cpu[0]!).toFixed(3)}  [${v.options || "plain"}]`,
    );
  });
} finally {
  await Promise.all(bridges.map((b) => stopChild(b.child)));
  await Promise.all(sims.map((s) => s.request("close").catch(() => undefined)));
  await Promise.all(sims.map((s) => s.stop()));
  await broker.close();
}
