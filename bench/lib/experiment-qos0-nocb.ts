/**
 * EXPERIMENT, not product code: a preload for the bridge child that drops the completion callback
 * of QoS 0 publishes before they reach mqtt.js.
 *
 *   node dist/bench/run.js --only fleet --bridge-import dist/bench/lib/experiment-qos0-nocb.js
 *
 * Why: mqtt.js (5.x, `MqttClient#_writePacket`) registers `stream.once("drain", cb)` for every
 * publish that has a callback while the socket is above its high-water mark. src/mqtt/connection.ts
 * passes an error-logging callback with every publish, so during Home Assistant discovery of a
 * large fleet (177 retained configs per 24-outlet PDU) every value publish adds a `drain` listener;
 * tens of thousands pile up and each `once` listener removes itself from the array in O(n), so a
 * single `drain` costs O(n²) and blocks the event loop for seconds. For QoS 0 the callback can only
 * report a local write error (the broker never acknowledges QoS 0), so dropping it loses nothing
 * that matters. This preload shows what that one-line change in connection.ts would do.
 */
import { createRequire } from "node:module";
import { join } from "node:path";

type Publish = (topic: string, message: unknown, opts?: { qos?: number }, cb?: unknown) => unknown;

const require = createRequire(join(process.cwd(), "package.json"));
const mqtt = require("mqtt") as { MqttClient: { prototype: { publish: Publish } } };
const proto = mqtt.MqttClient.prototype;
const original = proto.publish;
proto.publish = function (this: unknown, topic, message, opts, cb) {
  if (opts?.qos === 0 && typeof cb === "function") return original.call(this, topic, message, opts);
  return original.call(this, topic, message, opts, cb);
};
process.stderr.write(
  "EXPERIMENT: mqtt.js QoS 0 publishes without callback (bench/lib/experiment-qos0-nocb.ts)\n",
);
