/**
 * Counts the broker's traffic: a subscriber on `#` in its own process, so counting loads nothing
 * that is measured. It speaks just enough MQTT 3.1.1 over a raw socket (CONNECT, SUBSCRIBE `#` at
 * QoS 0, then PUBLISH packets only, keep-alive off) and reads no more of each message than the
 * first topic level: mqtt.js could not keep up with 15,000+ messages/s on a loaded 2-core machine,
 * and a counter that lags behind the broker turns its backlog into wrong rates.
 *
 * Messages are counted per first topic level (`pdu-bridge`, `homeassistant`, `baseline`,
 * `nodered`, ...). Run: `fork("dist/bench/lib/mqtt-counter.js", [brokerUrl])`.
 * Requests: `reset` (start a window), `collect` → `{seconds, total, bytes, byPrefix}`.
 */
import { connect, type Socket } from "node:net";
import { serveIpc, signalReady } from "./child.js";
import {
  CONNACK,
  DISCONNECT,
  PUBLISH,
  PacketReader,
  SUBACK,
  connectPacket,
  subscribePacket,
} from "./mqtt-wire.js";

const url = new URL(process.argv[2]!);

let since = performance.now();
let total = 0;
let bytes = 0;
let byPrefix = new Map<string, number>();

let subscribed: () => void;
const ready = new Promise<void>((resolve) => (subscribed = resolve));

function onPacket(first: number, buf: Buffer, start: number, length: number): void {
  const type = first >> 4;
  if (type === PUBLISH) {
    total++;
    bytes += length;
    const topicLength = buf.readUInt16BE(start);
    const topicStart = start + 2;
    let end = buf.indexOf(0x2f, topicStart); // '/'
    if (end < 0 || end > topicStart + topicLength) end = topicStart + topicLength;
    const prefix = buf.toString("latin1", topicStart, end);
    byPrefix.set(prefix, (byPrefix.get(prefix) ?? 0) + 1);
  } else if (type === CONNACK) {
    if (buf[start + 1] !== 0) throw new Error(`CONNACK refused: ${buf[start + 1]}`);
    socket.write(subscribePacket(1, ["#"]));
  } else if (type === SUBACK) {
    subscribed();
  }
}

const reader = new PacketReader(onPacket);
const socket: Socket = connect({ host: url.hostname, port: Number(url.port || 1883) }, () => {
  socket.write(connectPacket(`bench-counter-${process.pid}`));
});
socket.on("data", (chunk: Buffer) => reader.push(chunk));
socket.on("error", (error) => {
  process.stderr.write(`mqtt-counter: ${error.message}\n`);
  process.exit(1);
});
await ready;

serveIpc((cmd) => {
  if (cmd === "reset") {
    since = performance.now();
    total = 0;
    bytes = 0;
    byPrefix = new Map();
    return Promise.resolve(null);
  }
  if (cmd === "collect") {
    return Promise.resolve({
      seconds: (performance.now() - since) / 1000,
      total,
      bytes,
      byPrefix: Object.fromEntries(byPrefix),
    });
  }
  if (cmd === "close") {
    socket.end(DISCONNECT);
    return Promise.resolve(null);
  }
  return Promise.reject(new Error(`unknown command ${cmd}`));
});
signalReady(null);
