/**
 * QoS 1 flow, whoever publishes: against a broker on a real socket that holds its PUBACKs, the
 * connection never has more than its window of QoS 1 messages unacknowledged and never reuses a
 * packet identifier that is still in flight, also when far more than 65,535 messages are published
 * at once (mqtt.js's own identifiers wrap there); the poll path's retained topics stay within the
 * window like discovery; everything is delivered once the broker acknowledges.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { INFLIGHT_HIGH } from "../../src/mqtt/connection.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { HeldAckBroker } from "../../testkit/held-ack-broker.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { mqttTestConfig, openTestConnection } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { sleep, waitFor } from "../../testkit/wait.js";

/** More messages at once than there are packet identifiers. */
const MANY = 70_000;

describe("QoS 1 window and packet identifiers", () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  it(`holds ${MANY} QoS 1 messages to the window, reuses no identifier in flight, and delivers each once`, async () => {
    const broker = await HeldAckBroker.start({ holding: true });
    closers.push(() => broker.close());
    const capture = new LogCapture();
    const connection = await openTestConnection(broker, {}, { logger: capture.logger });
    closers.push(() => connection.close());
    await waitFor(() => connection.connected, "connected");

    for (let i = 0; i < MANY; i++) connection.publish(`load/${i}`, String(i), 1, true);
    // `online` on connect is one more QoS 1 message besides the window.
    await waitFor(() => broker.heldCount >= INFLIGHT_HIGH, "the window filled", 10_000);
    await sleep(300);
    const qos1 = () => broker.received.filter((m) => m.qos === 1 && m.topic.startsWith("load/"));
    assert.ok(qos1().length <= INFLIGHT_HIGH, `${qos1().length} unacknowledged, window ${INFLIGHT_HIGH}`);
    assert.equal(broker.reusedIds, 0, "no identifier reused while in flight");
    assert.ok(connection.congested, "bulk producers see the connection congested");

    broker.release();
    await connection.whenDrained();
    const topics = qos1().map((m) => m.topic);
    assert.equal(topics.length, MANY, "each message sent once");
    assert.equal(new Set(topics).size, MANY, "no message twice, none missing");
    assert.equal(connection.congested, false);
    assert.deepEqual(
      capture.lines.filter((l) => /error/i.test(String(l.err ?? l.msg))),
      [],
      "no MQTT error",
    );
  });

  it("a newer payload replaces the one still waiting for its topic; the broker ends with the newest", async () => {
    const broker = await HeldAckBroker.start({ holding: true });
    closers.push(() => broker.close());
    const connection = await openTestConnection(broker);
    closers.push(() => connection.close());
    await waitFor(() => connection.connected, "connected");
    for (let i = 0; i < INFLIGHT_HIGH; i++) connection.publish(`fill/${i}`, "x", 1, true);
    connection.publish("state", "on", 1, true);
    connection.publish("state", "off", 1, true);
    connection.publish("state", "on", 1, true);
    assert.equal(connection.waiting, 1, "one message waits for the topic");
    broker.release();
    await connection.whenDrained();
    assert.deepEqual(
      broker.received.filter((m) => m.topic === "state").map((m) => m.payload),
      ["on"],
    );
  });

  it("keeps the poll path's retained topics within the window, and completes them once acknowledged", async () => {
    const broker = await HeldAckBroker.start({ holding: true });
    closers.push(() => broker.close());
    const ids = ["a", "b", "c"];
    const outlets = 200;
    const config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      instances: Object.fromEntries(ids.map((id) => [id, false])),
    });
    const bus = new EventBus();
    const store = new SnapshotStore(ids, { bus: bus });
    closers.push(() => Promise.resolve(store.close()));
    const bridge: MqttBridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    closers.push(() => bridge.stop());
    await waitFor(() => bridge.status().connected, "connected");
    // First polls: each walks 200 outlets' state, label and settings (QoS 1, retained) at once.
    for (const id of ids) store.recordSuccess(id, singleUnit(id, "DEV1", outlets));
    await waitFor(() => broker.heldCount >= INFLIGHT_HIGH, "the window filled", 10_000);
    await sleep(300);
    assert.ok(
      broker.heldCount <= INFLIGHT_HIGH + 1,
      `${broker.heldCount} unacknowledged QoS 1 messages, window ${INFLIGHT_HIGH}`,
    );
    assert.equal(broker.reusedIds, 0);

    broker.release();
    await waitFor(
      () =>
        ids.every(
          (id) =>
            new Set(
              broker.received
                .filter(
                  (m) => m.topic.startsWith(`pdu-bridge/${id}/DEV1/outlets/`) && m.topic.endsWith("/state"),
                )
                .map((m) => m.topic),
            ).size === outlets,
        ),
      "every outlet state of every instance",
      30_000,
    );
  });
});
