/**
 * Home Assistant's `online` (its birth message) republishes discovery and states, but a client
 * repeating it cannot make the bridge republish the fleet over and over: one resync at once, and
 * at most one more when the window is over.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const SWITCH = "homeassistant/switch/pdu-bridge_default/outlet_DEV1_0_power/config";

describe("Home Assistant's online message, repeated", () => {
  let store: SnapshotStore;
  let bridge: MqttBridge;
  let watcher: Recorder;
  let ha: Recorder;

  before(async () => {
    const config = await mqttTestConfig({ instances: { default: true } });
    const bus = new EventBus();
    store = new SnapshotStore(["default"], { bus: bus });
    store.recordSuccess("default", singleUnit("default", "DEV1", 24));
    bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    watcher = await Recorder.connect(bridge.embeddedBroker!, ["homeassistant/#"]);
    ha = await Recorder.connect(bridge.embeddedBroker!, []);
  });

  after(async () => {
    await ha.close();
    await watcher.close();
    await bridge.stop();
    store.close();
  });

  it("republishes once for twenty births in a row", async () => {
    await watcher.waitFor(SWITCH);
    await sleep(300);
    watcher.clear();
    for (let i = 0; i < 20; i++) await ha.publish("homeassistant/status", "online", false);
    await watcher.waitFor(SWITCH);
    await sleep(1500);
    const republished = watcher.on(SWITCH).length;
    assert.equal(republished, 1, `the switch's config was republished ${republished} times`);
    await waitFor(() => bridge.status().connected, "still connected");
  });
});
