import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { humanize, idPart, sensorClass } from "../../src/mqtt/discovery.js";
import { refreshPeriodMs } from "../../src/mqtt/bridge.js";
import { TopicIdGuard, Topics, topicUnsafe, type TopicKey } from "../../src/mqtt/topics.js";
import { LogCapture } from "../../testkit/log-capture.js";

const t = new Topics("pdu-bridge");

describe("topic names (contract §3)", () => {
  it("builds every topic of the table", () => {
    assert.equal(t.bridgeStatus(), "pdu-bridge/status");
    assert.equal(t.instanceStatus("default"), "pdu-bridge/default/status");
    assert.equal(t.deviceState("default", "A0AE"), "pdu-bridge/default/A0AE/state");
    assert.equal(t.deviceAlarm("default", "A0AE"), "pdu-bridge/default/A0AE/alarm");
    assert.equal(t.outletState("default", "A0AE", 10), "pdu-bridge/default/A0AE/outlets/10/state");
    assert.equal(t.outletLabel("default", "A0AE", 0), "pdu-bridge/default/A0AE/outlets/0/label");
    assert.equal(
      t.outletMeasurement("default", "A0AE", 0, "realPower"),
      "pdu-bridge/default/A0AE/outlets/0/measurements/realPower",
    );
    assert.equal(
      t.entityMeasurement("default", "A0AE", "phase0", "voltage"),
      "pdu-bridge/default/A0AE/entity/phase0/measurements/voltage",
    );
    assert.equal(
      t.groupMeasurement("rack", "total", "pduTotalRealPower"),
      "pdu-bridge/rack/groups/total/measurements/pduTotalRealPower",
    );
    assert.equal(
      t.outletCommand("default", "A0AE", 3, "resetStats"),
      "pdu-bridge/default/A0AE/outlets/3/resetStats",
    );
    assert.equal(t.groupCommand("rack", "2"), "pdu-bridge/rack/groups/2/set");
  });

  it("names every topic key as the named builders do", () => {
    const keys: [TopicKey, string][] = [
      [{ kind: "deviceState", deviceId: "A0AE" }, t.deviceState("default", "A0AE")],
      [{ kind: "deviceAlarm", deviceId: "A0AE" }, t.deviceAlarm("default", "A0AE")],
      [{ kind: "outletState", deviceId: "A0AE", index: 3 }, t.outletState("default", "A0AE", 3)],
      [{ kind: "outletLabel", deviceId: "A0AE", index: 3 }, t.outletLabel("default", "A0AE", 3)],
      [
        { kind: "outletMeasurement", deviceId: "A0AE", index: 3, type: "energy" },
        t.outletMeasurement("default", "A0AE", 3, "energy"),
      ],
      [
        { kind: "entityMeasurement", deviceId: "A0AE", entityKey: "phase0", type: "voltage" },
        t.entityMeasurement("default", "A0AE", "phase0", "voltage"),
      ],
      [
        { kind: "groupMeasurement", groupKey: "2", key: "realPower" },
        t.groupMeasurement("default", "2", "realPower"),
      ],
    ];
    for (const [key, topic] of keys) assert.equal(t.topic("default", key), topic);
    assert.equal(Topics.homeAssistantStatus("homeassistant"), "homeassistant/status");
  });

  it("subscribes to exactly the command topics of one instance", () => {
    assert.deepEqual(t.commandSubscriptions("rack"), [
      "pdu-bridge/rack/+/outlets/+/set",
      "pdu-bridge/rack/+/outlets/+/reboot",
      "pdu-bridge/rack/+/outlets/+/resetStats",
      "pdu-bridge/rack/groups/+/set",
      "pdu-bridge/rack/+/outlets/+/label/set",
      "pdu-bridge/rack/+/outlets/+/onDelay/set",
      "pdu-bridge/rack/+/outlets/+/offDelay/set",
      "pdu-bridge/rack/+/outlets/+/rebootDelay/set",
      "pdu-bridge/rack/+/outlets/+/poaAction/set",
    ]);
  });

  it("parses a setting's command topic, and refuses unknown settings and deeper topics", () => {
    assert.deepEqual(t.parseCommand("pdu-bridge/rack/A0AE/outlets/3/onDelay/set"), {
      ok: true,
      instanceId: "rack",
      target: { kind: "outlet", deviceId: "A0AE", index: 3 },
      command: "set",
      setting: "onDelay",
    });
    assert.equal(t.parseCommand("pdu-bridge/rack/A0AE/outlets/3/colour/set").ok, false);
    assert.equal(t.parseCommand("pdu-bridge/rack/A0AE/outlets/03/label/set").ok, false);
    assert.equal(t.parseCommand("pdu-bridge/rack/A0AE/outlets/3/label/set/x").ok, false);
    assert.equal(
      t.parseCommand("pdu-bridge/rack/A0AE/outlets/3/label").ok,
      false,
      "the retained topic is no command",
    );
    assert.equal(
      t.outletSettingCommand("rack", "A0AE", 3, "label"),
      `${t.outletLabel("rack", "A0AE", 3)}/set`,
    );
  });

  it("keeps a multi-level parent topic as given", () => {
    const nested = new Topics("site/pdus");
    assert.equal(nested.outletState("a", "D", 1), "site/pdus/a/D/outlets/1/state");
    assert.deepEqual(nested.parseCommand("site/pdus/a/D/outlets/1/set"), {
      ok: true,
      instanceId: "a",
      target: { kind: "outlet", deviceId: "D", index: 1 },
      command: "set",
    });
  });
});

describe("command topic parser", () => {
  it("parses outlet and group commands", () => {
    assert.deepEqual(t.parseCommand("pdu-bridge/default/A0AE/outlets/12/reboot"), {
      ok: true,
      instanceId: "default",
      target: { kind: "outlet", deviceId: "A0AE", index: 12 },
      command: "reboot",
    });
    assert.deepEqual(t.parseCommand("pdu-bridge/rack/groups/total/set"), {
      ok: true,
      instanceId: "rack",
      target: { kind: "group", groupKey: "total" },
      command: "set",
    });
  });

  it("refuses everything that is not exactly a command topic", () => {
    const refused = [
      "other/default/A0AE/outlets/0/set",
      "pdu-bridge/default/A0AE/outlets/0/state",
      "pdu-bridge/default/A0AE/outlets/0/toggle",
      "pdu-bridge/default/A0AE/outlets/01/set",
      "pdu-bridge/default/A0AE/outlets/-1/set",
      "pdu-bridge/default/A0AE/outlets/x/set",
      "pdu-bridge/default//outlets/0/set",
      "pdu-bridge//A0AE/outlets/0/set",
      "pdu-bridge/default/+/outlets/0/set",
      "pdu-bridge/default/A0AE/outlets/#",
      "pdu-bridge/default/A0AE/outlets/+/set",
      "pdu-bridge/default/groups/+/set",
      "pdu-bridge/default/groups//set",
      "pdu-bridge/default/groups/total/reboot",
      "pdu-bridge/default/A0AE/outlets/0/set/extra",
      "pdu-bridge/status",
    ];
    for (const topic of refused) {
      const parsed = t.parseCommand(topic);
      assert.equal(parsed.ok, false, topic);
    }
  });
});

describe("topic-unsafe ids", () => {
  it("are empty or contain / + # or NUL", () => {
    for (const id of ["", "a/b", "a+b", "#", "a\u0000"])
      assert.notEqual(topicUnsafe(id), null, JSON.stringify(id));
    for (const id of ["A0AE260C851900C3", "phase0", "2", "with space", "ümlaut"])
      assert.equal(topicUnsafe(id), null);
  });

  it("are skipped with one warning per id", () => {
    const capture = new LogCapture();
    const guard = new TopicIdGuard(capture.logger);
    assert.equal(guard.ok("default", "device id", "A/B"), false);
    assert.equal(guard.ok("default", "device id", "A/B"), false);
    assert.equal(guard.ok("default", "device id", "AB"), true);
    const warnings = capture.lines.filter((l) => l.level === "warn");
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]?.msg), /"A\/B".*skipped/);
  });
});

describe("discovery helpers", () => {
  it("keeps plain id parts and makes others valid and distinct", () => {
    assert.equal(idPart("A0AE260C851900C3"), "A0AE260C851900C3");
    assert.equal(idPart("rack-a"), "rack-a");
    assert.match(idPart("a_b"), /^a-b-[0-9a-f]{8}$/);
    assert.notEqual(idPart("a_b"), idPart("a.b"));
    assert.match(idPart("site/pdus"), /^[A-Za-z0-9-]+$/);
  });

  it("maps measurement types to Home Assistant classes case-insensitively", () => {
    assert.deepEqual(sensorClass("realPower"), {
      device_class: "power",
      state_class: "measurement",
      unit: "W",
      stat: "sum",
    });
    assert.equal(sensorClass("REALPOWER").device_class, "power");
    // The PDU's own counter resets (resetStats, a replaced unit): `total`; the bridge's lifetime
    // counter never decreases (docs/energy.md): `total_increasing`.
    assert.equal(sensorClass("energy").state_class, "total");
    assert.equal(sensorClass("energyLifetime").state_class, "total_increasing");
    assert.equal(sensorClass("apparentPower").device_class, "apparent_power");
    assert.equal(sensorClass("powerFactor").device_class, "power_factor");
    assert.equal(sensorClass("voltage").stat, "avg");
    assert.equal(sensorClass("currentCrestFactor").device_class, undefined);
    assert.equal(humanize("pduTotalRealPower"), "Pdu total real power");
  });

  it("refreshes values at half the expiry, or every 5 minutes when sensors never expire", () => {
    assert.equal(refreshPeriodMs(300), 150_000);
    assert.equal(refreshPeriodMs(2), 1000);
    assert.equal(refreshPeriodMs(0), 300_000);
  });
});
