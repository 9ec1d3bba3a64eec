/**
 * The rule of one lifetime counter (src/energy/counter.ts), reading by reading: rises counted,
 * a spike not counted however long it lasts (and noted once), a 32-bit wrap counted through, a
 * reset carried on from the last value, a lasting jump taken as the new base.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { apply, newCounter, plausibleWh, type Counter, type Outcome } from "../../src/energy/counter.js";

const W = 63 * 230; // what an outlet without a rating may draw
const T0 = 1_764_316_800_000;
const s = (n: number) => T0 + n * 1000;

/** Applies readings one a second (Wh), the outcomes in order. */
function feed(c: Counter, readings: readonly number[], wrapsAt = 0, start = 0): Outcome[] {
  return readings.map((wh, i) => apply(c, wh, s(start + i), W, wrapsAt));
}

describe("a lifetime counter", () => {
  it("counts rises from the PDU's counter, starting at its first reading", () => {
    const c = newCounter(1000);
    assert.deepEqual(feed(c, [1000, 1001, 1003, 1003, 1010]), ["first", "rise", "rise", "same", "rise"]);
    assert.equal(c.lifetimeWh, 1010);
  });

  it("does not count a spike 10^6 kWh above the last reading, however long it lasts, and notes it once", () => {
    const c = newCounter(5000);
    const outcomes = feed(c, [5000, 5001, 1e9 + 5001, 1e9 + 5001, 1e9 + 5001, 5004, 5006]);
    assert.deepEqual(outcomes, [
      "first",
      "rise",
      "rejected",
      "rejected-again",
      "rejected-again",
      "rise",
      "rise",
    ]);
    assert.equal(outcomes.filter((o) => o === "rejected").length, 1);
    // What was drawn while the spike was read is counted once the readings are back.
    assert.equal(c.lifetimeWh, 5006);
  });

  it("takes a lasting jump that goes on rising as the new base, without counting the jump", () => {
    const c = newCounter(100);
    const outcomes = feed(c, [100, 101, 900_000, 900_002, 900_004]);
    assert.deepEqual(outcomes, ["first", "rise", "rejected", "rebased", "rise"]);
    assert.equal(c.lifetimeWh, 101 + 2 + 2);
  });

  it("counts through a 32-bit wrap", () => {
    const wrap = 2 ** 32;
    const c = newCounter(wrap - 3);
    assert.deepEqual(feed(c, [wrap - 3, wrap - 1, 2, 5], wrap), ["first", "rise", "wrap", "rise"]);
    assert.equal(c.lifetimeWh, wrap - 3 + 2 + 3 + 3);
  });

  it("reads a drop of a counter that does not wrap as a reset and carries on from the last value", () => {
    const c = newCounter(7000);
    assert.deepEqual(feed(c, [7000, 7002, 0, 1, 3]), ["first", "rise", "reset", "rise", "rise"]);
    assert.equal(c.lifetimeWh, 7002 + 3);
    // The reading after a reset is the energy since it, counted when it could have been drawn.
    const d = newCounter(7000);
    assert.deepEqual(feed(d, [7000, 7002, 2]), ["first", "rise", "reset"]);
    assert.equal(d.lifetimeWh, 7004);
  });

  it("does not count a reading after a drop that is too large to be energy since a reset", () => {
    const c = newCounter(9_000_000);
    assert.deepEqual(feed(c, [9_000_000, 8_000_000, 8_000_001]), ["first", "reset-uncounted", "rise"]);
    assert.equal(c.lifetimeWh, 9_000_001);
  });

  it("never decreases, whatever the readings", () => {
    let seed = 12345;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const c = newCounter(0);
    let last = 0;
    for (let i = 0; i < 5000; i++) {
      const r = random();
      const reading = r < 0.1 ? random() * 1e12 : r < 0.2 ? 0 : Math.floor(random() * 2 ** 32);
      apply(c, reading, s(i), W, random() < 0.5 ? 2 ** 32 : 0);
      assert.ok(c.lifetimeWh >= last, `step ${i}: ${c.lifetimeWh} < ${last}`);
      last = c.lifetimeWh;
    }
  });

  it("bounds a rise by what the thing could draw since the reading before the base", () => {
    assert.ok(Math.abs(plausibleWh(1000, s(0), s(3600)) - (1000 * 1.1 + 1)) < 1e-9);
    // 63 A at 230 V for the 2 s since the reading before the base, with the margins: about 9.9 Wh.
    const bound = plausibleWh(W, s(0), s(2));
    assert.ok(bound > 9 && bound < 10, String(bound));
    const within = newCounter(0);
    feed(within, [0, 1]);
    assert.equal(apply(within, 10, s(2), W, 0), "rise");
    const beyond = newCounter(0);
    feed(beyond, [0, 1]);
    assert.equal(apply(beyond, 12, s(2), W, 0), "rejected");
    assert.equal(beyond.lifetimeWh, 1);
  });
});
