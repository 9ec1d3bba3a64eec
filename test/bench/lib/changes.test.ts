/**
 * The bench's fleet is realistic (bench/lib/changes.ts): a simulated 24-outlet PDU answers 21–27 kB
 * and changes 55–75 % of its values between polls 10 s and 30 s apart (the fleet's and the scale
 * curve's largest size's intervals); the rows that judge it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  REALISTIC_ANSWER_KB,
  REALISTIC_CHANGING_PERCENT,
  changedShare,
  fleetShapeRows,
  measurementValues,
  type ChangingShare,
} from "../../../bench/lib/changes.js";
import { startSimulator } from "../../../src/simulator/index.js";

describe("bench fleet shape", () => {
  it("simulated 24-outlet PDUs answer 21–27 kB and change 55–75 % of their values per 10 s and 30 s poll", async () => {
    let now = 1_700_000_000_000;
    const clock = () => now;
    const sims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => startSimulator({ outlets: 24, seed: i * 125, clock })),
    );
    try {
      const read = () =>
        Promise.all(
          sims.map(async (s) => {
            const body = Buffer.from(await (await fetch(`${s.url}/api`)).arrayBuffer());
            return { bytes: body.length, values: measurementValues(JSON.parse(body.toString("utf8"))) };
          }),
        );
      for (const intervalS of [10, 30]) {
        let values = 0;
        let changed = 0;
        // Several pairs of polls over a few minutes of the waveforms.
        for (let k = 0; k < 6; k++) {
          now += 37_000;
          const before = await read();
          now += intervalS * 1000;
          const after = await read();
          before.forEach((b, i) => {
            assert.ok(
              b.bytes >= REALISTIC_ANSWER_KB.min * 1000 && b.bytes <= REALISTIC_ANSWER_KB.max * 1000,
              `an answer of ${b.bytes} bytes`,
            );
            values += b.values.size;
            changed += changedShare(b.values, after[i]!.values) * b.values.size;
          });
        }
        const percent = (100 * changed) / values;
        assert.ok(
          percent >= REALISTIC_CHANGING_PERCENT.min && percent <= REALISTIC_CHANGING_PERCENT.max,
          `${percent.toFixed(1)} % of values changing per ${intervalS} s poll`,
        );
      }
    } finally {
      await Promise.all(sims.map((s) => s.close()));
    }
  });

  it("judges the answer size and the share of changing values", () => {
    const shape = (share: number, min: number, max: number): ChangingShare => ({
      share,
      values: 3020,
      pdus: 20,
      answerBytes: { min, max, mean: (min + max) / 2 },
    });
    const passes = (c: ChangingShare, judgeShare = true) =>
      fleetShapeRows("fleet", c, { judgeShare }).map((r) => r.pass);
    assert.deepEqual(passes(shape(0.58, 26_690, 26_710)), [true, true]);
    assert.deepEqual(passes(shape(0.58, 26_690, 27_100)), [false, true], "one answer over 27 kB");
    assert.deepEqual(passes(shape(0.58, 20_900, 21_500)), [false, true]);
    assert.deepEqual(passes(shape(0.52, 26_690, 26_710)), [true, false], "too few values change");
    assert.deepEqual(passes(shape(0.8, 26_690, 26_710)), [true, false], "too many");
    assert.deepEqual(passes(shape(0.52, 26_690, 26_710), false), [true, null], "quick runs: information");
    const [size, share] = fleetShapeRows("scale", shape(0.58, 26_690, 26_710), {
      judgeShare: true,
      prefix: "4000 PDUs @30 s: ",
    });
    assert.equal(size!.metric, "4000 PDUs @30 s: answer of one GET /api (24-outlet PDU)");
    assert.equal(size!.measured, 26.7);
    assert.equal(share!.measured, 58);
  });
});
