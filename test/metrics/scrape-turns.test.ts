/**
 * A scrape of a large fleet's exposition over the real health listener, read by a client as fast
 * as it is written: the bridge builds it one chunk per turn of the event loop, so that the polls
 * due during a scrape are not held up until the whole text is written.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/log.js";
import type { BridgeMetrics } from "../../src/metrics/bridge.js";
import { startMetricsFleet, type MetricsFleet } from "../../testkit/metrics-fleet.js";

const PDUS = 200;

describe("a scrape of 200 PDUs of 24 outlets", () => {
  let fleet: MetricsFleet;
  let metrics: BridgeMetrics;
  let url: string;

  before(async () => {
    fleet = await startMetricsFleet({ pdus: PDUS, outlets: 24, logger: silentLogger() });
    metrics = fleet.metrics;
    url = `http://127.0.0.1:${fleet.port}/metrics`;
  });
  after(() => fleet?.close());

  it("is written one chunk per turn of the event loop, and whole", async () => {
    // The turn each chunk was built in: a chain of setImmediate counts the loop's turns.
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const builtIn: number[] = [];
    const stream = metrics.stream.bind(metrics);
    metrics.stream = async (openMetrics) => {
      const { contentType, chunks } = await stream(openMetrics);
      function* noted(): Generator<string> {
        for (const chunk of chunks) {
          builtIn.push(turn);
          yield chunk;
        }
      }
      return { contentType, chunks: noted() };
    };
    try {
      const response = await fetch(url);
      const text = await response.text();
      assert.equal(response.status, 200);
      assert.equal(text.split("\n").filter((l) => l.startsWith("pdu_outlet_power_watts{")).length, PDUS * 24);
    } finally {
      ticking = false;
      metrics.stream = stream;
    }
    assert.ok(builtIn.length >= 20, `a scrape of several chunks (${builtIn.length})`);
    const sameTurn = builtIn.filter((t, i) => i > 0 && t === builtIn[i - 1]).length;
    assert.equal(sameTurn, 0, `chunks built in the turn of the one before: ${sameTurn} of ${builtIn.length}`);
  });
});
