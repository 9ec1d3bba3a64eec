/**
 * The command table is the one vocabulary: every surface derives its commands from it (REST enums,
 * MQTT levels, payloads and subscriptions, Home Assistant buttons and switch, the core's checks),
 * so a row added or removed shows on each of them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  acceptedPayloads,
  COMMAND_NAMES,
  COMMANDS,
  commandFromMqtt,
  GROUP_ACTIONS,
  mqttLevels,
  OUTLET_ACTIONS,
} from "../../src/control/commands.js";
import { buildDiscovery, discoveryShape } from "../../src/mqtt/discovery.js";
import { GROUP_COMMANDS, OUTLET_COMMANDS, TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import { silentLogger } from "../../src/log.js";
import type { OutletTarget } from "../../src/pdu/driver.js";
import { consoleBootstrap } from "../../src/ui/alarms.js";
import { configFrom } from "../../testkit/http-harness.js";
import { cluster } from "../../testkit/snapshot-builders.js";

describe("command table", () => {
  it("names each command once, and each form's level and payload pick exactly that row", () => {
    assert.equal(new Set(COMMAND_NAMES).size, COMMANDS.length);
    for (const row of COMMANDS) {
      for (const kind of ["outlet", "group"] as const) {
        const form = kind === "outlet" ? row.outlet : row.group;
        if (form === null) continue;
        const payload = form.mqtt.payload ?? "anything";
        assert.equal(commandFromMqtt(kind, form.mqtt.level, ` ${payload.toUpperCase()} `)?.name, row.name);
      }
    }
    assert.equal(commandFromMqtt("outlet", "set", "reboot"), null, "an outlet reboots on its own level");
    assert.equal(commandFromMqtt("group", "resetStats", ""), null, "no group level resetStats");
    assert.equal(acceptedPayloads("outlet", "set"), "on or off");
    assert.equal(acceptedPayloads("group", "set"), "on, off or reboot");
  });

  it("gives REST its actions and MQTT its levels in table order", () => {
    assert.deepEqual(OUTLET_ACTIONS, ["on", "off", "reboot", "resetStats"]);
    assert.deepEqual(GROUP_ACTIONS, ["on", "off", "reboot"]);
    assert.deepEqual(OUTLET_COMMANDS, mqttLevels("outlet"));
    assert.deepEqual(OUTLET_COMMANDS, ["set", "reboot", "resetStats"]);
    assert.deepEqual(GROUP_COMMANDS, ["set"]);
    const parsed = new Topics("p").parseCommand("p/rack/DEV1/outlets/2/resetStats");
    assert.ok(parsed.ok);
    assert.equal(parsed.command, "resetStats");
  });

  it("makes each row's driver call, and only the idempotent ones latch a state", async () => {
    const calls: string[] = [];
    const driver = {
      controlOutlet: (t: OutletTarget, action: string) => {
        calls.push(`${action} ${t.deviceId}/${t.index}`);
        return Promise.resolve();
      },
      resetOutletEnergy: (t: OutletTarget) => {
        calls.push(`reset ${t.deviceId}/${t.index}`);
        return Promise.resolve();
      },
    };
    const target: OutletTarget = { deviceId: "D", index: 1, route: null };
    for (const row of COMMANDS) await row.call(driver, target, new AbortController().signal);
    assert.deepEqual(calls, ["on D/1", "off D/1", "reboot D/1", "reset D/1"]);
    for (const row of COMMANDS) assert.equal(row.latches !== null, row.idempotent, row.name);
  });

  it("gives Home Assistant one button per button row and one switch per outlet", () => {
    const snapshot = cluster("rack", "DEV1", "DEV2");
    const shape = discoveryShape("rack", snapshot, new TopicIdGuard(silentLogger()));
    const options = { topics: new Topics("pdu-bridge"), prefix: "homeassistant", expireAfter: 0 };
    const configs = [...buildDiscovery(options, "rack", true, shape)];
    const outlets = shape.devices.reduce((n, d) => n + d.outlets.length, 0);
    const outletButtons = COMMANDS.filter((c) => c.outlet?.homeAssistant.entity === "button").length;
    const groupButtons = COMMANDS.filter((c) => c.group?.homeAssistant.entity === "button").length;
    const buttons = configs.filter(([topic]) => topic.startsWith("homeassistant/button/"));
    assert.equal(buttons.length, outlets * outletButtons + shape.groups.length * groupButtons);
    const switches = configs.filter(([topic]) => topic.startsWith("homeassistant/switch/"));
    assert.equal(switches.length, outlets);
    // Every button presses a payload its command topic accepts.
    for (const [, json] of buttons) {
      const config = JSON.parse(json) as { command_topic: string; payload_press: string };
      const parsed = options.topics.parseCommand(config.command_topic);
      assert.ok(parsed.ok, config.command_topic);
      assert.ok(commandFromMqtt(parsed.target.kind, parsed.command, config.payload_press));
    }
  });
  it("serves the console its buttons: one per row and kind, in table order, with a distinct look each", async () => {
    const config = await configFrom("Pdus:\n  rack:\n    Connection: { Host: 192.0.2.1 }\n");
    const bootstrap = consoleBootstrap(config);
    assert.deepEqual(
      bootstrap.commands.outlet.map((c) => c.name),
      [...OUTLET_ACTIONS],
    );
    assert.deepEqual(
      bootstrap.commands.group.map((c) => c.name),
      [...GROUP_ACTIONS],
    );
    for (const c of [...bootstrap.commands.outlet, ...bootstrap.commands.group]) {
      assert.equal(c.latches, COMMANDS.find((row) => row.name === c.name)?.latches);
      assert.ok(c.label !== "" && c.verb !== "" && c.progress !== "", c.name);
    }
    assert.equal(
      new Set(bootstrap.commands.outlet.map((c) => c.tone)).size,
      bootstrap.commands.outlet.length,
    );
    assert.deepEqual(bootstrap.alarms, { warnPercent: 80, criticalPercent: 95 });
  });
});
