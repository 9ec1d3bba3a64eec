import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { restamp, type Snapshot } from "../../src/pdu/model.js";
import { LATCH_MS, SnapshotStore, type StoreEvent } from "../../src/poller/store.js";
import { snapshotWith } from "../../testkit/snapshot-builders.js";

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** A store on its own bus, and the store's events (`snapshot` and `pollFailed`) as they come. */
function storeOf(ids: string[], now?: () => number): { store: SnapshotStore; events: StoreEvent[] } {
  const bus = new EventBus();
  const events: StoreEvent[] = [];
  bus.listen(events, { snapshot: (e) => events.push(e), pollFailed: (e) => events.push(e) });
  return { store: new SnapshotStore(ids, { bus, ...(now === undefined ? {} : { now }) }), events };
}

const outletState = (s: Snapshot | null, index: number) => s?.devices[0]?.outlets[index]?.state;

describe("SnapshotStore", () => {
  it("keeps the last snapshot on failure and counts failures", () => {
    const c = clock();
    const { store, events } = storeOf(["a", "b"], c.now);
    const first = snapshotWith("a", c.now(), ["on", "off"]);
    store.recordSuccess("a", first);
    c.advance(5000);
    store.recordFailure("a", new Error("connection refused"));
    store.recordFailure("a", new Error("connection refused"));
    const status = store.get("a")!;
    assert.equal(status.snapshot, first, "the good snapshot stays");
    assert.equal(status.lastError, "connection refused");
    assert.equal(status.consecutiveFailures, 2);
    assert.equal(status.lastSuccessUtc, first.timestamp);
    assert.equal(status.lastPollUtc, c.now());
    assert.deepEqual(
      events.map((e) => (e.kind === "failure" ? `failure:${e.wasOnline}` : "snapshot")),
      ["snapshot", "failure:true", "failure:false"],
    );
    assert.equal(store.get("b")!.snapshot, null, "other instances untouched");
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "off"]));
    assert.equal(store.get("a")!.consecutiveFailures, 0);
    assert.equal(store.get("a")!.lastError, null);
    store.close();
  });

  it("lists instances in configuration order", () => {
    const { store } = storeOf(["z", "1", "a"]);
    assert.deepEqual(
      store.list().map((s) => s.id),
      ["z", "1", "a"],
    );
  });

  it("reports a latched state until a poll agrees", () => {
    const c = clock();
    const { store } = storeOf(["a"], c.now);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "off"]));
    store.latch("a", "DEV0", 1, "on");
    assert.equal(outletState(store.get("a")!.snapshot, 1), "on", "commanded state shows at once");
    // The PDU still reports the old state: the latch holds.
    c.advance(5000);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "off"]));
    assert.equal(outletState(store.get("a")!.snapshot, 1), "on");
    // The PDU agrees: the latch is dropped, so a later real "off" shows again.
    c.advance(5000);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "on"]));
    c.advance(5000);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "off"]));
    assert.equal(outletState(store.get("a")!.snapshot, 1), "off");
    store.close();
  });

  it("drops a latch after LATCH_MS even if the PDU never agrees", () => {
    const c = clock();
    const { store } = storeOf(["a"], c.now);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on"]));
    store.latch("a", "DEV0", 0, "off");
    c.advance(LATCH_MS - 1);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on"]));
    assert.equal(outletState(store.get("a")!.snapshot, 0), "off");
    c.advance(2);
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on"]));
    assert.equal(outletState(store.get("a")!.snapshot, 0), "on");
    store.close();
  });

  it("emits a non-poll snapshot event when a latch changes the view", () => {
    const { store, events } = storeOf(["a"]);
    store.recordSuccess("a", snapshotWith("a", Date.now(), ["off"]));
    events.length = 0;
    store.latch("a", "DEV0", 0, "on");
    assert.equal(events.length, 1);
    const event = events[0]!;
    assert.equal(event.kind, "snapshot");
    assert.equal(event.kind === "snapshot" && event.fromPoll, false);
    assert.equal(event.kind === "snapshot" && outletState(event.snapshot, 0), "on");
    store.unlatch("a", "DEV0", 0);
    assert.equal(outletState(store.get("a")!.snapshot, 0), "off");
    store.close();
  });

  it("marks a poll unchanged only when its content is the previous poll event's", () => {
    const c = clock();
    const { store, events } = storeOf(["a"], c.now);
    const unchangedFlags = () => events.map((e) => (e.kind === "snapshot" ? e.unchanged : "failure"));
    const first = snapshotWith("a", c.now(), ["on", "off"]);
    store.recordSuccess("a", first);
    c.advance(10_000);
    const again = restamp(first, c.now());
    store.recordSuccess("a", again);
    // The store holds the restamped snapshot: times move on although nothing else did.
    assert.equal(store.get("a")!.snapshot, again);
    assert.equal(store.get("a")!.lastSuccessUtc, c.now());
    // The same data built anew is not "unchanged" (only costs the skipped work).
    store.recordSuccess("a", snapshotWith("a", c.now(), ["on", "off"]));
    assert.deepEqual(unchangedFlags(), [false, true, false]);

    // A failure in between does not change the content: the next identical poll is unchanged.
    events.length = 0;
    const current = store.polled("a")!;
    store.recordFailure("a", new Error("timeout"));
    store.recordSuccess("a", restamp(current, c.now()));
    // A latch changes what listeners saw: the poll after it is not unchanged, nor while it holds.
    store.latch("a", "DEV0", 1, "on");
    store.recordSuccess("a", restamp(current, c.now()));
    store.unlatch("a");
    store.recordSuccess("a", restamp(current, c.now()));
    store.recordSuccess("a", restamp(current, c.now()));
    assert.deepEqual(unchangedFlags(), ["failure", true, false, false, false, false, true]);

    // A view (the overrides) builds its own parts: never unchanged, never wrong.
    events.length = 0;
    store.setView("a", (s) => Object.freeze({ ...s, devices: Object.freeze([...s.devices]) }));
    store.recordSuccess("a", restamp(current, c.now()));
    store.recordSuccess("a", restamp(current, c.now()));
    assert.deepEqual(unchangedFlags(), [false, false, false]);
    store.close();
  });
});
