/**
 * The election algorithm with several replicas in one process, each with its own etcd client, on a
 * real 3-member etcd: spread, joining, leaving (also while renewals are on the wire), dying,
 * active/standby, a bucket count that differs, the etcd leader stopped and all of etcd down for 20 s.
 * Throughout, a monitor checks that no two replicas ever hold one bucket at the same instant.
 * Timings are short leases (3 s, renew deadline 2 s, retry 0.5 s) and only appear as waits with
 * deadlines.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, afterEach, before, describe, it } from "node:test";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { FencingError } from "../../src/cluster/index.js";
import type { LeaseRecord, StoredLease } from "../../src/cluster/store.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { Fleet, type Timings } from "../../testkit/cluster-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

let etcd: EtcdCluster;
before(async () => {
  etcd = await EtcdCluster.start({ members: 3 });
});
after(async () => {
  await etcd?.close();
});

let fleet: Fleet | null = null;
afterEach(async () => {
  const f = fleet;
  fleet = null;
  if (f === null) return;
  await f.close();
  assert.deepEqual(f.overlaps.slice(0, 5), [], "never two holders of one bucket at once");
});

/** A fleet on its own key prefix; each replica's client starts at a different etcd member. */
function newFleet(buckets: number, timings?: Timings): Fleet {
  const prefix = `/election-${randomUUID()}/`;
  let n = 0;
  fleet = new Fleet(() => etcdStore(prefix, n++ % etcd.endpoints.length), {
    buckets,
    ...(timings === undefined ? {} : { timings }),
  });
  return fleet;
}

/** A client of the test etcd on `prefix`, trying its members from the `shift`-th on. */
function etcdStore(prefix: string, shift: number): EtcdLeaseStore {
  const endpoints = etcd.endpoints;
  return new EtcdLeaseStore({
    endpoints: [...endpoints.slice(shift), ...endpoints.slice(0, shift)],
    prefix,
    attemptTimeoutMs: 400,
  });
}

/**
 * Real etcd, with the answer to each bucket renewal held back for `delayMs` after etcd committed
 * it: the write is done, and a caller that aborts meanwhile never learns its new version (as when
 * an answer is slow on the wire). `inFlight` counts renewals whose answer is held.
 */
class SlowRenewals extends EtcdLeaseStore {
  inFlight = 0;
  constructor(
    prefix: string,
    readonly delayMs: number,
  ) {
    super({ endpoints: etcd.endpoints, prefix, attemptTimeoutMs: 400 });
  }

  override async update(
    name: string,
    record: LeaseRecord,
    version: string,
    signal: AbortSignal,
  ): Promise<StoredLease> {
    const stored = await super.update(name, record, version, AbortSignal.timeout(5000));
    if (!name.startsWith("bucket-") || record.holder === "") return stored;
    this.inFlight++;
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, this.delayMs);
        signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason as Error)), {
          once: true,
        });
      });
    } finally {
      this.inFlight--;
    }
    return stored;
  }
}

describe("spread and movement", () => {
  it("three replicas hold 64 buckets within one of even, each bucket by one", async () => {
    const f = newFleet(64);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    const counts = await f.waitBalanced(["a", "b", "c"]);
    assert.deepEqual(Object.values(counts).sort(), [21, 21, 22]);
  });

  it("every replica names an instance's holder; a write asked of another is refused with that name", async () => {
    const f = newFleet(64);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    await f.waitSettled(["a", "b", "c"]);
    const holders = f.holders();
    for (const id of ["rack-1", "rack-2", "row-7-pdu-3", "default"]) {
      const bucket = f.get("a").bucketOf(id);
      const holder = holders.get(bucket)![0]!;
      for (const name of ["a", "b", "c"]) {
        const cluster = f.get(name);
        assert.equal(cluster.holds(id), name === holder);
        assert.equal(cluster.holderOf(id), holder, `${name} on ${id}`);
        if (name === holder) continue;
        await assert.rejects(cluster.beforeWrite(id), (error: unknown) => {
          assert.ok(error instanceof FencingError);
          assert.equal(error.reason, "not-holder");
          assert.equal(error.holder, holder);
          return true;
        });
      }
    }
  });

  it("a fourth replica joining moves at most ceil(64/4)+2 buckets, all to it", async () => {
    const f = newFleet(64);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    await f.waitSettled(["a", "b", "c"]);
    const before = f.lastSeq;
    await f.add("d");
    const counts = await f.waitSettled(["a", "b", "c", "d"]);
    assert.deepEqual(counts, { a: 16, b: 16, c: 16, d: 16 });
    const moves = f.acquiredSince(before);
    assert.ok(moves.length <= Math.ceil(64 / 4) + 2, `${moves.length} buckets moved`);
    assert.deepEqual([...new Set(moves.map((m) => m.member))], ["d"], "only the new replica took buckets");
  });

  it("a replica stopping (SIGTERM) hands its buckets over within 5 s, to the others only", async () => {
    const f = newFleet(64);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    await f.waitSettled(["a", "b", "c"]);
    const before = f.lastSeq;
    const leaving = [...f.get("c").status().buckets].sort((x, y) => x - y);
    const kept = new Map(["a", "b"].map((n) => [n, new Set(f.get(n).status().buckets)]));
    await f.stop("c");
    await f.waitBalanced(["a", "b"], 5000);
    const moved = new Set<number>();
    for (const e of f.acquiredSince(before)) if (e.event.type === "acquired") moved.add(e.event.bucket);
    assert.deepEqual(
      [...moved].sort((x, y) => x - y),
      leaving,
      "the leaving replica's buckets moved, and only they",
    );
    for (const [name, buckets] of kept)
      for (const bucket of buckets)
        assert.ok(f.get(name).status().buckets.includes(bucket), `${name} still holds its bucket ${bucket}`);
    const lost = f.events.filter((e) => e.seq > before && e.event.type === "lost");
    assert.ok(
      lost.every(
        (e) =>
          e.event.type === "lost" &&
          (e.member === "c" ? e.event.reason === "stopping" : leaving.includes(e.event.bucket)),
      ),
      "only the leaving replica lost buckets (the others at most one of its, passed on between them)",
    );
  });

  it("a replica stopped while renewals are on the wire still releases every bucket (none left to expire)", async () => {
    const prefix = `/election-${randomUUID()}/`;
    const slow = new SlowRenewals(prefix, 400);
    const f = (fleet = new Fleet(() => slow, { buckets: 8 }));
    await f.add("a");
    await f.waitSettled(["a"]);
    assert.equal(f.get("a").status().buckets.length, 8);
    await waitFor(() => slow.inFlight > 0 || undefined, "a renewal in flight", 5000);
    await f.stop("a");
    const reader = etcdStore(prefix, 1);
    try {
      const { leases } = await reader.list(AbortSignal.timeout(5000));
      const named = leases
        .filter((l) => l.name.startsWith("bucket-") && l.record !== null && l.record.holder !== "")
        .map((l) => `${l.name}: ${l.record!.holder}`);
      assert.deepEqual(named, [], "every bucket released when stop() returned");
    } finally {
      await reader.close();
    }
  });

  it("a replica that stops renewing (frozen, not released) has its buckets taken after the lease runs out", async () => {
    const f = newFleet(64);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    await f.waitSettled(["a", "b", "c"]);
    const frozen = f.get("b").status().buckets;
    assert.deepEqual([f.get("a").status().silent, f.get("a").status().unpolled], [[], []], "all renewed");
    f.halt("b");
    // Until they are taken over, the others say who stopped renewing and which buckets nobody polls.
    const named = waitFor(
      () => {
        const status = f.get("a").status();
        const buckets = status.unpolled.map((u) => u.bucket);
        return frozen.every((b) => buckets.includes(b)) ? status : undefined;
      },
      "a names every bucket of the frozen replica as polled by nobody",
      5000,
    );
    // Its holds turn false at its renew deadline; the others wait a whole lease from its last renewal.
    await waitFor(() => f.get("b").status().buckets.length === 0, "the frozen replica to stop holding", 5000);
    const during = await named;
    assert.deepEqual(
      during.unpolled.filter((u) => u.holder !== "b"),
      [],
      "every bucket nobody polls is the frozen replica's",
    );
    assert.deepEqual(
      during.silent.map((m) => m.name),
      ["b"],
    );
    await waitFor(
      () => {
        const holders = f.holders();
        return frozen.every((b) => {
          const who = holders.get(b);
          return who !== undefined && who.length === 1 && who[0] !== "b";
        });
      },
      "the frozen replica's buckets taken by the others",
      // LeaseDuration + RetryPeriod, and room for a loaded machine.
      3000 + 500 + 5000,
    );
    const lost = f.events.filter((e) => e.member === "b" && e.event.type === "lost");
    assert.ok(
      lost.length > 0 && lost.every((e) => e.event.type === "lost" && e.event.reason === "renew-deadline"),
    );
    // Taken over: nothing is polled by nobody; the frozen member is named while its lease is kept.
    const taken = await waitFor(
      () => {
        const status = f.get("a").status();
        return status.unpolled.length === 0 ? status : undefined;
      },
      "a to see every bucket polled again",
      2000,
    );
    assert.deepEqual(
      taken.silent.map((m) => m.name),
      ["b"],
    );
  });

  it("Buckets: 1 is active/standby", async () => {
    const f = newFleet(1);
    await Promise.all(["active", "standby"].map((n) => f.add(n)));
    const holder = await waitFor(() => f.holders().get(0)?.[0], "the one bucket held");
    const other = holder === "active" ? "standby" : "active";
    f.halt(holder);
    await waitFor(() => f.holders().get(0)?.[0] === other, "the standby to take over", 10_000);
  });

  it("buckets go to ready replicas; an unready one hands its buckets over", async () => {
    const f = newFleet(16);
    await f.add("a");
    await f.waitBalanced(["a"]);
    await f.add("b", { ready: false });
    await sleep(2500);
    assert.equal(
      f.get("b").status().buckets.length,
      0,
      "an unready replica takes nothing while a ready one exists",
    );
    f.get("b").setReady(true);
    await f.waitBalanced(["a", "b"]);
    f.get("a").setReady(false);
    await waitFor(
      () => f.get("b").status().buckets.length === 16,
      "every bucket with the ready replica",
      10_000,
    );
  });
});

describe("a bucket count that differs", () => {
  it("a replica with another count holds nothing while the installation's replicas live, then takes over", async () => {
    const f = newFleet(8);
    await f.add("old");
    await f.waitBalanced(["old"]);
    const newer = await f.add("new", { buckets: 4 });
    await sleep(2500);
    assert.equal(newer.cluster.status().buckets.length, 0);
    assert.match(newer.cluster.status().blocked ?? "", /Cluster\.Buckets is 4 here but 8 in the engine/);
    assert.equal(f.get("old").status().buckets.length, 8, "the running replicas are not disturbed");
    await f.stop("old");
    await waitFor(() => newer.cluster.status().buckets.length === 4, "the new count to take over", 15_000);
    assert.equal(newer.cluster.status().blocked, null);
  });
});

describe("etcd failures", () => {
  const SLOWER: Timings = { LeaseDurationSeconds: 6, RenewDeadlineSeconds: 4, RetryPeriodSeconds: 1 };

  it("the etcd leader stopped: the replicas go on against the other members", async () => {
    const f = newFleet(16, SLOWER);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    await f.waitSettled(["a", "b", "c"]);
    const leader = await etcd.leader();
    const before = f.lastSeq;
    await etcd.stop(leader);
    try {
      const newLeader = await etcd.leader();
      assert.notEqual(newLeader, leader);
      // Renewals go on through the other members; rounds after the election find every bucket
      // held (again, if an election outlasted a renew deadline), by one replica each.
      await sleep(3000);
      await f.waitSettled(["a", "b", "c"], 20_000);
      for (const { cluster } of f.replicas.values()) assert.equal(cluster.status().reachable, true);
      const lost = f.events.filter((e) => e.seq > before && e.event.type === "lost").length;
      if (lost > 0) process.stderr.write(`note: ${lost} bucket(s) lost during the etcd election\n`);
    } finally {
      etcd.restart(leader);
      await etcd.waitHealthy();
    }
  });

  it("all of etcd down for 20 s: holders stop holding after RenewDeadline, and hold again when it is back", async () => {
    const f = newFleet(16);
    await Promise.all(["a", "b", "c"].map((n) => f.add(n)));
    // Settled, not only balanced: a bucket still being handed over when etcd goes is free in some
    // replica's last list, and a free bucket is unpolled as far as that replica knows.
    await f.waitSettled(["a", "b", "c"]);
    for (let i = 0; i < etcd.size; i++) await etcd.stop(i);
    try {
      // A bucket is dropped RenewDeadline after its last renewal was sent; the engine counts as
      // unreachable RenewDeadline after its last answered list, which may come a round later.
      await waitFor(
        () =>
          [...f.replicas.values()].every(
            (r) => r.cluster.status().buckets.length === 0 && !r.cluster.status().reachable,
          ),
        "every replica to stop holding and see the engine unreachable",
        // RenewDeadline and a round, and room for a loaded machine.
        2000 + 4000,
      );
      for (const r of f.replicas.values()) {
        const status = r.cluster.status();
        assert.match(status.lastError ?? "", /etcd/);
        // Without the engine a replica cannot see the others renew: it does not call them silent.
        assert.deepEqual([status.silent, status.unpolled], [[], []]);
      }
      const lost = f.events.filter((e) => e.event.type === "lost");
      assert.ok(lost.every((e) => e.event.type === "lost" && e.event.reason === "renew-deadline"));
      await sleep(20_000 - 5000);
      assert.equal(f.holders().size, 0, "nothing is held while etcd is down");
    } finally {
      for (let i = 0; i < etcd.size; i++) etcd.restart(i);
      await etcd.waitHealthy();
    }
    await f.waitBalanced(["a", "b", "c"], 30_000);
  });
});
