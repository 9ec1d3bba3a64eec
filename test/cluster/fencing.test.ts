/**
 * Fencing on a real etcd: a write's grant follows a conditional renewal, must start within its
 * window and ends at the lease's validity end; a holder that missed its renewals (engine down, event
 * loop stalled, process frozen and taken over) writes nothing; a lease taken from under a holder is
 * dropped at once; once-only ids never run twice, across a takeover too; and a holder leaving waits
 * for its writes in flight before it releases.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, afterEach, before, describe, it } from "node:test";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { FencingError, type WriteGrant } from "../../src/cluster/index.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { Fleet } from "../../testkit/cluster-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

let etcd: EtcdCluster;
before(async () => {
  etcd = await EtcdCluster.start({ members: 1 });
});
after(async () => {
  await etcd?.close();
});

let fleet: Fleet | null = null;
let raw: EtcdLeaseStore | null = null;
afterEach(async () => {
  const f = fleet;
  fleet = null;
  await raw?.close();
  raw = null;
  if (f === null) return;
  await f.close();
  assert.deepEqual(f.overlaps.slice(0, 5), [], "never two holders of one bucket at once");
});

const signal = () => AbortSignal.timeout(5000);

/** A fleet of one bucket (every instance in it) and a raw client on the same prefix. */
async function oneBucket(names: string[]): Promise<{ f: Fleet; store: EtcdLeaseStore; holder: string }> {
  const prefix = `/fencing-${randomUUID()}/`;
  const f = new Fleet(
    () => new EtcdLeaseStore({ endpoints: etcd.endpoints, prefix, attemptTimeoutMs: 400 }),
    {
      buckets: 1,
    },
  );
  fleet = f;
  raw = new EtcdLeaseStore({ endpoints: etcd.endpoints, prefix });
  for (const name of names) await f.add(name);
  const holder = await waitFor(() => f.holders().get(0)?.[0], "the bucket held");
  return { f, store: raw, holder };
}

const refused = (reason: FencingError["reason"]) => (error: unknown) => {
  assert.ok(error instanceof FencingError, String(error));
  assert.equal(error.reason, reason, error.message);
  return true;
};

describe("a write's grant", () => {
  it("follows a conditional renewal of the bucket's lease, and has a start window and a deadline", async () => {
    const { f, store, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const before = (await store.get("bucket-0", signal()))!;
    const grant = await cluster.beforeWrite("rack-1");
    const after = (await store.get("bucket-0", signal()))!;
    assert.notEqual(after.version, before.version, "the lease was written before the grant");
    assert.equal(after.record?.holder, before.record?.holder);
    grant.assertMayStart();
    assert.equal(grant.signal.aborted, false);
    // The start window (RenewDeadline / 4 here): a write that has not started by then may not.
    await sleep(700);
    assert.throws(() => grant.assertMayStart(), refused("late"));
    // The deadline: RenewDeadline after the renewal was sent, whatever renewals come later.
    await waitFor(() => grant.signal.aborted, "the grant's signal to abort at its deadline", 5000);
    assert.ok(cluster.holds("rack-1"), "the bucket is still held: only this write's time ran out");
    grant.done();
  });

  it("is refused after missed renewals (the engine down), and one granted before is stopped", async () => {
    const { f, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const grant = await cluster.beforeWrite("rack-1");
    await etcd.stop(0);
    try {
      await waitFor(() => !cluster.holds("rack-1"), "the holder to stop holding at its renew deadline", 5000);
      assert.ok(grant.signal.aborted);
      assert.throws(() => grant.assertMayStart(), FencingError);
      await assert.rejects(cluster.beforeWrite("rack-1"), refused("not-holder"));
    } finally {
      etcd.restart(0);
      await etcd.waitHealthy();
    }
    await waitFor(() => cluster.holds("rack-1"), "the bucket held again once etcd is back", 15_000);
  });

  it("is refused after an event-loop stall past the renew deadline, before any timer has run", async () => {
    const { f, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const grant = await cluster.beforeWrite("rack-1");
    const until = performance.now() + 2100;
    while (performance.now() < until) {
      // A stall: nothing else runs, no renewal, no timer.
    }
    assert.equal(cluster.holds("rack-1"), false, "the monotonic clock says the lease ran out");
    assert.throws(() => grant.assertMayStart(), FencingError);
  });

  it("from a holder frozen past its lease and taken over: it writes nothing when it resumes", async () => {
    const { f, store, holder } = await oneBucket(["a", "b"]);
    const other = holder === "a" ? "b" : "a";
    const frozen = f.get(holder);
    const grant = await frozen.beforeWrite("rack-1");
    f.halt(holder);
    await waitFor(() => f.holders().get(0)?.[0] === other, "the other replica to take over", 10_000);
    const taken = (await store.get("bucket-0", signal()))!;
    // Resumed: the grant it had and a new attempt are both refused; the lease is not touched.
    assert.throws(() => grant.assertMayStart(), FencingError);
    await assert.rejects(frozen.beforeWrite("rack-1"), refused("not-holder"));
    assert.equal((await store.get("bucket-0", signal()))?.version, taken.version);
  });

  it("from a holder whose lease was taken from under it: the renewal conflicts and the bucket is dropped", async () => {
    const { f, store, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const current = (await store.get("bucket-0", signal()))!;
    await store.update("bucket-0", { ...current.record!, holder: "intruder/1" }, current.version, signal());
    const seq = f.lastSeq;
    await assert.rejects(cluster.beforeWrite("rack-1"), refused("renewal-failed"));
    assert.equal(cluster.holds("rack-1"), false);
    const lost = f.events.filter((e) => e.seq > seq && e.event.type === "lost");
    assert.deepEqual(
      lost.map((e) => e.event),
      [{ type: "lost", bucket: 0, reason: "conflict" }],
    );
  });

  it("shares one renewal among writes asked for at once", async () => {
    const { f, store, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const before = Number((await store.get("bucket-0", signal()))!.version);
    const grants = await Promise.all(Array.from({ length: 20 }, (_, i) => cluster.beforeWrite(`rack-${i}`)));
    const after = Number((await store.get("bucket-0", signal()))!.version);
    for (const grant of grants) {
      grant.assertMayStart();
      grant.done();
    }
    // One write for the first, one for every one that asked while it was in flight; a background
    // renewal may add one.
    assert.ok(after - before <= 3, `${after - before} writes for 20 grants`);
  });
});

describe("once-only ids", () => {
  it("are refused when recorded, here and by the next holder after a takeover", async () => {
    const { f, holder } = await oneBucket(["a", "b"]);
    const other = holder === "a" ? "b" : "a";
    const first = f.get(holder);
    const grant = await first.beforeWrite("rack-1", { onceId: "reboot-1" });
    grant.done();
    assert.ok(first.onceUsed("rack-1", "reboot-1"));
    await assert.rejects(first.beforeWrite("rack-1", { onceId: "reboot-1" }), refused("once-used"));
    // Two at once with one id: one is granted.
    const both = await Promise.allSettled([
      first.beforeWrite("rack-1", { onceId: "reboot-2" }),
      first.beforeWrite("rack-1", { onceId: "reboot-2" }),
    ]);
    assert.equal(both.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of both) if (r.status === "fulfilled") r.value.done();

    f.halt(holder);
    const next = f.get(other);
    await waitFor(() => next.holds("rack-1"), "the other replica to take over", 10_000);
    assert.ok(next.onceUsed("rack-1", "reboot-1"));
    await assert.rejects(next.beforeWrite("rack-1", { onceId: "reboot-1" }), refused("once-used"));
    await assert.rejects(next.beforeWrite("rack-1", { onceId: "reboot-2" }), refused("once-used"));
    const fresh = await next.beforeWrite("rack-1", { onceId: "reboot-3" });
    fresh.done();
  });

  it("are kept for a time, not a count: the first of 150 is still refused by the next holder", async () => {
    const { f, holder } = await oneBucket(["a", "b"]);
    const other = holder === "a" ? "b" : "a";
    const first = f.get(holder);
    for (let k = 0; k < 150; k++) (await first.beforeWrite("rack-1", { onceId: `cmd-${k}-0` })).done();
    f.halt(holder);
    const next = f.get(other);
    await waitFor(() => next.holds("rack-1"), "the other replica to take over", 10_000);
    await assert.rejects(next.beforeWrite("rack-1", { onceId: "cmd-0-0" }), refused("once-used"));
    await assert.rejects(next.beforeWrite("rack-1", { onceId: "cmd-149-0" }), refused("once-used"));
  });

  it("a reboot hold is recorded with the lease and refused by the next holder until it has passed", async () => {
    const { f, store, holder } = await oneBucket(["a", "b"]);
    const other = holder === "a" ? "b" : "a";
    const first = f.get(holder);
    const hold = { key: "rack-1\u0000dev\u00000", ms: 6000 };
    (await first.beforeWrite("rack-1", { onceId: "r-1-0", hold })).done();
    await assert.rejects(first.beforeWrite("rack-1", { hold }), refused("held"));
    // Another outlet is not held.
    (await first.beforeWrite("rack-1", { hold: { ...hold, key: "rack-1\u0000dev\u00001" } })).done();
    const payload = JSON.parse((await store.get("bucket-0", signal()))!.record!.payload) as {
      holds: Record<string, number>;
    };
    assert.equal(Object.keys(payload.holds).length, 2, "both holds recorded, by a hash of the outlet");
    assert.ok(!JSON.stringify(payload).includes("dev"), "no outlet key in clear");
    f.halt(holder);
    const next = f.get(other);
    await waitFor(() => next.holds("rack-1"), "the other replica to take over", 10_000);
    await assert.rejects(next.beforeWrite("rack-1", { hold }), refused("held"));
    // It passes: the write's deadline (RenewDeadline) plus the hold, counted from the next holder's view.
    const granted = await waitFor(
      async () => {
        try {
          return await next.beforeWrite("rack-1", { hold });
        } catch (error) {
          if (error instanceof FencingError && error.reason === "held") return undefined;
          throw error;
        }
      },
      "the hold to pass",
      30_000,
    );
    granted.done();
  });

  it("each command runs at most once while it is retried across handovers and takeovers", async () => {
    const { f } = await oneBucket(["a", "b", "c"]);
    const executed = new Map<string, number>();
    const ids = Array.from({ length: 24 }, (_, i) => `cmd-${i}`);
    const disrupt = async (round: number) => {
      const holder = f.holders().get(0)?.[0];
      if (holder === undefined) return;
      if (round % 3 === 0) f.halt(holder);
      else if (round % 3 === 1) await f.stop(holder).then(() => f.add(holder));
    };
    for (const [i, id] of ids.entries()) {
      // A caller retrying the same command id on whichever replica it reaches, three times.
      for (let attempt = 0; attempt < 3; attempt++) {
        for (const { cluster } of [...f.replicas.values()]) {
          let grant: WriteGrant;
          try {
            grant = await cluster.beforeWrite("rack-1", { onceId: id });
            grant.assertMayStart();
          } catch {
            continue;
          }
          executed.set(id, (executed.get(id) ?? 0) + 1);
          grant.done();
        }
      }
      if (i % 4 === 3) {
        await disrupt(i / 4);
        await waitFor(() => f.holders().get(0) !== undefined, "a holder again", 15_000);
      }
    }
    for (const [id, count] of executed) assert.equal(count, 1, `${id} ran ${count} times`);
    assert.ok(executed.size >= ids.length / 2, `${executed.size} commands ran at all`);
  });
});

describe("leaving", () => {
  it("waits for writes in flight before it releases the bucket", async () => {
    const { f, store, holder } = await oneBucket(["a"]);
    const cluster = f.get(holder);
    const grant = await cluster.beforeWrite("rack-1");
    const stopping = f.stop(holder);
    await sleep(300);
    assert.equal(cluster.holds("rack-1"), false, "no new writes once stopping");
    assert.notEqual((await store.get("bucket-0", signal()))?.record?.holder, "", "not released yet");
    grant.done();
    await stopping;
    assert.equal(
      (await store.get("bucket-0", signal()))?.record?.holder,
      "",
      "released after the write ended",
    );
    assert.equal(await store.get(`member-${holder}`, signal()), null, "and the member lease deleted");
  });
});
