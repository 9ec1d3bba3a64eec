/**
 * The bridge against a real mosquitto (MQTT 3.1.1 and 5): availability, last will, broker
 * restarts, credentials refused at start-up, a broker that is down at start-up, retained commands.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { EventBus } from "../../src/bus.js";
import type { Config } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { freePort } from "../../testkit/repo.js";
import { ControlStub, done } from "../../testkit/control-stub.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";

const CHILD = join(dirname(fileURLToPath(import.meta.url)), "../../testkit/mqtt-bridge-child.js");
const SWITCH_CONFIG = "homeassistant/switch/pdu-bridge_default/outlet_DEV1_0_power/config";

for (const version of [4, 5] as const) {
  describe(`mosquitto, MQTT ${version === 4 ? "3.1.1" : "5"}`, () => {
    const capture = new LogCapture();
    const recorders: Recorder[] = [];
    let broker: Mosquitto;
    let config: Config;
    let store: SnapshotStore;
    let bridge: MqttBridge;
    const control = new ControlStub(done);
    const subscribe = async (topics: string[]) => {
      const r = await Recorder.connect(broker, topics, { protocolVersion: version });
      recorders.push(r);
      return r;
    };

    before(async () => {
      broker = await Mosquitto.start();
      // A retained command left on the broker must not be executed when the bridge subscribes.
      const old = await subscribe([]);
      await old.publish("pdu-bridge/default/DEV1/outlets/0/set", "off", true);
      config = await mqttTestConfig({
        broker: { host: broker.host, port: broker.port },
        protocolVersion: version,
        instances: { default: true },
      });
      const bus = new EventBus();
      store = new SnapshotStore(["default"], { bus: bus });
      store.recordSuccess("default", singleUnit("default", "DEV1", 2));
      bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
      bridge.attachControl(control);
    });

    after(async () => {
      for (const r of recorders) await r.close();
      await bridge.stop();
      store.close();
      await broker.close();
    });

    it("connects and publishes availability, discovery and retained states", async () => {
      const status = bridge.status();
      assert.equal(status.connected, true);
      assert.equal(status.broker, `mqtt://127.0.0.1:${broker.port}`);
      assert.equal(status.embedded, false);
      assert.equal(status.lastError, null);
      assert.equal(bridge.embeddedBroker, null);
      // Start-up returns once the broker has the bridge's subscriptions; the republish follows. Once a
      // first subscriber has seen it arrive, a second one must get everything as retained.
      await (await subscribe(["pdu-bridge/#"])).waitFor("pdu-bridge/default/DEV1/outlets/1/state");
      const r = await subscribe(["pdu-bridge/#", "homeassistant/#"]);
      for (const [topic, payload] of [
        ["pdu-bridge/status", "online"],
        ["pdu-bridge/default/status", "online"],
        ["pdu-bridge/default/DEV1/outlets/1/state", "off"],
      ] as const) {
        const m = await r.waitFor(topic);
        assert.equal(m.payload, payload, topic);
        assert.equal(m.retain, true, topic);
      }
      assert.equal((await r.waitFor(SWITCH_CONFIG)).retain, true);
    });

    it("refuses a retained command replayed on subscribe", async () => {
      const line = await waitFor(
        () =>
          capture.lines.find(
            (l) => l.audit === "control" && l.topic === "pdu-bridge/default/DEV1/outlets/0/set",
          ),
        "the audit line of the retained command",
      );
      assert.match(String(line.detail), /retained/);
      assert.deepEqual(control.requests, []);
    });

    it("republishes availability, discovery and states after a broker restart", async () => {
      await broker.restart();
      // mosquitto without persistence lost every retained message: what arrives, the bridge republished.
      const client = await subscribe(["pdu-bridge/#", "homeassistant/#"]);
      assert.equal(
        (await client.waitFor("pdu-bridge/status", (m) => m.payload === "online")).topic,
        "pdu-bridge/status",
      );
      assert.equal((await client.waitFor("pdu-bridge/default/status")).payload, "online");
      assert.equal((await client.waitFor("pdu-bridge/default/DEV1/outlets/0/state")).payload, "on");
      assert.equal((await client.waitFor("pdu-bridge/default/DEV1/outlets/1/label")).payload, "Outlet 2");
      assert.ok(JSON.parse((await client.waitFor(SWITCH_CONFIG)).payload));
      await waitFor(() => bridge.status().connected, "the bridge to be connected");
      // The next poll republishes every value (the broker may have missed some while it was down).
      store.recordSuccess("default", singleUnit("default", "DEV1", 2));
      assert.equal(
        (await client.waitFor("pdu-bridge/default/DEV1/outlets/0/measurements/realPower")).payload,
        "58",
      );
      // The command subscriptions were made again.
      await client.publish("pdu-bridge/default/DEV1/outlets/1/set", "on");
      await waitFor(() => control.requests.length === 1, "the command after the restart");
      assert.equal(control.requests[0]?.action, "on");
    });

    it("publishes offline (retained) on a clean stop", async () => {
      await bridge.stop();
      assert.equal(bridge.status().connected, false);
      const r = await subscribe(["pdu-bridge/status"]);
      const m = await r.waitFor("pdu-bridge/status");
      assert.equal(m.payload, "offline");
      assert.equal(m.retain, true);
    });

    it("has the broker publish the last will when the bridge process dies", async () => {
      const watcher = await subscribe(["lwt-test/status"]);
      const child = spawn(process.execPath, [CHILD], {
        env: {
          ...process.env,
          BROKER_HOST: broker.host,
          BROKER_PORT: String(broker.port),
          PARENT_TOPIC: "lwt-test",
          PROTOCOL_VERSION: String(version),
        },
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString("utf8");
        });
        await waitFor(() => out.includes("ready"), "the child bridge", 15_000);
        await watcher.waitFor("lwt-test/status", (m) => m.payload === "online");
        child.kill("SIGKILL");
        await exited;
        await watcher.waitFor("lwt-test/status", (m) => m.payload === "offline");
        const late = await subscribe(["lwt-test/status"]);
        const m = await late.waitFor("lwt-test/status");
        assert.equal(m.payload, "offline");
        assert.equal(m.retain, true);
      } finally {
        child.kill("SIGKILL");
      }
    });
  });
}

describe("mosquitto with credentials", () => {
  let broker: Mosquitto;
  const bridges: MqttBridge[] = [];

  before(async () => {
    broker = await Mosquitto.start({ users: { alice: "right-horse-battery" } });
  });

  after(async () => {
    for (const b of bridges) await b.stop();
    await broker.close();
  });

  for (const version of [4, 5] as const) {
    it(`refuses to start with bad credentials (MQTT ${version}), without logging the password`, async () => {
      const capture = new LogCapture();
      const config = await mqttTestConfig({
        broker: { host: broker.host, port: broker.port },
        protocolVersion: version,
        username: "alice",
        password: "wrong-staple-9876",
        instances: { default: false },
      });
      const bus = new EventBus();
      const store = new SnapshotStore(["default"], { bus: bus });
      await assert.rejects(
        startMqttBridge({ config, store, bus, logger: capture.logger }),
        (error: Error) => {
          assert.match(error.message, /refused the connection: (Not authorized|Bad user ?name or password)/i);
          assert.match(error.message, new RegExp(`mqtt://127.0.0.1:${broker.port}`));
          assert.ok(!error.message.includes("wrong-staple-9876"));
          return true;
        },
      );
      assert.ok(!capture.text().includes("wrong-staple-9876"));
      store.close();
    });
  }

  it("connects with the right credentials", async () => {
    const config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      username: "alice",
      password: "right-horse-battery",
      instances: { default: false },
    });
    const bus = new EventBus();
    const store = new SnapshotStore(["default"], { bus: bus });
    const bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    bridges.push(bridge);
    assert.equal(bridge.status().connected, true);
    store.close();
  });
});

describe("a broker that is down at start-up", () => {
  let broker: Mosquitto | null = null;
  let bridge: MqttBridge | null = null;
  let store: SnapshotStore | null = null;

  after(async () => {
    await bridge?.stop();
    store?.close();
    await broker?.close();
  });

  it("is not fatal: the bridge reports why and connects once the broker is up", async () => {
    const port = await freePort();
    const config = await mqttTestConfig({
      broker: { host: "127.0.0.1", port },
      instances: { default: false },
    });
    const bus = new EventBus();
    store = new SnapshotStore(["default"], { bus: bus });
    bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    const status = bridge.status();
    assert.equal(status.connected, false);
    assert.match(String(status.lastError), /ECONNREFUSED/);
    assert.notEqual(status.since, null);

    broker = await Mosquitto.start({ port });
    await waitFor(() => bridge?.status().connected, "the bridge to connect");
    assert.equal(bridge.status().lastError, null);
    const r = await Recorder.connect(broker, ["pdu-bridge/status"]);
    try {
      assert.equal((await r.waitFor("pdu-bridge/status")).payload, "online");
    } finally {
      await r.close();
    }
  });
});
