/**
 * Another client connecting with the bridge's client id takes the bridge's session over. The bridge
 * logs it naming the client id and reconnects:
 * - against a real mosquitto (MQTT 3.1.1 and 5), which closes the bridge's socket without a reason
 *   (mosquitto 2.0.11, the one installed here, does so even with MQTT 5), the line names
 *   the client id and a takeover among the causes;
 * - against a broker that says why (an MQTT 5 DISCONNECT of reason 0x8E, as later mosquitto
 *   versions and other brokers send it; a minimal broker on a loopback socket here), the line says
 *   the session was taken over, and another reason (a broker shutting down) is not called one.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, describe, it } from "node:test";
import { connectAsync, type MqttClient } from "mqtt";
import { EventBus } from "../../src/bus.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SESSION_TAKEN_OVER } from "../../src/mqtt/connection.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { HeldAckBroker } from "../../testkit/held-ack-broker.js";
import { LogCapture, type LogLine } from "../../testkit/log-capture.js";
import { Mosquitto, MOSQUITTO } from "../../testkit/mosquitto.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { waitFor } from "../../testkit/wait.js";

/** A DISCONNECT reason that is not a takeover: the server is shutting down. */
const SERVER_SHUTTING_DOWN = 0x8b;

const lost = (capture: LogCapture): LogLine[] =>
  capture.lines.filter((l) => String(l.msg).startsWith("MQTT connection lost"));
const connects = (capture: LogCapture): number =>
  capture.lines.filter((l) => l.msg === "connected to MQTT broker").length;

/** A bridge of one instance connected to `broker` with `clientId`; stopped by the returned function. */
async function bridgeOn(
  broker: { host: string; port: number },
  version: 4 | 5,
  clientId: string,
  capture: LogCapture,
): Promise<{ bridge: MqttBridge; stop: () => Promise<void> }> {
  const config = await mqttTestConfig({
    broker,
    protocolVersion: version,
    clientId,
    instances: { default: false },
  });
  const bus = new EventBus();
  const store = new SnapshotStore(["default"], { bus });
  const bridge = await startMqttBridge({ config, store, bus, logger: capture.logger });
  await waitFor(() => bridge.status().connected, "the bridge connected");
  return {
    bridge,
    stop: async () => {
      await bridge.stop();
      store.close();
    },
  };
}

/** The next line about a lost connection after the first `seen`. */
const nextLost = (capture: LogCapture, seen: number) =>
  waitFor(() => lost(capture)[seen], "the bridge's line about its lost connection");

for (const version of [5, 4] as const) {
  describe(
    `mosquitto, MQTT ${version === 5 ? "5" : "3.1.1"}: the bridge's session taken over`,
    {
      skip: !existsSync(MOSQUITTO),
    },
    () => {
      const capture = new LogCapture();
      let broker: Mosquitto;
      let stop: (() => Promise<void>) | null = null;
      let intruder: MqttClient | null = null;

      after(async () => {
        await intruder?.endAsync(true);
        await stop?.();
        await broker?.close();
      });

      it("is logged naming the client id and a takeover, and the bridge reconnects", async () => {
        broker = await Mosquitto.start();
        const clientId = `takeover-${version}-${process.pid}`;
        const started = await bridgeOn(broker, version, clientId, capture);
        stop = started.stop;

        intruder = await connectAsync({
          host: broker.host,
          port: broker.port,
          protocolVersion: version,
          clientId,
          reconnectPeriod: 0,
        });
        const line = await nextLost(capture, 0);
        assert.equal(line.level, "warn");
        assert.equal(line.clientId, clientId, JSON.stringify(line));
        assert.ok(
          String(line.msg).includes(
            `another client connected with client id "${clientId}" and took the session over`,
          ),
          String(line.msg),
        );
        await waitFor(() => connects(capture) >= 2, "the bridge connected again");
      });
    },
  );
}

describe("a broker that says why it disconnects the bridge (MQTT 5)", () => {
  const capture = new LogCapture();
  let broker: HeldAckBroker;
  let stop: (() => Promise<void>) | null = null;
  const clientId = `takeover-reason-${process.pid}`;

  after(async () => {
    await stop?.();
    await broker?.close();
  });

  it("reason 0x8E: logged as a session taken over, naming the client id; the bridge reconnects", async () => {
    broker = await HeldAckBroker.start({ protocolVersion: 5 });
    const started = await bridgeOn(broker, 5, clientId, capture);
    stop = started.stop;

    broker.disconnectClients(SESSION_TAKEN_OVER);
    const line = await nextLost(capture, 0);
    assert.equal(line.level, "warn");
    assert.equal(line.clientId, clientId);
    assert.equal(line.reasonCode, SESSION_TAKEN_OVER);
    assert.equal(
      line.msg,
      `MQTT connection lost: session taken over by another client with client id "${clientId}", reconnecting; two bridges (or a bridge and another program) are using one Mqtt.ClientId`,
    );
    assert.match(String(started.bridge.status().lastError), /session taken over/);
    await waitFor(
      () => started.bridge.status().connected && broker.connects >= 2,
      "the bridge connected again",
    );
  });

  it("another reason is named by its code, not called a takeover", async () => {
    broker.disconnectClients(SERVER_SHUTTING_DOWN);
    const line = await nextLost(capture, 1);
    assert.equal(line.reasonCode, SERVER_SHUTTING_DOWN);
    assert.equal(
      line.msg,
      `MQTT connection lost: the broker disconnected the bridge (reason code ${SERVER_SHUTTING_DOWN}), reconnecting`,
    );
    assert.doesNotMatch(String(line.msg), /taken over/);
  });
});
