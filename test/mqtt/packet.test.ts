/**
 * The hand-made QoS 0 PUBLISH batches (src/mqtt/packet.ts) and the connection that writes them:
 * byte for byte what mqtt-packet would send, and through a real aedes (MQTT 3.1.1) and a real
 * mosquitto (3.1.1 and 5) every topic and payload arrives exactly as published, in order, also around QoS 1
 * messages and a message too large to batch; a message over the broker's packet limit (announced
 * by an MQTT 5 broker, known for the embedded broker, configured for a 3.1.1 one) is dropped and
 * counted, never a reason to lose the connection.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type AddressInfo, type Server } from "node:net";
import { after, before, describe, it } from "node:test";
import { Aedes } from "aedes";
import mqttPacket from "mqtt-packet";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge } from "../../src/mqtt/bridge.js";
import type { MqttConnection } from "../../src/mqtt/connection.js";
import { PublishBatch, publishPacketSize } from "../../src/mqtt/packet.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { mqttTestConfig, openTestConnection } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { sleep, waitFor } from "../../testkit/wait.js";

/** Topics with levels the names module allows: Latin-1, CJK, an astral emoji, spaces. */
const TOPICS = [
  "t/pdu-0001/DEV1/outlets/0/power",
  "t/Küche Ω/outlets/3/current",
  "t/電源/entity/total0/energy",
  "t/plug 🔌/alarm",
];
/** Payloads of every length class: empty, numbers, non-ASCII text, 2- and 3-byte remaining lengths. */
const PAYLOADS = ["", "0", "-12.5", "naïve ✓ 🔌", "x".repeat(300), "é".repeat(9000)];

describe("PublishBatch", () => {
  for (const version of [4, 5] as const) {
    it(`encodes what mqtt-packet encodes (MQTT ${version === 4 ? "3.1.1" : "5"})`, () => {
      const batch = new PublishBatch(version, 1 << 20, 16);
      const expected: Buffer[] = [];
      for (const topic of TOPICS) {
        for (const payload of PAYLOADS) {
          for (const retain of [false, true]) {
            assert.equal(batch.add(topic, payload, retain), true);
            expected.push(
              mqttPacket.generate(
                { cmd: "publish", topic, payload, qos: 0, retain, dup: false },
                { protocolVersion: version },
              ),
            );
          }
        }
      }
      assert.equal(batch.count, expected.length);
      assert.deepEqual(batch.take(), Buffer.concat(expected));
      assert.equal(batch.take(), null, "take empties the batch");
    });
  }

  it("refuses a packet over its limit and keeps what it has", () => {
    const batch = new PublishBatch(4, 100);
    assert.equal(batch.add("a/b", "1", false), true);
    assert.equal(batch.add("a/b", "y".repeat(100), false), false);
    assert.equal(batch.count, 1);
    const topic65k = "t".repeat(0x10000);
    assert.equal(new PublishBatch(4, 1 << 20).add(topic65k, "", false), false, "topic over 64 KiB");
    assert.deepEqual(
      batch.take(),
      mqttPacket.generate(
        { cmd: "publish", topic: "a/b", payload: "1", qos: 0, retain: false, dup: false },
        { protocolVersion: 4 },
      ),
    );
  });
});

/** What the test publishes: every topic × payload at QoS 0, then an ordering run on one topic. */
function publishAll(connection: MqttConnection): { topic: string; payload: string }[] {
  const sent: { topic: string; payload: string }[] = [];
  for (const topic of TOPICS) {
    for (const payload of PAYLOADS) {
      assert.equal(connection.publish(topic, payload, 0, false), true);
      sent.push({ topic, payload });
    }
  }
  // QoS 0, QoS 1, a QoS 0 too large for a batch, QoS 0 again: they must arrive in this order.
  const order = "t/order";
  const steps: [string, 0 | 1][] = [
    ["1", 0],
    ["2", 1],
    ["3", 0],
    ["4".repeat(20_000), 0],
    ["5", 0],
  ];
  for (const [payload, qos] of steps) {
    assert.equal(connection.publish(order, payload, qos, false), true);
    sent.push({ topic: order, payload });
  }
  return sent;
}

/** A message as a short line (long payloads by length and hash), so a failure stays readable. */
function digest(m: { topic: string; payload: string }): string {
  const bytes = Buffer.from(m.payload, "utf8");
  const shown =
    bytes.length > 40 ? `${bytes.length} bytes ${createHash("sha1").update(bytes).digest("hex")}` : m.payload;
  return `${m.topic} ${shown}`;
}

function brokerSuite(
  name: string,
  versions: readonly (4 | 5)[],
  start: () => Promise<{ host: string; port: number; close: () => Promise<void> }>,
): void {
  for (const version of versions) {
    describe(`${name}, MQTT ${version === 4 ? "3.1.1" : "5"}`, () => {
      let broker: { host: string; port: number; close: () => Promise<void> };
      let recorder: Recorder;
      let connection: MqttConnection;

      before(async () => {
        broker = await start();
        recorder = await Recorder.connect(broker, ["t/#"], { protocolVersion: version });
        connection = await openTestConnection(broker, { protocolVersion: version });
        assert.equal(connection.connected, true);
      });

      after(async () => {
        await connection.close();
        await recorder.close();
        await broker.close();
      });

      it("delivers every topic and payload byte for byte, in order", async () => {
        const published = connection.traffic.published;
        const sent = publishAll(connection);
        await waitFor(() => recorder.messages.length >= sent.length, "all messages", 10_000);
        // Brokers may forward a QoS 1 message behind later QoS 0 ones (aedes stores it first): the
        // order is checked among the QoS 0 messages, and the QoS 1 one must be there.
        const qos0 = (list: readonly { topic: string; payload: string }[]) =>
          list.filter((m) => !(m.topic === "t/order" && m.payload === "2")).map(digest);
        const received = recorder.messages.map((m) => ({ topic: m.topic, payload: m.payload }));
        assert.deepEqual(qos0(received), qos0(sent));
        assert.equal(received.length, sent.length);
        assert.ok(received.some((m) => m.topic === "t/order" && m.payload === "2"));
        assert.ok(recorder.messages.every((m) => !m.retain));
        assert.equal(connection.traffic.published - published, sent.length);
      });

      it("drops QoS 0 messages while disconnected instead of queueing them", async () => {
        await connection.close();
        const failed = connection.traffic.failed;
        assert.equal(connection.publish("t/after-close", "x", 0, false), false);
        assert.equal(connection.traffic.failed, failed + 1);
      });
    });
  }
}

// aedes speaks MQTT 3.1.1 only.
brokerSuite("aedes", [4], async () => {
  const aedes = await Aedes.createBroker();
  const server: Server = createServer(aedes.handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    host: "127.0.0.1",
    port,
    close: async () => {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
});

brokerSuite("mosquitto", [4, 5], async () => {
  const broker = await Mosquitto.start();
  return { host: broker.host, port: broker.port, close: () => broker.close() };
});

describe("mosquitto announcing a maximum packet size (MQTT 5)", () => {
  const LIMIT = 1024;
  let broker: Mosquitto;
  let recorder: Recorder;
  let connection: MqttConnection;
  let connects = 0;

  before(async () => {
    broker = await Mosquitto.start({ extra: [`max_packet_size ${LIMIT}`] });
    recorder = await Recorder.connect(broker, ["t/#"], { protocolVersion: 5 });
    connection = await openTestConnection(
      broker,
      { protocolVersion: 5 },
      { onConnect: () => void connects++ },
    );
  });

  after(async () => {
    await connection.close();
    await recorder.close();
    await broker.close();
  });

  it("drops a message over the broker's maximum instead of losing the connection for it", async () => {
    // The largest QoS 0 payload on t/fits that the broker takes, and one byte more.
    let fits = LIMIT - 100;
    while (publishPacketSize(5, 6, fits + 1, 0) <= LIMIT) fits++;
    assert.equal(publishPacketSize(5, 6, fits, 0), LIMIT);
    const dropped = connection.droppedPublishes;
    assert.equal(connection.publish("t/a", "before", 0, false), true);
    assert.equal(connection.publish("t/fits", "f".repeat(fits), 0, false), true);
    assert.equal(connection.publish("t/over", "o".repeat(fits + 1), 0, false), false);
    assert.equal(connection.publish("t/big0", "x".repeat(20_000), 0, false), false, "past the batch, too");
    assert.equal(connection.publish("t/big1", "y".repeat(2000), 1, true), false, "QoS 1 as well");
    assert.equal(connection.publish("t/b", "after", 1, false), true);
    assert.equal(connection.droppedPublishes, dropped + 3);
    await waitFor(() => recorder.messages.some((m) => m.topic === "t/b"), "the QoS 1 message after them");
    assert.deepEqual(
      recorder.messages.map((m) => [m.topic, m.payload.length]),
      [
        ["t/a", 6],
        ["t/fits", fits],
        ["t/b", 5],
      ],
    );
    assert.equal(connection.connected, true);
    assert.equal(connects, 1, "never disconnected");
  });
});

describe("a broker that cannot announce its maximum packet size (MQTT 3.1.1)", () => {
  const LIMIT = 2048;

  it("Mqtt.MaxPacketSize: mosquitto's max_packet_size is never exceeded, the connection is kept", async () => {
    const broker = await Mosquitto.start({ extra: [`max_packet_size ${LIMIT}`] });
    const recorder = await Recorder.connect(broker, ["t/#"]);
    let connects = 0;
    const connection = await openTestConnection(
      broker,
      { maxPacketSize: LIMIT },
      { onConnect: () => void connects++ },
    );
    try {
      assert.equal(connection.publish("t/a", "before", 0, false), true);
      assert.equal(connection.publish("t/over0", "o".repeat(LIMIT), 0, false), false);
      assert.equal(connection.publish("t/over1", "o".repeat(LIMIT), 1, true), false);
      assert.equal(connection.publish("t/b", "after", 1, true), true);
      await waitFor(() => recorder.messages.some((m) => m.topic === "t/b"), "the message after them");
      assert.deepEqual(
        recorder.messages.map((m) => m.topic),
        ["t/a", "t/b"],
      );
      assert.equal(connection.droppedPublishes, 2);
      assert.equal(connects, 1, "never disconnected");
    } finally {
      await connection.close();
      await recorder.close();
      await broker.close();
    }
  });

  it("the embedded broker: a 300,000-character device label costs its messages, not the connection", async () => {
    const config = await mqttTestConfig({ instances: { huge: false, fine: false } });
    const bus = new EventBus();
    const store = new SnapshotStore(["huge", "fine"], { bus: bus });
    const bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    const embedded = bridge.embeddedBroker!;
    const recorder = await Recorder.connect(embedded, ["pdu-bridge/#", "homeassistant/#"]);
    try {
      await waitFor(() => bridge.status().connected, "connected");
      const since = bridge.status().since;
      const huge = singleUnit("huge", "DEV1", 2);
      const device = { ...huge.devices[0]!, label: "L".repeat(300_000), displayName: "L".repeat(300_000) };
      store.recordSuccess("huge", { ...huge, devices: [device] });
      store.recordSuccess("fine", singleUnit("fine", "DEV2", 2));
      await waitFor(
        () =>
          recorder.messages.some(
            (m) => m.topic.startsWith("homeassistant/") && m.topic.includes("pdu-bridge_fine"),
          ),
        "the other instance's discovery",
        10_000,
      );
      await waitFor(
        () => recorder.messages.some((m) => m.topic === "pdu-bridge/huge/DEV1/outlets/0/state"),
        "the huge instance's small topics",
      );
      await sleep(500);
      assert.equal(bridge.status().connected, true);
      assert.equal(bridge.status().since, since, "the bridge kept its connection");
      assert.ok(
        (bridge.status().droppedMessages ?? 0) > 0,
        "the oversized messages were dropped and counted",
      );
    } finally {
      await recorder.close();
      await bridge.stop();
      store.close();
    }
  });
});
