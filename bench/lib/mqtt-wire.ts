/**
 * Just enough MQTT 3.1.1 for the benchmark's own subscribers, over a raw socket: CONNECT, SUBSCRIBE
 * and UNSUBSCRIBE at QoS 0, PUBLISH at QoS 0, DISCONNECT, and a reader that splits the byte stream
 * into packets without copying them. mqtt.js decodes every packet into objects and could not keep up
 * with the 15,000+ messages/s a 1000-PDU fleet makes on a loaded 2-core machine; a subscriber that
 * lags behind the broker turns its backlog into wrong rates (the traffic counter) or, on a broker
 * with its default queue limits, into dropped messages (the readers of what a user sees).
 */
import { connect, type Socket } from "node:net";

/** Packet types (the high nibble of the first byte). */
export const CONNACK = 2;
export const PUBLISH = 3;
export const SUBACK = 9;
export const UNSUBACK = 11;

/** A UTF-8 string with its 2-byte length prefix. */
export function mqttString(s: string): Buffer {
  const b = Buffer.from(s, "utf8");
  if (b.length > 0xffff) throw new RangeError(`MQTT string of ${b.length} bytes`);
  const out = Buffer.alloc(2 + b.length);
  out.writeUInt16BE(b.length, 0);
  b.copy(out, 2);
  return out;
}

/** A whole packet: first byte, remaining length (variable-length encoded), body. */
export function mqttPacket(firstByte: number, body: Buffer): Buffer {
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

/** CONNECT, MQTT 3.1.1, clean session, keep-alive off. */
export function connectPacket(clientId: string): Buffer {
  return mqttPacket(
    0x10,
    Buffer.concat([mqttString("MQTT"), Buffer.from([4, 0x02, 0, 0]), mqttString(clientId)]),
  );
}

/** SUBSCRIBE of every filter at QoS 0. */
export function subscribePacket(packetId: number, filters: readonly string[]): Buffer {
  const id = Buffer.alloc(2);
  id.writeUInt16BE(packetId, 0);
  return mqttPacket(0x82, Buffer.concat([id, ...filters.flatMap((f) => [mqttString(f), Buffer.from([0])])]));
}

export function unsubscribePacket(packetId: number, filters: readonly string[]): Buffer {
  const id = Buffer.alloc(2);
  id.writeUInt16BE(packetId, 0);
  return mqttPacket(0xa2, Buffer.concat([id, ...filters.map(mqttString)]));
}

/** PUBLISH at QoS 0. */
export function publishPacket(topic: string, payload: string | Buffer, retain: boolean): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  return mqttPacket(retain ? 0x31 : 0x30, Buffer.concat([mqttString(topic), body]));
}

export const DISCONNECT = Buffer.from([0xe0, 0]);

/**
 * Splits a byte stream into MQTT packets: `onPacket(firstByte, buffer, bodyStart, bodyLength)` for
 * each complete one, in order, the body a view into the buffer (valid during the call only).
 */
export class PacketReader {
  #pending: Buffer | null = null;

  constructor(
    private readonly onPacket: (first: number, buf: Buffer, start: number, length: number) => void,
  ) {}

  push(chunk: Buffer): void {
    const buf = this.#pending === null ? chunk : Buffer.concat([this.#pending, chunk]);
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
      this.onPacket(buf[off]!, buf, i, length);
      off = i + length;
    }
    this.#pending = off < buf.length ? Buffer.from(buf.subarray(off)) : null;
  }
}

export interface Publish {
  readonly topic: string;
  readonly payload: Buffer;
  readonly retain: boolean;
}

/** The topic, payload and retain flag of a PUBLISH body (QoS 1 and 2 skip the packet id). */
export function readPublish(first: number, buf: Buffer, start: number, length: number): Publish {
  const topicLength = buf.readUInt16BE(start);
  const topic = buf.toString("utf8", start + 2, start + 2 + topicLength);
  const qos = (first >> 1) & 3;
  const payloadStart = start + 2 + topicLength + (qos > 0 ? 2 : 0);
  return { topic, payload: buf.subarray(payloadStart, start + length), retain: (first & 1) === 1 };
}

/** The packet id of a SUBACK or UNSUBACK body. */
export function ackPacketId(buf: Buffer, start: number): number {
  return buf.readUInt16BE(start);
}

/**
 * A subscriber over a raw socket: QoS 0 subscriptions, QoS 0 publishes, and every PUBLISH handed to
 * `onPublish` as it arrives (the body a view into the socket's buffer, valid during the call only).
 */
export class RawMqttClient {
  readonly #socket: Socket;
  readonly #acks = new Map<number, () => void>();
  #nextId = 1;
  #closed = false;
  #error: Error | null = null;

  private constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** Connects and resolves after the broker's CONNACK accepted the connection. */
  static connect(
    url: string,
    clientId: string,
    onPublish: (first: number, buf: Buffer, start: number, length: number) => void,
  ): Promise<RawMqttClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: u.hostname, port: Number(u.port || 1883) });
      const client = new RawMqttClient(socket);
      socket.setNoDelay(true);
      const reader = new PacketReader((first, buf, start, length) => {
        const type = first >> 4;
        if (type === PUBLISH) onPublish(first, buf, start, length);
        else if (type === CONNACK) {
          if (buf[start + 1] === 0) resolve(client);
          else reject(new Error(`CONNACK refused the connection: code ${buf[start + 1]}`));
        } else if (type === SUBACK || type === UNSUBACK) {
          const id = ackPacketId(buf, start);
          const done = client.#acks.get(id);
          client.#acks.delete(id);
          done?.();
        }
      });
      socket.on("data", (chunk: Buffer) => reader.push(chunk));
      socket.once("connect", () => socket.write(connectPacket(clientId)));
      socket.on("error", (error) => {
        client.#error = error;
        reject(error);
      });
      socket.on("close", () => {
        client.#closed = true;
        for (const done of client.#acks.values()) done();
        client.#acks.clear();
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Subscribes at QoS 0; resolves on the SUBACK (or when the connection closed: check `closed`). */
  subscribe(filters: readonly string[]): Promise<void> {
    return this.#acked((id) => subscribePacket(id, filters));
  }

  /** Unsubscribes; resolves on the UNSUBACK (or when the connection closed). */
  unsubscribe(filters: readonly string[]): Promise<void> {
    return this.#acked((id) => unsubscribePacket(id, filters));
  }

  publish(topic: string, payload: string | Buffer, retain = false): void {
    if (!this.#closed) this.#socket.write(publishPacket(topic, payload, retain));
  }

  #acked(packet: (id: number) => Buffer): Promise<void> {
    if (this.#closed) return Promise.reject(this.#error ?? new Error("MQTT connection closed"));
    const id = this.#nextId;
    this.#nextId = (this.#nextId % 0xffff) + 1;
    return new Promise((resolve) => {
      this.#acks.set(id, resolve);
      this.#socket.write(packet(id));
    });
  }

  /** DISCONNECT and close; resolves when the socket closed. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.#socket.once("close", () => resolve());
      this.#socket.end(DISCONNECT);
    });
  }
}
