/**
 * The bridge's start and stop against a real mosquitto: a clean stop leaves `offline` retained on
 * `P/status` and on every `P/<instance>/status`; at start, retained discovery configs of this
 * bridge's things that no longer exist (ghosts) are cleared, and nothing else is touched.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/mqtt-snapshots.js";

describe("clean stop", () => {
  let broker: Mosquitto;
  const recorders: Recorder[] = [];
  const bridges: MqttBridge[] = [];
  const stores: SnapshotStore[] = [];
  const subscribe = async (topics: string[]) => {
    const r = await Recorder.connect(broker, topics);
    recorders.push(r);
    return r;
  };

  before(async () => {
    broker = await Mosquitto.start();
  });

  after(async () => {
    for (const r of recorders) await r.close();
    for (const b of bridges) await b.stop();
    for (const s of stores) s.close();
    await broker.close();
  });

  it("publishes offline retained on P/status and every P/<instance>/status", async () => {
    const config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      instances: { rack1: false, rack2: false, rack3: false },
    });
    const store = new SnapshotStore(["rack1", "rack2", "rack3"]);
    stores.push(store);
    store.recordSuccess("rack1", singleUnit("rack1", "DEV1", 2));
    store.recordSuccess("rack2", singleUnit("rack2", "DEV2", 2));
    const bridge = await startMqttBridge({ config, store, logger: silentLogger() });
    bridges.push(bridge);
    const live = await subscribe(["pdu-bridge/+/status", "pdu-bridge/status"]);
    await live.waitFor("pdu-bridge/rack1/status", (m) => m.payload === "online");
    await live.waitFor("pdu-bridge/rack2/status", (m) => m.payload === "online");
    await live.waitFor("pdu-bridge/status", (m) => m.payload === "online");

    await bridge.stop();

    const fresh = await subscribe(["pdu-bridge/+/status", "pdu-bridge/status"]);
    for (const topic of [
      "pdu-bridge/status",
      "pdu-bridge/rack1/status",
      "pdu-bridge/rack2/status",
      "pdu-bridge/rack3/status",
    ]) {
      const m = await fresh.waitFor(topic);
      assert.equal(m.payload, "offline", topic);
      assert.equal(m.retain, true, topic);
    }
    // Nothing newer than `offline` was left behind (the retained message is the last one).
    await waitFor(() => fresh.messages.length >= 4, "four retained statuses");
    assert.deepEqual(
      [...fresh.latest().values()].map((m) => m.payload),
      ["offline", "offline", "offline", "offline"],
    );
  });
});
