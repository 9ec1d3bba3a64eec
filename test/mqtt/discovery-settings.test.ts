/**
 * Home Assistant discovery of outlet settings (contract §10): a `number` per delay, a `select` for
 * the power-on action and a `text` for the label, only where ActionsEnabled, each accepted by Home
 * Assistant's own discovery rules (as transcribed in testkit/ha-mqtt-rules.ts); no label `text` for
 * an outlet renamed by an override.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DELAY_MAX, LABEL_MAX, OUTLET_SETTINGS, POA_ACTIONS } from "../../src/control/settings.js";
import { silentLogger } from "../../src/log.js";
import { applyOverrides } from "../../src/pdu/overrides.js";
import { buildDiscovery, discoveryShape } from "../../src/mqtt/discovery.js";
import { TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import { EARLIEST_SUPPORTED_HA, haDeviceProblems, haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import { outlet, singleUnit, snapshot, device } from "../../testkit/snapshot-builders.js";

type Json = Record<string, unknown>;

const topics = new Topics("pdu-bridge");
const guard = new TopicIdGuard(silentLogger());
const options = { topics, prefix: "homeassistant", expireAfter: 120 };

/** component → configs of the setting entities (number, select, text) of an instance. */
function settingConfigs(actionsEnabled: boolean, snap = singleUnit("rack", "DEV1", 2)): [string, Json][] {
  const built = buildDiscovery(options, "rack", actionsEnabled, discoveryShape("rack", snap, guard));
  return [...built]
    .map(([topic, payload]): [string, Json] => [topic.split("/")[1] ?? "", JSON.parse(payload) as Json])
    .filter(([component]) => ["number", "select", "text"].includes(component));
}

describe("discovery of outlet settings", () => {
  it("gives every outlet a number per delay, a select and a text, all accepted by Home Assistant's rules", () => {
    const configs = settingConfigs(true);
    assert.equal(configs.length, 2 * OUTLET_SETTINGS.length);
    for (const [component, config] of configs) {
      assert.deepEqual(
        haDiscoveryProblems(component, config),
        [],
        `${component} ${String(config.unique_id)}`,
      );
      assert.equal(config.entity_category, "config");
      assert.equal(config.command_topic, `${String(config.state_topic)}/set`);
      assert.deepEqual(config.availability, [
        { topic: "pdu-bridge/status" },
        { topic: "pdu-bridge/rack/status" },
      ]);
      assert.equal(config.availability_mode, "all");
    }
    const byUniqueId = new Map(configs.map(([c, config]) => [String(config.unique_id), { c, config }]));
    const onDelay = byUniqueId.get("pdu-bridge_rack_outlet_DEV1_0_onDelay");
    assert.equal(onDelay?.c, "number");
    assert.equal(onDelay.config.state_topic, topics.outletSetting("rack", "DEV1", 0, "onDelay"));
    assert.deepEqual(
      [
        onDelay.config.min,
        onDelay.config.max,
        onDelay.config.step,
        onDelay.config.mode,
        onDelay.config.unit_of_measurement,
      ],
      [0, DELAY_MAX, 1, "box", "s"],
    );
    const poa = byUniqueId.get("pdu-bridge_rack_outlet_DEV1_1_poaAction");
    assert.equal(poa?.c, "select");
    assert.deepEqual(poa.config.options, [...POA_ACTIONS]);
    const label = byUniqueId.get("pdu-bridge_rack_outlet_DEV1_1_label");
    assert.equal(label?.c, "text");
    assert.equal(label.config.state_topic, topics.outletLabel("rack", "DEV1", 1));
    assert.deepEqual([label.config.min, label.config.max], [1, LABEL_MAX]);
  });

  it("gives a read-only instance none of them", () => {
    assert.deepEqual(settingConfigs(false), []);
  });

  it("leaves out a setting the PDU does not report (it would have no state)", () => {
    const bare = { ...outlet(0), onDelay: null, poaAction: null };
    const configs = settingConfigs(true, snapshot("rack", [device({ id: "DEV1", outlets: [bare] })]));
    assert.deepEqual(configs.map(([, c]) => String(c.unique_id).split("_").at(-1)).sort(), [
      "label",
      "offDelay",
      "rebootDelay",
    ]);
  });

  it("gives an outlet renamed by an override no label text (its label topic carries the Name, not the PDU's label)", () => {
    const snap = singleUnit("rack", "DEV1", 2);
    const renamed = applyOverrides(snap, {
      id: "rack",
      Overrides: { Outlets: { DEV1: { "0": { Name: "core-switch" } } }, Entities: {}, Groups: {} },
    });
    const configs = settingConfigs(true, renamed);
    for (const [component, config] of configs) assert.deepEqual(haDiscoveryProblems(component, config), []);
    const ids = (index: number) =>
      configs
        .map(([, c]) => String(c.unique_id))
        .filter((id) => id.startsWith(`pdu-bridge_rack_outlet_DEV1_${index}_`))
        .map((id) => id.split("_").at(-1))
        .sort();
    assert.deepEqual(
      ids(0),
      ["offDelay", "onDelay", "poaAction", "rebootDelay"],
      "no text: saving it would write the Name",
    );
    assert.deepEqual(
      ids(1),
      ["label", "offDelay", "onDelay", "poaAction", "rebootDelay"],
      "the other outlet keeps it",
    );
  });

  it("the transcribed rules refuse what Home Assistant refuses", () => {
    const base = { command_topic: "a/b/set", state_topic: "a/b" };
    assert.notDeepEqual(haDiscoveryProblems("number", { ...base, min: 10, max: 10 }), []);
    assert.notDeepEqual(haDiscoveryProblems("number", { ...base, step: 0 }), []);
    assert.notDeepEqual(haDiscoveryProblems("number", { ...base, mode: "dial" }), []);
    assert.notDeepEqual(haDiscoveryProblems("select", { ...base }), []);
    assert.notDeepEqual(haDiscoveryProblems("text", { ...base, max: 256 }), []);
    assert.notDeepEqual(haDiscoveryProblems("text", { ...base, min: 5, max: 4 }), []);
    assert.notDeepEqual(haDiscoveryProblems("text", { state_topic: "a/b" }), [], "command_topic is required");
    assert.notDeepEqual(haDiscoveryProblems("text", { ...base, entity_category: "settings" }), []);
    assert.notDeepEqual(
      haDiscoveryProblems("text", { ...base, maxlength: 3 }),
      [],
      "unknown keys are reported",
    );
  });

  it("the device keys are checked for the Home Assistant releases supported", () => {
    const config = (device: Record<string, unknown>) => ({ state_topic: "a/b", device });
    const pdu = {
      identifiers: ["x"],
      name: "rack-a PDU",
      manufacturer: "Vertiv",
      model: "rPDU",
      model_id: "IMD-03E",
    };
    assert.deepEqual(
      haDiscoveryProblems("sensor", config(pdu)),
      [],
      "the earliest release supported knows model_id",
    );
    assert.deepEqual(haDiscoveryProblems("sensor", config(pdu), [2025, 11]), [], "and every later one");
    assert.deepEqual(haDiscoveryProblems("sensor", config(pdu), [2024, 7]), [
      "device key model_id is unknown to Home Assistant 2024.7 (known since 2024.8)",
    ]);
    assert.deepEqual(
      haDeviceProblems({ ids: ["x"], mdl_id: "y" }, [2024, 7]).length,
      1,
      "abbreviated keys too",
    );
    assert.deepEqual(haDiscoveryProblems("sensor", config({ ...pdu, model_number: "y" })), [
      `device key model_number is unknown to Home Assistant ${EARLIEST_SUPPORTED_HA.join(".")}`,
    ]);
    assert.notDeepEqual(haDiscoveryProblems("sensor", config({ name: "no ids" })), []);
    assert.notDeepEqual(
      haDiscoveryProblems("sensor", { state_topic: "a/b", origin: { name: "x", version: "1" } }),
      [],
    );
    assert.notDeepEqual(haDiscoveryProblems("button", { command_topic: "a/b", device_class: "reboot" }), []);
    assert.notDeepEqual(haDiscoveryProblems("switch", { command_topic: "a/b", device_class: "plug" }), []);
  });
});
