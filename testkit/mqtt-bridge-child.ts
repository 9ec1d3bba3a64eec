/**
 * A bridge in its own process, for tests that kill it (the broker must then publish the last will).
 * Run as `node dist/testkit/mqtt-bridge-child.js`; env: BROKER_HOST, BROKER_PORT, PARENT_TOPIC,
 * PROTOCOL_VERSION (4 or 5). Prints `ready` once connected with a snapshot published.
 */
import { EventBus } from "../src/bus.js";
import { silentLogger } from "../src/log.js";
import { startMqttBridge } from "../src/mqtt/bridge.js";
import { SnapshotStore } from "../src/poller/store.js";
import { mqttTestConfig } from "./mqtt-config.js";
import { singleUnit } from "./snapshot-builders.js";

const config = await mqttTestConfig({
  broker: { host: process.env.BROKER_HOST ?? "127.0.0.1", port: Number(process.env.BROKER_PORT) },
  parentTopic: process.env.PARENT_TOPIC ?? "pdu-bridge",
  protocolVersion: process.env.PROTOCOL_VERSION === "5" ? 5 : 4,
  instances: { default: false },
});
const bus = new EventBus();
const store = new SnapshotStore(["default"], { bus: bus });
const bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
store.recordSuccess("default", singleUnit("default", "DEV1", 1));
if (!bridge.status().connected) throw new Error(`not connected: ${bridge.status().lastError}`);
process.stdout.write("ready\n");
// Runs until killed.
setInterval(() => undefined, 60_000);
