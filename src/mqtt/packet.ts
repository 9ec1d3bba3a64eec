/**
 * QoS 0 PUBLISH packets encoded by hand, many into one buffer, so that a poll's values reach the
 * socket as one write (MQTT 3.1.1 §3.3, MQTT 5 §3.3).
 *
 * Handing each value to mqtt.js costs a packet object, mqtt-packet's five stream writes (header,
 * length, topic length, topic, payload) and a `writev` of hundreds of small chunks per poll, a
 * large share of a poll's CPU when values change (docs/performance.md, "Measurements behind the code"). A QoS 0 PUBLISH
 * has no packet id and nothing to remember, so its bytes are simple:
 *
 *   0x30 | retain, remaining length (variable byte integer), topic length (2 bytes, big endian),
 *   topic (UTF-8), [MQTT 5: property length 0], payload (UTF-8).
 */

/** A remaining length takes at most 4 bytes; MQTT's largest is 268,435,455. */
const MAX_REMAINING = 268_435_455;

/** Bytes of `n` as a variable byte integer. */
function varintSize(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}

/**
 * Bytes of a PUBLISH packet with these byte lengths of topic and payload and no properties (MQTT 5:
 * the property length's one byte); Infinity when MQTT cannot carry it at all.
 */
export function publishPacketSize(
  version: 4 | 5,
  topicBytes: number,
  payloadBytes: number,
  qos: 0 | 1,
): number {
  const remaining = remainingLength(version, topicBytes, payloadBytes, qos);
  return remaining === Infinity ? Infinity : 1 + varintSize(remaining) + remaining;
}

/** The remaining length of such a packet (all but the fixed header); Infinity when MQTT cannot carry it. */
function remainingLength(version: 4 | 5, topicBytes: number, payloadBytes: number, qos: 0 | 1): number {
  if (topicBytes > 0xffff) return Infinity;
  const remaining = 2 + topicBytes + (qos > 0 ? 2 : 0) + (version === 5 ? 1 : 0) + payloadBytes;
  return remaining > MAX_REMAINING ? Infinity : remaining;
}

/**
 * Collects QoS 0 PUBLISH packets in a reused scratch buffer; {@link take} hands them out as one
 * buffer of their own. Messages larger than `maxPacket` are refused (the caller sends them its own
 * way), which also bounds the scratch buffer.
 */
export class PublishBatch {
  readonly #version: 4 | 5;
  #maxPacket: number;
  #buf: Buffer;
  #length = 0;
  #count = 0;

  constructor(protocolVersion: 4 | 5, maxPacket: number, initialBytes = 16 * 1024) {
    this.#version = protocolVersion;
    this.#maxPacket = maxPacket;
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Packets larger than this are refused from now on (a broker's advertised maximum, say). */
  set maxPacket(bytes: number) {
    this.#maxPacket = bytes;
  }

  /** Bytes waiting. */
  get bytes(): number {
    return this.#length;
  }

  /** Messages waiting. */
  get count(): number {
    return this.#count;
  }

  /**
   * Appends one QoS 0 PUBLISH; false (nothing appended) when its packet would be larger than
   * `maxPacket` or than MQTT allows.
   */
  add(topic: string, payload: string, retain: boolean): boolean {
    const topicBytes = Buffer.byteLength(topic, "utf8");
    const payloadBytes = Buffer.byteLength(payload, "utf8");
    let remaining = remainingLength(this.#version, topicBytes, payloadBytes, 0);
    const size = 1 + varintSize(remaining) + remaining;
    if (remaining === Infinity || size > this.#maxPacket) return false;
    this.#reserve(size);
    const buf = this.#buf;
    let at = this.#length;
    buf[at++] = retain ? 0x31 : 0x30;
    do {
      let byte = remaining % 128;
      remaining = Math.floor(remaining / 128);
      if (remaining > 0) byte |= 0x80;
      buf[at++] = byte;
    } while (remaining > 0);
    buf[at++] = topicBytes >> 8;
    buf[at++] = topicBytes & 0xff;
    at += buf.write(topic, at, topicBytes, "utf8");
    if (this.#version === 5) buf[at++] = 0;
    at += buf.write(payload, at, payloadBytes, "utf8");
    this.#length = at;
    this.#count++;
    return true;
  }

  /** The packets appended since the last take, in order, as a buffer the batch no longer touches; null when none. */
  take(): Buffer | null {
    if (this.#count === 0) return null;
    const out = Buffer.allocUnsafe(this.#length);
    this.#buf.copy(out, 0, 0, this.#length);
    this.clear();
    return out;
  }

  /** Forgets the messages waiting. */
  clear(): void {
    this.#length = 0;
    this.#count = 0;
  }

  #reserve(bytes: number): void {
    const need = this.#length + bytes;
    if (need <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.#buf.copy(grown, 0, 0, this.#length);
    this.#buf = grown;
  }
}
