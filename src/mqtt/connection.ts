/**
 * The bridge's one MQTT client: connects from `Config.Mqtt`, keeps `P/status` right (last will
 * `offline`, `online` on every connect, `offline` on a clean stop) and reconnects forever.
 *
 * Reconnects are ours, not mqtt.js's (its period is fixed): 1 s doubling to a 2 s cap, reset by a
 * successful connect, so the bridge is back within about 2 s of a broker's return however long it
 * was gone. After every connect the subscriptions are made again (clean sessions), then `onConnect`
 * runs (the MQTT part republishes availability, discovery and retained states) and the bus hears
 * `mqttConnected`; a connection that was up and closes tells it `mqttLost`.
 *
 * {@link MqttConnection.create} builds it without connecting, so that what publishes through it
 * can exist before the first connect; {@link MqttConnection.connect} then takes its hooks and
 * connects ({@link MqttConnection.open} does both).
 *
 * Start-up: a broker that refuses the connection for good (bad credentials, not authorised,
 * unsupported protocol, rejected client id) makes {@link MqttConnection.open} throw; a broker that
 * is down or unreachable does not: `open` returns and the client keeps trying.
 */
import { readFile } from "node:fs/promises";
import { connect, type IClientOptions, type MqttClient } from "mqtt";
import type { EventBus } from "../bus.js";
import { ConfigError } from "../config/errors.js";
import type { MqttConfig, MqttScheme } from "../config/schema.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";
import { PacketIdPool } from "./packet-ids.js";
import { PublishBatch, publishPacketSize } from "./packet.js";
import { topicProblem, Topics } from "./topics.js";
import type { MqttStatus } from "./types.js";

export const RECONNECT_BASE_MS = 1000;
export const RECONNECT_CAP_MS = 2000;
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a clean stop waits for `offline` to be acknowledged and for the disconnect. */
const STOP_WAIT_MS = 2000;
/**
 * QoS 1 flow. The bridge's QoS 1 messages are retained state (statuses, discovery configs, outlet
 * states, labels, settings, alarm lists, and the empty payloads that clear them) and the events of
 * an instance's `events` topic, which are not retained. At most {@link INFLIGHT_HIGH} of them
 * (fewer when an MQTT 5 broker announces a lower Receive Maximum) are handed to mqtt.js
 * unacknowledged; the rest wait in the connection's outbox, in order, and go out as
 * acknowledgements come, whoever published them. A newer retained payload for a topic still
 * waiting replaces the older one in place, so the outbox holds at most one retained message per
 * topic and the broker ends with the newest; every event keeps its own place. Bulk producers
 * (discovery, resyncs) pause while the connection is congested ({@link INFLIGHT_HIGH} messages
 * waiting or in flight) until no more than {@link INFLIGHT_LOW} are.
 */
export const INFLIGHT_HIGH = 512;
export const INFLIGHT_LOW = 128;
/** Messages waiting in the outbox at most; past it one is dropped, logged and counted. */
export const OUTBOX_MAX = 262_144;

/** Largest payload published, in UTF-16 units (3 bytes each at most; MQTT's limit is 256 MiB). */
export const MAX_PAYLOAD_CHARS = 64 * 1024 * 1024;
/**
 * QoS 0 messages are encoded into one buffer (src/mqtt/packet.ts) up to this packet size; a larger
 * one (a rare long text value) goes through mqtt.js, after the batch before it.
 */
const BATCHED_PACKET_MAX = 16 * 1024;
/** A batch is written at once when it holds this many bytes (bounds the scratch buffer). */
const BATCH_FLUSH_BYTES = 256 * 1024;
/**
 * Otherwise a batch is written this long (ms) after its first message, with the values of the polls
 * answered meanwhile: fewer, larger socket writes cost less CPU per poll than one write per event
 * loop turn. QoS 1 messages and a close write the batch first, so the order on the wire holds.
 */
const BATCH_DELAY_MS = 20;
/** Warnings about dropped messages per window at most (each is counted all the same). */
const DROP_LOGS_PER_WINDOW = 10;
const DROP_LOG_WINDOW_MS = 60_000;

/** CONNACK codes that will not get better by retrying (3.1.1 and 5). */
const FATAL_CONNACK = new Set([1, 2, 4, 5, 132, 133, 134, 135, 138, 140]);

/** An MQTT 5 broker's DISCONNECT reason: another client connected with this client's id. */
export const SESSION_TAKEN_OVER = 0x8e;

/** A QoS 1 message in the outbox. */
interface OutMessage {
  readonly topic: string;
  payload: string;
  readonly retain: boolean;
  /** Its place in publishing order; a replacement takes the newer one's. */
  seq: number;
}

/** Where to connect when it is not `Config.Mqtt.Connection` (the embedded broker). */
export interface BrokerTarget {
  readonly scheme: MqttScheme;
  readonly host: string;
  readonly port: number;
  readonly protocolVersion: 4 | 5;
  readonly embedded: boolean;
  /** The largest packet the broker accepts when it does not say so itself (MQTT 3.1.1); null: no limit. */
  readonly maxPacketSize: number | null;
}

export interface ConnectionHooks {
  /** After each (re)connect, once `online` is published and the subscriptions are sent (before `mqttConnected`). */
  onConnect?(): void;
  onMessage(topic: string, payload: Buffer, retained: boolean): void;
}

export interface CreateOptions {
  readonly config: MqttConfig;
  /** Default: `config.Connection`. */
  readonly target?: BrokerTarget;
  /** Topic filters subscribed (QoS 1) after every connect. */
  readonly subscriptions: readonly string[];
  readonly logger: Logger;
  /** Told `mqttConnected` after every connect and `mqttLost` when a connection that was up closes. */
  readonly bus?: EventBus;
  /** The bridge's status topic (`online`, and the will); default `Topics.bridgeStatus()` of ParentTopic. */
  readonly statusTopic?: string;
}

export interface OpenOptions extends CreateOptions {
  readonly hooks: ConnectionHooks;
}

const NO_HOOKS: ConnectionHooks = { onMessage: () => undefined };

export class MqttConnection {
  readonly #client: MqttClient;
  readonly #logger: Logger;
  readonly #statusTopic: string;
  readonly #subscriptions: readonly string[];
  #hooks: ConnectionHooks = NO_HOOKS;
  readonly #bus: EventBus | undefined;
  readonly #broker: string;
  readonly #embedded: boolean;
  #connected = false;
  /** The client id this connection uses (a takeover of its session is logged naming it). */
  readonly #clientId: string;
  /** The reason code of the DISCONNECT an MQTT 5 broker sent on the current connection, if any. */
  #disconnectReason: number | null = null;
  #since: number | null = null;
  #lastError: string | null = null;
  #attempt = 0;
  #timer: NodeJS.Timeout | null = null;
  #stopping = false;
  /** QoS 1 messages handed to mqtt.js on the current connection and not acknowledged yet. */
  #inflight = 0;
  /** QoS 1 messages in flight at most on this connection: {@link INFLIGHT_HIGH} or the broker's Receive Maximum. */
  #window = INFLIGHT_HIGH;
  /** QoS 1 messages waiting for room in the window, in order; retained ones keyed by topic. */
  readonly #outbox = new Map<string, OutMessage>();
  /** Reads {@link #outbox} front to back across deletions and additions; null once it is empty. */
  #cursor: Iterator<OutMessage> | null = null;
  /** Numbers QoS 1 messages in publishing order (which of two lost ones for a topic is newer). */
  #sequence = 0;
  /** Bumped on every connect and close: acknowledgements of an older connection are not counted. */
  #generation = 0;
  #uncongested: (() => void)[] = [];
  /** Waiting for {@link whenDrained}. */
  #drained: (() => void)[] = [];
  #droppedCount = 0;
  #dropWindowStart = -Infinity;
  #dropLogged = 0;
  /** Messages handed to the client, and dropped or refused (the metrics read them). */
  readonly traffic = { published: 0, failed: 0 };
  /** QoS 0 messages not written yet, written together by {@link #flush}. */
  readonly #batch: PublishBatch;
  readonly #version: 4 | 5;
  /**
   * The largest packet the broker accepts (MQTT 5 CONNACK's Maximum Packet Size; none: unlimited).
   * A larger one would cost the connection (mosquitto's `max_packet_size` disconnects the client),
   * and mqtt.js does not check it, so {@link publish} drops such a message itself.
   */
  #brokerMaxPacket = Infinity;
  /** The limit known before any CONNACK: the embedded broker's, or `Mqtt.MaxPacketSize`. */
  readonly #configuredMaxPacket: number;
  /** The pending write of the batch ({@link BATCH_DELAY_MS}), null when none is due. */
  #flushTimer: NodeJS.Timeout | null = null;
  /** Settles the first attempt while `open` waits for it. */
  #startup: { resolve: () => void; reject: (error: Error) => void } | null = null;

  private constructor(
    client: MqttClient,
    options: CreateOptions,
    broker: string,
    embedded: boolean,
    maxPacket: number,
  ) {
    this.#client = client;
    this.#logger = options.logger;
    this.#statusTopic = options.statusTopic ?? new Topics(options.config.ParentTopic).bridgeStatus();
    this.#subscriptions = options.subscriptions;
    this.#bus = options.bus;
    this.#broker = broker;
    this.#embedded = embedded;
    this.#version = client.options.protocolVersion === 5 ? 5 : 4;
    this.#batch = new PublishBatch(this.#version, BATCHED_PACKET_MAX);
    this.#configuredMaxPacket = maxPacket;
    this.#clientId = client.options.clientId ?? options.config.ClientId;
    client.on("disconnect", (packet) => {
      this.#disconnectReason = packet.reasonCode ?? 0;
    });
    client.on("connect", (connack) =>
      this.#onConnect(connack.properties?.maximumPacketSize, connack.properties?.receiveMaximum),
    );
    client.on("close", () => this.#onClose());
    client.on("error", (error) => this.#onError(error));
    client.on("message", (topic, payload, packet) => this.#onMessage(topic, payload, packet.retain));
  }

  /** Connects; resolves once the first attempt ended (connected or not), rejects on a fatal refusal. */
  static async open(options: OpenOptions): Promise<MqttConnection> {
    const connection = await MqttConnection.create(options);
    await connection.connect(options.hooks);
    return connection;
  }

  /** The connection, not connected yet (reads `Mqtt.Connection.CaFile`: a ConfigError when it cannot). */
  static async create(options: CreateOptions): Promise<MqttConnection> {
    const { config } = options;
    const target: BrokerTarget = options.target ?? {
      scheme: config.Connection.Scheme,
      host: config.Connection.Host ?? "127.0.0.1",
      port: config.Connection.Port,
      protocolVersion: config.Connection.ProtocolVersion,
      embedded: false,
      maxPacketSize: config.MaxPacketSize,
    };
    const secure = target.scheme === "mqtts" || target.scheme === "wss";
    let ca: Buffer | undefined;
    if (secure && config.Connection.CaFile !== null && !target.embedded) {
      try {
        ca = await readFile(config.Connection.CaFile);
      } catch (error) {
        throw new ConfigError(
          "Mqtt.Connection.CaFile",
          `cannot read ${config.Connection.CaFile} (${describeError(error)})`,
        );
      }
    }
    const path = target.scheme === "ws" || target.scheme === "wss" ? "/mqtt" : "";
    const host = target.host.includes(":") ? `[${target.host}]` : target.host;
    const broker = `${target.scheme}://${host}:${target.port}${path}`;
    const clientOptions: IClientOptions = {
      protocol: target.scheme,
      host: target.host,
      port: target.port,
      ...(path === "" ? {} : { path }),
      clientId: config.ClientId,
      keepalive: config.KeepAlive,
      protocolVersion: target.protocolVersion,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      resubscribe: false,
      queueQoSZero: false,
      manualConnect: true,
      // mqtt.js logs through `debug` several times per publish, which costs CPU even while `debug`
      // is off. The bridge logs what matters itself.
      log: () => undefined,
      // Otherwise mqtt-packet makes 65,536 two-byte Buffers for packet ids at the first write and
      // keeps them (docs/heap-breakdown.md); QoS 0 values are encoded by packet.ts anyway.
      writeCache: false,
      // Never an identifier still in flight (src/mqtt/packet-ids.ts).
      messageIdProvider: new PacketIdPool(),
      will: {
        topic: options.statusTopic ?? new Topics(config.ParentTopic).bridgeStatus(),
        payload: Buffer.from("offline"),
        qos: 1,
        retain: true,
      },
      ...(config.Credentials.Username === null ? {} : { username: config.Credentials.Username }),
      ...(config.Credentials.Password === null ? {} : { password: config.Credentials.Password }),
      ...(secure ? { rejectUnauthorized: config.Connection.ValidateCertificate } : {}),
      ...(ca === undefined ? {} : { ca }),
    };
    return new MqttConnection(
      connect(clientOptions),
      options,
      broker,
      target.embedded,
      target.maxPacketSize ?? Infinity,
    );
  }

  /**
   * Takes `hooks` and connects; resolves once the first attempt ended (connected or not), rejects
   * on a fatal refusal. Called once.
   */
  async connect(hooks: ConnectionHooks): Promise<void> {
    this.#hooks = hooks;
    await this.#firstAttempt();
  }

  get connected(): boolean {
    return this.#connected;
  }

  status(): MqttStatus {
    return {
      connected: this.#connected,
      broker: this.#broker,
      embedded: this.#embedded,
      lastError: this.#lastError,
      since: this.#since,
      ...(this.#droppedCount > 0 ? { droppedMessages: this.#droppedCount } : {}),
    };
  }

  /**
   * Queues one message; false (and nothing queued) while disconnected: the caller republishes what
   * matters on the next connect. Errors are logged, never thrown.
   */
  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean {
    if (!this.#connected) {
      this.traffic.failed++;
      return false;
    }
    // Guarded one by one: a topic the protocol cannot carry (mqtt-packet throws on one over 64 KiB)
    // or a strict broker refuses (it drops the connection on a control character) is dropped here,
    // logged and counted, so it can neither escape into the process nor cost the connection.
    const problem = topicProblem(topic);
    if (problem !== null || payload.length > MAX_PAYLOAD_CHARS) {
      this.#dropped(topic, problem ?? `payload of ${payload.length} characters is too large`);
      return false;
    }
    try {
      // A retained topic whose QoS 1 message still waits in the outbox (the window is full, or it
      // was lost with a connection) takes the newer payload there: written now at QoS 0, it would
      // reach the broker before the older one, which the broker would then keep.
      const sent: 0 | 1 = qos === 0 && retain && this.#outbox.has(topic) ? 1 : qos;
      if (sent === 0) {
        // Encoded here and written with the other values of the next few ms in one go (#flush): the
        // same bytes mqtt.js would send, in the same order, for a fraction of the CPU.
        if (this.#batch.add(topic, payload, retain)) {
          this.traffic.published++;
          if (this.#batch.bytes >= BATCH_FLUSH_BYTES) this.#flush();
          else this.#flushTimer ??= setTimeout(this.#flushDue, BATCH_DELAY_MS);
          return true;
        }
        if (this.#tooLarge(topic, payload, sent)) return false;
        // Too large for a batch: after the batch, through mqtt.js. No callback: mqtt.js waits for
        // `drain` once per publish that has one while the socket is backed up, and removing each
        // of those listeners is O(n) (npm run bench, fleet). A QoS 0 message is never
        // acknowledged, so the callback could only report local write errors.
        this.#flush();
        this.#client.publish(topic, payload, { qos: 0, retain });
        this.traffic.published++;
        return true;
      }
      if (this.#tooLarge(topic, payload, sent)) return false;
      this.#enqueue(topic, payload, retain);
      return true;
    } catch (error) {
      this.#dropped(topic, describeError(error));
      return false;
    }
  }

  /**
   * Subscribes (QoS 1) for this connection only (not renewed after a reconnect); resolves with the
   * filters the broker granted. `noLocal`: the broker does not echo the bridge's own publishes (MQTT 5). Rejects while disconnected or when the broker fails the request.
   */
  async subscribeOnce(
    filters: readonly string[],
    options: { readonly noLocal?: boolean } = {},
  ): Promise<string[]> {
    if (!this.#connected) throw new Error("not connected");
    // No Local exists in MQTT 5 only; a 3.1.1 broker echoes the bridge's own publishes regardless.
    const noLocal = options.noLocal === true && this.#version === 5;
    const granted = await this.#client.subscribeAsync([...filters], {
      qos: 1,
      ...(noLocal ? { nl: true } : {}),
    });
    return granted.filter((g) => g.qos !== 128).map((g) => g.topic);
  }

  /** Drops filters of {@link subscribeOnce}; settles when the broker answered or the connection ended. Never rejects. */
  unsubscribe(filters: readonly string[]): Promise<void> {
    if (!this.#connected || filters.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#client.unsubscribe([...filters], (error) => {
        if (error) this.#logger.debug({ err: describeError(error) }, "MQTT unsubscribe failed");
        resolve();
      });
    });
  }

  /**
   * Resolves once every QoS 1 message published so far has been acknowledged (none waiting, none
   * in flight), on this connection or a later one.
   */
  whenDrained(): Promise<void> {
    if (this.#connected && this.#inflight === 0 && this.#outbox.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /**
   * Puts a QoS 1 message in the outbox (replacing a retained one still waiting for the same topic)
   * and sends what the window allows.
   */
  #enqueue(topic: string, payload: string, retain: boolean): void {
    const seq = ++this.#sequence;
    if (retain) {
      const waiting = this.#outbox.get(topic);
      if (waiting !== undefined) {
        waiting.payload = payload;
        waiting.seq = seq;
        return;
      }
    }
    if (this.#outbox.size >= OUTBOX_MAX) {
      this.#dropped(topic, `${OUTBOX_MAX} QoS 1 messages are already waiting for the broker`);
      return;
    }
    this.#outbox.set(retain ? topic : `\u0000${seq}`, { topic, payload, retain, seq });
    this.#drain();
  }

  /** Hands waiting QoS 1 messages to mqtt.js while the window has room. */
  #drain(): void {
    if (!this.#connected || this.#client.disconnecting) return;
    // Every QoS 0 message published before these goes out before them.
    if (this.#outbox.size > 0 && this.#inflight < this.#window) this.#flush();
    while (this.#inflight < this.#window && this.#outbox.size > 0) {
      this.#cursor ??= this.#outbox.values();
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = null;
        continue;
      }
      const message = next.value;
      this.#outbox.delete(message.retain ? message.topic : `\u0000${message.seq}`);
      this.#send(message);
    }
    // An iterator holds the table it started on, and every table the map has had since.
    if (this.#outbox.size === 0) this.#cursor = null;
  }

  #send(message: OutMessage): void {
    const generation = this.#generation;
    this.#inflight++;
    const { topic, payload, retain } = message;
    try {
      this.#client.publish(topic, payload, { qos: 1, retain }, (error) => {
        if (generation !== this.#generation) {
          this.#requeueLost(message);
          return;
        }
        this.#inflight--;
        if (error) {
          this.traffic.failed++;
          this.#logger.debug({ topic, err: describeError(error) }, "MQTT publish failed");
        }
        this.#drain();
        if (this.#inflight + this.#outbox.size <= INFLIGHT_LOW) this.#notifyUncongested();
        if (this.#inflight === 0 && this.#outbox.size === 0) this.#notifyDrained();
      });
      this.traffic.published++;
    } catch (error) {
      if (generation === this.#generation) this.#inflight--;
      this.#dropped(topic, describeError(error));
    }
  }

  /**
   * A message lost with its connection (never acknowledged) waits for the next one, unless a newer
   * payload for its topic already does. Not after a stop, and not a message that is not retained
   * state.
   */
  #requeueLost(message: OutMessage): void {
    if (this.#stopping || !message.retain) return;
    const waiting = this.#outbox.get(message.topic);
    if (waiting === undefined) {
      if (this.#outbox.size < OUTBOX_MAX) this.#outbox.set(message.topic, message);
    } else if (waiting.seq < message.seq) {
      waiting.payload = message.payload;
      waiting.seq = message.seq;
    }
  }

  /** QoS 1 messages waiting in the outbox (not yet handed to mqtt.js). */
  get waiting(): number {
    return this.#outbox.size;
  }

  /** Whether the message's packet is within the broker's maximum (and the payload within ours). */
  fits(topic: string, payload: string, qos: 0 | 1): boolean {
    return (
      payload.length <= MAX_PAYLOAD_CHARS && this.#packetSize(topic, payload, qos) <= this.#brokerMaxPacket
    );
  }

  #packetSize(topic: string, payload: string, qos: 0 | 1): number {
    return publishPacketSize(
      this.#version,
      Buffer.byteLength(topic, "utf8"),
      Buffer.byteLength(payload, "utf8"),
      qos,
    );
  }

  /** True (and the message dropped, logged and counted) when its packet is over the broker's maximum. */
  #tooLarge(topic: string, payload: string, qos: 0 | 1): boolean {
    if (this.#brokerMaxPacket === Infinity) return false;
    const size = this.#packetSize(topic, payload, qos);
    if (size <= this.#brokerMaxPacket) return false;
    this.#dropped(topic, `packet of ${size} bytes is over the broker's maximum of ${this.#brokerMaxPacket}`);
    return true;
  }

  readonly #flushDue = (): void => {
    this.#flushTimer = null;
    this.#flush();
  };

  /**
   * Writes the batched QoS 0 messages to the socket as one buffer, behind whatever mqtt.js wrote
   * before (the same stream, so the order holds). While disconnected they are dropped, as mqtt.js
   * drops QoS 0 messages then (queueQoSZero: false); like mqtt.js's QoS 0 writes, this does not
   * wait for a backed-up socket to drain.
   */
  #flush(): void {
    const count = this.#batch.count;
    const packets = this.#batch.take();
    if (packets === null) return;
    const stream = this.#client.stream as NodeJS.WritableStream | undefined;
    if (!this.#connected || this.#client.disconnecting || stream === undefined || !stream.writable) {
      this.traffic.failed += count;
      return;
    }
    stream.write(packets);
  }

  /** Messages dropped because they could not be built or sent (see {@link publish}). */
  get droppedPublishes(): number {
    return this.#droppedCount;
  }

  #dropped(topic: string, why: string): void {
    this.#droppedCount++;
    this.traffic.failed++;
    const now = Date.now();
    if (now - this.#dropWindowStart >= DROP_LOG_WINDOW_MS) {
      this.#dropWindowStart = now;
      this.#dropLogged = 0;
    }
    if (this.#dropLogged >= DROP_LOGS_PER_WINDOW) return;
    this.#dropLogged++;
    const shown = topic.length > 200 ? `${topic.slice(0, 200)}…` : topic;
    this.#logger.warn(
      { topic: JSON.stringify(shown), reason: why, dropped: this.#droppedCount },
      "MQTT message dropped: it cannot be published",
    );
  }

  get congested(): boolean {
    return this.#connected && this.#inflight + this.#outbox.size >= INFLIGHT_HIGH;
  }

  onceUncongested(callback: () => void): void {
    if (!this.congested) {
      queueMicrotask(callback);
      return;
    }
    this.#uncongested.push(callback);
  }

  #notifyDrained(): void {
    const waiting = this.#drained;
    this.#drained = [];
    for (const resolve of waiting) resolve();
  }

  #notifyUncongested(): void {
    if (this.#uncongested.length === 0) return;
    const waiting = this.#uncongested;
    this.#uncongested = [];
    for (const callback of waiting) callback();
  }

  /** A new connection (or none): nothing of it is in flight. */
  #resetFlow(): void {
    this.#generation++;
    this.#inflight = 0;
  }

  /**
   * After a connection is lost: its QoS 1 messages that were never acknowledged are taken back from
   * mqtt.js, whose clean session would otherwise keep their callbacks pending for good; each
   * callback runs once, with an error, and {@link #requeueLost} puts the message in the outbox.
   */
  #takeBackUnacknowledged(): void {
    for (const id of Object.keys(this.#client.outgoing)) this.#client.removeOutgoingMessage(Number(id));
  }

  /**
   * Publishes `offline` retained (QoS 1) on each of `offlineTopics` (the instances' status topics)
   * and then on `P/status`, waits for their acknowledgements within the stop budget, disconnects
   * cleanly and stops reconnecting. Never throws.
   */
  async close(offlineTopics: readonly string[] = []): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    // A broker that stops acknowledging must not eat the whole shutdown budget: when `offline`
    // was not acknowledged in time, a graceful end would wait on that same message, so force it.
    let acknowledged = false;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    this.#flush();
    // What still waits is not sent: `offline` goes out now, and the next start publishes everything.
    this.traffic.failed += this.#outbox.size;
    this.#outbox.clear();
    this.#cursor = null;
    if (this.#connected) {
      try {
        // Queued in order (instances first, the bridge last) and acknowledged together.
        const acks = [...offlineTopics, this.#statusTopic].map((topic) =>
          this.#client.publishAsync(topic, "offline", { qos: 1, retain: true }),
        );
        await withTimeout(Promise.all(acks), STOP_WAIT_MS);
        acknowledged = true;
      } catch (error) {
        this.#logger.warn({ err: describeError(error) }, "could not publish MQTT offline status");
      }
    }
    const ended =
      acknowledged &&
      (await withTimeout(this.#client.endAsync(false), STOP_WAIT_MS).then(
        () => true,
        () => false,
      ));
    if (!ended) await this.#client.endAsync(true).catch(() => undefined);
    this.#connected = false;
    this.#since = Date.now();
  }

  #firstAttempt(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#startup = { resolve, reject };
      this.#client.connect();
    });
  }

  #onConnect(maximumPacketSize: number | undefined, receiveMaximum: number | undefined): void {
    this.#resetFlow();
    this.#disconnectReason = null;
    // Per connection: a broker restarted with other limits announces them again.
    this.#brokerMaxPacket = Math.min(
      this.#configuredMaxPacket,
      typeof maximumPacketSize === "number" && maximumPacketSize > 0 ? maximumPacketSize : Infinity,
    );
    this.#batch.maxPacket = Math.min(BATCHED_PACKET_MAX, this.#brokerMaxPacket);
    // The `online` status below is one more QoS 1 message in flight: the window leaves it room.
    this.#window =
      typeof receiveMaximum === "number" && receiveMaximum > 1
        ? Math.min(INFLIGHT_HIGH, receiveMaximum - 1)
        : INFLIGHT_HIGH;
    this.#connected = true;
    this.#since = Date.now();
    this.#lastError = null;
    this.#attempt = 0;
    this.#logger.info({ broker: this.#broker }, "connected to MQTT broker");
    this.#client.publish(this.#statusTopic, "online", { qos: 1, retain: true }, (error) => {
      if (error) this.#logger.debug({ err: describeError(error) }, "MQTT online status not delivered");
    });
    // Start-up completes once the broker has the subscriptions, so a command published as soon as
    // the service is up is not lost.
    if (this.#subscriptions.length > 0) {
      this.#client.subscribe([...this.#subscriptions], { qos: 1 }, (error, granted) => {
        this.#settleStartup();
        if (error) {
          this.#logger.warn({ err: describeError(error) }, "MQTT subscribe failed");
          return;
        }
        const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
        if (refused.length > 0) this.#logger.warn({ topics: refused }, "MQTT broker refused subscriptions");
      });
    } else {
      this.#settleStartup();
    }
    try {
      this.#hooks.onConnect?.();
    } catch (error) {
      this.#logger.error({ err: describeError(error) }, "MQTT republish after connect failed");
    }
    this.#bus?.emit("mqttConnected", { broker: this.#broker });
    this.#drain();
  }

  #onError(error: Error & { code?: unknown }): void {
    const code = typeof error.code === "number" ? error.code : null;
    const message =
      code !== null
        ? `${this.#broker} refused the connection: ${error.message.replace(/^Connection refused: /, "")} (code ${code})`
        : `${this.#broker}: ${error.message}`;
    if (code !== null && FATAL_CONNACK.has(code) && this.#startup) {
      const startup = this.#startup;
      this.#startup = null;
      this.#stopping = true;
      this.#lastError = message;
      this.#client.end(true);
      startup.reject(new Error(`MQTT broker ${message}: check Mqtt.Credentials and Mqtt.ClientId`));
      return;
    }
    if (message !== this.#lastError) this.#logger.warn({ broker: this.#broker, err: message }, "MQTT error");
    this.#lastError = message;
  }

  #onClose(): void {
    const wasConnected = this.#connected;
    this.#connected = false;
    this.traffic.failed += this.#batch.count;
    this.#batch.clear();
    this.#resetFlow();
    this.#takeBackUnacknowledged();
    this.#notifyUncongested();
    if (wasConnected || this.#since === null) this.#since = Date.now();
    if (wasConnected) this.#bus?.emit("mqttLost", { broker: this.#broker, stopping: this.#stopping });
    if (this.#stopping) return;
    if (wasConnected) this.#logLost();
    this.#lastError ??= "connection closed";
    this.#settleStartup();
    this.#scheduleReconnect();
  }

  /**
   * Why a connection that was up ended, as far as the broker says: an MQTT 5 broker may send a
   * DISCONNECT with its reason (0x8E: another client connected with this client id and took the
   * session over). Without one (an MQTT 3.1.1 broker, or one that just closes the socket) a
   * takeover looks like a broker that stops or a network failure, so the line names all three.
   */
  #logLost(): void {
    const where = { broker: this.#broker, clientId: this.#clientId };
    const id = JSON.stringify(this.#clientId);
    const reason = this.#disconnectReason;
    if (reason === SESSION_TAKEN_OVER) {
      this.#lastError = `session taken over by another client with client id ${id}`;
      this.#logger.warn(
        { ...where, reasonCode: reason },
        `MQTT connection lost: session taken over by another client with client id ${id}, reconnecting; two bridges (or a bridge and another program) are using one Mqtt.ClientId`,
      );
    } else if (reason !== null) {
      this.#lastError = `disconnected by the broker (reason code ${reason})`;
      this.#logger.warn(
        { ...where, reasonCode: reason },
        `MQTT connection lost: the broker disconnected the bridge (reason code ${reason}), reconnecting`,
      );
    } else {
      this.#logger.warn(
        where,
        `MQTT connection lost, reconnecting; the broker gave no reason: it stopped, the network failed, or another client connected with client id ${id} and took the session over (two bridges, or a bridge and another program, using one Mqtt.ClientId)`,
      );
    }
  }

  #scheduleReconnect(): void {
    if (this.#timer) return;
    const delay = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** this.#attempt);
    this.#attempt = Math.min(this.#attempt + 1, 10);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!this.#stopping) this.#client.reconnect();
    }, delay);
  }

  #onMessage(topic: string, payload: Buffer, retained: boolean): void {
    try {
      this.#hooks.onMessage(topic, payload, retained);
    } catch (error) {
      this.#logger.error({ topic, err: describeError(error) }, "MQTT message handler failed");
    }
  }

  #settleStartup(): void {
    const startup = this.#startup;
    this.#startup = null;
    startup?.resolve();
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
