/**
 * A minimal MQTT 3.1.1 (or 5) broker on a real loopback socket that can hold back its PUBACKs: it
 * accepts any client, grants every subscription, records every PUBLISH it reads, and acknowledges
 * QoS 1 messages at once, or only when released while `holding`. What a client writes while the
 * acknowledgements are held shows whether it applies flow control (a real broker acknowledges as
 * fast as it can take messages in; this one can stand for one that cannot keep up).
 *
 * It forwards nothing: it is the peer of one client under test, not a broker for others; it can
 * send that client a message of its own ({@link HeldAckBroker.deliver}), and, speaking MQTT 5, end
 * its connection with a reason, as a broker may ({@link HeldAckBroker.disconnectClients}).
 */
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import mqttPacket, { type IPublishPacket, type Packet } from "mqtt-packet";

export interface ReceivedPublish {
  readonly topic: string;
  readonly payload: string;
  readonly qos: number;
  readonly retain: boolean;
  /** The packet identifier (QoS 1), else undefined. */
  readonly messageId: number | undefined;
}

export class HeldAckBroker {
  readonly host = "127.0.0.1";
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  /** PUBACKs not sent yet, per socket. */
  #held: { socket: Socket; messageId: number }[] = [];
  /** Identifiers of the held PUBACKs, per socket. */
  readonly #heldIds = new Map<Socket, Set<number>>();
  /** Every PUBLISH read, in order, over all connections. */
  readonly received: ReceivedPublish[] = [];
  /** CONNECTs accepted so far. */
  connects = 0;
  /**
   * QoS 1 PUBLISHes whose packet identifier was already in use by another held (unacknowledged)
   * PUBLISH of the same connection: the client reused an identifier still in flight.
   */
  reusedIds = 0;
  holding: boolean;
  /** The MQTT version it speaks (its clients must use the same). */
  readonly #version: 4 | 5;

  private constructor(server: Server, holding: boolean, version: 4 | 5) {
    this.#server = server;
    this.holding = holding;
    this.#version = version;
  }

  static async start(options: { holding?: boolean; protocolVersion?: 4 | 5 } = {}): Promise<HeldAckBroker> {
    const server = createServer();
    const broker = new HeldAckBroker(server, options.holding ?? false, options.protocolVersion ?? 4);
    server.on("connection", (socket) => broker.#accept(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return broker;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** PUBACKs currently held. */
  get heldCount(): number {
    return this.#held.length;
  }

  /** Sends every held PUBACK and acknowledges at once from now on. */
  release(): void {
    this.holding = false;
    const held = this.#held;
    this.#held = [];
    this.#heldIds.clear();
    for (const { socket, messageId } of held) this.#send(socket, { cmd: "puback", messageId });
  }

  /** Sends `payload` on `topic` (QoS 0, not retained) to every connected client. */
  deliver(topic: string, payload: string): void {
    for (const socket of this.#sockets) {
      this.#send(socket, { cmd: "publish", topic, payload, qos: 0, retain: false, dup: false });
    }
  }

  /** Drops every client connection (a broker restart, as the client sees it). Held PUBACKs are lost. */
  dropClients(): void {
    this.#held = [];
    this.#heldIds.clear();
    for (const socket of this.#sockets) socket.destroy();
  }

  /** MQTT 5: sends every client a DISCONNECT with `reasonCode` (0x8E: session taken over), then closes. */
  disconnectClients(reasonCode: number): void {
    if (this.#version !== 5) throw new Error("a DISCONNECT from the broker is MQTT 5");
    for (const socket of this.#sockets) {
      this.#send(socket, { cmd: "disconnect", reasonCode });
      socket.end();
    }
  }

  async close(): Promise<void> {
    this.dropClients();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const parser = mqttPacket.parser({ protocolVersion: this.#version });
    parser.on("packet", (packet: Packet) => this.#handle(socket, packet));
    parser.on("error", () => socket.destroy());
    socket.on("data", (chunk: Buffer) => parser.parse(chunk));
  }

  #handle(socket: Socket, packet: Packet): void {
    switch (packet.cmd) {
      case "connect":
        this.connects++;
        this.#send(socket, { cmd: "connack", returnCode: 0, reasonCode: 0, sessionPresent: false });
        return;
      case "subscribe":
        this.#send(socket, {
          cmd: "suback",
          messageId: packet.messageId!,
          granted: packet.subscriptions.map((s) => s.qos),
        });
        return;
      case "unsubscribe":
        this.#send(socket, { cmd: "unsuback", messageId: packet.messageId!, granted: [] });
        return;
      case "pingreq":
        this.#send(socket, { cmd: "pingresp" });
        return;
      case "disconnect":
        socket.end();
        return;
      case "publish":
        this.#publish(socket, packet);
        return;
      default:
        return;
    }
  }

  #publish(socket: Socket, packet: IPublishPacket): void {
    const payload = typeof packet.payload === "string" ? packet.payload : packet.payload.toString("utf8");
    const { messageId } = packet;
    this.received.push({ topic: packet.topic, payload, qos: packet.qos, retain: packet.retain, messageId });
    if (packet.qos === 0 || messageId === undefined) return;
    if (!this.holding) {
      this.#send(socket, { cmd: "puback", messageId });
      return;
    }
    let ids = this.#heldIds.get(socket);
    if (ids === undefined) {
      ids = new Set();
      this.#heldIds.set(socket, ids);
    }
    if (ids.has(messageId)) this.reusedIds++;
    ids.add(messageId);
    this.#held.push({ socket, messageId });
  }

  #send(socket: Socket, packet: Packet): void {
    if (!socket.destroyed) socket.write(mqttPacket.generate(packet, { protocolVersion: this.#version }));
  }
}
