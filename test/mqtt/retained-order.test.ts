/**
 * Retained messages published among messages that are not retained, as a poll publishes them (a
 * lifetime counter or an asset's power at QoS 0 retained among the measurement values; an alarm
 * list at QoS 1 retained beside its QoS 1 events), reach a subscriber that is already subscribed,
 * and a later subscriber gets each of them retained: through the embedded broker (aedes) and a
 * real mosquitto (3.1.1 and 5). A retained topic cleared at QoS 1 while the QoS 1 window is full and
 * given a value at QoS 0 right after ends with the value on the broker, not the older clear.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/log.js";
import { startEmbeddedBroker } from "../../src/mqtt/broker.js";
import { INFLIGHT_HIGH, type MqttConnection } from "../../src/mqtt/connection.js";
import { HeldAckBroker } from "../../testkit/held-ack-broker.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { openTestConnection } from "../../testkit/mqtt-config.js";
import { waitFor } from "../../testkit/wait.js";

/** Outlets of the "poll": each has a value (not retained) and a counter (retained) at QoS 0. */
const OUTLETS = 40;
/** Instances whose alarm list (QoS 1, retained) goes out followed by an event (QoS 1, not retained). */
const LISTS = 20;

interface Sent {
  readonly topic: string;
  readonly payload: string;
  readonly retain: boolean;
}

/** One poll's messages, published in one event loop turn (one QoS 0 batch, one outbox run). */
function publishPoll(connection: MqttConnection, round: number): Sent[] {
  const sent: Sent[] = [];
  const publish = (topic: string, payload: string, qos: 0 | 1, retain: boolean): void => {
    assert.equal(connection.publish(topic, payload, qos, retain), true, topic);
    sent.push({ topic, payload, retain });
  };
  for (let i = 0; i < OUTLETS; i++) {
    publish(`r/dev/outlets/${i}/measurements/realPower`, `${round * 1000 + i}`, 0, false);
    publish(`r/dev/outlets/${i}/measurements/energyLifetime`, `${round}.${i}`, 0, true);
    publish(`r/dev/outlets/${i}/measurements/current`, `${i / 10}`, 0, false);
  }
  for (let i = 0; i < LISTS; i++) {
    publish(`r/i${i}/alarms`, JSON.stringify([{ round, i }]), 1, true);
    publish(`r/i${i}/events`, JSON.stringify({ round, i }), 1, false);
  }
  return sent;
}

/** The sent messages that `recorder` has not received (by topic and payload), as lines. */
function missing(recorder: Recorder, sent: readonly Sent[], retained: boolean): string[] {
  const got = new Set(
    recorder.messages.filter((m) => m.retain === retained).map((m) => `${m.topic} ${m.payload}`),
  );
  return sent.map((m) => `${m.topic} ${m.payload}`).filter((line) => !got.has(line));
}

/** Waits until `recorder` has every message of `sent`; a timeout names the ones missing. */
async function receivedAll(recorder: Recorder, sent: readonly Sent[], retained: boolean): Promise<void> {
  await waitFor(
    () => {
      const gone = missing(recorder, sent, retained);
      if (gone.length > 0) throw new Error(`${gone.length} missing, e.g. ${gone.slice(0, 3).join("; ")}`);
      return true;
    },
    `every message ${retained ? "as retained" : "live"}`,
  );
}

function brokerSuite(
  name: string,
  version: 4 | 5,
  start: () => Promise<{ host: string; port: number; close: () => Promise<void> }>,
): void {
  describe(`${name}, MQTT ${version === 4 ? "3.1.1" : "5"}`, () => {
    let broker: { host: string; port: number; close: () => Promise<void> };
    let connection: MqttConnection;
    const recorders: Recorder[] = [];
    const subscribe = async (): Promise<Recorder> => {
      const recorder = await Recorder.connect(broker, ["r/#"], { protocolVersion: version });
      recorders.push(recorder);
      return recorder;
    };

    before(async () => {
      broker = await start();
      connection = await openTestConnection(broker, { protocolVersion: version });
    });

    after(async () => {
      for (const recorder of recorders) await recorder.close();
      await connection.close();
      await broker.close();
    });

    it("a subscriber already there gets every retained message published among the others", async () => {
      const live = await subscribe();
      for (const round of [1, 2]) {
        const sent = publishPoll(connection, round);
        await receivedAll(
          live,
          sent.filter((m) => !m.retain),
          false,
        );
        // Retained messages reach a subscriber already there as ordinary (not retained) messages.
        await receivedAll(
          live,
          sent.filter((m) => m.retain),
          false,
        );
      }
    });

    it("a later subscriber gets the last payload of each retained topic, retained", async () => {
      const live = await subscribe();
      const sent = publishPoll(connection, 3);
      // Once the round's other messages reached a subscriber, the broker has stored the retained ones.
      await receivedAll(
        live,
        sent.filter((m) => !m.retain),
        false,
      );
      const later = await subscribe();
      await receivedAll(
        later,
        sent.filter((m) => m.retain),
        true,
      );
      assert.equal(later.messages.length, LISTS + OUTLETS, "one retained message per retained topic");
    });
  });
}

brokerSuite("embedded broker (aedes)", 4, async () => {
  const broker = await startEmbeddedBroker({
    bind: "127.0.0.1",
    port: 0,
    username: null,
    password: null,
    logger: silentLogger(),
  });
  return { host: broker.host, port: broker.port, close: () => broker.close() };
});

for (const version of [4, 5] as const) {
  brokerSuite("mosquitto", version, async () => {
    const broker = await Mosquitto.start();
    return { host: broker.host, port: broker.port, close: () => broker.close() };
  });
}

describe("a retained topic published at QoS 1 and then at QoS 0", () => {
  it("the broker gets the newer payload last while the older one waits for the QoS 1 window", async (t) => {
    const broker = await HeldAckBroker.start({ holding: true });
    t.after(() => broker.close());
    const connection = await openTestConnection(broker);
    t.after(() => connection.close());
    for (let i = 0; i < INFLIGHT_HIGH; i++) connection.publish(`fill/${i}`, "x", 1, true);
    await waitFor(() => broker.heldCount >= INFLIGHT_HIGH, "the QoS 1 window full");
    const topic = "r/dev/outlets/0/measurements/energyLifetime";
    // The counter's topic cleared (its outlet gone from a poll), then back with a count.
    assert.equal(connection.publish(topic, "", 1, true), true);
    assert.equal(connection.publish(topic, "12.345", 0, true), true);
    assert.equal(connection.publish("r/after", "1", 0, false), true);
    // The QoS 0 batch written (the message behind the counter's is on the wire).
    await waitFor(() => broker.received.some((m) => m.topic === "r/after"), "the QoS 0 batch");
    broker.release();
    await connection.whenDrained();
    const onTopic = broker.received.filter((m) => m.topic === topic).map((m) => m.payload);
    assert.equal(
      onTopic.at(-1),
      "12.345",
      `the broker keeps the last one written: ${JSON.stringify(onTopic)}`,
    );
  });
});
