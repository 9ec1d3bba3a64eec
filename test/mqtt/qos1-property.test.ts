/**
 * A property of the bridge's MQTT connection against a real mosquitto (MQTT 3.1.1 and 5): however
 * QoS 1 publishes (single ones and bursts past the window), subscribes, unsubscribes and lost
 * connections (another client taking the client id) interleave, every subscribe and unsubscribe
 * settles exactly once, no protocol error is reported, every message is acknowledged in the end,
 * and the broker holds the newest payload of every retained topic.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { connectAsync } from "mqtt";
import { LogCapture } from "../../testkit/log-capture.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { openTestConnection } from "../../testkit/mqtt-config.js";
import { sleep, waitFor } from "../../testkit/wait.js";

type Op =
  | { readonly kind: "publish"; readonly topic: number; readonly payload: string }
  | { readonly kind: "burst"; readonly count: number }
  | { readonly kind: "subscribe"; readonly filter: number }
  | { readonly kind: "unsubscribe"; readonly filter: number }
  | { readonly kind: "kick" }
  | { readonly kind: "pause" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("publish" as const),
      topic: fc.nat(15),
      payload: fc.constantFrom("on", "off", "", "x"),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("burst" as const), count: fc.integer({ min: 1, max: 1500 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("subscribe" as const), filter: fc.nat(4) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("unsubscribe" as const), filter: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "kick" as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: "pause" as const }) },
);

for (const version of [4, 5] as const) {
  describe(`QoS 1 interleavings against mosquitto, MQTT ${version === 4 ? "3.1.1" : "5"}`, () => {
    let broker: Mosquitto;
    before(async () => {
      // The reader at the end takes thousands of retained messages on one subscription.
      broker = await Mosquitto.start({ extra: ["max_queued_messages 0"] });
    });
    after(async () => {
      await broker.close();
    });

    it("settles every request once, reports no protocol error and leaves the newest retained payloads", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 60 }), async (ops) => {
          const id = `prop-${version}-${run++}`;
          const root = `prop/${id}`;
          const capture = new LogCapture();
          const connection = await openTestConnection(
            broker,
            { protocolVersion: version, clientId: id },
            { logger: capture.logger },
          );
          const settled: number[] = [];
          const requests: Promise<void>[] = [];
          const track = (promise: Promise<unknown>) => {
            const slot = settled.push(0) - 1;
            requests.push(
              promise.then(
                () => void settled[slot]!++,
                () => void settled[slot]!++,
              ),
            );
          };
          /** The newest payload published per retained topic. */
          const newest = new Map<string, string>();
          let bursts = 0;
          let kicks = 0;
          try {
            await waitFor(() => connection.connected, "connected");
            for (const step of ops) {
              switch (step.kind) {
                case "publish": {
                  const topic = `${root}/t${step.topic}`;
                  if (connection.publish(topic, step.payload, 1, true)) newest.set(topic, step.payload);
                  break;
                }
                case "burst": {
                  const b = bursts++;
                  for (let i = 0; i < step.count; i++) {
                    const topic = `${root}/b${b}/${i}`;
                    if (connection.publish(topic, "b", 1, true)) newest.set(topic, "b");
                  }
                  break;
                }
                case "subscribe":
                  if (connection.connected) track(connection.subscribeOnce([`${root}/f${step.filter}/#`]));
                  break;
                case "unsubscribe":
                  track(connection.unsubscribe([`${root}/f${step.filter}/#`]));
                  break;
                case "kick": {
                  if (kicks++ >= 2) break;
                  // Another client with the same id: the broker closes the bridge's connection.
                  const thief = await connectAsync({
                    host: broker.host,
                    port: broker.port,
                    clientId: id,
                    protocolVersion: version,
                    reconnectPeriod: 0,
                  });
                  await thief.endAsync(true);
                  break;
                }
                case "pause":
                  await sleep(5);
                  break;
              }
            }
            await waitFor(() => connection.connected, "connected again", 10_000);
            await Promise.race([
              connection.whenDrained(),
              sleep(20_000).then(() => assert.fail("QoS 1 messages still unacknowledged after 20 s")),
            ]);
            await Promise.all(requests);
            assert.ok(
              settled.every((n) => n === 1),
              "every subscribe and unsubscribe settled exactly once",
            );
            const errors = capture.lines.filter((l) => /protocol error|does not answer/i.test(String(l.err)));
            assert.deepEqual(errors, [], "no protocol error");
          } finally {
            await connection.close();
          }
          // What the broker keeps: the newest payload of each topic (an empty one keeps nothing).
          const reader = await Recorder.connect(broker, [`${root}/#`], { protocolVersion: version });
          try {
            const expected = [...newest].filter(([, payload]) => payload !== "");
            await waitFor(() => reader.messages.length >= expected.length, "the retained messages", 10_000);
            await sleep(100);
            const kept = new Map(reader.messages.filter((m) => m.retain).map((m) => [m.topic, m.payload]));
            assert.deepEqual(new Map(expected), kept);
          } finally {
            await reader.close();
          }
        }),
        { numRuns: 6 },
      );
    });
  });
}
