/**
 * Scenario `cluster`: several replicas (docs/cluster.md) measured from outside their processes, as
 * a user sees them. The rig: a real 3-member etcd on loopback (testkit/etcd.ts), mosquitto, 3N
 * simulated 24-outlet PDUs in child processes, and the service as `node dist/src/main.js --config F`
 * children with the image's NODE_OPTIONS, the replicas differing only in `Cluster.MemberName`.
 *
 * 1. CPU per poll: replicas r1, r2 and r3 (N instances each, the service's default lease timings)
 *    and one process without `Cluster` polling all 3N, **at the same time, on the same simulated
 *    PDUs** and the same broker (the single process under its own topics), over one window: the sum
 *    of the replicas' CPU seconds over their polls, against the single process's CPU over its polls.
 *    The simulators tell the pollers apart by the `X-Pdu-Bridge-Member` header (none: the single
 *    process). Also each replica's peak RSS (VmHWM), and etcd's CPU.
 * 2. Failover: three new replicas (shorter lease timings, `--cluster-timings`); each in turn is
 *    killed with SIGKILL while it holds buckets, and from the kill the scenario waits until every
 *    one of its instances is (a) held by another replica (the bucket leases in etcd, read every
 *    100 ms), (b) polled again by another replica (the simulators' arrival times) and (c) available
 *    again on MQTT (the bucket's `$buckets/<n>/status` `online` again after the will's `offline`,
 *    and the instance's own status `online`, as a subscriber sees them). The killed replica is then
 *    started again and the fleet waits for balance before the next kill.
 * 3. Rebalancing: a fourth replica joins: the time from its spawn until it holds its share, and
 *    until every instance of the buckets it took was polled by it; how many buckets moved, and
 *    whether any bucket showed `offline` meanwhile (a handover must not).
 *
 * Sizes and timings: bench/lib/cluster-options.ts (`--cluster-*` flags of the runner).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { connectAsync, type MqttClient } from "mqtt";
import { bucketOf } from "../src/cluster/assign.js";
import { EtcdLeaseStore } from "../src/cluster/etcd.js";
import { ETCD, EtcdCluster } from "../testkit/etcd.js";
import { configYaml } from "../testkit/config-yaml.js";
import { bucketHolders, clusterConfigLines } from "../testkit/replica-fleet.js";
import { waitFor } from "../testkit/wait.js";
import { startBridge } from "./lib/bridge.js";
import { startBroker, type Broker } from "./lib/broker.js";
import { DIST, IpcChild, sleep, stopChild, type LoggedChild } from "./lib/child.js";
import { clusterOptions, type ClusterBenchOptions, type LeaseTimings } from "./lib/cluster-options.js";
import { OUTLETS } from "./lib/fleet-rig.js";
import type { BenchContext, ScenarioResult, Traffic } from "./lib/measure.js";
import { processTree, sampleProc, type ProcSample } from "./lib/proc.js";
import { row, type Row } from "./lib/report.js";
import { pduId, startSimFleet, type PollerCounts, type SimFleet } from "./lib/sim-fleet.js";
import { median, ratio } from "./lib/stats.js";

/** Topics of the replicas, and of the single process beside them in the CPU window. */
const PARENT = "pdu-bridge";
const DISCOVERY = "homeassistant";
const SINGLE_PARENT = "single";
const SINGLE_DISCOVERY = "homeassistant-single";
const MEMBERS = ["r1", "r2", "r3"] as const;
const JOINER = "r4";
const MB = 1024 * 1024;

interface Rig {
  readonly ctx: BenchContext;
  readonly o: ClusterBenchOptions;
  /** Instance ids, index = PDU number. */
  readonly ids: readonly string[];
  readonly fleet: SimFleet;
  readonly broker: Broker;
  readonly etcd: EtcdCluster;
  readonly status: StatusWatch;
}

export async function runCluster(ctx: BenchContext): Promise<ScenarioResult> {
  const o = ctx.cluster ?? clusterOptions(ctx.quick, {});
  if (!existsSync(ETCD))
    throw new Error(`no etcd at ${ETCD}: apt-get install etcd-server (or set ETCD_BIN to another binary)`);
  const pdus = 3 * o.instancesPerReplica;
  const t = o.timings;
  ctx.log(
    `  3 replicas × ${o.instancesPerReplica} instances and one process × ${pdus}, ${o.buckets} buckets, ` +
      `polls every ${o.pollIntervalS} s; ${o.kills} kills with leases ${t.lease}/${t.renew}/${t.retry} s`,
  );
  const etcd = await EtcdCluster.start({ members: 3 });
  // A runner stopped by SIGINT exits at once: kill the etcd members (ours, by pid) on the way out.
  const etcdPids = descendantsNamed("etcd");
  const killEtcd = () => {
    for (const pid of etcdPids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  process.once("exit", killEtcd);
  let broker: Broker | null = null;
  let fleet: SimFleet | null = null;
  let status: StatusWatch | null = null;
  try {
    broker = await startBroker(ctx.tools.mosquitto);
    fleet = await startSimFleet({
      pdus,
      processes: Math.max(1, Math.min(8, Math.ceil(pdus / 250))),
      outlets: OUTLETS,
    });
    status = await StatusWatch.connect(broker.url);
    const rig: Rig = {
      ctx,
      o,
      ids: Array.from({ length: pdus }, (_, i) => pduId(i)),
      fleet,
      broker,
      etcd,
      status,
    };
    const cpu = await cpuPhase(rig, etcdPids);
    const failover = await failoverPhase(rig);
    return {
      rows: [...failover.rows, ...cpu.rows],
      notes: [...failover.notes, ...cpu.notes],
      details: { options: o, pdus, cpu: cpu.details, ...failover.details },
    };
  } finally {
    await status?.close();
    await fleet?.close();
    await broker?.close();
    await etcd.close();
    process.off("exit", killEtcd);
  }
}

// ---------------------------------------------------------------------------------------------
// CPU per poll: 3 replicas × N against one process × 3N, at the same time on the same PDUs

async function cpuPhase(
  rig: Rig,
  etcdPids: readonly number[],
): Promise<{ rows: Row[]; notes: string[]; details: Record<string, unknown> }> {
  const { ctx, o, fleet } = rig;
  const prefix = `/bench-${ctx.stamp}-cpu/`;
  const leases = new Leases(rig.etcd.endpoints, prefix);
  const counter = new IpcChild(resolve(DIST, "bench/lib/mqtt-counter.js"), [rig.broker.url]);
  const children: LoggedChild[] = [];
  let leaseLog: LeaseLog | null = null;
  try {
    await counter.ready();
    leaseLog = await leases.log();
    const startAt = Date.now();
    const started = await Promise.all([
      startService(rig, { name: "single", member: null, tag: "cpu-single" }),
      ...MEMBERS.map((m) =>
        startService(rig, { name: m, member: m, tag: `cpu-${m}`, prefix, timings: o.cpuTimings }),
      ),
    ]);
    children.push(...started);
    const [single, ...replicas] = started;
    const balance = await balanced(rig, leases, MEMBERS, 120_000);
    // Warm-up: every PDU polled twice by the single process and twice by the replicas since the
    // buckets settled, then both discovery bursts over (2 s without a config message).
    await waitFor(
      async () =>
        (await fleet.pollers(balance.at)).every((p) => count(p, [""]) >= 2 && count(p, MEMBERS) >= 2),
      "every PDU polled twice by the single process and by the replicas",
      o.pollIntervalS * 3000 + 60_000,
      500,
    );
    if (!(await settleAll(counter, [DISCOVERY, SINGLE_DISCOVERY], 90_000)))
      ctx.log("  discovery traffic still flowing after 90 s; measuring anyway");
    ctx.log(`  CPU: warmed up, measuring ${o.windowSeconds} s`);
    const pids = { single: single.pid, replicas: replicas.map((r) => r.pid) };
    const sampleAll = () => ({
      single: sampleProc(pids.single),
      replicas: pids.replicas.map((p) => sampleProc(p)),
      etcd: etcdPids.map((p) => sampleProc(p)),
      broker: sampleProc(rig.broker.pid),
    });
    const s0 = sampleAll();
    const t0 = Date.now();
    await sleep(o.windowSeconds * 1000);
    const t1 = Date.now();
    const s1 = sampleAll();
    const polls = await fleet.pollers(t0, t1);
    const startAcquisitions = leaseLog.acquisitions(startAt, balance.at);
    const windowAcquisitions = leaseLog.acquisitions(t0, t1);
    const gaps = leaseLog.gaps(o.cpuTimings.renew * 1000, startAt, t1, () => false);
    const seconds = (t1 - t0) / 1000;
    const cpu = (a: ProcSample | null, b: ProcSample | null) => {
      if (a === null || b === null) throw new Error("a measured process ended during the CPU window");
      return b.cpuSeconds - a.cpuSeconds;
    };
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    const replicaCpu = s0.replicas.map((s, i) => cpu(s, s1.replicas[i] ?? null));
    const singleCpu = cpu(s0.single, s1.single);
    const etcdCpu = sum(s0.etcd.map((s, i) => cpu(s, s1.etcd[i] ?? null)));
    const brokerCpu = cpu(s0.broker, s1.broker);
    const replicaPolls = sum(polls.map((p) => count(p, MEMBERS)));
    const singlePolls = sum(polls.map((p) => count(p, [""])));
    const pollsBy = MEMBERS.map((m) => sum(polls.map((p) => count(p, [m]))));
    const doubled = polls.filter((p) => MEMBERS.filter((m) => count(p, [m]) > 0).length > 1).length;
    const due = (rig.ids.length * seconds) / o.pollIntervalS;
    const perPoll = (cpuS: number, n: number) => (n > 0 ? (cpuS * 1000) / n : null);
    const clusterMs = perPoll(sum(replicaCpu), replicaPolls);
    const singleMs = perPoll(singleCpu, singlePolls);
    const hwm = replicas.map((r) => (sampleProc(r.pid)?.hwmBytes ?? 0) / MB);
    const singleHwm = (sampleProc(single.pid)?.hwmBytes ?? 0) / MB;
    ctx.log(
      `  CPU: replicas ${sum(replicaCpu).toFixed(2)} s over ${replicaPolls} polls ` +
        `(${pollsBy.join(" / ")}), single ${singleCpu.toFixed(2)} s over ${singlePolls} polls ` +
        `(${due.toFixed(0)} due each); etcd ${etcdCpu.toFixed(2)} s; ` +
        `RSS ${hwm.map((h) => h.toFixed(0)).join(" / ")} MB against ${singleHwm.toFixed(0)} MB`,
    );
    const n = o.instancesPerReplica;
    const rows: Row[] = [
      row({
        scenario: "cluster",
        metric: `CPU per poll, 3 replicas × ${n} instances, their CPU summed`,
        unit: "ms",
        target: "info",
        measured: clusterMs,
        baseline: singleMs,
        baselineLabel: `one process × ${3 * n}, same window`,
        ratio: ratio(clusterMs, singleMs),
        pass: null,
        note:
          `polls in the ${seconds.toFixed(0)} s window: replicas ${replicaPolls}, single ${singlePolls} ` +
          `(${due.toFixed(0)} due each)`,
      }),
      row({
        scenario: "cluster",
        metric: "RSS peak per replica (VmHWM), the largest of 3",
        unit: "MB",
        target: "info",
        measured: Math.max(...hwm),
        baseline: singleHwm,
        baselineLabel: `one process × ${3 * n}`,
        ratio: ratio(Math.max(...hwm), singleHwm),
        pass: null,
      }),
      row({
        scenario: "cluster",
        metric: "RSS peak of the 3 replicas together (VmHWM)",
        unit: "MB",
        target: "info",
        measured: sum(hwm),
        baseline: singleHwm,
        baselineLabel: `one process × ${3 * n}`,
        ratio: ratio(sum(hwm), singleHwm),
        pass: null,
      }),
      row({
        scenario: "cluster",
        metric: "etcd CPU, 3 members, in the CPU window",
        unit: "% core",
        target: "info",
        measured: (100 * etcdCpu) / seconds,
        baseline: null,
        ratio: null,
        pass: null,
      }),
      row({
        scenario: "cluster",
        metric: "start-up of 3 replicas: bucket acquisitions until balanced",
        unit: "",
        target: "info",
        measured: startAcquisitions,
        baseline: o.buckets,
        baselineLabel: "one per bucket",
        ratio: ratio(startAcquisitions, o.buckets),
        pass: null,
      }),
      row({
        scenario: "cluster",
        metric: `renewal gaps over RenewDeadline (${o.cpuTimings.renew} s), from the start to the end of the CPU window`,
        unit: "",
        target: "0",
        measured: gaps.length,
        baseline: null,
        ratio: null,
        pass: gaps.length === 0 && leaseLog.complete,
        note: "a holder that renews nothing for RenewDeadline drops the bucket: it stops polling and publishing it",
      }),
      row({
        scenario: "cluster",
        metric: "bucket acquisitions in the CPU window",
        unit: "",
        target: "0",
        measured: windowAcquisitions,
        baseline: null,
        ratio: null,
        pass: windowAcquisitions === 0 && leaseLog.complete,
      }),
      row({
        scenario: "cluster",
        metric: "PDUs polled by more than one replica in the CPU window",
        unit: "",
        target: "0",
        measured: doubled,
        baseline: null,
        ratio: null,
        pass: doubled === 0,
      }),
    ];
    const notes: string[] = [];
    if (replicaPolls < 0.99 * due || singlePolls < 0.99 * due)
      notes.push(
        `cluster: fewer than 99 % of the due polls in the CPU window (replicas ${replicaPolls}, ` +
          `single ${singlePolls}, due ${due.toFixed(0)}): the machine could not keep up`,
      );
    return {
      rows,
      notes,
      details: {
        windowSeconds: seconds,
        timings: o.cpuTimings,
        replicaCpuSeconds: replicaCpu,
        singleCpuSeconds: singleCpu,
        etcdCpuSeconds: etcdCpu,
        brokerCpuSeconds: brokerCpu,
        replicaPolls,
        pollsByReplica: Object.fromEntries(MEMBERS.map((m, i) => [m, pollsBy[i]])),
        singlePolls,
        duePolls: due,
        cpuMsPerPoll: { replicas: clusterMs, single: singleMs },
        rssHwmMb: { replicas: hwm, single: singleHwm },
        pdusPolledByMoreThanOneReplica: doubled,
        acquisitionsUntilBalanced: startAcquisitions,
        acquisitionsInWindow: windowAcquisitions,
        renewalGaps: gaps,
        leaseWatchComplete: leaseLog.complete,
      },
    };
  } finally {
    await Promise.all(children.map((c) => stopChild(c.child)));
    await counter.request("close").catch(() => undefined);
    await counter.stop();
    leaseLog?.close();
    await leases.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Failover (kill -9 of a holder, each replica in turn) and rebalancing (a fourth replica joins)

interface KillRun {
  readonly victim: string;
  /** Epoch ms. */
  readonly killedAt: number;
  readonly buckets: readonly number[];
  /** Those of its buckets that have instances (each with a status connection). */
  readonly usedBuckets: number;
  readonly instances: number;
  /** Seconds from the kill; null: not within the deadline. */
  readonly takenS: number | null;
  readonly polledS: number | null;
  readonly availableS: number | null;
  /** Buckets of the victim's instances whose status the broker turned `offline` (its wills). */
  readonly markedOffline: number;
  /** Per bucket of its instances: its status changes from 30 s before the kill (for a reader of the JSON). */
  readonly statuses: Record<number, { readonly payload: string; readonly atS: number }[]>;
  /** Its instances it had not polled within 1.5 poll intervals before the kill (0 when it held them all). */
  readonly unpolledBeforeKill: number;
  /** Seconds from the restart of the killed replica until the fleet was balanced again. */
  readonly rejoinS: number | null;
}

async function failoverPhase(
  rig: Rig,
): Promise<{ rows: Row[]; notes: string[]; details: Record<string, unknown> }> {
  const { ctx, o } = rig;
  const prefix = `/bench-${ctx.stamp}-failover/`;
  const leases = new Leases(rig.etcd.endpoints, prefix);
  const replicas = new Map<string, LoggedChild>();
  const start = (name: string, tag: string) =>
    startService(rig, { name, member: name, tag, prefix, timings: o.timings });
  const leaseLog = await leases.log();
  const phaseStart = Date.now();
  try {
    const first = await Promise.all(MEMBERS.map((m) => start(m, `failover-${m}`)));
    MEMBERS.forEach((m, i) => replicas.set(m, first[i]!));
    await settled(rig, leases, MEMBERS, null, 0);
    const kills: KillRun[] = [];
    const killed: { member: string; at: number }[] = [];
    for (let k = 0; k < o.kills; k++) {
      const victim = MEMBERS[k % MEMBERS.length]!;
      const run = await killOnce(rig, leases, replicas, victim);
      killed.push({ member: victim, at: run.killedAt });
      const restartAt = Date.now();
      replicas.set(victim, await start(victim, `failover-${victim}-restart-${k + 1}`));
      let rejoinS: number | null = null;
      try {
        await settled(rig, leases, MEMBERS, victim, restartAt);
        rejoinS = (Date.now() - restartAt) / 1000;
      } catch (error) {
        ctx.log(`  rejoin of ${victim}: ${error instanceof Error ? error.message : String(error)}`);
      }
      kills.push({ ...run, rejoinS });
      const f = (v: number | null) => (v === null ? "not within the deadline" : `${v.toFixed(2)} s`);
      ctx.log(
        `  kill ${k + 1}/${o.kills} (${victim}, ${run.buckets.length} buckets, ${run.instances} instances): ` +
          `taken over ${f(run.takenS)}, polled again ${f(run.polledS)}, available again ${f(run.availableS)}; ` +
          `rejoined in ${f(rejoinS)}`,
      );
      if (rejoinS === null) throw new Error(`the fleet did not settle after ${victim} was restarted`);
    }
    const rebalance = await joinFourth(rig, leases, replicas, prefix);
    const gaps = leaseLog.gaps(o.timings.renew * 1000, phaseStart, Date.now(), (member, start, end) =>
      killed.some((k) => k.member === member && k.at >= start && k.at <= end),
    );
    const gapRow = row({
      scenario: "cluster",
      metric: `failover runs: renewal gaps over RenewDeadline (${o.timings.renew} s) by replicas not killed`,
      unit: "",
      target: "0",
      measured: gaps.length,
      baseline: null,
      ratio: null,
      pass: gaps.length === 0 && leaseLog.complete,
      note: "a live holder that renews nothing for RenewDeadline drops the bucket (under load: its start-up)",
    });
    return {
      rows: [...killRows(o, kills), gapRow, ...rebalance.rows],
      notes: [
        `cluster: failover and rebalancing with LeaseDuration ${o.timings.lease} s, RenewDeadline ` +
          `${o.timings.renew} s, RetryPeriod ${o.timings.retry} s, PollInterval ${o.pollIntervalS} s, ` +
          `${o.buckets} buckets; held over as etcd's watch delivered it, polls timed at the simulators, ` +
          `availability as a subscriber received it`,
      ],
      details: {
        kills,
        rebalance: rebalance.details,
        renewalGaps: gaps,
        leaseWatchComplete: leaseLog.complete,
      },
    };
  } finally {
    await Promise.all([...replicas.values()].map((c) => stopChild(c.child)));
    leaseLog.close();
    await leases.close();
  }
}

/** Kills `victim` (SIGKILL) and measures until its instances are held, polled and available again. */
async function killOnce(
  rig: Rig,
  leases: Leases,
  replicas: Map<string, LoggedChild>,
  victim: string,
): Promise<Omit<KillRun, "rejoinS">> {
  const { o } = rig;
  const { holders } = await balanced(rig, leases, MEMBERS, 60_000);
  const buckets = [...holders].filter(([, m]) => m === victim).map(([b]) => b);
  const affected = rig.ids.flatMap((id, index) =>
    buckets.includes(bucketOf(id, o.buckets)) ? [{ id, index }] : [],
  );
  const used = [...new Set(affected.map((a) => bucketOf(a.id, o.buckets)))];
  if (affected.length === 0)
    throw new Error(
      `${victim} holds no instances to fail over: give the replicas more (--cluster-instances)`,
    );
  const recent = await rig.fleet.pollers(Date.now() - o.pollIntervalS * 1500);
  const unpolledBeforeKill = affected.filter(
    ({ index }) => firstPollBy(recent[index], (m) => m === victim) === null,
  ).length;
  const child = replicas.get(victim)!.child;
  // The watch delivers each acquisition as etcd commits it; the list every 100 ms is the fallback
  // should the watch end.
  const takeover = await leases.takeover(used, victim);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const killedAt = Date.now();
  child.kill("SIGKILL");
  await exited;
  const deadline = killedAt + (o.timings.lease + o.timings.retry + o.pollIntervalS) * 1000 + 30_000;
  let takenAt: number | null = null;
  let polledAt: number | null = null;
  let availableAt: number | null = null;
  let pollsCheckedAt = 0;
  try {
    while (Date.now() < deadline && (takenAt === null || polledAt === null || availableAt === null)) {
      if (takenAt === null) takenAt = takeover.at();
      if (takenAt === null && takeover.ended()) {
        const now = await leases.holders().catch(() => null);
        const answered = Date.now();
        if (now !== null && used.every((b) => (now.get(b) ?? victim) !== victim)) takenAt = answered;
      }
      // The simulators time each poll themselves: asking every half second loses no precision.
      if (polledAt === null && Date.now() - pollsCheckedAt >= 500) {
        pollsCheckedAt = Date.now();
        const polls = await rig.fleet.pollers(killedAt);
        const firsts = affected.map(({ index }) =>
          firstPollBy(polls[index], (m) => m !== victim && m !== ""),
        );
        if (firsts.every((t) => t !== null)) polledAt = Math.max(...firsts);
      }
      const settledAt = takenAt !== null && polledAt !== null ? Math.max(takenAt, polledAt) : null;
      if (availableAt === null)
        availableAt = rig.status.availableAgain(
          affected,
          o.buckets,
          killedAt,
          settledAt !== null && Date.now() - settledAt > 1000,
        );
      await sleep(100);
    }
  } finally {
    takeover.close();
  }
  const seconds = (at: number | null) => (at === null ? null : (at - killedAt) / 1000);
  return {
    victim,
    killedAt,
    buckets,
    usedBuckets: used.length,
    instances: affected.length,
    takenS: seconds(takenAt),
    polledS: seconds(polledAt),
    availableS: seconds(availableAt),
    markedOffline: used.filter((b) => rig.status.firstAfter(bucketTopic(b), "offline", killedAt) !== null)
      .length,
    statuses: Object.fromEntries(
      used.map((b) => [
        b,
        rig.status
          .changes(bucketTopic(b), killedAt - 30_000)
          .map((c) => ({ payload: c.payload, atS: (c.at - killedAt) / 1000 })),
      ]),
    ),
    unpolledBeforeKill,
  };
}

/** A fourth replica joins the three: its share, the polls of what it took, what moved. */
async function joinFourth(
  rig: Rig,
  leases: Leases,
  replicas: Map<string, LoggedChild>,
  prefix: string,
): Promise<{ rows: Row[]; details: Record<string, unknown> }> {
  const { o, ctx } = rig;
  const before = (await balanced(rig, leases, MEMBERS, 60_000)).holders;
  const spawnAt = Date.now();
  replicas.set(
    JOINER,
    await startService(rig, {
      name: JOINER,
      member: JOINER,
      tag: "rebalance-r4",
      prefix,
      timings: o.timings,
    }),
  );
  const startedS = (Date.now() - spawnAt) / 1000;
  const after = await balanced(rig, leases, [...MEMBERS, JOINER], 120_000);
  const shareS = (after.at - spawnAt) / 1000;
  const moved = [...after.holders].filter(([b, m]) => before.get(b) !== m);
  const movedBuckets = new Set(moved.map(([b]) => b));
  const movedIds = rig.ids.flatMap((id, index) =>
    movedBuckets.has(bucketOf(id, o.buckets)) ? [{ id, index }] : [],
  );
  const polledAt = await waitFor(
    async () => {
      const polls = await rig.fleet.pollers(spawnAt);
      const firsts = movedIds.map(({ index }) => firstPollBy(polls[index], (m) => m === JOINER));
      return firsts.every((t) => t !== null) ? Math.max(spawnAt, ...firsts) : null;
    },
    "every instance of the moved buckets polled by the fourth replica",
    (o.pollIntervalS + 30) * 1000,
    500,
  );
  const polledS = (polledAt - spawnAt) / 1000;
  // A little longer than a round, so that a will published by a handover would have arrived.
  await sleep(Math.max(1000, o.timings.retry * 1000));
  const offline = rig.status.transitions("offline", spawnAt).length;
  const maxMoved = Math.ceil(o.buckets / 4) + 2;
  const notAllToJoiner = moved.filter(([, m]) => m !== JOINER).length;
  ctx.log(
    `  rebalancing: r4 started in ${startedS.toFixed(2)} s, held its share after ${shareS.toFixed(2)} s, ` +
      `polled what it took after ${polledS.toFixed(2)} s; ${moved.length} buckets moved ` +
      `(${notAllToJoiner} not to r4), ${offline} bucket status offline`,
  );
  const rows: Row[] = [
    row({
      scenario: "cluster",
      metric: "rebalancing: a fourth replica holds its share, from its spawn",
      unit: "s",
      target: "info",
      measured: shareS,
      baseline: null,
      ratio: null,
      pass: null,
      note: `its start-up (spawn to its started line) ${startedS.toFixed(2)} s; it observes for 2 × RetryPeriod before it takes anything`,
    }),
    row({
      scenario: "cluster",
      metric: "rebalancing: every instance of the buckets it took polled by it, from its spawn",
      unit: "s",
      target: "info",
      measured: polledS,
      baseline: null,
      ratio: null,
      pass: null,
    }),
    row({
      scenario: "cluster",
      metric: "rebalancing: buckets moved",
      unit: "",
      target: `≤ ${maxMoved} (ceil(Buckets/4) + 2), all to it`,
      measured: moved.length,
      baseline: null,
      ratio: null,
      pass: moved.length <= maxMoved && notAllToJoiner === 0,
    }),
    row({
      scenario: "cluster",
      metric: "rebalancing: bucket statuses turned offline (instances unavailable)",
      unit: "",
      target: "0",
      measured: offline,
      baseline: null,
      ratio: null,
      pass: offline === 0,
    }),
  ];
  return {
    rows,
    details: {
      startedSeconds: startedS,
      shareSeconds: shareS,
      polledSeconds: polledS,
      moved: moved.map(([b, m]) => ({ bucket: b, from: before.get(b) ?? null, to: m })),
      movedInstances: movedIds.length,
      offlineTransitions: offline,
    },
  };
}

function killRows(o: ClusterBenchOptions, kills: readonly KillRun[]): Row[] {
  const heldTarget = o.timings.lease + o.timings.retry;
  const polledTarget = heldTarget + o.pollIntervalS;
  const rows: Row[] = [];
  const measures: [keyof KillRun & ("takenS" | "polledS" | "availableS"), string, number, string][] = [
    ["takenS", "its buckets held by other replicas", heldTarget, "LeaseDuration + RetryPeriod"],
    [
      "polledS",
      "its instances polled again by others",
      polledTarget,
      "LeaseDuration + RetryPeriod + PollInterval",
    ],
    [
      "availableS",
      "its instances available again on MQTT",
      polledTarget,
      "LeaseDuration + RetryPeriod + PollInterval",
    ],
  ];
  for (const [key, what, target, rule] of measures) {
    const values = kills.map((k) => k[key]);
    const known = values.filter((v): v is number => v !== null);
    const missing = values.length - known.length;
    const med = median(known);
    const worst = known.length === 0 ? null : Math.max(...known);
    rows.push(
      row({
        scenario: "cluster",
        metric: `failover (kill -9): ${what}, median of ${kills.length}`,
        unit: "s",
        target: `≤ ${target} s (${rule})`,
        measured: med,
        baseline: null,
        ratio: null,
        pass: med !== null && med <= target && missing <= kills.length / 2,
      }),
      row({
        scenario: "cluster",
        metric: `failover (kill -9): ${what}, worst of ${kills.length}`,
        unit: "s",
        target: `≤ ${target} s`,
        measured: worst,
        baseline: null,
        ratio: null,
        pass: worst !== null && worst <= target && missing === 0,
        ...(missing > 0
          ? { note: `${missing} of ${kills.length} kills did not get there within the deadline` }
          : {}),
      }),
    );
  }
  const complete = kills.filter((k) => k.takenS !== null && k.polledS !== null && k.availableS !== null);
  const offline = kills.reduce((n, k) => n + k.markedOffline, 0);
  const used = kills.reduce((n, k) => n + k.usedBuckets, 0);
  const rejoins = kills.flatMap((k) => (k.rejoinS === null ? [] : [k.rejoinS]));
  rows.push(
    row({
      scenario: "cluster",
      metric: "failover: buckets of the killed replicas its wills did not mark offline",
      unit: "",
      target: "0",
      measured: used - offline,
      baseline: used,
      baselineLabel: "their buckets with instances",
      ratio: null,
      pass: used === offline,
      note: "such a bucket's instances look available while nobody polls them, until the next holder",
    }),
    row({
      scenario: "cluster",
      metric: "failover: kills after which every instance was held, polled and available again",
      unit: "",
      target: `${kills.length} of ${kills.length}`,
      measured: complete.length,
      baseline: null,
      ratio: null,
      pass: complete.length === kills.length,
    }),
    row({
      scenario: "cluster",
      metric: "failover: the killed replica started again under its name, until balanced again, median",
      unit: "s",
      target: "info",
      measured: median(rejoins),
      baseline: null,
      ratio: null,
      pass: null,
      note:
        "from its spawn until its share is back and polled by it; it first waits out its previous run's " +
        "member lease (LeaseDuration on its own clock)",
    }),
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The service's processes

/** Writes the configuration of one process and starts it (the image's NODE_OPTIONS). */
async function startService(
  rig: Rig,
  o: { name: string; tag: string } & (
    { member: null } | { member: string; prefix: string; timings?: LeaseTimings }
  ),
): Promise<LoggedChild> {
  const { ctx } = rig;
  const single = o.member === null;
  const text = configYaml({
    Mqtt: {
      Connection: { Host: rig.broker.host, Port: rig.broker.port, Scheme: "mqtt" },
      // The same client id on every replica: the bucket connections' ids derive from it.
      ClientId: `bench-${single ? "single" : "cluster"}-${process.pid}`,
      ParentTopic: single ? SINGLE_PARENT : PARENT,
    },
    Pdus: Object.fromEntries(
      rig.ids.map((id, i) => [
        id,
        {
          Connection: { Host: "127.0.0.1", Port: rig.fleet.ports[i], Scheme: "http", Timeout: 15 },
          PollInterval: rig.o.pollIntervalS,
          ActionsEnabled: false,
        },
      ]),
    ),
    HomeAssistant: {
      DiscoveryEnabled: true,
      DiscoveryTopic: single ? SINGLE_DISCOVERY : DISCOVERY,
      SensorExpireAfterSeconds: 300,
    },
    Api: { Enabled: false },
    Health: { Enabled: false },
    Logging: { Level: "info" },
  });
  // The Cluster section is replica-fleet.ts's, as the cluster tests write it.
  const lines = [text.trimEnd()];
  if (o.member !== null) {
    const t = o.timings ?? rig.o.timings;
    lines.push(
      ...clusterConfigLines({
        member: o.member,
        buckets: rig.o.buckets,
        leaseDuration: t.lease,
        renewDeadline: t.renew,
        retryPeriod: t.retry,
        endpoints: rig.etcd.endpoints,
        prefix: o.prefix,
      }),
    );
  }
  const configFile = join(ctx.workDir, `cluster-${o.tag}.yaml`);
  writeFileSync(configFile, `${lines.join("\n")}\n`);
  return startBridge({
    configFile,
    logFile: join(ctx.workDir, `cluster-${o.tag}.log`),
    nodeArgs: ctx.bridgeNodeArgs,
    flags: "image",
  });
}

/** Pids of this process's descendants whose command is `name` (the etcd members we started). */
function descendantsNamed(name: string): number[] {
  return processTree(process.pid)
    .slice(1)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name;
      } catch {
        return false;
      }
    });
}

// ---------------------------------------------------------------------------------------------
// Reading from outside: leases in etcd, polls at the simulators, statuses on MQTT

/** The bucket leases of one installation, read from etcd as any client could. */
class Leases {
  readonly #store: EtcdLeaseStore;

  /** A log of every write of the bucket leases from now on. */
  log(): Promise<LeaseLog> {
    return LeaseLog.start(this.#store);
  }

  constructor(endpoints: readonly string[], prefix: string) {
    this.#store = new EtcdLeaseStore({ endpoints: [...endpoints], prefix });
  }

  /** Bucket → the member named in its lease (released leases left out). */
  holders(): Promise<Map<number, string>> {
    return bucketHolders(this.#store);
  }

  /**
   * Watches for `buckets` being taken by anyone but `victim`: `at()` is when the last of them was
   * (epoch ms, as the watch delivered it), null while some are not.
   */
  async takeover(
    buckets: readonly number[],
    victim: string,
  ): Promise<{ at(): number | null; ended(): boolean; close(): void }> {
    const list = await this.#store.list(AbortSignal.timeout(5000));
    const taken = new Map<number, number>();
    let ended = false;
    const watch = this.#store.watch(
      list.revision,
      (event) => {
        if (event.type !== "put") return;
        const match = /^bucket-(\d+)$/.exec(event.lease.name);
        const holder = (event.lease.record?.holder ?? "").split("/")[0] ?? "";
        const bucket = Number(match?.[1]);
        if (match !== null && holder !== "" && holder !== victim && !taken.has(bucket))
          taken.set(bucket, Date.now());
      },
      () => {
        ended = true;
      },
    );
    return {
      at: () =>
        buckets.every((b) => taken.has(b)) ? Math.max(0, ...buckets.map((b) => taken.get(b)!)) : null,
      ended: () => ended,
      close: () => watch.close(),
    };
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

export interface LeasePut {
  readonly bucket: number;
  /** `<member>/<incarnation>`, "" when released. */
  readonly holder: string;
  readonly acquireTime: string | null;
  /** When the watch delivered it (epoch ms). */
  readonly at: number;
}

export interface RenewalGap {
  readonly bucket: number;
  readonly member: string;
  /** Epoch seconds of the write the gap follows. */
  readonly startS: number;
  readonly seconds: number;
}

/**
 * Acquisitions among bucket lease writes (in delivery order) that arrived in `from..to`: a write
 * naming a holder, whose holder or acquire time differs from the bucket's previous write.
 */
export function countAcquisitions(puts: readonly LeasePut[], from: number, to: number): number {
  const last = new Map<number, LeasePut>();
  let n = 0;
  for (const put of puts) {
    const previous = last.get(put.bucket);
    last.set(put.bucket, put);
    if (put.holder === "" || put.at < from || put.at > to) continue;
    if (previous === undefined || previous.holder !== put.holder || previous.acquireTime !== put.acquireTime)
      n++;
  }
  return n;
}

/**
 * Renewal gaps longer than `limitMs` ending in `from..to`: a write naming a holder followed by no
 * write of that bucket for longer than that (up to the next write, or `to`), unless
 * `excused(member, start, end)` (the member was killed in that span). A holder that renews nothing
 * for RenewDeadline has dropped the bucket: it polls and publishes it no more.
 */
export function renewalGaps(
  puts: readonly LeasePut[],
  limitMs: number,
  from: number,
  to: number,
  excused: (member: string, start: number, end: number) => boolean,
): RenewalGap[] {
  const byBucket = new Map<number, LeasePut[]>();
  for (const put of puts) {
    if (put.at > to) continue;
    const list = byBucket.get(put.bucket) ?? [];
    list.push(put);
    byBucket.set(put.bucket, list);
  }
  const found: RenewalGap[] = [];
  for (const [bucket, list] of byBucket) {
    list.forEach((put, i) => {
      if (put.holder === "") return;
      const end = list[i + 1]?.at ?? to;
      if (end < from || end - put.at <= limitMs) return;
      const member = put.holder.split("/")[0] ?? "";
      if (excused(member, put.at, end)) return;
      found.push({ bucket, member, startS: put.at / 1000, seconds: (end - put.at) / 1000 });
    });
  }
  return found;
}

/**
 * Every write of the bucket leases as etcd's watch delivers it, from its start: acquisitions (a
 * holder or acquire time that differs from the previous write's) and renewal gaps (a holder that
 * wrote nothing for longer than RenewDeadline has dropped the bucket: it stopped polling it).
 */
class LeaseLog {
  readonly #puts: LeasePut[] = [];
  #watch: { close(): void } | null = null;
  #ended = false;

  static async start(leases: EtcdLeaseStore): Promise<LeaseLog> {
    const log = new LeaseLog();
    const list = await leases.list(AbortSignal.timeout(5000));
    log.#watch = leases.watch(
      list.revision,
      (event) => {
        if (event.type !== "put") return;
        const match = /^bucket-(\d+)$/.exec(event.lease.name);
        if (match === null || log.#puts.length >= 1_000_000) return;
        log.#puts.push({
          bucket: Number(match[1]),
          holder: event.lease.record?.holder ?? "",
          acquireTime: event.lease.record?.acquireTime ?? null,
          at: Date.now(),
        });
      },
      () => {
        log.#ended = true;
      },
    );
    return log;
  }

  /** False when the watch ended early (the counts then miss what came after). */
  get complete(): boolean {
    return !this.#ended;
  }

  /** Acquisitions delivered in `from..to` (epoch ms). */
  acquisitions(from: number, to: number): number {
    return countAcquisitions(this.#puts, from, to);
  }

  /** Renewal gaps longer than `limitMs` ({@link renewalGaps}). */
  gaps(
    limitMs: number,
    from: number,
    to: number,
    excused: (member: string, start: number, end: number) => boolean,
  ): RenewalGap[] {
    return renewalGaps(this.#puts, limitMs, from, to, excused);
  }

  close(): void {
    this.#watch?.close();
  }
}

/**
 * Waits until every bucket is held by one of `names`, within one of even; returns the holders and
 * when the list that showed it was answered (epoch ms).
 */
function balanced(
  rig: Rig,
  leases: Leases,
  names: readonly string[],
  timeoutMs: number,
): Promise<{ holders: Map<number, string>; at: number }> {
  return waitFor(
    async () => {
      const holders = await leases.holders();
      const at = Date.now();
      if (holders.size !== rig.o.buckets) return null;
      const counts = new Map(names.map((n) => [n, 0]));
      for (const member of holders.values()) {
        const n = counts.get(member);
        if (n === undefined) return null;
        counts.set(member, n + 1);
      }
      const values = [...counts.values()];
      return Math.max(...values) - Math.min(...values) <= 1 ? { holders, at } : null;
    },
    `every bucket held by ${names.join(", ")} within one of even`,
    timeoutMs,
    100,
  );
}

/**
 * Waits for a settled fleet: balanced, every instance of `joined`'s buckets polled by it since
 * `since` (when a replica just (re)joined), and every bucket with instances `online` on MQTT.
 */
async function settled(
  rig: Rig,
  leases: Leases,
  names: readonly string[],
  joined: string | null,
  since: number,
): Promise<void> {
  const { o } = rig;
  const { holders } = await balanced(rig, leases, names, 120_000);
  const used = [...new Set(rig.ids.map((id) => bucketOf(id, o.buckets)))];
  await waitFor(
    async () => {
      const polls = joined === null ? null : await rig.fleet.pollers(since);
      const polled = rig.ids.every(
        (id, i) =>
          joined === null ||
          holders.get(bucketOf(id, o.buckets)) !== joined ||
          firstPollBy(polls?.[i], (m) => m === joined) !== null,
      );
      return polled && used.every((b) => rig.status.last(bucketTopic(b)) === "online");
    },
    "every instance polled by its holder and every bucket online",
    (o.pollIntervalS + 60) * 1000,
    200,
  );
}

/** Polls of the members `m` of one PDU (from {@link SimFleet.pollers}): the first arrival, or null. */
function firstPollBy(polls: PollerCounts | undefined, which: (member: string) => boolean): number | null {
  let first: number | null = null;
  for (const [member, [n, at]] of Object.entries(polls ?? {})) {
    if (n > 0 && which(member) && (first === null || at < first)) first = at;
  }
  return first;
}

/** Polls of one PDU by these members (`""`: the process without a member name). */
function count(polls: PollerCounts | undefined, members: readonly string[]): number {
  return members.reduce((n, m) => n + (polls?.[m]?.[0] ?? 0), 0);
}

/** Resolves true once 2 s pass without a message under any of `prefixes`, false after `timeoutMs`. */
async function settleAll(
  counter: IpcChild,
  prefixes: readonly string[],
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await counter.request("reset");
    await sleep(2000);
    const traffic = await counter.request<Traffic>("collect");
    if (prefixes.every((p) => (traffic.byPrefix[p] ?? 0) === 0)) return true;
  }
  return false;
}

const bucketTopic = (bucket: number) => `${PARENT}/$buckets/${bucket}/status`;
const instanceTopic = (id: string) => `${PARENT}/${id}/status`;

interface StatusState {
  payload: string;
  /** When it took this payload (epoch ms, as received). */
  since: number;
  /** Changes of payload, the latest last (bounded). */
  readonly changes: { payload: string; at: number }[];
}

/**
 * The availability topics of the replicas' instances as a subscriber sees them: every bucket's
 * `P/$buckets/<n>/status` and every instance's `P/<id>/status`, each with when it changed.
 */
class StatusWatch {
  readonly #client: MqttClient;
  readonly #topics = new Map<string, StatusState>();

  private constructor(client: MqttClient) {
    this.#client = client;
    client.on("message", (topic, payload) => {
      const text = payload.toString("utf8");
      const at = Date.now();
      const state = this.#topics.get(topic);
      if (state === undefined) {
        this.#topics.set(topic, { payload: text, since: at, changes: [{ payload: text, at }] });
        return;
      }
      if (state.payload === text) return;
      state.payload = text;
      state.since = at;
      state.changes.push({ payload: text, at });
      if (state.changes.length > 200) state.changes.shift();
    });
  }

  static async connect(url: string): Promise<StatusWatch> {
    const client = await connectAsync(url, { clientId: `bench-status-${process.pid}`, reconnectPeriod: 0 });
    const watch = new StatusWatch(client);
    await client.subscribeAsync([`${PARENT}/$buckets/+/status`, `${PARENT}/+/status`], { qos: 1 });
    return watch;
  }

  last(topic: string): string | null {
    return this.#topics.get(topic)?.payload ?? null;
  }

  /** When `topic` first changed to `payload` at or after `since`, or null. */
  firstAfter(topic: string, payload: string, since: number): number | null {
    return this.#topics.get(topic)?.changes.find((c) => c.at >= since && c.payload === payload)?.at ?? null;
  }

  /** The changes of `topic` at or after `since`. */
  changes(topic: string, since: number): { payload: string; at: number }[] {
    return (this.#topics.get(topic)?.changes ?? []).filter((c) => c.at >= since);
  }

  /** Every change of a bucket status to `payload` at or after `since`. */
  transitions(payload: string, since: number): { topic: string; at: number }[] {
    return [...this.#topics].flatMap(([topic, state]) =>
      topic.startsWith(`${PARENT}/$buckets/`)
        ? state.changes
            .filter((c) => c.at >= since && c.payload === payload)
            .map((c) => ({ topic, at: c.at }))
        : [],
    );
  }

  /**
   * When every one of `instances` was available again after `since` (both its availability topics
   * `online`: the bucket's after its will's `offline`, the instance's own), or null while not yet.
   * `noWillIsFinal`: a bucket whose will has not come by now never will.
   */
  availableAgain(
    instances: readonly { id: string }[],
    buckets: number,
    since: number,
    noWillIsFinal: boolean,
  ): number | null {
    let latest = since;
    for (const { id } of instances) {
      const topic = bucketTopic(bucketOf(id, buckets));
      const offline = this.firstAfter(topic, "offline", since);
      // No will (yet): once the takeover is over, the bucket stayed `online` throughout, and it
      // never looked unavailable (counted apart: it should have).
      const online =
        offline === null && noWillIsFinal && this.last(topic) === "online"
          ? since
          : this.firstAfter(topic, "online", offline ?? since);
      if (online === null || this.last(topic) !== "online") return null;
      const own = this.#topics.get(instanceTopic(id));
      if (own === undefined || own.payload !== "online") return null;
      latest = Math.max(latest, online, own.since);
    }
    return latest;
  }

  async close(): Promise<void> {
    await this.#client.endAsync();
  }
}
