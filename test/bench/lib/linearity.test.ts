import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeLinearity, linearity } from "../../../bench/lib/linearity.js";
import { sawtooth, standardError } from "../../../bench/lib/stats.js";

describe("bench linearity", () => {
  it("a straight line with a fixed cost is linear, every step at the same slope", () => {
    const l = linearity([
      { x: 1000, y: 150 },
      { x: 250, y: 75 },
      { x: 500, y: 100 },
      { x: 2000, y: 250 },
    ]);
    assert.equal(l.linear, true);
    assert.ok(Math.abs(l.meanSlope! - 0.1) < 1e-12);
    assert.deepEqual(
      l.segments.map((s) => [s.from, s.to]),
      [
        [250, 500],
        [500, 1000],
        [1000, 2000],
      ],
    );
    for (const s of l.segments) assert.ok(Math.abs(s.departure!) < 1e-9);
  });

  it("flags the step whose marginal cost departs more than the tolerance", () => {
    // 0.1 per unit, then 0.3 per unit from 1000 to 2000 (super-linear)
    const l = linearity([
      { x: 250, y: 25 },
      { x: 500, y: 50 },
      { x: 1000, y: 100 },
      { x: 2000, y: 400 },
    ]);
    assert.equal(l.linear, false);
    assert.deepEqual(
      l.segments.map((s) => s.linear),
      [false, false, false],
      "mean 0.1667: 0.1 is 40 % under it, 0.3 80 % over",
    );
    const gentle = linearity(
      [
        { x: 1, y: 1 },
        { x: 2, y: 2 },
        { x: 3, y: 3.2 },
      ],
      0.25,
    );
    assert.deepEqual(
      gentle.segments.map((s) => s.linear),
      [true, true],
    );
    const lines = describeLinearity(l, "MB/PDU");
    assert.equal(lines.length, 3);
    assert.match(lines[2]!, /^1000→2000: 0\.300 MB\/PDU \(\+80 % from the mean\)\s+NOT LINEAR$/);
  });

  it("fewer than two sizes cannot show linearity", () => {
    assert.equal(linearity([{ x: 1, y: 1 }]).linear, false);
    assert.equal(linearity([]).meanSlope, null);
  });

  it("sawtooth: the rise above the floor (5th percentile) relative to it", () => {
    const flat = Array.from({ length: 100 }, () => 100);
    assert.equal(sawtooth(flat), 0);
    const saw = Array.from({ length: 100 }, (_, i) => 100 + (i % 10) * 5); // 100 … 145, repeated
    assert.ok(Math.abs(sawtooth(saw)! - 0.45) < 1e-9);
    assert.equal(sawtooth([]), null);
  });

  it("standardError: the sample standard deviation over the square root of n", () => {
    // 1..4: mean 2.5, sample variance 5/3, so sqrt(5/3) / 2.
    assert.ok(Math.abs(standardError([1, 2, 3, 4])! - Math.sqrt(5 / 3) / 2) < 1e-12);
    assert.equal(standardError([7, 7, 7]), 0);
    assert.equal(standardError([1]), null);
    assert.equal(standardError([]), null);
  });
});
