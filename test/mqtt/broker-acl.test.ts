/**
 * The embedded broker's rules, with the real bridge connected to it: configured
 * credentials are required from everyone; the bridge's client id cannot be taken; only the bridge
 * publishes under `P/` (other clients only command topics) and discovery; a packet over `Mqtt.Embedded.MaxPacketSize`
 * closes its connection; other clients' retained messages are bounded; a start off loopback
 * without credentials warns.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectAsync, type IClientOptions, type MqttClient } from "mqtt";
import { EventBus } from "../../src/bus.js";
import { ConfigError } from "../../src/config/errors.js";
import { startEmbeddedBroker } from "../../src/mqtt/broker.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Recorder, sleep } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";

const USER = "bridge-user";
const PASSWORD = "broker-pass-4c1d7e";
const CLIENT_ID = "pdu-bridge-acl-test";

/** Resolves when the client's connection is closed (by the broker). */
const closed = (client: MqttClient): Promise<void> =>
  new Promise((resolve) => {
    if (!client.connected) resolve();
    client.once("close", () => resolve());
  });

describe("embedded broker rules, with the bridge connected", () => {
  let bridge: MqttBridge;
  let store: SnapshotStore;
  let options: IClientOptions;
  const clients: MqttClient[] = [];
  let watcher: Recorder;
  const capture = new LogCapture();

  const connect = async (extra: IClientOptions = {}): Promise<MqttClient> => {
    const client = await connectAsync({ ...options, ...extra });
    clients.push(client);
    return client;
  };

  before(async () => {
    const config = await mqttTestConfig({
      instances: { default: true },
      username: USER,
      password: PASSWORD,
      clientId: CLIENT_ID,
    });
    const bus = new EventBus();
    store = new SnapshotStore(["default"], { bus: bus });
    bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
    const embedded = bridge.embeddedBroker!;
    options = {
      host: embedded.host,
      port: embedded.port,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      username: USER,
      password: PASSWORD,
    };
    watcher = await Recorder.connect(embedded, ["pdu-bridge/#", "homeassistant/#", "junk/#"], {
      username: USER,
      password: PASSWORD,
    });
    await watcher.waitFor("pdu-bridge/status");
  });

  after(async () => {
    for (const c of clients) await c.endAsync(true).catch(() => undefined);
    await watcher?.close();
    await bridge?.stop();
    store?.close();
  });

  it("requires the configured credentials; the bridge is connected with them", async () => {
    assert.equal(bridge.status().connected, true);
    const { username: _u, password: _p, ...anonymous } = options;
    await assert.rejects(connectAsync(anonymous), /Bad username or password|Not authorized/);
    await assert.rejects(connectAsync({ ...options, password: "wrong" }), /Bad username or password/);
    const ok = await connect();
    assert.equal(ok.connected, true);
  });

  it("refuses a second connection with the bridge's client id, even with the right credentials", async () => {
    const since = bridge.status().since;
    await assert.rejects(connectAsync({ ...options, clientId: CLIENT_ID }), /Identifier rejected/);
    await sleep(200);
    assert.equal(bridge.status().connected, true, "the bridge was not knocked off");
    assert.equal(bridge.status().since, since, "and did not reconnect");
  });

  it("lets only the bridge publish its topics: statuses, states, labels, settings, alarms, discovery", async () => {
    for (const topic of [
      "pdu-bridge/status",
      "pdu-bridge/default/status",
      "pdu-bridge/default/E4A1000001000001/outlets/0/state",
      "pdu-bridge/default/E4A1000001000001/outlets/0/label",
      "pdu-bridge/default/E4A1000001000001/outlets/0/rebootDelay",
      "pdu-bridge/default/E4A1000001000001/outlets/0/measurements/realPower",
      "pdu-bridge/default/E4A1000001000001/alarm",
      "pdu-bridge/default/groups/1/measurements/realPower",
      "pdu-bridge/anything/else",
      "pdu-bridge",
      "homeassistant/switch/pdu_bridge_x/config",
      "homeassistant/sensor/anything/else/config",
    ]) {
      const intruder = await connect({ clientId: `intruder-${Math.random().toString(36).slice(2)}` });
      const gone = closed(intruder);
      intruder.publish(topic, "forged", { retain: true, qos: 0 });
      await gone;
    }
    await sleep(200);
    assert.ok(
      watcher.messages.every((m) => m.payload !== "forged"),
      JSON.stringify(watcher.messages.filter((m) => m.payload === "forged").map((m) => m.topic)),
    );
    const late = await Recorder.connect(bridge.embeddedBroker!, ["pdu-bridge/status"], {
      username: USER,
      password: PASSWORD,
    });
    try {
      assert.equal(
        (await late.waitFor("pdu-bridge/status")).payload,
        "online",
        "the retained status is intact",
      );
    } finally {
      await late.close();
    }
  });

  it("lets other clients send commands and Home Assistant's birth message", async () => {
    const ha = await connect({ clientId: "home-assistant-test" });
    await ha.publishAsync("homeassistant/status", "online", { qos: 1 });
    await ha.publishAsync("pdu-bridge/default/E4A1000001000001/outlets/0/set", "on", { qos: 1 });
    await sleep(100);
    assert.equal(ha.connected, true);
    await watcher.waitFor("homeassistant/status");
  });

  it("closes a connection that sends a packet over MaxPacketSize, before it is delivered", async () => {
    const big = await connect({ clientId: "big-sender" });
    const gone = closed(big);
    big.publish("junk/big", Buffer.alloc(262_144), { retain: true, qos: 0 });
    await gone;
    await sleep(100);
    assert.ok(!watcher.messages.some((m) => m.topic === "junk/big"), "never delivered");
    const fine = await connect({ clientId: "fine-sender" });
    await fine.publishAsync("junk/small", Buffer.alloc(200_000), { qos: 1 });
    await watcher.waitFor("junk/small");
  });
});

describe("embedded broker retained bound", () => {
  it("bounds other clients' retained messages; clearing one makes room", async () => {
    const bound = 20;
    const broker = await startEmbeddedBroker({
      bind: "127.0.0.1",
      port: 0,
      username: null,
      password: null,
      logger: new LogCapture().logger,
      maxForeignRetained: bound,
    });
    const options = { host: broker.host, port: broker.port, reconnectPeriod: 0 };
    const clients: MqttClient[] = [];
    try {
      const filler = await connectAsync({ ...options, clientId: "retained-filler" });
      clients.push(filler);
      await Promise.all(
        Array.from({ length: bound }, (_, i) =>
          filler.publishAsync(`junk/retained/${i}`, "x", { retain: true, qos: 1 }),
        ),
      );
      // Overwriting a kept topic is fine; one more topic is not.
      await filler.publishAsync("junk/retained/0", "y", { retain: true, qos: 1 });
      const gone = closed(filler);
      filler.publish("junk/retained/over", "x", { retain: true, qos: 0 });
      await gone;
      const late = await Recorder.connect(broker, ["junk/retained/#"]);
      try {
        await late.waitFor(`junk/retained/${bound - 1}`);
        assert.equal(late.on("junk/retained/over").length, 0, "the message over the bound was not kept");
      } finally {
        await late.close();
      }
      const again = await connectAsync({ ...options, clientId: "retained-clearer" });
      clients.push(again);
      await again.publishAsync("junk/retained/0", "", { retain: true, qos: 1 });
      await again.publishAsync("junk/retained/new", "x", { retain: true, qos: 1 });
      assert.equal(again.connected, true, "room again after a retained message was cleared");
    } finally {
      for (const c of clients) await c.endAsync(true).catch(() => undefined);
      await broker.close();
    }
  });
});

describe("embedded broker start-up warning", () => {
  // 192.0.2.1 (TEST-NET-1) is no address of this machine: the listen fails, nothing is opened.
  it("warns when bound off loopback without credentials, not with them", async () => {
    for (const credentials of [false, true]) {
      const capture = new LogCapture();
      await assert.rejects(
        startEmbeddedBroker({
          bind: "192.0.2.1",
          port: 0,
          username: credentials ? USER : null,
          password: credentials ? PASSWORD : null,
          logger: capture.logger,
        }),
        ConfigError,
      );
      const warned = capture.lines.some(
        (l) => l.level === "warn" && /without credentials/.test(String(l.msg)),
      );
      assert.equal(warned, !credentials, `credentials ${credentials}`);
    }
    const capture = new LogCapture();
    const broker = await startEmbeddedBroker({
      bind: "127.0.0.1",
      port: 0,
      username: null,
      password: null,
      logger: capture.logger,
    });
    await broker.close();
    assert.ok(!capture.lines.some((l) => /without credentials/.test(String(l.msg))), "loopback: no warning");
  });
});
