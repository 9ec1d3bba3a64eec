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

const url = new URL(process.argv[2]!);

let since = performance.now();
let total = 0;
let bytes = 0;
let byPrefix = new Map<string, number>();

function str(s: string): Buffer {
  const b = Buffer.from(s, "utf8");
  const out = Buffer.alloc(2 + b.length);
  out.writeUInt16BE(b.length, 0);
  b.copy(out, 2);
  return out;
}

function packet(firstByte: number, body: Buffer): Buffer {
  const len: number[] = [];
  let n = body.length;
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 128;
    len.push(byte);
  } while (n > 0);
  return Buffer.concat([Buffer.from([firstByte, ...len]), body]);
}

const connectPacket = packet(
  0x10,
  Buffer.concat([
    str("MQTT"),
    Buffer.from([4, 0x02, 0, 0]), // level 4, clean session, keep-alive 0 (off)
    str(`bench-counter-${process.pid}`),
  ]),
);
const subscribePacket = packet(0x82, Buffer.concat([Buffer.from([0, 1]), str("#"), Buffer.from([0])]));

let subscribed: () => void;
const ready = new Promise<void>((resolve) => (subscribed = resolve));

function onPacket(first: number, buf: Buffer, start: number, length: number): void {
  const type = first >> 4;
  if (type === 3) {
    total++;
    bytes += length;
    const topicLength = buf.readUInt16BE(start);
    const topicStart = start + 2;
    let end = buf.indexOf(0x2f, topicStart); // '/'
    if (end < 0 || end > topicStart + topicLength) end = topicStart + topicLength;
    const prefix = buf.toString("latin1", topicStart, end);
    byPrefix.set(prefix, (byPrefix.get(prefix) ?? 0) + 1);
  } else if (type === 2) {
    if (buf[start + 1] !== 0) throw new Error(`CONNACK refused: ${buf[start + 1]}`);
    socket.write(subscribePacket);
  } else if (type === 9) {
    subscribed();
  }
}

let pending: Buffer | null = null;
const socket: Socket = connect({ host: url.hostname, port: Number(url.port || 1883) }, () => {
  socket.write(connectPacket);
});
socket.on("data", (chunk: Buffer) => {
  const buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    let i = off + 1;
    let length = 0;
    let multiplier = 1;
    let byte: number;
    let complete = true;
    do {
      if (i >= buf.length) {
        complete = false;
        break;
      }
      byte = buf[i++]!;
      length += (byte & 127) * multiplier;
      multiplier *= 128;
    } while (byte & 128);
    if (!complete || i + length > buf.length) break;
    onPacket(buf[off]!, buf, i, length);
    off = i + length;
  }
  pending = off < buf.length ? buf.subarray(off) : null;
});
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
    socket.end(Buffer.from([0xe0, 0])); // DISCONNECT
    return Promise.resolve(null);
  }
  return Promise.reject(new Error(`unknown command ${cmd}`));
});
signalReady(null);
