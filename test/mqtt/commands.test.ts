/**
 * MQTT commands over the embedded broker, with a recording ControlService (a stub of our own
 * interface): refused commands never reach it and are audited with a reason; valid ones do.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { CommandHandler } from "../../src/mqtt/commands.js";
import { Topics } from "../../src/mqtt/topics.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { ControlStub, done } from "../../testkit/control-stub.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { cluster, singleUnit } from "../../testkit/snapshot-builders.js";

describe("MQTT commands (embedded broker)", () => {
  const capture = new LogCapture();
  let store: SnapshotStore;
  let bridge: MqttBridge;
  let client: Recorder;
  let control: ControlStub;

  const audits = () => capture.lines.filter((l) => l.audit === "control");
  /** Publishes and waits for the audit line of exactly this topic. */
  async function send(topic: string, payload: string | Buffer, retain = false) {
    const seen = audits().filter((l) => l.topic === topic).length;
    await client.publish(topic, payload, retain);
    return waitFor(() => audits().filter((l) => l.topic === topic)[seen], `the audit line of ${topic}`);
  }

  before(async () => {
    const config = await mqttTestConfig({ instances: { switchable: true, readonly: false } });
    const bus = new EventBus();
    store = new SnapshotStore(["switchable", "readonly"], { bus: bus });
    bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
    store.recordSuccess("switchable", singleUnit("switchable", "DEV1", 2));
    store.recordSuccess("readonly", cluster("readonly", "DEV1", "DEV2"));
    client = await Recorder.connect(bridge.embeddedBroker!, []);
  });

  beforeEach(() => {
    control = new ControlStub(done);
    bridge.attachControl(control);
  });

  after(async () => {
    await client.close();
    await bridge.stop();
    store.close();
  });

  it("executes a valid set (case-insensitive) with the parsed target and source", async () => {
    const topic = "pdu-bridge/switchable/DEV1/outlets/1/set";
    const line = await send(topic, "ON");
    assert.deepEqual(control.requests, [
      {
        instanceId: "switchable",
        target: { kind: "outlet", deviceId: "DEV1", index: 1 },
        action: "on",
        source: { surface: "mqtt", topic },
      },
    ]);
    assert.equal(line.status, 200);
    assert.equal(line.outcome, "done");
  });

  it("executes reboot and resetStats with any payload, and group on/off/reboot", async () => {
    await send("pdu-bridge/switchable/DEV1/outlets/0/reboot", "");
    await send("pdu-bridge/switchable/DEV1/outlets/0/resetStats", "whatever");
    assert.deepEqual(
      control.requests.map((c) => [c.target, c.action]),
      [
        [{ kind: "outlet", deviceId: "DEV1", index: 0 }, "reboot"],
        [{ kind: "outlet", deviceId: "DEV1", index: 0 }, "resetStats"],
      ],
    );
  });

  it("refuses bad payloads, odd topics, read-only instances and oversized commands", async () => {
    const refusals: [string, string | Buffer, boolean, number, RegExp][] = [
      ["pdu-bridge/switchable/DEV1/outlets/0/set", "garbage", false, 400, /not on or off/],
      ["pdu-bridge/switchable/DEV1/outlets/0/set", "", false, 400, /not on or off/],
      ["pdu-bridge/switchable/DEV1/outlets/0/set", "0", false, 400, /not on or off/],
      ["pdu-bridge/switchable/DEV1/outlets/0/set", "reboot", false, 400, /not on or off/],
      ["pdu-bridge/switchable//outlets/0/set", "on", false, 400, /empty, wildcard or unsafe/],
      ["pdu-bridge/switchable/DEV1/outlets/01/set", "on", false, 400, /not an integer/],
      ["pdu-bridge/switchable/DEV1/outlets/x/reboot", "", false, 400, /not an integer/],
      ["pdu-bridge/readonly/DEV1/outlets/0/set", "on", false, 409, /ActionsEnabled: false/],
      ["pdu-bridge/readonly/groups/total/set", "off", false, 409, /ActionsEnabled: false/],
      [
        "pdu-bridge/switchable/DEV1/outlets/0/set",
        Buffer.alloc(200 * 1024, "o"), // under the embedded broker's 256 KiB packet limit
        false,
        413,
        /over the 1024-byte/,
      ],
    ];
    for (const [topic, payload, retain, status, detail] of refusals) {
      const line = await send(topic, payload, retain);
      assert.equal(line.status, status, `${topic} ${String(payload).slice(0, 10)}`);
      assert.equal(line.outcome, "refused");
      assert.match(String(line.detail), detail);
    }
    assert.deepEqual(control.requests, [], "no refused command reached the control service");
  });

  it("accepts group set on/off/reboot and refuses anything else", async () => {
    await send("pdu-bridge/switchable/groups/total/set", "Reboot");
    const bad = await send("pdu-bridge/switchable/groups/total/set", "resetStats");
    assert.equal(bad.status, 400);
    assert.deepEqual(
      control.requests.map((c) => [c.target, c.action]),
      [[{ kind: "group", groupKey: "total" }, "reboot"]],
    );
  });

  it("refuses wildcard topics (which brokers do not deliver) before any control call", async () => {
    const config = await mqttTestConfig({ instances: { switchable: true } });
    const local = new LogCapture();
    const handler = new CommandHandler({
      topics: new Topics("pdu-bridge"),
      instances: config.instances,
      logger: local.logger,
      bus: new EventBus(),
    });
    handler.attach(control);
    for (const topic of [
      "pdu-bridge/switchable/+/outlets/0/set",
      "pdu-bridge/switchable/DEV1/outlets/#",
      "pdu-bridge/+/groups/total/set",
      "pdu-bridge/switchable/groups/+/set",
    ]) {
      await handler.handle(topic, Buffer.from("on"), false);
    }
    await handler.handle("pdu-bridge/switchable/DEV1/outlets/0/set", Buffer.from("on"), true);
    const lines = local.lines.filter((l) => l.audit === "control");
    assert.deepEqual(
      lines.map((l) => l.status),
      [400, 400, 400, 400, 400],
    );
    assert.match(String(lines.at(-1)?.detail), /retained/);
    assert.deepEqual(control.requests, []);
  });

  it("refuses commands while no control service is attached", async () => {
    bridge.attachControl(null);
    const line = await send("pdu-bridge/switchable/DEV1/outlets/0/set", "off");
    assert.equal(line.status, 503);
    assert.deepEqual(control.requests, []);
  });
});
