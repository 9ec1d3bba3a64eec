/**
 * The bench's raw MQTT subscriber (bench/lib/mqtt-wire.ts): the packets it writes are what
 * mqtt-packet writes, its reader splits a stream however it is cut, and against a real mosquitto with
 * its default limits it subscribes, reads every retained message of a round before the marker it
 * publishes to itself, and unsubscribes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import mqttPacket from "mqtt-packet";
import {
  PacketReader,
  RawMqttClient,
  connectPacket,
  publishPacket,
  readPublish,
  subscribePacket,
  unsubscribePacket,
} from "../../../bench/lib/mqtt-wire.js";
import { Mosquitto } from "../../../testkit/mosquitto.js";

describe("bench mqtt-wire", () => {
  it("writes what mqtt-packet writes", () => {
    assert.deepEqual(
      connectPacket("bench-1"),
      mqttPacket.generate({
        cmd: "connect",
        protocolId: "MQTT",
        protocolVersion: 4,
        clean: true,
        keepalive: 0,
        clientId: "bench-1",
      }),
    );
    assert.deepEqual(
      subscribePacket(7, ["a/#", "homeassistant/+/n/+/config"]),
      mqttPacket.generate({
        cmd: "subscribe",
        messageId: 7,
        subscriptions: [
          { topic: "a/#", qos: 0 },
          { topic: "homeassistant/+/n/+/config", qos: 0 },
        ],
      }),
    );
    assert.deepEqual(
      unsubscribePacket(65535, ["a/#"]),
      mqttPacket.generate({ cmd: "unsubscribe", messageId: 65535, unsubscriptions: ["a/#"] }),
    );
    for (const payload of ["", "x", "é".repeat(20_000)])
      for (const retain of [false, true])
        assert.deepEqual(
          publishPacket("t/Küche/1", payload, retain),
          mqttPacket.generate({ cmd: "publish", topic: "t/Küche/1", payload, qos: 0, retain, dup: false }),
        );
  });

  it("splits a stream into packets however it is cut, and reads topic, payload and retain", () => {
    const packets = [
      publishPacket("a/b", "1", false),
      publishPacket("homeassistant/sensor/n/o/config", "é".repeat(10_000), true),
      mqttPacket.generate({
        cmd: "publish",
        topic: "q/1",
        payload: "qos1",
        qos: 1,
        messageId: 9,
        retain: false,
        dup: false,
      }),
      Buffer.from([0x90, 3, 0, 7, 0]), // SUBACK
    ];
    const stream = Buffer.concat(packets);
    for (const cut of [1, 2, 7, 1000, stream.length]) {
      const seen: string[] = [];
      const reader = new PacketReader((first, buf, start, length) => {
        if (first >> 4 !== 3) {
          seen.push(`type ${first >> 4}`);
          return;
        }
        const p = readPublish(first, buf, start, length);
        seen.push(`${p.topic} ${p.payload.length} ${p.retain} ${p.payload.toString("utf8").slice(0, 4)}`);
      });
      for (let i = 0; i < stream.length; i += cut) reader.push(stream.subarray(i, i + cut));
      assert.deepEqual(
        seen,
        ["a/b 1 false 1", "homeassistant/sensor/n/o/config 20000 true éééé", "q/1 4 false qos1", "type 9"],
        `chunks of ${cut}`,
      );
    }
  });

  describe("against mosquitto with its default limits", () => {
    let broker: Mosquitto;
    before(async () => {
      broker = await Mosquitto.start();
    });
    after(async () => {
      await broker.close();
    });

    it("reads retained configs in rounds, each ended by its own marker, none lost", async () => {
      const instances = 8;
      const per = 800;
      const payload = (n: number, i: number) => `${n}:${i}:${"x".repeat(1000)}`;
      const writer = await RawMqttClient.connect(broker.url, "wire-writer", () => undefined);
      for (let n = 0; n < instances; n++)
        for (let i = 0; i < per; i++) writer.publish(`r/${n}/${i}`, payload(n, i), true);
      let marker: (() => void) | null = null;
      const untilMarker = (client: RawMqttClient) =>
        new Promise<void>((resolve) => {
          marker = resolve;
          client.publish("marker", "");
        });
      const got = new Map<number, number>();
      let wrong = 0;
      const reader = await RawMqttClient.connect(broker.url, "wire-reader", (first, buf, start, length) => {
        const p = readPublish(first, buf, start, length);
        if (p.topic === "marker") marker?.();
        else if (p.retain) {
          const [, n, i] = p.topic.split("/").map(Number) as [number, number, number];
          if (p.payload.toString("utf8") !== payload(n, i)) wrong++;
          got.set(n, (got.get(n) ?? 0) + 1);
        }
      });
      try {
        await reader.subscribe(["marker"]);
        // The writer's messages are the broker's before the marker it publishes after them comes back.
        await new Promise<void>((resolve) => {
          marker = resolve;
          writer.publish("marker", "");
        });
        for (let n = 0; n < instances; n++) {
          await reader.subscribe([`r/${n}/#`]);
          await untilMarker(reader);
          void reader.unsubscribe([`r/${n}/#`]);
          assert.equal(got.get(n), per, `round ${n}: every retained message before the marker`);
        }
        assert.equal(wrong, 0);
      } finally {
        await Promise.all([reader.close(), writer.close()]);
      }
      assert.equal(reader.closed, true);
    });
  });
});
