import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KeyedLock } from "../../src/control/lock.js";

/** A promise with its resolve function, to hold a task open until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe("KeyedLock", () => {
  it("runs tasks under one key one after another, in order, and others independently", async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const first = gate();
    const a = lock.run("k", async () => {
      events.push("a start");
      await first.promise;
      events.push("a end");
      return "a";
    });
    const b = lock.run("k", () => {
      events.push("b start");
      return Promise.resolve("b");
    });
    const other = lock.run("other", () => {
      events.push("other");
      return Promise.resolve("other");
    });
    assert.equal(await other, "other", "another key does not wait for k");
    assert.deepEqual(events, ["a start", "other"]);
    assert.equal(lock.size, 1, "only k has work in flight");
    first.open();
    assert.deepEqual(await Promise.all([a, b]), ["a", "b"]);
    assert.deepEqual(events, ["a start", "other", "a end", "b start"]);
    assert.equal(lock.size, 0, "idle keys are forgotten");
  });

  it("a failing task passes its error to its caller and does not block the next", async () => {
    const lock = new KeyedLock();
    const failing = lock.run("k", () => Promise.reject(new Error("boom")));
    const next = lock.run("k", () => Promise.resolve(42));
    await assert.rejects(failing, /boom/);
    assert.equal(await next, 42);
    assert.equal(lock.size, 0);
  });
});
