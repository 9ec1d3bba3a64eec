/**
 * The event bus on its own: listeners in registration order, removal (also during an emit), and a
 * listener that throws: logged once a minute at most, never stopping the others or the emitter.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventBus, LISTENER_FAILURE_LOG_MS, type PollFailedEvent } from "../src/bus.js";
import { LogCapture } from "../testkit/log-capture.js";

const failed = (instanceId: string): PollFailedEvent => ({
  kind: "failure",
  instanceId,
  error: "connection refused",
  wasOnline: true,
});

describe("EventBus", () => {
  it("calls an event's listeners in registration order, and only that event's", () => {
    const bus = new EventBus();
    const calls: string[] = [];
    bus.on("pollFailed", (e) => calls.push(`first ${e.instanceId}`));
    bus.on("pollDone", (e) => calls.push(`done ${e.instanceId}`));
    bus.on("pollFailed", (e) => calls.push(`second ${e.error}`));
    bus.emit("pollFailed", failed("rack"));
    assert.deepEqual(calls, ["first rack", "second connection refused"]);
    assert.equal(bus.listenerCount("pollFailed"), 2);
    assert.equal(bus.listenerCount("snapshot"), 0);
  });

  it("removes a listener with the function `on` returns, at once and for good", () => {
    const bus = new EventBus();
    const calls: string[] = [];
    const off = bus.on("pollSoon", (e) => calls.push(e.instanceId));
    bus.emit("pollSoon", { instanceId: "a", delayMs: 0 });
    off();
    off();
    bus.emit("pollSoon", { instanceId: "b", delayMs: 0 });
    assert.deepEqual(calls, ["a"]);
    assert.equal(bus.listenerCount("pollSoon"), 0);
  });

  it("a listener removed during an emit is not called; one added during it hears the next event", () => {
    const bus = new EventBus();
    const calls: string[] = [];
    let offSecond = (): void => undefined;
    bus.on("pollDone", (e) => {
      calls.push(`first ${e.instanceId}`);
      offSecond();
      bus.on("pollDone", (later) => calls.push(`added ${later.instanceId}`));
    });
    offSecond = bus.on("pollDone", (e) => calls.push(`second ${e.instanceId}`));
    bus.emit("pollDone", { instanceId: "a", ms: 1 });
    assert.deepEqual(calls, ["first a"]);
    calls.length = 0;
    bus.emit("pollDone", { instanceId: "b", ms: 1 });
    assert.deepEqual(calls, ["first b", "added b"]);
  });

  it("listen registers an owner's listeners, and release removes every one of them and no other", () => {
    const bus = new EventBus();
    const calls: string[] = [];
    const part = { name: "part" };
    const other = { name: "other" };
    bus.listen(part, {
      pollFailed: (e) => calls.push(`failed ${e.instanceId}`),
      pollDone: (e) => calls.push(`done ${e.instanceId}`),
    });
    bus.listen(part, { pollSoon: (e) => calls.push(`soon ${e.instanceId}`) });
    bus.listen(other, { pollDone: (e) => calls.push(`other ${e.instanceId}`) });
    bus.emit("pollDone", { instanceId: "a", ms: 1 });
    bus.emit("pollFailed", failed("a"));
    bus.emit("pollSoon", { instanceId: "a", delayMs: 0 });
    bus.release(part);
    bus.release(part);
    bus.emit("pollDone", { instanceId: "b", ms: 1 });
    bus.emit("pollFailed", failed("b"));
    bus.emit("pollSoon", { instanceId: "b", delayMs: 0 });
    assert.deepEqual(calls, ["done a", "other a", "failed a", "soon a", "other b"]);
    assert.equal(bus.listenerCount("pollFailed"), 0);
    assert.equal(bus.listenerCount("pollSoon"), 0);
    assert.equal(bus.listenerCount("pollDone"), 1);
  });

  it("an owner released during an emit hears nothing more of it", () => {
    const bus = new EventBus();
    const calls: string[] = [];
    const first = {};
    const second = {};
    bus.listen(first, {
      pollDone: (e) => {
        calls.push(`first ${e.instanceId}`);
        bus.release(second);
      },
    });
    bus.listen(second, { pollDone: (e) => calls.push(`second ${e.instanceId}`) });
    bus.emit("pollDone", { instanceId: "a", ms: 1 });
    assert.deepEqual(calls, ["first a"]);
  });

  it("a listener that throws is logged (once a minute at most) and stops neither the others nor the emitter", () => {
    const capture = new LogCapture();
    let now = 1_000_000;
    const bus = new EventBus({ logger: capture.logger, now: () => now });
    const heard: string[] = [];
    bus.on("pollFailed", (e) => heard.push(`before ${e.instanceId}`));
    bus.on("pollFailed", () => {
      throw new Error("listener broke");
    });
    bus.on("pollFailed", (e) => heard.push(`after ${e.instanceId}`));
    for (const id of ["a", "b", "c"]) assert.doesNotThrow(() => bus.emit("pollFailed", failed(id)));
    assert.deepEqual(heard, ["before a", "after a", "before b", "after b", "before c", "after c"]);
    const lines = () => capture.lines.filter((l) => l.event === "pollFailed");
    assert.equal(lines().length, 1, "one line for the three failures within the minute");
    assert.equal(lines()[0]!.level, "error");
    assert.equal(lines()[0]!.failures, 1);
    assert.match(JSON.stringify(lines()[0]!.err), /listener broke/);
    now += LISTENER_FAILURE_LOG_MS;
    bus.emit("pollFailed", failed("d"));
    assert.equal(lines().length, 2);
    assert.equal(lines()[1]!.failures, 3, "the next line counts the failures since the last");
  });
});
