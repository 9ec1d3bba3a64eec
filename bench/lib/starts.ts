/**
 * Starts of the bridge as a user sees them, measured from outside the bridge process: the bridge
 * started as `node dist/src/main.js --config F` (an operator's configuration: discovery on, the
 * health listener on) on the rig's fleet, and, beside it, a reader of the broker (lib/user-view.ts)
 * from the moment it is spawned:
 * - the time until every instance's discovery configs are retained on the broker, exactly those the
 *   instance should have (read per instance by a fresh subscriber every few seconds);
 * - the time until every value (measurement topic) of every instance was published once;
 * - MQTT protocol errors, lost connections and reconnects in the bridge's log (lib/bridge-log.ts);
 * - the whole-life peak RSS (VmHWM of the process tree, start-up included).
 *
 * Variants: mosquitto with its default limits (1,000 queued messages per client) or unlimited
 * queues; the plain command or the image's NODE_OPTIONS; a start on a clean broker, then a restart
 * on the same broker with the previous run's configs retained, plus a ghost (a config of an outlet
 * that is gone) and a stale payload per instance: the restart must clear the one and replace the
 * other (the ghost cleanup's path).
 */
import { join, resolve } from "node:path";
import { connectionTrouble, describeTrouble, scanBridgeLog, type BridgeLogScan } from "./bridge-log.js";
import { startBridge, writeBridgeConfig, type BridgeFlags } from "./bridge.js";
import { startBroker, type Broker, type BrokerLimits } from "./broker.js";
import { DIST, IpcChild, sleep, stopChild } from "./child.js";
import type { Rig } from "./fleet-rig.js";
import { sampleProc } from "./proc.js";
import { row, type Row } from "./report.js";
import { percentile } from "./stats.js";

const MB = 1024 * 1024;

/** Discovery retained for every instance within 60 s per 1000 PDUs (60 s at least): 1000 → 60 s, 4000 → 240 s. */
export function discoveryTargetSeconds(pdus: number): number {
  return 60 * Math.max(1, pdus / 1000);
}

/** Whole-life VmHWM targets at 1000 PDUs, by how the bridge is started. */
export const RSS_TARGET_MB: Readonly<Record<BridgeFlags, number>> = { plain: 250, image: 200 };

export interface StartVariant {
  readonly limits: BrokerLimits;
  readonly flags: BridgeFlags;
}

/** The default set: both broker limits with the plain command, the image's flags on a default broker. */
export const START_VARIANTS: readonly StartVariant[] = [
  { limits: "default", flags: "plain" },
  { limits: "default", flags: "image" },
  { limits: "unlimited", flags: "plain" },
];

interface ViewStatus {
  readonly t0: number;
  readonly discovery: {
    readonly instances: number;
    readonly complete: number;
    readonly completeAt: number | null;
    readonly instanceTimes: readonly number[];
    readonly configsExpected: number;
    readonly configsRetained: number;
    readonly missing: number;
    readonly extra: number;
    readonly differing: number;
    readonly neverRead: number;
    readonly passes: number;
    readonly lastPassMs: number;
    readonly markerTimeouts: number;
  };
  readonly values: {
    readonly instances: number;
    readonly complete: number;
    readonly completeAt: number | null;
    readonly instanceTimes: readonly number[];
    readonly expected: number;
    readonly seen: number;
    readonly unexpected: number;
    readonly messages: number;
  };
}

export interface VerifyResult {
  readonly instances: number;
  readonly read: number;
  readonly exact: number;
  readonly missing: number;
  readonly extra: number;
  readonly differing: number;
  readonly markerTimeouts: number;
}

export interface StartRun {
  /** e.g. `plain command, mosquitto defaults, clean start`. */
  readonly label: string;
  readonly limits: BrokerLimits;
  readonly flags: BridgeFlags;
  readonly restart: boolean;
  readonly pdus: number;
  readonly intervalS: number;
  readonly targetSeconds: number;
  /** Seconds the run lasted (spawn to SIGTERM). */
  readonly runSeconds: number;
  /** Seconds from spawning the bridge until every instance's configs were found exact; null: never. */
  readonly discoverySeconds: number | null;
  /** Median and 90th percentile of the instances' own times. */
  readonly discoveryP50Seconds: number | null;
  readonly discoveryP90Seconds: number | null;
  /** Seconds until every value of every instance was seen once; null: never. */
  readonly valuesSeconds: number | null;
  readonly valuesP50Seconds: number | null;
  readonly status: ViewStatus;
  /** The last reading of every instance, after the run (did anything go after it was complete?). */
  readonly verify: VerifyResult;
  readonly log: BridgeLogScan;
  readonly logFile: string;
  readonly hwmMb: number;
  /** Ghost and stale configs planted before a restart. */
  readonly planted: { readonly ghosts: number; readonly stale: number } | null;
  readonly exited: boolean;
}

export function variantLabel(v: StartVariant, restart: boolean): string {
  return (
    `${v.flags === "plain" ? "plain command" : "image flags"}, ` +
    `${v.limits === "default" ? "mosquitto defaults" : "unlimited queues"}, ` +
    `${restart ? "restart over retained configs" : "clean start"}`
  );
}

/**
 * Runs each variant on the rig's fleet: a fresh broker, a clean start, then a restart over its
 * retained configs (plus the planted ghost and stale payload per instance).
 */
export async function measureStarts(
  rig: Rig,
  variants: readonly StartVariant[] = START_VARIANTS,
): Promise<StartRun[]> {
  const { ctx } = rig;
  const intervalS = rig.intervalMs / 1000;
  const view = new IpcChild(resolve(DIST, "bench/lib/user-view.js"), [rig.configFile]);
  const runs: StartRun[] = [];
  try {
    const shape = await view.ready<{
      configs: { min: number; max: number };
      values: { min: number; max: number };
    }>();
    ctx.log(
      `  starts as a user sees them: ${rig.pdus} PDUs, ${shape.configs.min}–${shape.configs.max} discovery configs ` +
        `and ${shape.values.min}–${shape.values.max} values each; target ${discoveryTargetSeconds(rig.pdus)} s`,
    );
    for (const variant of variants) {
      const broker = await startBroker(ctx.tools.mosquitto, variant.limits);
      try {
        const configFile = writeBridgeConfig({
          dir: ctx.workDir,
          name: `${rig.name}-start-${variant.limits}-${variant.flags}`,
          ports: rig.fleet.ports,
          broker,
          pollIntervalS: intervalS,
          health: true,
        });
        const common = { rig, view, broker, configFile, variant };
        runs.push(await measureStart({ ...common, restart: false, planted: null }));
        const planted = await view.request<{ ghosts: number; stale: number }>("plant", { url: broker.url });
        runs.push(await measureStart({ ...common, restart: true, planted }));
      } finally {
        await broker.close();
      }
    }
  } finally {
    await view.stop();
  }
  return runs;
}

async function measureStart(o: {
  rig: Rig;
  view: IpcChild;
  broker: Broker;
  configFile: string;
  variant: StartVariant;
  restart: boolean;
  planted: { ghosts: number; stale: number } | null;
}): Promise<StartRun> {
  const { rig, view, variant } = o;
  const { ctx } = rig;
  const intervalS = rig.intervalMs / 1000;
  const label = variantLabel(variant, o.restart);
  const target = discoveryTargetSeconds(rig.pdus);
  const deadlineMs = 2 * target * 1000;
  const tailMs = Math.max(5000, rig.intervalMs);
  const logFile = join(ctx.workDir, `${rig.name}-start-${label.replace(/\W+/g, "-")}.log`);
  await view.request("watch", { url: o.broker.url });
  const spawnedAt = Date.now();
  const since = (epoch: number | null) => (epoch === null ? null : (epoch - spawnedAt) / 1000);
  const child = await startBridge({
    configFile: o.configFile,
    logFile,
    nodeArgs: ctx.bridgeNodeArgs,
    flags: variant.flags,
  });
  let hwmBytes = 0;
  let exited = false;
  let status: ViewStatus;
  let lastLog = Date.now();
  let loggedDone = false;
  try {
    for (;;) {
      const s = sampleProc(child.pid);
      if (s === null) {
        exited = true;
        ctx.log(`  ${label}: the bridge exited (see ${logFile})`);
      } else hwmBytes = Math.max(hwmBytes, s.hwmBytes);
      status = await view.request<ViewStatus>("status");
      const d = status.discovery;
      const v = status.values;
      const done = d.completeAt !== null && v.completeAt !== null;
      const now = Date.now();
      if (now - lastLog >= 10_000 || (done && !loggedDone) || exited) {
        lastLog = now;
        loggedDone = done;
        ctx.log(
          `  ${label}, ${((now - spawnedAt) / 1000).toFixed(0)} s: discovery ${d.complete}/${d.instances} instances ` +
            `(${d.configsRetained}/${d.configsExpected} configs, pass ${d.passes} took ${(d.lastPassMs / 1000).toFixed(1)} s), ` +
            `values ${v.complete}/${v.instances} (${v.seen}/${v.expected}), RSS peak ${(hwmBytes / MB).toFixed(0)} MB`,
        );
      }
      if (exited) break;
      if (done && now - Math.max(d.completeAt, v.completeAt) >= tailMs) break;
      if (now - spawnedAt >= deadlineMs) {
        ctx.log(`  ${label}: not complete after ${deadlineMs / 1000} s; measured as it is`);
        break;
      }
      await sleep(1000);
    }
    const verify = await view.request<VerifyResult>("verify");
    const last = exited ? null : sampleProc(child.pid);
    if (last !== null) hwmBytes = Math.max(hwmBytes, last.hwmBytes);
    const runSeconds = (Date.now() - spawnedAt) / 1000;
    await stopChild(child.child);
    await view.request("unwatch");
    const log = scanBridgeLog(child.log());
    const times = (list: readonly number[]) => list.map((t) => (t - spawnedAt) / 1000);
    const run: StartRun = {
      label,
      limits: variant.limits,
      flags: variant.flags,
      restart: o.restart,
      pdus: rig.pdus,
      intervalS,
      targetSeconds: target,
      runSeconds,
      discoverySeconds: since(status.discovery.completeAt),
      discoveryP50Seconds: percentile(times(status.discovery.instanceTimes), 50),
      discoveryP90Seconds: percentile(times(status.discovery.instanceTimes), 90),
      valuesSeconds: since(status.values.completeAt),
      valuesP50Seconds: percentile(times(status.values.instanceTimes), 50),
      status: {
        ...status,
        discovery: { ...status.discovery, instanceTimes: [] },
        values: { ...status.values, instanceTimes: [] },
      },
      verify,
      log,
      logFile,
      hwmMb: hwmBytes / MB,
      planted: o.planted,
      exited,
    };
    ctx.log(`  ${describeStart(run)}`);
    return run;
  } catch (error) {
    await stopChild(child.child);
    await view.request("unwatch").catch(() => undefined);
    throw error;
  }
}

const secs = (v: number | null) => (v === null ? "never" : `${v.toFixed(1)} s`);

/** One line per run, for the log and the scenario's notes. */
export function describeStart(r: StartRun): string {
  const d = r.status.discovery;
  const ghosts =
    r.planted === null
      ? ""
      : `; ghost cleanup cleared ${r.log.ghostsCleared} (planted ${r.planted.ghosts} ghosts, ${r.planted.stale} stale)`;
  return (
    `${r.label}: discovery ${secs(r.discoverySeconds)} (p50 ${secs(r.discoveryP50Seconds)}, ${d.passes} passes), ` +
    `values ${secs(r.valuesSeconds)} (p50 ${secs(r.valuesP50Seconds)}), VmHWM ${r.hwmMb.toFixed(0)} MB, ` +
    `log: ${describeTrouble(r.log)}; final read ${r.verify.exact}/${r.verify.instances} exact${ghosts}`
  );
}

/**
 * The table rows of the runs. `rssTargets`: judge VmHWM against {@link RSS_TARGET_MB} (the fleet's
 * 1000 PDUs), else info; `prefix` starts every metric (scale: the size).
 */
export function startRows(
  scenario: string,
  runs: readonly StartRun[],
  o: { rssTargets: boolean; prefix?: string },
): Row[] {
  const rows: Row[] = [];
  for (const r of runs) {
    const at = `${o.prefix ?? ""}${r.label}`;
    const d = r.status.discovery;
    const v = r.status.values;
    const lostAfter = r.discoverySeconds !== null && r.verify.exact < r.verify.instances;
    const discoveryOk =
      !r.exited && r.discoverySeconds !== null && r.discoverySeconds <= r.targetSeconds && !lostAfter;
    const discoveryNote =
      r.discoverySeconds === null
        ? `${d.complete} of ${d.instances} instances complete after ${r.runSeconds.toFixed(0)} s: ` +
          `${d.configsRetained} of ${d.configsExpected} configs retained (incomplete instances: ${d.missing} missing, ` +
          `${d.extra} extra, ${d.differing} with another payload${d.neverRead > 0 ? `, ${d.neverRead} never read` : ""})`
        : lostAfter
          ? `complete at ${r.discoverySeconds.toFixed(1)} s, but the final read found ${r.verify.instances - r.verify.exact} ` +
            `instances not exact (${r.verify.missing} missing, ${r.verify.extra} extra, ${r.verify.differing} with another payload)`
          : undefined;
    rows.push(
      row({
        scenario,
        metric: `${at}: discovery retained for every instance`,
        unit: "s",
        target: `≤ ${r.targetSeconds} s`,
        measured: r.discoverySeconds,
        baseline: null,
        ratio: null,
        pass: discoveryOk,
        ...(discoveryNote === undefined ? {} : { note: discoveryNote }),
      }),
      row({
        scenario,
        metric: `${at}: every value published once`,
        unit: "s",
        target: `≤ ${r.targetSeconds} s`,
        measured: r.valuesSeconds,
        baseline: null,
        ratio: null,
        pass: !r.exited && r.valuesSeconds !== null && r.valuesSeconds <= r.targetSeconds,
        ...(r.valuesSeconds === null
          ? {
              note: `${v.complete} of ${v.instances} instances' values all seen after ${r.runSeconds.toFixed(0)} s (${v.seen} of ${v.expected})`,
            }
          : {}),
      }),
    );
    const trouble = connectionTrouble(r.log);
    rows.push(
      row({
        scenario,
        metric: `${at}: MQTT protocol errors, lost connections, reconnects`,
        unit: "",
        target: "0",
        measured: trouble,
        baseline: null,
        ratio: null,
        pass: !r.exited && trouble === 0 && r.log.connects === 1,
        ...(trouble === 0 && r.log.connects === 1
          ? {}
          : {
              note: `${describeTrouble(r.log)}${r.log.samples.length > 0 ? `; first: ${r.log.samples[0]}` : ""} (${r.logFile})`,
            }),
      }),
    );
    const limit = RSS_TARGET_MB[r.flags];
    rows.push(
      row({
        scenario,
        metric: `${at}: RSS peak over the whole life (VmHWM)`,
        unit: "MB",
        target: o.rssTargets ? `≤ ${limit} MB` : "info",
        measured: r.hwmMb,
        baseline: null,
        ratio: null,
        pass: o.rssTargets ? !r.exited && r.hwmMb <= limit : null,
        ...(r.exited ? { note: `the bridge exited during the run (${r.logFile})` } : {}),
      }),
    );
  }
  return rows;
}
