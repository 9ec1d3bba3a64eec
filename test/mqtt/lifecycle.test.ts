/**
 * The bridge's start and stop against a real mosquitto: a clean stop leaves `offline` retained on
 * `P/status` and on every `P/<instance>/status`; at start, retained discovery configs of this
 * bridge's things that no longer exist (ghosts) are cleared, and nothing else is touched.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";

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
    const bus = new EventBus();
    const store = new SnapshotStore(["rack1", "rack2", "rack3"], { bus: bus });
    stores.push(store);
    store.recordSuccess("rack1", singleUnit("rack1", "DEV1", 2));
    store.recordSuccess("rack2", singleUnit("rack2", "DEV2", 2));
    const bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
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

describe("ghost discovery cleanup at start", () => {
  const D = "homeassistant";
  // Outlet 7 of DEV1 does not exist any more (the PDU has outlets 0 and 1).
  const GHOST = `${D}/switch/pdu-bridge_default/outlet_DEV1_7_power/config`;
  const GHOST_SENSOR = `${D}/sensor/pdu-bridge_default/outlet_DEV1_7_power/config`;
  // A thing that still exists: its config is republished by the normal discovery, never cleared.
  const EXISTING = `${D}/switch/pdu-bridge_default/outlet_DEV1_0_power/config`;
  // Another bridge (another ParentTopic, so another node id) on the same broker.
  const OTHER = `${D}/switch/other-bridge_default/outlet_DEV1_7_power/config`;
  // An instance that is offline at start: not judged until it has been polled.
  const LATE_GHOST = `${D}/switch/pdu-bridge_rack2/outlet_DEV2_9_power/config`;
  const LATE_EXISTING = `${D}/switch/pdu-bridge_rack2/outlet_DEV2_1_power/config`;
  // More ghosts than the sweeper keeps in one string (64), so that its joined strings are judged too.
  const MANY = Array.from(
    { length: 150 },
    (_, i) => `${D}/sensor/pdu-bridge_default/outlet_DEV1_${100 + i}_power/config`,
  );
  const planted = [GHOST, GHOST_SENSOR, ...MANY, EXISTING, OTHER, LATE_GHOST, LATE_EXISTING];

  let broker: Mosquitto;
  let bridge: MqttBridge | null = null;
  let store: SnapshotStore | null = null;
  const capture = new LogCapture();
  const recorders: Recorder[] = [];
  const subscribe = async (topics: string[]) => {
    const r = await Recorder.connect(broker, topics);
    recorders.push(r);
    return r;
  };
  /** The retained configs on the broker now, as a fresh subscriber sees them. */
  const retainedNow = async (): Promise<Map<string, string>> => {
    const r = await subscribe([`${D}/#`]);
    await waitFor(() => r.messages.some((m) => m.topic === OTHER), "the retained configs");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const map = new Map<string, string>();
    for (const m of r.messages) if (m.retain) map.set(m.topic, m.payload);
    return map;
  };

  before(async () => {
    broker = await Mosquitto.start();
  });

  after(async () => {
    for (const r of recorders) await r.close();
    await bridge?.stop();
    store?.close();
    await broker.close();
  });

  it("clears configs of things that are gone, leaves the rest, and waits for an instance's first poll", async () => {
    const planter = await subscribe([]);
    for (const topic of planted) await planter.publish(topic, JSON.stringify({ name: "old" }), true);
    const watcher = await subscribe([`${D}/#`]);
    await waitFor(() => watcher.messages.length >= planted.length, "the planted configs");
    watcher.clear();

    const config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      instances: { default: true, rack2: true },
    });
    const bus = new EventBus();
    store = new SnapshotStore(["default", "rack2"], { bus: bus });
    store.recordSuccess("default", singleUnit("default", "DEV1", 2));
    bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });

    await watcher.waitFor(GHOST, (m) => m.payload === "", 15_000);
    await watcher.waitFor(GHOST_SENSOR, (m) => m.payload === "", 15_000);
    await waitFor(
      () => capture.lines.some((l) => String(l.msg).startsWith("cleared retained discovery configs")),
      "the cleanup log line",
    );
    const afterStart = await retainedNow();
    assert.deepEqual(
      MANY.filter((topic) => afterStart.has(topic)),
      [],
      "every one of many ghosts is gone",
    );
    const cleanup = capture.lines.find((l) => String(l.msg).startsWith("cleared retained discovery configs"));
    assert.equal(cleanup?.instance, "default");
    assert.equal(cleanup?.cleared, MANY.length + 2, "each ghost cleared once");
    assert.equal(afterStart.has(GHOST), false, "the ghost switch is gone");
    assert.equal(afterStart.has(GHOST_SENSOR), false, "the ghost sensor is gone");
    assert.equal(
      afterStart.get(OTHER),
      JSON.stringify({ name: "old" }),
      "another bridge's config is untouched",
    );
    // The existing outlet's config was published once by discovery, and never cleared.
    const existing = watcher.on(EXISTING);
    assert.equal(existing.length, 1, "published once, by the normal discovery");
    assert.notEqual(existing[0]?.payload, "");
    assert.ok(afterStart.get(EXISTING)?.includes('"unique_id"'));
    // rack2 has not been polled: its configs, ghost or not, are left alone.
    assert.equal(afterStart.get(LATE_GHOST), JSON.stringify({ name: "old" }));
    assert.equal(watcher.on(LATE_GHOST).length, 0);

    // Its first successful poll: now its ghosts are judged and cleared.
    store.recordSuccess("rack2", singleUnit("rack2", "DEV2", 2));
    await watcher.waitFor(LATE_GHOST, (m) => m.payload === "");
    const afterPoll = await retainedNow();
    assert.equal(afterPoll.has(LATE_GHOST), false);
    assert.ok(afterPoll.get(LATE_EXISTING)?.includes('"unique_id"'));
    assert.equal(
      watcher.on(LATE_EXISTING).filter((m) => m.payload === "").length,
      0,
      "an existing config is never cleared",
    );
    assert.equal(afterPoll.get(OTHER), JSON.stringify({ name: "old" }));
    assert.equal(watcher.on(OTHER).length, 0, "nothing was published on another bridge's config");
  });
});

describe("an instance removed from the configuration, at the next start", () => {
  const D = "homeassistant";
  const REMOVED_NODE = "pdu-bridge_rack2";
  const KEPT_NODE = "pdu-bridge_default";
  // Another bridge's instance of the same id (another ParentTopic, so another node id).
  const OTHER = `${D}/switch/other-bridge_rack2/outlet_DEV2_0_power/config`;
  // An instance not configured whose status is still `online`: something may publish it.
  const LIVE = `${D}/sensor/pdu-bridge_rack9/outlet_DEV9_0_power/config`;

  let broker: Mosquitto;
  const bridges: MqttBridge[] = [];
  const stores: SnapshotStore[] = [];
  const recorders: Recorder[] = [];
  const subscribe = async (topics: string[]) => {
    const r = await Recorder.connect(broker, topics);
    recorders.push(r);
    return r;
  };
  /** The retained configs of a node id on the broker now, as a fresh subscriber sees them. */
  const retainedOf = async (nodeId: string): Promise<Map<string, string>> => {
    const r = await subscribe([`${D}/+/${nodeId}/+/config`, OTHER]);
    await waitFor(() => r.messages.some((m) => m.topic === OTHER), "the retained configs");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ours = r.messages.filter((m) => m.retain && m.payload !== "" && m.topic !== OTHER);
    return new Map(ours.map((m) => [m.topic, m.payload]));
  };
  const start = async (instances: Record<string, boolean>, capture: LogCapture) => {
    const config = await mqttTestConfig({ broker: { host: broker.host, port: broker.port }, instances });
    const bus = new EventBus();
    const store = new SnapshotStore(Object.keys(instances), { bus });
    stores.push(store);
    store.recordSuccess("default", singleUnit("default", "DEV1", 2));
    if ("rack2" in instances) store.recordSuccess("rack2", singleUnit("rack2", "DEV2", 3));
    const bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
    bridges.push(bridge);
    return bridge;
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

  it("clears every retained config of the instance no longer configured, with one info line, and no other", async () => {
    const planter = await subscribe([]);
    await planter.publish(OTHER, JSON.stringify({ name: "other" }), true);

    // The first start publishes the discovery of both instances.
    const first = await start({ default: true, rack2: true }, new LogCapture());
    const published = await subscribe([`${D}/+/${REMOVED_NODE}/+/config`, `${D}/+/${KEPT_NODE}/+/config`]);
    await waitFor(
      () => published.messages.some((m) => m.topic.includes(REMOVED_NODE)),
      "the removed instance's discovery",
    );
    const removedBefore = await retainedOf(REMOVED_NODE);
    const keptBefore = await retainedOf(KEPT_NODE);
    assert.ok(removedBefore.size > 20, `rack2 has its configs (${removedBefore.size})`);
    assert.ok(keptBefore.size > 20, `default has its configs (${keptBefore.size})`);
    await first.stop();
    await planter.publish(LIVE, JSON.stringify({ name: "live" }), true);
    await planter.publish("pdu-bridge/rack9/status", "online", true);

    // The second start without rack2.
    const watcher = await subscribe([`${D}/#`]);
    await waitFor(
      () => watcher.messages.length >= removedBefore.size + keptBefore.size + 2,
      "the retained configs",
    );
    watcher.clear();
    const capture = new LogCapture();
    await start({ default: true }, capture);
    const line = await waitFor(
      () =>
        capture.lines.find(
          (l) =>
            l.msg === "cleared the retained discovery configs of an instance that is no longer configured",
        ),
      "the info line of the removed instance",
      20_000,
    );
    assert.equal(line.instance, "rack2");
    assert.equal(line.cleared, removedBefore.size, "each of its configs cleared once");
    assert.equal(line.level, "info", "an info line");

    await waitFor(
      () => [...removedBefore.keys()].every((t) => watcher.on(t).some((m) => m.payload === "")),
      "every clear at the broker",
    );
    assert.deepEqual([...(await retainedOf(REMOVED_NODE)).keys()], [], "no config of rack2 is retained");
    const keptAfter = await retainedOf(KEPT_NODE);
    assert.deepEqual([...keptAfter.keys()].sort(), [...keptBefore.keys()].sort(), "default's configs stay");
    assert.deepEqual(
      watcher.messages.filter((m) => m.topic.includes(KEPT_NODE) && m.payload === "").map((m) => m.topic),
      [],
      "none of default's configs was cleared",
    );
    assert.equal(watcher.on(OTHER).length, 0, "another bridge's config is untouched");
    await waitFor(
      () => capture.lines.some((l) => l.msg === "ghost cleanup: the retained discovery configs are read"),
      "the end of the reading",
    );
    assert.equal(watcher.on(LIVE).length, 0, "an instance still online is left alone");
    assert.ok(
      !capture.lines.some((l) => l.instance === "rack9"),
      "nothing said about the instance still online",
    );
  });
});
