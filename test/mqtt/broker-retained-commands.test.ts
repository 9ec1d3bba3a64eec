/**
 * The embedded broker keeps no retained command: a retained message on a command topic (which would
 * replay at every reconnect of the bridge, and to every new subscriber) is refused and its client
 * disconnected, whoever sent it; the same command sent live is delivered, and an empty retained
 * message (a clear) is accepted.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectAsync, type MqttClient } from "mqtt";
import { startEmbeddedBroker, type EmbeddedBroker } from "../../src/mqtt/broker.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Recorder, sleep } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

const PARENT = "pdu-bridge";
const COMMANDS = [
  `${PARENT}/lab/DEV1/outlets/0/set`,
  `${PARENT}/lab/DEV1/outlets/0/reboot`,
  `${PARENT}/lab/DEV1/outlets/0/label/set`,
  `${PARENT}/lab/groups/2/set`,
];

/** Resolves once the broker closed the client's connection; fails after a few seconds. */
const closed = (client: MqttClient): Promise<unknown> =>
  waitFor(() => !client.connected, "the broker closing the connection", 3000);

describe("embedded broker and retained commands", () => {
  let broker: EmbeddedBroker;
  const capture = new LogCapture();
  const clients: MqttClient[] = [];

  before(async () => {
    broker = await startEmbeddedBroker({
      bind: "127.0.0.1",
      port: 0,
      username: null,
      password: null,
      logger: capture.logger,
      parentTopic: PARENT,
      discoveryPrefix: "homeassistant",
    });
  });
  after(async () => {
    for (const c of clients) await c.endAsync(true).catch(() => undefined);
    await broker?.close();
  });

  const anonymous = async (clientId: string): Promise<MqttClient> => {
    const client = await connectAsync({ host: broker.host, port: broker.port, reconnectPeriod: 0, clientId });
    clients.push(client);
    return client;
  };

  for (const topic of COMMANDS) {
    it(`refuses a retained command on ${topic.slice(PARENT.length)} and keeps nothing`, async () => {
      const live = await Recorder.connect(broker, [`${PARENT}/#`]);
      try {
        const sender = await anonymous(`retained-${topic.length}`);
        const gone = closed(sender);
        sender.publish(topic, "off", { retain: true, qos: 0 });
        await gone;
        await sleep(100);
        assert.equal(live.on(topic).length, 0, "not delivered");
      } finally {
        await live.close();
      }
      const late = await Recorder.connect(broker, [`${PARENT}/#`]);
      try {
        await sleep(200);
        assert.equal(late.on(topic).length, 0, "nothing retained to replay");
      } finally {
        await late.close();
      }
    });
  }

  it("delivers the same command live, and accepts an empty retained message (a clear)", async () => {
    const topic = COMMANDS[0]!;
    const live = await Recorder.connect(broker, [`${PARENT}/#`]);
    try {
      const sender = await anonymous("live-sender");
      await sender.publishAsync(topic, "off", { qos: 1 });
      await live.waitFor(topic);
      await sender.publishAsync(topic, "", { retain: true, qos: 1 });
      assert.equal(sender.connected, true);
    } finally {
      await live.close();
    }
  });

  it("says why it refused, in a bounded number of lines", async () => {
    await waitFor(
      () => capture.lines.some((l) => String(l.msg).includes("retained command")),
      "the refusal's warning",
    );
  });
});
