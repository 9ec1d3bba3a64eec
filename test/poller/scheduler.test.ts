import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import {
  FIRST_POLL_SPREAD_MS,
  FIRST_POLLS_PER_S,
  firstPollOffset,
  Poller,
  steadyPhase,
  type PollTarget,
} from "../../src/poller/scheduler.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { snapshotWith } from "../../testkit/snapshot-builders.js";

interface Probe extends PollTarget {
  starts: number[];
  maxConcurrent: number;
}

function probe(id: string, intervalMs: number, workMs: number | (() => Promise<void>)): Probe {
  let running = 0;
  const p: Probe = {
    id,
    intervalMs,
    starts: [],
    maxConcurrent: 0,
    async poll(signal) {
      p.starts.push(Date.now());
      running++;
      p.maxConcurrent = Math.max(p.maxConcurrent, running);
      try {
        if (typeof workMs === "number") await sleep(workMs, undefined, { signal });
        else await workMs();
        return snapshotWith(id, Date.now(), ["on"]);
      } finally {
        running--;
      }
    },
  };
  return p;
}

describe("Poller", () => {
  it("never runs two polls of one instance at once and skips turns instead", async () => {
    const slow = probe("slow", 50, 180);
    const bus = new EventBus();
    const store = new SnapshotStore(["slow"], { bus });
    const poller = new Poller([slow], store, { logger: silentLogger(), bus });
    poller.start();
    await sleep(600);
    await poller.stop();
    assert.equal(slow.maxConcurrent, 1);
    assert.ok(poller.skippedPolls("slow") > 0, "turns that came while polling were skipped");
    assert.ok(slow.starts.length >= 2 && slow.starts.length <= 4, `polled ${slow.starts.length} times`);
  });

  it("spreads first polls over the interval", async () => {
    const targets = ["a", "b", "c", "d"].map((id) => probe(id, 400, 0));
    const bus = new EventBus();
    const store = new SnapshotStore(
      targets.map((t) => t.id),
      { bus },
    );
    const poller = new Poller(targets, store, { logger: silentLogger(), bus });
    const t0 = Date.now();
    poller.start();
    await sleep(380);
    await poller.stop();
    const firsts = targets.map((t) => t.starts[0]! - t0);
    assert.ok(firsts[0]! < 50, "first instance at once");
    assert.ok(firsts[3]! >= 250, `last instance later in the interval (${firsts[3]} ms)`);
    assert.deepEqual(
      [...firsts].sort((x, y) => x - y),
      firsts,
      "in order",
    );
  });

  it("spreads the first polls of a large fleet over up to its interval, 100 a second if it can", () => {
    const last = (count: number, intervalMs: number) => firstPollOffset(count - 1, count, intervalMs);
    // Small fleets: over the interval, but within 10 s.
    assert.equal(last(4, 400), 300);
    assert.equal(last(1000, 10_000), 9990);
    assert.equal(last(1000, 60_000), 9990, "a long interval still starts everything within 10 s");
    // Large ones: no more first polls a second than the cap, as far as the interval allows.
    assert.equal(last(4000, 30_000), 29_992);
    assert.equal(last(4000, 120_000), 39_990);
    assert.equal(last(2000, 10_000), 9995, "never later than one interval");
    for (const [count, intervalMs] of [
      [4000, 30_000],
      [8000, 300_000],
      [1500, 60_000],
    ] as const) {
      const window = firstPollOffset(count, count, intervalMs);
      assert.ok(window >= FIRST_POLL_SPREAD_MS);
      // The cap, or the fleet's own poll rate when that is higher (never later than one interval).
      const rate = Math.max(FIRST_POLLS_PER_S, count / (intervalMs / 1000));
      assert.ok(count / (window / 1000) <= rate + 1e-9, `${count} @${intervalMs}: ${window} ms`);
    }
  });

  it("from the second poll on, polls the fleet evenly over the whole interval, whatever the first polls' spread", async () => {
    // First polls within 100 ms (the spread), then every 400 ms at phases 0, 100, 200 and 300.
    const intervalMs = 400;
    const targets = ["a", "b", "c", "d"].map((id) => probe(id, intervalMs, 0));
    const bus = new EventBus();
    const store = new SnapshotStore(
      targets.map((t) => t.id),
      { bus },
    );
    const poller = new Poller(targets, store, { logger: silentLogger(), bus, firstPollSpreadMs: 100 });
    const t0 = Date.now();
    poller.start();
    await sleep(1500);
    await poller.stop();
    targets.forEach((t, i) => {
      const [first, second, ...rest] = t.starts.map((at) => at - t0);
      assert.ok(first! <= 25 * i + 40, `${t.id} first polled within the spread (${first} ms)`);
      const gap = second! - first!;
      assert.ok(
        gap >= intervalMs / 2 - 5 && gap <= 1.5 * intervalMs + 40,
        `${t.id}: second poll ${gap} ms after the first`,
      );
      assert.ok(rest.length >= 1, `${t.id} polled ${t.starts.length} times`);
      for (const at of [second!, ...rest]) {
        const phase = at % intervalMs;
        const want = steadyPhase(i, targets.length, intervalMs);
        const off = Math.min(Math.abs(phase - want), intervalMs - Math.abs(phase - want));
        assert.ok(off <= 40, `${t.id} polled at phase ${phase} ms, wants ${want} ms`);
      }
    });
  });

  it("a failing instance does not delay a healthy one; failures are recorded", async () => {
    const healthy = probe("ok", 100, 0);
    const broken: PollTarget = {
      id: "bad",
      intervalMs: 100,
      poll: () => Promise.reject(new Error("connection refused")),
    };
    const bus = new EventBus();
    const store = new SnapshotStore(["ok", "bad"], { bus });
    const poller = new Poller([healthy, broken], store, { logger: silentLogger(), bus });
    poller.start();
    await sleep(1050);
    await poller.stop();
    assert.ok(healthy.starts.length >= 8, `healthy polled ${healthy.starts.length} times`);
    const bad = store.get("bad")!;
    assert.ok(bad.consecutiveFailures >= 8);
    assert.equal(bad.lastError, "connection refused");
    assert.equal(bad.snapshot, null);
    assert.ok(store.get("ok")!.snapshot);
  });

  it("pollSoon brings the next poll forward; setInterval changes the cadence", async () => {
    const p = probe("x", 10_000, 0);
    const bus = new EventBus();
    const store = new SnapshotStore(["x"], { bus });
    const poller = new Poller([p], store, { logger: silentLogger(), bus });
    poller.start();
    await sleep(50);
    assert.equal(p.starts.length, 1);
    poller.pollSoon("x");
    await sleep(50);
    assert.equal(p.starts.length, 2, "polled again at once");
    poller.setInterval("x", 100);
    await sleep(450);
    await poller.stop();
    assert.ok(p.starts.length >= 5, `new cadence applied (${String(p.starts.length)} polls)`);
  });

  it("stop aborts an in-flight poll without recording a failure", async () => {
    const hanging = probe("h", 1000, 60_000);
    const bus = new EventBus();
    const store = new SnapshotStore(["h"], { bus });
    const poller = new Poller([hanging], store, { logger: silentLogger(), bus });
    poller.start();
    await sleep(30);
    await poller.stop();
    assert.equal(store.get("h")!.consecutiveFailures, 0);
    assert.equal(store.get("h")!.lastPollUtc, null);
  });
});
