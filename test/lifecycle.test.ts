/**
 * The parts' lifecycle on its own: started in order, stopped in reverse; a failed start stops what
 * started and passes the error on; a part whose stop fails does not keep the others running; a stop
 * during the start waits for the part starting and leaves the rest unstarted; a part's bus listeners
 * are released when it stops (before its stop runs) or fails to start, so a stopped part hears no event.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventBus } from "../src/bus.js";
import { Lifecycle, type Part } from "../src/lifecycle.js";
import { LogCapture } from "../testkit/log-capture.js";

function recorder() {
  const calls: string[] = [];
  const part = (
    name: string,
    o: { failStart?: boolean; failStop?: boolean; startGate?: Promise<void> } = {},
  ): Part => ({
    name,
    async start() {
      calls.push(`start ${name}`);
      await o.startGate;
      if (o.failStart === true) throw new Error(`${name} cannot start`);
    },
    stop() {
      calls.push(`stop ${name}`);
      if (o.failStop === true) throw new Error(`${name} cannot stop`);
    },
  });
  return { calls, part };
}

describe("Lifecycle", () => {
  it("starts the parts in order and stops them in reverse, once", async () => {
    const { calls, part } = recorder();
    const lifecycle = new Lifecycle([part("a"), part("b"), part("c")], new LogCapture().logger);
    assert.deepEqual(lifecycle.names, ["a", "b", "c"]);
    await lifecycle.start();
    await Promise.all([lifecycle.stop(), lifecycle.stop()]);
    await lifecycle.stop();
    assert.deepEqual(calls, ["start a", "start b", "start c", "stop c", "stop b", "stop a"]);
  });

  it("a failed start stops the parts started before it, in reverse, and rethrows", async () => {
    const { calls, part } = recorder();
    const lifecycle = new Lifecycle(
      [part("a"), part("b"), part("c", { failStart: true }), part("d")],
      new LogCapture().logger,
    );
    await assert.rejects(lifecycle.start(), /c cannot start/);
    assert.deepEqual(calls, ["start a", "start b", "start c", "stop b", "stop a"]);
  });

  it("a part whose stop throws is logged, and the parts before it are stopped all the same", async () => {
    const { calls, part } = recorder();
    const capture = new LogCapture();
    const lifecycle = new Lifecycle([part("a"), part("b", { failStop: true }), part("c")], capture.logger);
    await lifecycle.start();
    await lifecycle.stop();
    assert.deepEqual(calls.slice(3), ["stop c", "stop b", "stop a"]);
    const line = capture.lines.find((l) => l.msg === "error while stopping");
    assert.equal(line?.part, "b");
  });

  it("a stop during the start waits for the part starting, stops what started and starts nothing more", async () => {
    const { calls, part } = recorder();
    let open = (): void => undefined;
    const startGate = new Promise<void>((resolve) => (open = resolve));
    const lifecycle = new Lifecycle(
      [part("a"), part("b", { startGate }), part("c")],
      new LogCapture().logger,
    );
    const starting = lifecycle.start();
    await new Promise((resolve) => setImmediate(resolve));
    const stopping = lifecycle.stop();
    open();
    await Promise.all([starting, stopping]);
    assert.deepEqual(calls, ["start a", "start b", "stop b", "stop a"]);
  });

  it("releases a part's bus listeners before its stop runs: a stopped part hears no event", async () => {
    const bus = new EventBus();
    const heard: string[] = [];
    /** A part that listens from its start and never removes a listener itself. */
    const listening = (name: string, stop: () => void = () => undefined): Part => ({
      name,
      start() {
        bus.listen(this, {
          pollSoon: (e) => heard.push(`${name} ${e.instanceId}`),
          pollDone: (e) => heard.push(`${name} done ${e.instanceId}`),
        });
      },
      stop,
    });
    const a = listening("a");
    // b's stop emits: b itself is released already, a (stopped after it) still hears.
    const b = listening("b", () => bus.emit("pollSoon", { instanceId: "during b's stop", delayMs: 0 }));
    const lifecycle = new Lifecycle([a, b], new LogCapture().logger, bus);
    await lifecycle.start();
    bus.emit("pollSoon", { instanceId: "running", delayMs: 0 });
    await lifecycle.stop();
    bus.emit("pollSoon", { instanceId: "stopped", delayMs: 0 });
    bus.emit("pollDone", { instanceId: "stopped", ms: 1 });
    assert.deepEqual(heard, ["a running", "b running", "a during b's stop"]);
    assert.equal(bus.listenerCount("pollSoon"), 0);
    assert.equal(bus.listenerCount("pollDone"), 0);
  });

  it("releases the listeners of a part whose start failed", async () => {
    const bus = new EventBus();
    const heard: string[] = [];
    const failing: Part = {
      name: "failing",
      start() {
        bus.listen(this, { pollSoon: (e) => heard.push(e.instanceId) });
        throw new Error("failing cannot start");
      },
      stop() {
        heard.push("stopped, though it never started");
      },
    };
    const lifecycle = new Lifecycle([failing], new LogCapture().logger, bus);
    await assert.rejects(lifecycle.start(), /failing cannot start/);
    bus.emit("pollSoon", { instanceId: "after the failed start", delayMs: 0 });
    assert.deepEqual(heard, []);
    assert.equal(bus.listenerCount("pollSoon"), 0);
  });
});
