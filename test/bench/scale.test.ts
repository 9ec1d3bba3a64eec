import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { measurementValues, changedShare } from "../../bench/lib/changes.js";
import {
  cpuGrowth,
  describeGrowth,
  parseSizes,
  scaleLinearity,
  scaleWindowSeconds,
  WINDOW_POLLS,
} from "../../bench/scale.js";
import { startSimulator } from "../../src/simulator/index.js";

describe("bench scale scenario", () => {
  it("parses --sizes with optional intervals, sorted; refuses junk", () => {
    assert.deepEqual(parseSizes("500, 250,4000@30", 10), [
      { pdus: 250, intervalS: 10 },
      { pdus: 500, intervalS: 10 },
      { pdus: 4000, intervalS: 30 },
    ]);
    for (const bad of ["", "abc", "0", "250@0", "1e3", "-5", "250@"])
      assert.throws(() => parseSizes(bad, 10), /size|no sizes/, bad);
  });

  it("each size's window holds the same number of polls at least (30 s and two intervals at least)", () => {
    const windows = parseSizes("250,500,1000,2000,4000@30", 10).map((size) => ({
      ...size,
      seconds: scaleWindowSeconds(size),
    }));
    assert.deepEqual(
      windows.map((w) => w.seconds),
      [120, 60, 30, 30, 60],
    );
    for (const w of windows) assert.ok((w.pdus * w.seconds) / w.intervalS >= WINDOW_POLLS, `${w.pdus}`);
    assert.equal(scaleWindowSeconds({ pdus: 10, intervalS: 2 }, true), 6, "quick runs stay short");
  });

  it("CPU linearity is judged against the poll rate, so 4000 @30 s sits with 1333 @10 s", () => {
    // The same 2 ms per poll everywhere, RSS 100 MB + 0.2 MB per PDU: linear in both.
    const points = [250, 500, 1000, 2000].map((pdus) => ({
      pdus,
      intervalS: 10,
      cpuMsPerPoll: 2,
      rssMb: 100 + 0.2 * pdus,
    }));
    points.push({ pdus: 4000, intervalS: 30, cpuMsPerPoll: 2, rssMb: 900 });
    const l = scaleLinearity(points);
    assert.equal(l.cpu.linear, true);
    assert.ok(Math.abs(l.cpu.meanSlope! - 0.2) < 1e-9, "2 ms per poll = 0.2 ms/s per PDU polled every 10 s");
    assert.equal(l.rss.linear, true);
    // a bridge that costs twice as much per poll at 2000 PDUs is flagged
    const worse = points.map((p) => (p.pdus === 2000 ? { ...p, cpuMsPerPoll: 4 } : p));
    assert.equal(scaleLinearity(worse).cpu.linear, false);
  });

  it("CPU growth is the bridge's CPU per poll over the floor's in the same window, by size", () => {
    const at = (pdus: number, intervalS: number, bridgeMs: number, floorMs: number) => ({
      pdus,
      intervalS,
      bridgeMs,
      floorMs,
    });
    // The machine slows both by a third at 1000 PDUs: the multiple stays, so the growth is linear;
    // a falling multiple (fixed costs spread over more polls) is linear too.
    const steady = [
      at(250, 10, 1.2, 1.0),
      at(1000, 10, 1.5, 1.4),
      at(500, 10, 0.9, 0.9),
      at(4000, 30, 0.8, 1),
    ];
    const g = cpuGrowth(steady);
    assert.deepEqual(
      g.multiples.map((m) => m.pdus),
      [250, 500, 1000, 4000],
      "ordered by PDUs",
    );
    assert.equal(g.linear, true, describeGrowth(g).join("\n"));
    assert.equal(g.steps.length, 4, "three steps between sizes and smallest → largest");
    // 30 % dearer per poll, relative to the floor, at 4000 PDUs than at 1000: faster than linear
    const worse = cpuGrowth([...steady.slice(0, 3), at(4000, 30, 1.4, 1)]);
    assert.equal(worse.linear, false);
    assert.match(
      describeGrowth(worse).join("\n"),
      /1000→4000: ×1\.07 → ×1\.40 \(\+31 %\) {2}FASTER THAN LINEAR/,
    );
    // a slow creep under the step tolerance still shows from the smallest to the largest size
    const creep = cpuGrowth([at(250, 10, 1, 1), at(500, 10, 1.2, 1), at(1000, 10, 1.44, 1)]);
    assert.deepEqual(
      creep.steps.map((s) => s.change > 0.25),
      [false, false, true],
    );
    assert.equal(creep.linear, false);
    assert.equal(cpuGrowth([at(250, 10, 1, 1)]).linear, false, "one size says nothing");
    assert.equal(cpuGrowth([at(250, 10, 1, null as unknown as number), at(500, 10, 1, 1)]).linear, false);
  });

  it("the share of changing values: a living simulator changes, a frozen one does not", async () => {
    let now = 1_700_000_000_000;
    const clock = () => now;
    const sims = await Promise.all([
      startSimulator({ outlets: 24, seed: 3, clock }),
      startSimulator({ outlets: 24, seed: 3, clock, frozen: true }),
    ]);
    try {
      const read = () =>
        Promise.all(sims.map(async (s) => measurementValues(await (await fetch(`${s.url}/api`)).json())));
      const before = await read();
      now += 10_000;
      const after = await read();
      assert.ok(before[0]!.size > 24 * 4, "every outlet and entity measurement is read");
      const living = changedShare(before[0]!, after[0]!);
      assert.ok(living > 0.2 && living < 1, `a living PDU changes part of its values (${living})`);
      assert.equal(changedShare(before[1]!, after[1]!), 0);
    } finally {
      await Promise.all(sims.map((s) => s.close()));
    }
  });
});
