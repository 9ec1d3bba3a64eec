/** The embedded broker: port 0, other clients, credentials, a taken port, stop. */
import assert from "node:assert/strict";
import { createServer, type AddressInfo, type Server } from "node:net";
import { after, describe, it } from "node:test";
import { connectAsync } from "mqtt";
import { EventBus } from "../../src/bus.js";
import { ConfigError } from "../../src/config/errors.js";
import { silentLogger } from "../../src/log.js";
import { startEmbeddedBroker } from "../../src/mqtt/broker.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";

describe("embedded broker", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it("listens on the actual port for port 0, serves other clients and is used by the bridge", async () => {
    const capture = new LogCapture();
    const config = await mqttTestConfig({ instances: { default: false } });
    const bus = new EventBus();
    const store = new SnapshotStore(["default"], { bus: bus });
    const bridge: MqttBridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
    cleanup.push(() => bridge.stop());
    const embedded = bridge.embeddedBroker;
    assert.ok(embedded);
    assert.equal(embedded.host, "127.0.0.1");
    assert.ok(embedded.port > 0);
    assert.ok(
      capture.lines.some((l) => l.msg === `embedded MQTT broker listening on 127.0.0.1:${embedded.port}`),
    );
    assert.deepEqual(
      { ...bridge.status(), since: null },
      {
        connected: true,
        broker: `mqtt://127.0.0.1:${embedded.port}`,
        embedded: true,
        lastError: null,
        since: null,
      },
    );

    const other = await Recorder.connect(embedded, ["pdu-bridge/status"]);
    cleanup.push(() => other.close());
    const m = await other.waitFor("pdu-bridge/status");
    assert.deepEqual([m.payload, m.retain], ["online", true]);

    await bridge.stop();
    await assert.rejects(
      connectAsync({ host: embedded.host, port: embedded.port, reconnectPeriod: 0, connectTimeout: 2000 }),
    );
    store.close();
  });

  it("names Mqtt.Embedded.Port when the port is taken", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve()));
    cleanup.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as AddressInfo).port;
    await assert.rejects(
      startEmbeddedBroker({
        bind: "127.0.0.1",
        port,
        username: null,
        password: null,
        logger: silentLogger(),
      }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.key, "Mqtt.Embedded.Port");
        assert.match(
          error.message,
          new RegExp(`Mqtt\\.Embedded\\.Port: .*127\\.0\\.0\\.1:${port}.*already in use`),
        );
        return true;
      },
    );
  });

  it("requires the configured credentials from every client", async () => {
    const broker = await startEmbeddedBroker({
      bind: "127.0.0.1",
      port: 0,
      username: "bridge",
      password: "s3cret-pass",
      logger: silentLogger(),
    });
    cleanup.push(() => broker.close());
    const options = { host: broker.host, port: broker.port, reconnectPeriod: 0 };
    await assert.rejects(connectAsync(options), /Bad username or password|Not authorized/);
    await assert.rejects(
      connectAsync({ ...options, username: "bridge", password: "wrong" }),
      /Bad username or password/,
    );
    const ok = await connectAsync({ ...options, username: "bridge", password: "s3cret-pass" });
    assert.equal(ok.connected, true);
    await ok.endAsync();
  });
});
