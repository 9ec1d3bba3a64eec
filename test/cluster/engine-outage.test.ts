/**
 * The coordination engine failing under running replicas (docs/cluster.md, "What is tested"): two
 * replicas as real processes on a real 3-member etcd, mosquitto and simulators that journal every
 * write with the replica that sent it, MQTT commands sent throughout.
 *
 * - The etcd leader paused (SIGSTOP: it hangs rather than refuses) while on/off/reboot commands
 *   arrive: every reboot is executed at most once, exactly once when its audit line says done, and
 *   writes go on once etcd has elected a new leader.
 * - All of etcd stopped for 20 s: no write reaches a PDU once the replicas could not renew for
 *   RenewDeadline, commands sent meanwhile are never executed (REST answers 503), /readyz is 503
 *   naming the engine, the health entry and the metrics show it; when etcd is back the replicas hold,
 *   poll and write again, and the health entry and the metrics show that too.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { FLEET_API_KEY, PARENT, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 4;
const NAMES = ["r1", "r2"] as const;
/** Outlets 1..3 of each instance take reboots; outlet 0 takes on/off. */
const OUTLETS = 4;

interface Sent {
  readonly instance: string;
  readonly outlet: number;
  readonly topic: string;
  readonly at: number;
}

async function get(port: number | null, path: string, init: RequestInit = {}) {
  assert.ok(port !== null, "the replica listens");
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    ...init,
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The value of one sample of a Prometheus text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

interface ClusterEntry {
  status: string;
  detail: string;
  member: string;
  backend: string;
  engine: string;
  buckets: number[];
  instances: string[];
  members: { name: string; ready: boolean }[];
  transitions: number;
  lastError: string | null;
}

async function clusterEntry(fleet: ReplicaFleet, name: string): Promise<ClusterEntry> {
  const r = await get(fleet.get(name).healthPort, "/health/integrations");
  return (JSON.parse(r.text) as { integrations: { cluster: ClusterEntry } }).integrations.cluster;
}

async function metrics(fleet: ReplicaFleet, name: string): Promise<string> {
  return (await get(fleet.get(name).healthPort, "/metrics")).text;
}

/**
 * Sends MQTT commands on a timer: a reboot of the next target (instance, outlet 1..3) and an on/off
 * of outlet 0 of the next instance, in turn.
 */
class CommandStream {
  readonly reboots: Sent[] = [];
  readonly failures: string[] = [];
  readonly #fleet: ReplicaFleet;
  readonly #targets: { instance: string; outlet: number }[];
  #timer: NodeJS.Timeout | null = null;
  #tick = 0;

  constructor(fleet: ReplicaFleet) {
    this.#fleet = fleet;
    this.#targets = [...fleet.sims.keys()].flatMap((instance) =>
      Array.from({ length: OUTLETS - 1 }, (_, k) => ({ instance, outlet: k + 1 })),
    );
  }

  /** Every target takes one reboot; on/off between them. */
  start(periodMs: number): void {
    this.#timer = setInterval(() => this.#next(), periodMs);
  }

  get done(): boolean {
    return this.reboots.length >= this.#targets.length;
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #next(): void {
    const tick = this.#tick++;
    const ids = [...this.#fleet.sims.keys()];
    if (tick % 2 === 0) {
      const target = this.#targets[this.reboots.length];
      if (target === undefined) return this.stop();
      const topic = `${PARENT}/${target.instance}/${this.#device(target.instance)}/outlets/${target.outlet}/reboot`;
      this.reboots.push({ ...target, topic, at: Date.now() });
      this.#publish(topic, "");
    } else {
      const instance = ids[Math.floor(tick / 2) % ids.length]!;
      this.#publish(
        `${PARENT}/${instance}/${this.#device(instance)}/outlets/0/set`,
        tick % 4 === 1 ? "off" : "on",
      );
    }
  }

  #device(instance: string): string {
    return this.#fleet.sims.get(instance)!.deviceIds()[0]!;
  }

  #publish(topic: string, payload: string): void {
    this.#fleet.recorder.client
      .publishAsync(topic, payload, { qos: 1 })
      .catch((error: unknown) => this.failures.push(`${topic}: ${String(error)}`));
  }
}

/** The reboots the journal holds for a target since `since`. */
function rebootsOf(fleet: ReplicaFleet, target: Sent, since: number) {
  return fleet
    .journal()
    .filter(
      (e) =>
        e.instance === target.instance &&
        e.time >= since &&
        e.data.action === "reboot" &&
        e.path.endsWith(`/outlet/${target.outlet}`),
    );
}

/** Topics of the MQTT reboots some replica audited as done. */
function auditedDone(fleet: ReplicaFleet): Set<string> {
  const done = new Set<string>();
  for (const name of NAMES) {
    for (const line of fleet.get(name).process.logs()) {
      if (line.audit === "control" && line.action === "reboot" && line.outcome === "done")
        done.add(String(line.topic));
    }
  }
  return done;
}

/** Waits until an `off` sent now to outlet 0 of every instance has been executed. */
async function everyInstanceWrites(fleet: ReplicaFleet, what: string): Promise<void> {
  const since = Date.now();
  const ids = [...fleet.sims.keys()];
  const device = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
  const pending = new Set(ids);
  await waitFor(
    async () => {
      // Sent again while not executed: a command arriving in a handover is dropped by all.
      for (const id of pending)
        await fleet.recorder.client.publishAsync(`${PARENT}/${id}/${device(id)}/outlets/0/set`, "off", {
          qos: 1,
        });
      await sleep(700);
      for (const e of fleet.journal())
        if (e.time >= since && e.data.action === "off" && e.path.endsWith("/outlet/0"))
          pending.delete(e.instance);
      return pending.size === 0;
    },
    `${what}: an off executed on every instance (missing ${[...pending].join(", ")})`,
    30_000,
    0,
  );
}

describe("replicas while etcd fails", { timeout: 300_000 }, () => {
  let fleet: ReplicaFleet;
  before(async () => {
    fleet = await ReplicaFleet.start({ instances: 8, buckets: BUCKETS, outlets: OUTLETS, listeners: true });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
  });
  after(async () => {
    await fleet?.close();
  });

  it("the etcd leader paused while commands arrive: no reboot twice, each one audited done executed once, writes go on under the new leader", async () => {
    await fleet.balanced(NAMES);
    const since = Date.now();
    const stream = new CommandStream(fleet);
    stream.start(200);
    await sleep(1500);
    const leader = await fleet.etcd.leader();
    fleet.etcd.pause(leader);
    try {
      const next = await fleet.etcd.leader();
      assert.notEqual(next, leader, "etcd elected another leader");
      await waitFor(() => stream.done, "every reboot sent", 30_000);
      stream.stop();
      assert.deepEqual(stream.failures, []);
      await fleet.balanced(NAMES);
      await everyInstanceWrites(fleet, "under the new etcd leader");
      // Commands in flight end within their deadlines (RenewDeadline).
      await sleep(3000);
      const done = auditedDone(fleet);
      for (const target of stream.reboots) {
        const executed = rebootsOf(fleet, target, since);
        assert.ok(executed.length <= 1, `${target.topic} executed ${executed.length} times`);
        if (done.has(target.topic)) assert.equal(executed.length, 1, `${target.topic} audited done`);
      }
      assert.ok(
        stream.reboots.some((t) => done.has(t.topic)),
        "some reboots were carried out while etcd changed leaders",
      );
      for (const e of fleet.journal())
        assert.ok(e.member === "r1" || e.member === "r2", `a write named ${String(e.member)}`);
    } finally {
      fleet.etcd.resume(leader);
      await fleet.etcd.waitHealthy();
    }
  });

  it("all of etcd stopped for 20 s: no write once renewals stopped, /readyz 503, health and metrics show it; then everything resumes", async () => {
    const renewDeadlineMs = fleet.options.renewDeadline * 1000;
    await fleet.balanced(NAMES);
    // Steady state as operators see it.
    for (const name of NAMES) {
      const ready = await waitFor(
        async () => {
          const r = await get(fleet.get(name).healthPort, "/readyz");
          return r.status === 200 ? r : undefined;
        },
        `${name} ready`,
        20_000,
      );
      assert.equal(ready.text, "READY");
    }
    const entries = await waitFor(
      async () => {
        const all = await Promise.all(NAMES.map((n) => clusterEntry(fleet, n)));
        const held = all.flatMap((e) => e.buckets);
        return held.length === BUCKETS && all.every((e) => e.members.length === 2) ? all : undefined;
      },
      "both replicas' health entries show every bucket held and both members",
      20_000,
    );
    for (const [i, entry] of entries.entries()) {
      assert.equal(entry.status, "healthy", entry.detail);
      assert.equal(entry.member, NAMES[i]);
      assert.equal(entry.backend, "etcd");
      assert.equal(entry.lastError, null);
      assert.deepEqual(
        entry.instances.map((id) => bucketOf(id, BUCKETS)).filter((b) => !entry.buckets.includes(b)),
        [],
        "the instances listed are those of its buckets",
      );
    }
    assert.deepEqual(entries.flatMap((e) => e.instances).sort(), [...fleet.sims.keys()].sort());
    const lostBefore = new Map<string, number>();
    for (const name of NAMES) {
      const text = await metrics(fleet, name);
      assert.equal(sample(text, "pdu_bridge_cluster_members"), 2);
      assert.equal(sample(text, "pdu_bridge_cluster_engine_reachable"), 1);
      assert.ok((sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="acquired"}') ?? 0) >= 1);
      lostBefore.set(name, sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="lost"}') ?? -1);
    }
    const heldBefore = await Promise.all(
      NAMES.map(async (n) => sample(await metrics(fleet, n), "pdu_bridge_cluster_buckets_held") ?? 0),
    );
    assert.equal(
      heldBefore.reduce((a, b) => a + b, 0),
      BUCKETS,
    );

    // Commands throughout; then every etcd member killed.
    const stream = new CommandStream(fleet);
    stream.start(350);
    await sleep(1000);
    const stoppedAt = Date.now();
    await Promise.all(Array.from({ length: fleet.etcd.size }, (_, i) => fleet.etcd.stop(i)));

    // Within RenewDeadline (and a round) every replica gives its buckets up and says so.
    for (const name of NAMES) {
      const r = await waitFor(
        async () => {
          const answer = await get(fleet.get(name).healthPort, "/readyz");
          return answer.status === 503 ? answer : undefined;
        },
        `${name} not ready`,
        15_000,
      );
      assert.match(
        r.text,
        /^NOT READY: coordination engine not reachable \(last answer \d+s ago, limit 2s\)$/,
      );
      const entry = await clusterEntry(fleet, name);
      assert.equal(entry.status, "unhealthy", entry.detail);
      assert.deepEqual(entry.buckets, []);
      assert.deepEqual(entry.instances, []);
      assert.ok(entry.lastError !== null && entry.lastError.length > 0, entry.detail);
      assert.match(entry.detail, /^coordination engine not reachable/);
      const text = await metrics(fleet, name);
      assert.equal(sample(text, "pdu_bridge_cluster_buckets_held"), 0);
      assert.equal(sample(text, "pdu_bridge_cluster_engine_reachable"), 0);
      assert.doesNotMatch(text, /^pdu_bridge_up\{/m, "no instance series while it holds nothing");
      assert.ok(
        (sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="lost"}') ?? 0) >
          lostBefore.get(name)!,
        `${name} counted its buckets lost`,
      );
      // REST: refused, nothing sent.
      const id = [...fleet.sims.keys()][0]!;
      const device = fleet.sims.get(id)!.deviceIds()[0]!;
      const rest = await get(fleet.get(name).apiPort, `/api/v1/instances/${id}/outlets/${device}/2/control`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": FLEET_API_KEY },
        body: JSON.stringify({ action: "reboot" }),
      });
      assert.equal(rest.status, 503, rest.text);
      assert.ok(rest.headers.get("retry-after") !== null, "503 with Retry-After");
    }

    // 20 s without etcd, commands still arriving; then the members start again on their data.
    await sleep(Math.max(0, stoppedAt + 19_000 - Date.now()));
    stream.stop();
    await sleep(Math.max(0, stoppedAt + 20_000 - Date.now()));
    const restartedAt = Date.now();
    for (let i = 0; i < fleet.etcd.size; i++) fleet.etcd.restart(i);
    await fleet.etcd.waitHealthy();

    // Everything resumes: buckets held and spread, ready, polled by exactly one replica, written to.
    await fleet.balanced(NAMES, 60_000);
    for (const name of NAMES) {
      await waitFor(
        async () => (await get(fleet.get(name).healthPort, "/readyz")).status === 200,
        `${name} ready again`,
        20_000,
      );
    }
    const again = await waitFor(
      async () => {
        const all = await Promise.all(NAMES.map((n) => clusterEntry(fleet, n)));
        return all.every((e) => e.status === "healthy") && all.flatMap((e) => e.buckets).length === BUCKETS
          ? all
          : undefined;
      },
      "both health entries healthy with every bucket held",
      20_000,
    );
    assert.deepEqual(again.flatMap((e) => e.instances).sort(), [...fleet.sims.keys()].sort());
    const heldAfter = await Promise.all(
      NAMES.map(async (n) => {
        const text = await metrics(fleet, n);
        assert.equal(sample(text, "pdu_bridge_cluster_engine_reachable"), 1);
        return sample(text, "pdu_bridge_cluster_buckets_held") ?? 0;
      }),
    );
    assert.equal(
      heldAfter.reduce((a, b) => a + b, 0),
      BUCKETS,
    );
    for (const name of NAMES) {
      await waitFor(
        async () => {
          const entry = await clusterEntry(fleet, name);
          const text = await metrics(fleet, name);
          const up = [...text.matchAll(/^pdu_bridge_up\{instance="([^"]+)"\}/gm)].map((m) => m[1]).sort();
          return JSON.stringify(up) === JSON.stringify([...entry.instances].sort());
        },
        `${name} exports the instance series of the instances it holds, and only those`,
        10_000,
      );
    }
    // Once the holders stop changing hands, each instance is polled by its bucket's holder alone.
    const steady = await fleet.steadyWindow(NAMES);
    const { by, wrong } = fleet.pollersIn(steady.since);
    assert.deepEqual(wrong, [], "each instance polled by exactly one replica again");
    for (const [id, member] of by) assert.equal(member, steady.holders.get(bucketOf(id, BUCKETS)), id);
    await everyInstanceWrites(fleet, "after etcd came back");

    // The journal: nothing executed once the replicas could not have renewed, and none of the
    // commands sent while etcd was down, ever.
    await sleep(2000);
    const late = fleet.journal().filter((e) => e.time > stoppedAt + renewDeadlineMs && e.time < restartedAt);
    assert.deepEqual(late, [], "no write after RenewDeadline without renewal");
    const duringOutage = stream.reboots.filter((t) => t.at > stoppedAt);
    assert.ok(duringOutage.length >= 10, `${duringOutage.length} reboots sent during the outage`);
    for (const target of duringOutage) {
      assert.deepEqual(rebootsOf(fleet, target, stoppedAt), [], `${target.topic} sent while etcd was down`);
    }
    assert.deepEqual(stream.failures, []);
  });
});
