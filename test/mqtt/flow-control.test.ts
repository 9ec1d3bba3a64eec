/**
 * Flow control of bulk publishing: Home Assistant discovery and resyncs are sent only while the
 * broker keeps acknowledging. Against a broker on a real socket that holds its PUBACKs, the bridge
 * must stop writing soon after the high-water mark, send everything once the acknowledgements come,
 * and start over on a new connection when the congested one is lost.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import type { Config } from "../../src/config/schema.js";
import { PUBLISHED_SETTINGS } from "../../src/control/settings.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { INFLIGHT_HIGH } from "../../src/mqtt/connection.js";
import { buildDiscovery, discoveryShape } from "../../src/mqtt/discovery.js";
import { TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { HeldAckBroker } from "../../testkit/held-ack-broker.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const IDS = Array.from({ length: 40 }, (_, i) => `pdu${String(i).padStart(2, "0")}`);
const OUTLETS = 24;

/** Every discovery config topic the fleet should end with, derived by the product's own rules. */
function expectedDiscovery(config: Config, store: SnapshotStore): Set<string> {
  const options = {
    topics: new Topics(config.Mqtt.ParentTopic),
    prefix: config.HomeAssistant.DiscoveryTopic,
    expireAfter: config.HomeAssistant.SensorExpireAfterSeconds,
  };
  const guard = new TopicIdGuard(silentLogger());
  const topics = new Set<string>();
  for (const id of IDS) {
    const status = store.get(id)!;
    const shape = discoveryShape(id, status.snapshot!, guard, status.load);
    for (const topic of buildDiscovery(options, id, false, shape).keys()) topics.add(topic);
  }
  return topics;
}

describe("flow control of discovery and resyncs", () => {
  let broker: HeldAckBroker;
  let config: Config;
  let store: SnapshotStore;
  let bridge: MqttBridge;
  let expected: Set<string>;
  /** Everything the bridge publishes for one instance on a resync (status, discovery, retained). */
  let perInstance: number;

  const discoveryTopics = (from = 0) =>
    new Set(
      broker.received
        .slice(from)
        .filter((m) => m.topic.startsWith(`${config.HomeAssistant.DiscoveryTopic}/`))
        .map((m) => m.topic),
    );
  const qos1Count = () => broker.received.filter((m) => m.qos === 1).length;

  before(async () => {
    broker = await HeldAckBroker.start({ holding: true });
    config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      instances: Object.fromEntries(IDS.map((id) => [id, false])),
    });
    const bus = new EventBus();
    store = new SnapshotStore(IDS, { bus: bus });
    for (const id of IDS) store.recordSuccess(id, singleUnit(id, "DEV1", OUTLETS));
    expected = expectedDiscovery(config, store);
    // Per outlet: its state, label and the settings' retained topics; the phase's load and the
    // alarms list.
    perInstance = expected.size / IDS.length + 1 + (2 + PUBLISHED_SETTINGS.length) * OUTLETS + 2;
    // The connect resyncs every instance: about 40 × 150 QoS 1 messages, far above the mark.
    bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
  });

  after(async () => {
    broker.release();
    await bridge.stop();
    store.close();
    await broker.close();
  });

  it("stops sending while the broker does not acknowledge, and sends the rest once it does", async () => {
    const total = IDS.length * perInstance;
    assert.ok(total > 8 * INFLIGHT_HIGH, `the fleet's resync (${total}) must be far above the mark`);
    await waitFor(() => qos1Count() >= INFLIGHT_HIGH, "the first messages", 10_000);
    // Give an unthrottled client ample time to write everything.
    await sleep(500);
    const sentWhileHeld = qos1Count();
    assert.ok(
      sentWhileHeld <= INFLIGHT_HIGH + perInstance,
      `sent ${sentWhileHeld} QoS 1 messages without acknowledgement (mark ${INFLIGHT_HIGH}, one instance ${perInstance})`,
    );
    assert.ok(discoveryTopics().size < expected.size, "discovery was not all sent before acknowledgements");

    broker.release();
    await waitFor(() => discoveryTopics().size === expected.size, "every discovery config", 10_000);
    assert.deepEqual([...discoveryTopics()].sort(), [...expected].sort());
    // Retained states of every instance followed their discovery.
    for (const id of IDS) {
      const states = broker.received.filter(
        (m) => m.topic.startsWith(`pdu-bridge/${id}/DEV1/outlets/`) && m.topic.endsWith("/state"),
      );
      assert.equal(new Set(states.map((m) => m.topic)).size, OUTLETS, `${id}: outlet states`);
    }
  });

  it("starts over on a new connection when the congested one is lost", async () => {
    broker.holding = true;
    const connects = broker.connects;
    const from = broker.received.length;
    // Home Assistant coming online asks for everything again: a new burst, held by the broker.
    broker.deliver(`${config.HomeAssistant.DiscoveryTopic}/status`, "online");
    await waitFor(() => broker.heldCount >= INFLIGHT_HIGH, "a congested resync", 10_000);
    assert.ok(discoveryTopics(from).size < expected.size);

    // The broker goes away with the acknowledgements it owed; the bridge reconnects and resyncs.
    broker.holding = false;
    const reconnectFrom = broker.received.length;
    broker.dropClients();
    await waitFor(() => broker.connects > connects, "the reconnect", 10_000);
    await waitFor(
      () => discoveryTopics(reconnectFrom).size === expected.size,
      "every discovery config after the reconnect",
      15_000,
    );
    assert.equal(bridge.status().connected, true);
  });
});
