/**
 * A scrape of a large fleet's exposition over the real health listener, read by a client as fast
 * as it is written: the bridge builds it one chunk per turn of the event loop, so that the polls
 * due during a scrape are not held up until the whole text is written.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { parseConfigText } from "../../src/config/load.js";
import { buildHealthServer } from "../../src/http/health/server.js";
import { silentLogger } from "../../src/log.js";
import { BridgeMetrics } from "../../src/metrics/bridge.js";
import { metricsRoute } from "../../src/metrics/endpoint.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { startSimulator } from "../../src/simulator/index.js";
import { configYaml } from "../../testkit/config-yaml.js";

const PDUS = 200;

describe("a scrape of 200 PDUs of 24 outlets", () => {
  let app: Awaited<ReturnType<typeof buildHealthServer>>;
  let metrics: BridgeMetrics;
  let url: string;

  before(async () => {
    const logger = silentLogger();
    const sim = await startSimulator({ outlets: 24, requestLogLimit: 0 });
    const ids = Array.from({ length: PDUS }, (_, i) => `pdu-${i}`);
    const yaml = configYaml({
      Mqtt: { Connection: { Host: "127.0.0.1" } },
      Health: { Bind: "127.0.0.1", Port: 0 },
      Pdus: Object.fromEntries(
        ids.map((id) => [id, { Connection: { Host: "127.0.0.1", Port: sim.port, Scheme: "http" } }]),
      ),
    });
    const config = await parseConfigText(yaml, "scrape-turns.yaml", {});
    const client = new GeistClient(config.instances[0]!, { logger });
    const polled = await client.poll(new AbortController().signal);
    await client.close();
    await sim.close();
    const bus = new EventBus({ logger });
    const store = new SnapshotStore(ids, { bus });
    ids.forEach((id, i) => {
      const snapshot: Snapshot = {
        ...polled,
        instanceId: id,
        devices: polled.devices.map((d) => ({
          ...d,
          id: `${d.id.slice(0, 12)}${i.toString(16).padStart(4, "0")}`,
        })),
      };
      store.recordSuccess(id, snapshot);
    });
    metrics = new BridgeMetrics({ store, bus, skippedPolls: () => 0, mqtt: () => null });
    app = await buildHealthServer({
      config,
      store,
      bus,
      logger,
      startedAt: Date.now(),
      metrics,
      metricsRoute: metricsRoute(metrics),
      mqttStatus: () => ({
        connected: true,
        broker: "mqtt://127.0.0.1:1883",
        embedded: false,
        lastError: null,
        since: 0,
      }),
      homeAssistantStatus: () => ({
        enabled: false,
        discoveryTopic: "homeassistant",
        lastDiscoveryUtc: null,
      }),
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    assert.ok(address !== null && typeof address === "object");
    url = `http://127.0.0.1:${address.port}/metrics`;
  });
  after(() => app?.close());

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
