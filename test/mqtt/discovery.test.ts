/**
 * Home Assistant discovery over the embedded broker: two instances (a switchable single unit and a
 * read-only OneView cluster, with the same device id in both) whose topics and ids never collide,
 * payload fields, renames without new ids, and the republish when Home Assistant comes online.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { buildDiscovery, discoveryShape } from "../../src/mqtt/discovery.js";
import { TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { Recorder, sleep, waitFor } from "../../testkit/mqtt-client.js";
import { cluster, device, outlet, singleUnit, snapshot } from "../../testkit/snapshot-builders.js";

type Config = Record<string, unknown> & {
  unique_id: string;
  default_entity_id: string;
  object_id: string;
  device: Record<string, unknown> & { identifiers: string[]; name: string; via_device?: string };
  availability: { topic: string }[];
  availability_mode: string;
  state_topic?: string;
  command_topic?: string;
};

/** Discovery config topic → parsed payload, from retained messages. */
function configs(recorder: Recorder): Map<string, Config> {
  const out = new Map<string, Config>();
  for (const [topic, m] of recorder.latest("homeassistant/")) {
    if (topic.endsWith("/config") && m.payload !== "") out.set(topic, JSON.parse(m.payload) as Config);
  }
  return out;
}

describe("Home Assistant discovery (embedded broker, two instances)", () => {
  let store: SnapshotStore;
  let bridge: MqttBridge;
  let states: Recorder;
  let all: Map<string, Config>;
  const recorders: Recorder[] = [];
  const connect = async (topics: string[]) => {
    const r = await Recorder.connect(bridge.embeddedBroker!, topics);
    recorders.push(r);
    return r;
  };

  before(async () => {
    const config = await mqttTestConfig({ instances: { "rack-a": true, cluster: false }, expireAfter: 120 });
    const bus = new EventBus();
    store = new SnapshotStore(["rack-a", "cluster"], { bus: bus });
    bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    states = await connect(["pdu-bridge/#"]);
    // The same device id in both instances: only the instance keeps them apart.
    store.recordSuccess("rack-a", singleUnit("rack-a", "DEV1", 2));
    store.recordSuccess("cluster", cluster("cluster", "DEV1", "DEV2"));
    const late = await connect(["homeassistant/#"]);
    // rack-a: 9 for the PDU device (6 + problem, alarm events, the phase's load problem) + (6 + 5
    // settings) per outlet × 2; cluster: 9 × 2 devices + 4 per outlet × 4 + 4 group sensors. (No
    // lifetime energy sensors: this bridge keeps no counters; test/energy/lifetime.test.ts has them.)
    await waitFor(() => configs(late).size >= 69, "discovery configs");
    await sleep(200);
    all = configs(late);
    assert.equal(all.size, 69);
  });

  after(async () => {
    for (const r of recorders) await r.close();
    await bridge.stop();
    store.close();
  });

  it("never reuses a config topic, unique id, entity id or device identifier across instances", () => {
    const uniqueIds = [...all.values()].map((c) => `${c.default_entity_id.split(".")[0]}:${c.unique_id}`);
    assert.equal(new Set(uniqueIds).size, all.size);
    const entityIds = [...all.values()].map((c) => c.default_entity_id);
    assert.equal(new Set(entityIds).size, all.size);
    const rackIds = new Set(
      [...all.values()].filter((c) => c.unique_id.includes("_rack-a_")).map((c) => c.unique_id),
    );
    const clusterIds = [...all.values()]
      .filter((c) => c.unique_id.includes("_cluster_"))
      .map((c) => c.unique_id);
    assert.ok(rackIds.size > 0 && clusterIds.length > 0);
    for (const id of clusterIds) assert.equal(rackIds.has(id), false, id);
    // Device identifiers: one name per identifier (the PDU device DEV1 of each instance is distinct).
    const devices = new Map<string, string>();
    for (const c of all.values()) {
      const id = c.device.identifiers[0]!;
      assert.equal(devices.get(id) ?? c.device.name, c.device.name, id);
      devices.set(id, c.device.name);
    }
    assert.ok(devices.has("pdu-bridge_rack-a_device_DEV1") && devices.has("pdu-bridge_cluster_device_DEV1"));
  });

  it("gives every state topic in a config a message the bridge published, under the config's instance", async () => {
    await states.waitFor("pdu-bridge/cluster/groups/2/measurements/voltage");
    const published = new Set(states.latest().keys());
    for (const [topic, c] of all) {
      const instance = topic.split("/")[2]!.replace(/^pdu-bridge_/, "");
      for (const t of [c.state_topic, c.command_topic]) {
        if (t !== undefined) assert.ok(t.startsWith(`pdu-bridge/${instance}/`), `${topic}: ${t}`);
      }
      // An event entity's topic carries a message only when something happens.
      if (c.state_topic !== undefined && !topic.startsWith("homeassistant/event/"))
        assert.ok(published.has(c.state_topic), `${topic}: ${c.state_topic} never published`);
      assert.deepEqual(c.availability, [
        { topic: "pdu-bridge/status" },
        { topic: `pdu-bridge/${instance}/status` },
      ]);
      assert.equal(c.availability_mode, "all");
    }
  });

  it("gives a switchable instance switches and buttons on the command topics", () => {
    const base = "homeassistant/switch/pdu-bridge_rack-a/outlet_DEV1_0_power/config";
    const sw = all.get(base);
    assert.ok(sw, base);
    assert.equal(sw.command_topic, "pdu-bridge/rack-a/DEV1/outlets/0/set");
    assert.equal(sw.state_topic, "pdu-bridge/rack-a/DEV1/outlets/0/state");
    assert.equal(sw.payload_on, "on");
    assert.equal(sw.payload_off, "off");
    assert.equal(sw.unique_id, "pdu-bridge_rack-a_outlet_DEV1_0_power");
    assert.equal(sw.default_entity_id, "switch.pdu_bridge_rack_a_outlet_dev1_0_power");
    assert.equal(sw.device.via_device, "pdu-bridge_rack-a_device_DEV1");
    const reboot = all.get("homeassistant/button/pdu-bridge_rack-a/outlet_DEV1_0_reboot/config");
    assert.equal(reboot?.command_topic, "pdu-bridge/rack-a/DEV1/outlets/0/reboot");
    const reset = all.get("homeassistant/button/pdu-bridge_rack-a/outlet_DEV1_1_reset-stats/config");
    assert.equal(reset?.command_topic, "pdu-bridge/rack-a/DEV1/outlets/1/resetStats");
  });

  it("gives a read-only instance no switch or button, and a power binary sensor per outlet", () => {
    const clusterTopics = [...all.keys()].filter((t) => t.includes("/pdu-bridge_cluster/"));
    assert.deepEqual(
      clusterTopics.filter(
        (t) => t.startsWith("homeassistant/switch/") || t.startsWith("homeassistant/button/"),
      ),
      [],
    );
    const power = all.get("homeassistant/binary_sensor/pdu-bridge_cluster/outlet_DEV2_1_power/config");
    assert.equal(power?.state_topic, "pdu-bridge/cluster/DEV2/outlets/1/state");
    assert.equal(power?.device_class, "power");
    assert.equal(power?.command_topic, undefined);
  });

  it("classifies sensors and sets expire_after", () => {
    const sensor = (t: string) => all.get(`homeassistant/sensor/${t}/config`);
    const expect = [
      ["pdu-bridge_rack-a/outlet_DEV1_0_realPower", "power", "measurement", "W"],
      // The PDU's own counter can be reset: never `total_increasing` (Home Assistant would read a new cycle).
      ["pdu-bridge_rack-a/outlet_DEV1_0_energy", "energy", "total", "kWh"],
      ["pdu-bridge_rack-a/outlet_DEV1_0_current", "current", "measurement", "A"],
      ["pdu-bridge_cluster/entity_DEV2_phase0_voltage", "voltage", "measurement", "V"],
    ] as const;
    for (const [topic, deviceClass, stateClass, unit] of expect) {
      const c = sensor(topic);
      assert.ok(c, topic);
      assert.equal(c.device_class, deviceClass, topic);
      assert.equal(c.state_class, stateClass, topic);
      assert.equal(c.unit_of_measurement, unit, topic);
      assert.equal(c.expire_after, 120, topic);
    }
    const alarm = all.get("homeassistant/binary_sensor/pdu-bridge_cluster/device_DEV1_alarm/config");
    assert.equal(alarm?.device_class, "problem");
    assert.equal(alarm?.state_topic, "pdu-bridge/cluster/DEV1/alarm");
    assert.equal(alarm?.expire_after, 120);
  });

  it("makes OneView groups devices under the master, with rollup sensors", async () => {
    const total = all.get("homeassistant/sensor/pdu-bridge_cluster/group_total_pduTotalRealPower/config");
    assert.ok(total);
    assert.equal(total.state_topic, "pdu-bridge/cluster/groups/total/measurements/pduTotalRealPower");
    assert.equal(total.value_template, "{{ value_json.sum }}");
    assert.equal(total.device_class, "power");
    assert.equal(total.device.via_device, "pdu-bridge_cluster_device_DEV1");
    const voltage = all.get("homeassistant/sensor/pdu-bridge_cluster/group_2_voltage/config");
    assert.equal(voltage?.value_template, "{{ value_json.avg }}");
    assert.equal(voltage?.device.name, "cluster Web servers", "the group named after its instance");
    const m = await states.waitFor("pdu-bridge/cluster/groups/total/measurements/pduTotalRealPower");
    assert.deepEqual(JSON.parse(m.payload), { sum: 218, avg: 109, min: 109, max: 109 });
    assert.equal(m.retain, false);
  });

  it("keeps every id when an outlet is renamed: same config topic, new device name", async () => {
    const live = await connect(["homeassistant/switch/pdu-bridge_rack-a/#"]);
    const topic = "homeassistant/switch/pdu-bridge_rack-a/outlet_DEV1_0_power/config";
    await live.waitFor(topic);
    const renamed = snapshot("rack-a", [
      device({ id: "DEV1", outlets: [outlet(0, { label: "web-07" }), outlet(1)] }),
    ]);
    store.recordSuccess("rack-a", renamed);
    const m = await live.waitFor(topic, (x) => x.payload.includes("web-07"));
    const c = JSON.parse(m.payload) as Config;
    assert.equal(c.unique_id, all.get(topic)?.unique_id);
    assert.equal(c.default_entity_id, all.get(topic)?.default_entity_id);
    assert.equal(c.device.name, "rack-a Rack PDU web-07", "its PDU, then its label");
    assert.ok(!JSON.stringify([c.unique_id, c.object_id, c.device.identifiers]).includes("web-07"));
    assert.deepEqual(
      live.messages.map((x) => x.topic).filter((t) => t !== topic && !t.includes("outlet_DEV1_1_")),
      [],
      "no other switch config appeared",
    );
  });

  it("republishes every config when Home Assistant sends online on its status topic", async () => {
    const live = await connect(["homeassistant/+/+/+/config"]);
    // The retained replay first (all of it, however slow the machine), then the live republish.
    await waitFor(() => configs(live).size === all.size, "the retained replay");
    live.clear();
    const before = bridge.homeAssistant().lastDiscoveryUtc ?? 0;
    await live.publish("homeassistant/status", "online");
    await waitFor(() => configs(live).size === all.size, "every config again");
    assert.equal(
      live.messages.every((m) => !m.retain),
      true,
      "live republish, not retained replay",
    );
    assert.ok((bridge.homeAssistant().lastDiscoveryUtc ?? 0) > before || before === 0);
    assert.equal(bridge.homeAssistant().enabled, true);
    assert.equal(bridge.homeAssistant().discoveryTopic, "homeassistant");
  });

  it("clears the reset-statistics buttons when the device can no longer reset, and announces them again when it can", async () => {
    const live = await connect(["homeassistant/button/pdu-bridge_rack-a/#"]);
    const reset = (i: number) => `homeassistant/button/pdu-bridge_rack-a/outlet_DEV1_${i}_reset-stats/config`;
    const reboot = (i: number) => `homeassistant/button/pdu-bridge_rack-a/outlet_DEV1_${i}_reboot/config`;
    await live.waitFor(reset(1), (m) => m.payload !== "");
    const outlets = [outlet(0), outlet(1)];
    // Polls of the changed device until discovery has caught up (the shape is checked every few polls).
    const pollUntil = async (canResetOutletEnergy: boolean, done: () => boolean) => {
      live.clear();
      await waitFor(() => {
        if (done()) return true;
        store.recordSuccess(
          "rack-a",
          snapshot("rack-a", [device({ id: "DEV1", outlets, canResetOutletEnergy })]),
        );
        return false;
      }, "discovery of the changed device");
    };
    const got = (topic: string, cleared: boolean) =>
      live.on(topic).some((m) => (m.payload === "") === cleared);
    await pollUntil(false, () => got(reset(0), true) && got(reset(1), true));
    const later = await connect(["homeassistant/button/pdu-bridge_rack-a/#"]);
    await later.waitFor(reboot(1));
    await sleep(200);
    const retained = [...later.latest("homeassistant/")].filter(([, m]) => m.payload !== "").map(([t]) => t);
    assert.deepEqual(
      retained.sort(),
      [reboot(0), reboot(1)],
      "the reboot buttons stay; no reset button is retained",
    );
    await pollUntil(true, () => got(reset(0), false) && got(reset(1), false));
    assert.match(live.last(reset(0))?.payload ?? "", /"name":"Reset statistics"/);
  });
});

describe("discovery payloads (pure)", () => {
  const topics = new Topics("pdu-bridge");
  const guard = new TopicIdGuard(silentLogger());

  it("omits expire_after when SensorExpireAfterSeconds is 0", () => {
    const snap = singleUnit("default", "DEV1", 1);
    const built = buildDiscovery(
      { topics, prefix: "homeassistant", expireAfter: 0 },
      "default",
      true,
      discoveryShape("default", snap, guard),
    );
    for (const payload of built.values())
      assert.equal("expire_after" in (JSON.parse(payload) as object), false);
  });

  it("a device that cannot switch: no switch or reboot button, a power binary sensor per outlet", () => {
    const snap = snapshot("default", [
      device({ id: "METERED", outlets: [outlet(0), outlet(1)], canSwitchOutlets: false }),
      device({ id: "SWITCHED", outlets: [outlet(0)] }),
    ]);
    const built = buildDiscovery(
      { topics, prefix: "homeassistant", expireAfter: 60 },
      "default",
      true,
      discoveryShape("default", snap, guard),
    );
    const of = (id: string, component: string, kind: string) =>
      [...built.keys()].filter(
        (t) =>
          t.startsWith(`homeassistant/${component}/`) &&
          t.includes(`outlet_${id}_`) &&
          t.endsWith(`_${kind}/config`),
      );
    assert.equal(of("METERED", "switch", "power").length, 0);
    assert.equal(of("METERED", "button", "reboot").length, 0);
    assert.equal(of("METERED", "binary_sensor", "power").length, 2);
    assert.equal(of("SWITCHED", "switch", "power").length, 1);
    assert.equal(of("SWITCHED", "button", "reboot").length, 1);
    assert.equal(of("SWITCHED", "binary_sensor", "power").length, 0);
  });

  it("skips devices whose id cannot be a topic level, and builds valid object ids for odd ones", () => {
    const snap = snapshot("default", [
      device({ id: "BAD/ID", outlets: [outlet(0)] }),
      device({ id: "odd.id", outlets: [outlet(0)] }),
    ]);
    const built = buildDiscovery(
      { topics, prefix: "homeassistant", expireAfter: 60 },
      "default",
      false,
      discoveryShape("default", snap, guard),
    );
    const topicsBuilt = [...built.keys()];
    assert.ok(topicsBuilt.length > 0);
    assert.equal(topicsBuilt.filter((t) => t.includes("BAD")).length, 0);
    for (const t of topicsBuilt)
      assert.match(t, /^homeassistant\/[a-z_]+\/[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+\/config$/);
  });
});
