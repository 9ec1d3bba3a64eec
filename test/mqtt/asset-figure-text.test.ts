/**
 * An asset's figure payload (src/mqtt/assets.ts `figureText`): the text `String` writes for the
 * rounded figure, whatever its size, decimals or trailing zeros.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { figureText } from "../../src/mqtt/assets.js";

const rounded = (value: number, digits: number): number => Math.round(value * 10 ** digits) / 10 ** digits;

describe("asset figure payloads", () => {
  it("are String's text of every rounded figure (W to 2 decimals, kWh to 3)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ min: 0, max: 2e9, noNaN: true }),
          fc.integer({ min: 0, max: 5_000_000 }).map((n) => n / 1000),
          fc.integer({ min: 0, max: 100_000 }).map((n) => n / 100),
        ),
        fc.constantFrom(2, 3),
        (value, digits) => {
          const figure = rounded(value, digits);
          assert.equal(figureText(figure, digits), String(figure));
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it("are String's text of figures not rounded as the payload says, and empty when not known", () => {
    for (const value of [0, 1, 0.5, 0.001, 0.1 + 0.2, 123.4567, 999_999_999.999, 1e9 + 0.5, 1e-7, -1.25])
      assert.equal(figureText(value, 3), String(value));
    assert.equal(figureText(812.3, 3), "812.3");
    assert.equal(figureText(0.01, 2), "0.01");
    assert.equal(figureText(100.05, 2), "100.05");
    assert.equal(figureText(NaN, 2), "");
  });
});
