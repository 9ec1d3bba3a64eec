/**
 * The publisher against the embedded broker (aedes): the topic table with payloads and retain
 * flags, change-only publishing with the refresh period, availability on poll failures, latched
 * states, and clearing what disappears.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import type { Config } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { DISCOVERY_RECHECK_POLLS } from "../../src/mqtt/publisher.js";
import { restamp, type Snapshot } from "../../src/pdu/model.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { Recorder, sleep, waitFor } from "../../testkit/mqtt-client.js";
import { device, outlet, snapshot, type OutletSpec } from "../../testkit/snapshot-builders.js";

const P = "pdu-bridge/default";
const D = `${P}/DEV1`;

function unit(specs: OutletSpec[], voltage = 121.4) {
  return snapshot("default", [device({ id: "DEV1", outlets: specs.map((s, i) => outlet(i, s)), voltage })]);
}

/** Same outlets, labels and measurement types as the first test's snapshot: discovery unchanged. */
const steady = (voltage: number) =>
  unit(
    [{ current: 0.61, power: 70, label: "web-01" }, { state: "off" }, { state: "on", power: null }],
    voltage,
  );

describe("publisher (embedded broker)", () => {
  let config: Config;
  let store: SnapshotStore;
  let bridge: MqttBridge;
  let live: Recorder;
  const recorders: Recorder[] = [];
  const late = async () => {
    const r = await Recorder.connect(bridge.embeddedBroker!, ["pdu-bridge/#", "homeassistant/#"]);
    recorders.push(r);
    return r;
  };

  before(async () => {
    // expire_after 2 s: values are refreshed after 1 s.
    config = await mqttTestConfig({ instances: { default: true }, expireAfter: 2 });
    const bus = new EventBus();
    store = new SnapshotStore(["default"], { bus: bus });
    bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    live = await Recorder.connect(bridge.embeddedBroker!, ["pdu-bridge/#", "homeassistant/#"]);
    recorders.push(live);
  });

  after(async () => {
    for (const r of recorders) await r.close();
    await bridge.stop();
    store.close();
  });

  it("publishes every topic of the table with its payload and retain flag", async () => {
    await live.waitFor("pdu-bridge/status", (m) => m.payload === "online");
    store.recordSuccess(
      "default",
      unit([{ state: "on", label: "web-01", power: 58 }, { state: "off" }, { state: "on", power: null }]),
    );
    await live.waitFor(`${D}/outlets/2/label`);
    await live.waitFor(`${D}/entity/total0/measurements/realPower`);

    const values: Record<string, string> = {
      [`${D}/state`]: "normal",
      [`${D}/alarm`]: "none",
      [`${D}/outlets/0/measurements/realPower`]: "58",
      [`${D}/outlets/0/measurements/current`]: "0.52",
      [`${D}/outlets/0/measurements/energy`]: "301.118",
      [`${D}/outlets/1/measurements/realPower`]: "0",
      [`${D}/entity/phase0/measurements/voltage`]: "121.4",
      [`${D}/entity/phase0/measurements/current`]: "1.1",
      [`${D}/entity/total0/measurements/energy`]: "812.337",
      [`${D}/entity/total0/measurements/realPower`]: "109",
    };
    const retained: Record<string, string> = {
      "pdu-bridge/status": "online",
      [`${P}/status`]: "online",
      [`${D}/outlets/0/state`]: "on",
      [`${D}/outlets/0/label`]: "web-01",
      [`${D}/outlets/1/state`]: "off",
      [`${D}/outlets/1/label`]: "Outlet 2",
      [`${D}/outlets/2/state`]: "on",
      [`${D}/outlets/2/label`]: "Outlet 3",
      // The phase's load (no rating configured) and the active alarms (none).
      [`${D}/entity/phase0/load`]: '{"percent":null,"state":"normal"}',
      [`${P}/alarms`]: "[]",
      [`${P}/alarms/omitted`]: "0",
      // The settings as the snapshot reports them (the test snapshot's outlets all have the same).
      ...Object.fromEntries(
        [0, 1, 2].flatMap((i) => [
          [`${D}/outlets/${i}/onDelay`, "0"],
          [`${D}/outlets/${i}/offDelay`, "0"],
          [`${D}/outlets/${i}/rebootDelay`, "5"],
          [`${D}/outlets/${i}/poaAction`, "last"],
        ]),
      ),
    };
    for (const [topic, payload] of Object.entries(values)) {
      const m = await live.waitFor(topic);
      assert.equal(m.payload, payload, topic);
      assert.equal(m.retain, false, topic);
    }
    // The non-numeric reading is skipped, its numeric siblings are not.
    assert.equal(live.on(`${D}/outlets/2/measurements/realPower`).length, 0);
    assert.equal(live.last(`${D}/outlets/2/measurements/current`)?.payload, "0.52");

    // A subscriber arriving later gets exactly the retained topics, flagged retained.
    const newcomer = await late();
    await newcomer.waitFor(`${D}/outlets/2/label`);
    await sleep(100);
    const seen = newcomer.latest("pdu-bridge/");
    for (const [topic, payload] of Object.entries(retained)) {
      assert.equal(seen.get(topic)?.payload, payload, topic);
      assert.equal(seen.get(topic)?.retain, true, topic);
    }
    for (const topic of Object.keys(values))
      assert.equal(seen.has(topic), false, `${topic} must not be retained`);
    // The ghost cleanup's round markers travel live on the bridge's own topic, never retained.
    const markers = [...seen].filter(([topic]) => topic.startsWith("pdu-bridge/$bridge/"));
    for (const [topic, m] of markers) assert.equal(m.retain, false, topic);
    const states = [...seen.keys()].filter((topic) => !topic.startsWith("pdu-bridge/$bridge/"));
    assert.deepEqual(states.sort(), Object.keys(retained).sort());
  });

  it("publishes a value only when it changed, until the refresh period (expire_after / 2) passed", async () => {
    const current = `${D}/outlets/0/measurements/current`;
    const power = `${D}/outlets/0/measurements/realPower`;
    const voltage = `${D}/entity/phase0/measurements/voltage`;
    live.clear();
    store.recordSuccess("default", steady(120));
    await live.waitFor(current, (m) => m.payload === "0.61");
    for (let i = 0; i < 5; i++) store.recordSuccess("default", steady(120));
    // Only the voltage changes: it is published, the unchanged current is not.
    store.recordSuccess("default", steady(119));
    await live.waitFor(voltage, (m) => m.payload === "119");
    assert.equal(live.on(current).length, 1);
    assert.equal(live.on(power).length, 1);
    assert.equal(live.on(`${D}/outlets/0/state`).length, 0, "retained state unchanged: not republished");

    // After the refresh period the next poll republishes unchanged values.
    await sleep(1100);
    store.recordSuccess("default", steady(119));
    await waitFor(() => live.on(current).length === 2, "the refreshed current");
    assert.equal(live.on(current)[1]?.payload, "0.61");
    assert.equal(live.on(power).length, 2);
    assert.equal(live.on(`${D}/outlets/0/state`).length, 0, "retained topics are not refreshed");
  });

  it("goes offline on a failed poll and refreshes nothing until a poll succeeds", async () => {
    const current = `${D}/outlets/0/measurements/current`;
    live.clear();
    store.recordFailure("default", new Error("PDU did not answer"));
    const offline = await live.waitFor(`${P}/status`);
    assert.equal(offline.payload, "offline");
    const newcomer = await late();
    assert.equal((await newcomer.waitFor(`${P}/status`)).payload, "offline");
    assert.equal(newcomer.last(`${P}/status`)?.retain, true);

    // Past the refresh period a command latches an outlet: its state is published, no value is.
    await sleep(1100);
    store.latch("default", "DEV1", 1, "on");
    assert.equal((await live.waitFor(`${D}/outlets/1/state`)).payload, "on");
    await sleep(100);
    assert.deepEqual(
      live.messages
        .filter((m) => m.topic.includes("/measurements/") || m.topic === `${D}/state`)
        .map((m) => m.topic),
      [],
    );

    // The next good poll: online again, and every value again (sensors may have expired meanwhile).
    store.recordSuccess("default", steady(119));
    assert.equal((await live.waitFor(`${P}/status`, (m) => m.payload === "online")).retain, false);
    assert.equal((await live.waitFor(current)).payload, "0.61");
    await live.waitFor(`${D}/entity/phase0/measurements/voltage`, (m) => m.payload === "119");
    assert.equal(live.last(`${D}/outlets/1/state`)?.payload, "on", "the latch still holds");
    store.unlatch("default");
  });

  it("clears the retained state, label and discovery of an outlet that disappears", async () => {
    store.recordSuccess("default", unit([{}, { state: "off" }, { state: "on", label: "db-01" }]));
    await live.waitFor(`${D}/outlets/2/label`, (m) => m.payload === "db-01");
    const configs = [
      "homeassistant/switch/pdu-bridge_default/outlet_DEV1_2_power/config",
      "homeassistant/button/pdu-bridge_default/outlet_DEV1_2_reboot/config",
      "homeassistant/button/pdu-bridge_default/outlet_DEV1_2_reset-stats/config",
      "homeassistant/sensor/pdu-bridge_default/outlet_DEV1_2_realPower/config",
    ];
    for (const topic of configs) await live.waitFor(topic, (m) => m.payload.includes("db-01"));

    store.recordSuccess("default", unit([{}, { state: "off" }]));
    for (const topic of [...configs, `${D}/outlets/2/state`, `${D}/outlets/2/label`]) {
      await live.waitFor(topic, (m) => m.payload === "");
    }
    const newcomer = await late();
    await newcomer.waitFor(`${D}/outlets/1/label`);
    await newcomer.waitFor("homeassistant/switch/pdu-bridge_default/outlet_DEV1_1_power/config");
    await sleep(100);
    const topics = [...newcomer.latest().keys()];
    assert.deepEqual(
      topics.filter((t) => t.includes("/outlets/2/") || t.includes("_DEV1_2_")),
      [],
      "nothing of outlet 2 is retained any more",
    );
  });

  it("shows a renamed device in discovery within a few polls, though no topic changed", async () => {
    const outlets = () => [outlet(0, {}), outlet(1, { state: "off" })];
    const config = "homeassistant/switch/pdu-bridge_default/outlet_DEV1_0_power/config";
    store.recordSuccess("default", snapshot("default", [device({ id: "DEV1", outlets: outlets() })]));
    await live.waitFor(config, (m) => m.payload.includes("Rack PDU"));

    const renamed = () =>
      snapshot("default", [device({ id: "DEV1", label: "Row 4 PDU", outlets: outlets() })]);
    for (let poll = 0; poll < DISCOVERY_RECHECK_POLLS; poll++) {
      store.recordSuccess("default", renamed());
      await sleep(20);
    }
    await live.waitFor(config, (m) => m.payload.includes("Row 4 PDU"));
  });

  it("skips a poll whose content is unchanged, yet refreshes, comes back online and rechecks discovery", async () => {
    const current = `${D}/outlets/0/measurements/current`;
    const voltage = `${D}/entity/phase0/measurements/voltage`;
    const config = "homeassistant/switch/pdu-bridge_default/outlet_DEV1_0_power/config";
    // The devices of the polled snapshot, counting every look at them: a skipped walk takes none.
    let looks = 0;
    const counted = (s: Snapshot): Snapshot =>
      Object.freeze({
        ...s,
        devices: new Proxy(s.devices, {
          get: (target, key, receiver): unknown => {
            looks++;
            return Reflect.get(target, key, receiver) as unknown;
          },
        }),
      });
    const base = counted(steady(118));
    const again = () => store.recordSuccess("default", restamp(base, Date.now()));
    store.recordSuccess("default", base);
    await live.waitFor(voltage, (m) => m.payload === "118");
    // One look at the shape for discovery within the first few identical polls, then none at all.
    for (let poll = 0; poll < DISCOVERY_RECHECK_POLLS; poll++) again();
    looks = 0;
    live.clear();
    for (let poll = 0; poll < 5; poll++) again();
    assert.equal(looks, 0, "identical polls do not walk the snapshot");

    // Past the refresh period the next identical poll sends the unchanged values again.
    await sleep(1100);
    again();
    assert.ok(looks > 0);
    assert.equal((await live.waitFor(current)).payload, "0.61");
    assert.equal((await live.waitFor(voltage)).payload, "118");

    // A failure, then the same answer: online again with every value.
    live.clear();
    store.recordFailure("default", new Error("PDU did not answer"));
    await live.waitFor(`${P}/status`, (m) => m.payload === "offline");
    again();
    await live.waitFor(`${P}/status`, (m) => m.payload === "online");
    assert.equal((await live.waitFor(current)).payload, "0.61");

    // A changed answer after identical ones is published.
    for (let poll = 0; poll < 3; poll++) again();
    store.recordSuccess("default", steady(117));
    assert.equal((await live.waitFor(voltage, (m) => m.payload === "117")).payload, "117");

    // A renamed device followed by identical answers still shows in discovery.
    const renamed = snapshot("default", [
      device({ id: "DEV1", label: "Row 5 PDU", outlets: [outlet(0, {}), outlet(1, { state: "off" })] }),
    ]);
    store.recordSuccess("default", renamed);
    for (let poll = 0; poll < DISCOVERY_RECHECK_POLLS; poll++) {
      store.recordSuccess("default", restamp(renamed, Date.now()));
    }
    await live.waitFor(config, (m) => m.payload.includes("Row 5 PDU"));
  });
});
