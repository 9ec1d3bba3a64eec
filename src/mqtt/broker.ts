/**
 * The embedded MQTT 3.1.1 broker (aedes on a plain TCP listener), started when
 * `Mqtt.Connection.Host` is omitted. Other clients (Home Assistant, mosquitto_sub) connect to it
 * like to any broker. When `Mqtt.Credentials` are set they are required from every client.
 *
 * Access rules: only the bridge's own connection (its client id plus a per-process secret) may use
 * its client id and publish under the parent topic (other clients only its command topics) and
 * under the discovery prefix (other clients only `<prefix>/status`, Home Assistant's birth); a
 * packet over `Mqtt.Embedded.MaxPacketSize` closes the connection before it is buffered (the
 * bridge itself never sends one: it knows the limit); other clients' retained messages are bounded,
 * and a retained command (which would replay at every reconnect of the bridge) is refused from
 * everyone: only its clear (an empty payload) is taken.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { Aedes, type AedesOptions, type AuthenticateError, type Client } from "aedes";
import { ConfigError } from "../config/errors.js";
import { describeError } from "../pdu/errors.js";
import { FoldedLog } from "../log-limit.js";
import type { Logger } from "../log.js";
import { Topics } from "./topics.js";

export interface EmbeddedBrokerOptions {
  readonly bind: string;
  /** 0 picks a free port (tests); the actual port is reported. */
  readonly port: number;
  /** Required from every client when set. */
  readonly username: string | null;
  readonly password: string | null;
  readonly logger: Logger;
  /**
   * The bridge's own connection: its client id, and the per-process secret it sends as its password
   * (with the configured user name). Only that connection may use the client id and publish the
   * bridge's status and discovery topics.
   */
  readonly bridge?: { readonly clientId: string; readonly secret: string };
  /** `Mqtt.ParentTopic`: everything under it but the command topics is the bridge's alone. */
  readonly parentTopic?: string;
  /** `HomeAssistant.DiscoveryTopic`: everything under it but `<prefix>/status` is the bridge's alone. */
  readonly discoveryPrefix?: string;
  /** Largest MQTT packet accepted from a client, in bytes; a larger one closes its connection. */
  readonly maxPacketSize?: number;
  /** Retained messages other clients may keep (default {@link MAX_FOREIGN_RETAINED}; tests use fewer). */
  readonly maxForeignRetained?: number;
}

/** Default of `Mqtt.Embedded.MaxPacketSize`. */
export const DEFAULT_MAX_PACKET_SIZE = 262_144;
/** Retained messages other clients may keep in the embedded broker, and their total payload bytes. */
export const MAX_FOREIGN_RETAINED = 1000;
export const MAX_FOREIGN_RETAINED_BYTES = 16 * 1024 * 1024;

export interface EmbeddedBroker {
  /** Address clients on this machine use (the bind address, or loopback for a wildcard bind). */
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

/** CONNACK return codes of MQTT 3.1.1 (aedes's enum is a const enum, not importable here). */
const IDENTIFIER_REJECTED = 2;
const BAD_USERNAME_OR_PASSWORD = 4;

export const isLoopbackAddress = (address: string): boolean =>
  address === "localhost" ||
  address === "::1" ||
  /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address) ||
  /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address);

function refusal(message: string, returnCode: number): AuthenticateError {
  const error = new Error(message) as AuthenticateError;
  error.returnCode = returnCode;
  return error;
}

export async function startEmbeddedBroker(options: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const log = options.logger;
  const warn = rateLimitedWarn(log);
  const credentialsSet = options.username !== null || options.password !== null;
  if (!credentialsSet && !isLoopbackAddress(options.bind)) {
    log.warn(
      { bind: options.bind },
      `the embedded MQTT broker listens on ${options.bind} without credentials: anyone who can reach it can ` +
        "read every value and send commands; set SERVICE_MQTT_USERNAME and SERVICE_MQTT_PASSWORD, or bind it to 127.0.0.1",
    );
  }
  const access = accessRules(options, warn);
  const aedes = await Aedes.createBroker(access.rules);
  forwardRetainedInOrder(aedes, log);
  aedes.on("clientDisconnect", (client) => access.disconnected(client));
  const maxPacketSize = options.maxPacketSize ?? DEFAULT_MAX_PACKET_SIZE;
  const server = createServer((socket) => {
    const remote = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? "?"}`;
    const guarded = guardPacketSize(socket, maxPacketSize, (size) =>
      warn("packet-size", "an MQTT packet over Mqtt.Embedded.MaxPacketSize; connection closed", {
        size,
        limit: maxPacketSize,
        remote,
      }),
    );
    remotes.set(guarded, remote);
    aedes.handle(guarded);
  });
  try {
    await listen(server, options.port, options.bind);
  } catch (error) {
    await closeAedes(aedes);
    throw listenError(error, options.bind, options.port);
  }
  server.on("error", (error) =>
    options.logger.error({ err: describeError(error) }, "embedded MQTT broker error"),
  );
  const port = (server.address() as AddressInfo).port;
  const host = options.bind === "0.0.0.0" ? "127.0.0.1" : options.bind === "::" ? "::1" : options.bind;
  options.logger.info(
    { bind: options.bind, port },
    `embedded MQTT broker listening on ${options.bind}:${port}`,
  );

  let closing: Promise<void> | null = null;
  return {
    host,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await closeAedes(aedes);
        await closed;
        options.logger.info("embedded MQTT broker stopped");
      })();
      return closing;
    },
  };
}

/** The access rules of the module comment: who may connect as whom, and who may publish what. */
function accessRules(options: EmbeddedBrokerOptions, warn: Warn): AccessRules {
  const credentialsSet = options.username !== null || options.password !== null;
  const user = Buffer.from(options.username ?? "");
  const pass = Buffer.from(options.password ?? "");
  const bridge = options.bridge;
  const bridgeSecret = Buffer.from(bridge?.secret ?? "");
  const isProtected = protectedTopics(options.parentTopic, options.discoveryPrefix);
  const commands = options.parentTopic === undefined ? null : new Topics(options.parentTopic);
  /** The bridge's live connection (an aedes client), if any. */
  let bridgeClient: Client | null = null;
  const admitRetained = retainedBudget(options.maxForeignRetained ?? MAX_FOREIGN_RETAINED, warn);

  const rules: AedesOptions = {
    authenticate: (client, username, password, done) => {
      const id = client.id ?? "";
      if (bridge !== undefined && id === bridge.clientId) {
        // Only the bridge knows the secret: no one can take over its client id, even between reconnects.
        const userOk = !credentialsSet || sameBytes(Buffer.from(username ?? ""), user);
        if (userOk && password !== undefined && sameBytes(password, bridgeSecret)) {
          bridgeClient = client;
          done(null, true);
          return;
        }
        warn("client-id", "a client tried to connect with the bridge's client id; refused", {
          remote: remoteOf(client),
        });
        done(refusal("client id reserved for the bridge", IDENTIFIER_REJECTED), false);
        return;
      }
      if (
        !credentialsSet ||
        (sameBytes(Buffer.from(username ?? ""), user) && password !== undefined && sameBytes(password, pass))
      ) {
        done(null, true);
        return;
      }
      done(refusal("bad user name or password", BAD_USERNAME_OR_PASSWORD), false);
    },
    authorizePublish: (client, packet, done) => {
      const topic = packet.topic;
      if (topic.startsWith("$SYS")) {
        done(new Error("$SYS topics are reserved"));
        return;
      }
      if (client !== null && client === bridgeClient) {
        done(null);
        return;
      }
      if (isProtected(topic)) {
        warn("topic", "a client other than the bridge published a bridge topic; disconnected", {
          topic: topic.slice(0, 200),
          remote: remoteOf(client),
        });
        done(new Error("topic reserved for the bridge"));
        return;
      }
      if (packet.retain && packet.payload.length > 0 && commands?.isCommandShaped(topic) === true) {
        warn(
          "retained-command",
          "a retained command was refused (it would replay at every reconnect); disconnected",
          {
            topic: topic.slice(0, 200),
            remote: remoteOf(client),
          },
        );
        done(new Error("retained commands are refused"));
        return;
      }
      if (packet.retain && !admitRetained(topic, packet.payload.length, client)) {
        done(new Error("too many retained messages"));
        return;
      }
      done(null);
    },
  };
  return {
    rules,
    disconnected(client) {
      if (client === bridgeClient) bridgeClient = null;
    },
  };
}

/**
 * Has aedes forward a retained message in the order it took it among the others.
 *
 * aedes hands every packet of one socket read to its handlers at once and numbers each message as
 * it takes it; a subscriber is sent a message only if its number is above the last one it was sent
 * (so that a message matching two of a client's subscriptions goes out once). A retained message
 * waits for the retained store's promise before it is forwarded, so the messages behind it in the
 * same read that are not retained (a poll's values behind a lifetime counter or an asset's power,
 * all QoS 0 in one write) overtake it, and every subscriber already there drops it: it reaches only
 * later subscribers, from the store.
 *
 * The embedded broker's store is aedes's in-memory one, whose work is done when the call returns:
 * it is answered at once (a failure, which that store cannot have, is logged), so a retained
 * message is forwarded in its turn, like any other.
 */
function forwardRetainedInOrder(aedes: Aedes, log: Logger): void {
  const persistence = (aedes as unknown as { persistence?: { storeRetained?: unknown } }).persistence;
  const store = persistence?.storeRetained;
  if (persistence === undefined || typeof store !== "function")
    throw new Error(
      "aedes has no persistence.storeRetained: the embedded broker cannot keep retained messages in order",
    );
  const storeRetained = store as (packet: { topic: string }) => Promise<void>;
  persistence.storeRetained = (packet: { topic: string }) => {
    storeRetained
      .call(persistence, packet)
      .catch((error: unknown) =>
        log.error(
          { topic: packet.topic.slice(0, 200), err: describeError(error) },
          "embedded MQTT broker could not store a retained message",
        ),
      );
    return STORED;
  };
}

/** A settled answer that runs its callback at once, not one microtask later as a promise would. */
const STORED = {
  then(stored: () => void): void {
    stored();
  },
};

/** Why the listener could not open, as a configuration error naming the key when the port or address is at fault. */
function listenError(error: unknown, bind: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
    const why =
      code === "EADDRINUSE"
        ? "is already in use"
        : code === "EACCES"
          ? "may not be opened by this user"
          : "is not an address of this machine";
    return new ConfigError(
      "Mqtt.Embedded.Port",
      `the embedded MQTT broker cannot listen on ${bind}:${port}: the ${
        code === "EADDRNOTAVAIL" ? "address" : "port"
      } ${why}`,
    );
  }
  return new Error(`the embedded MQTT broker cannot listen on ${bind}:${port}: ${describeError(error)}`);
}

/**
 * Counts the retained messages of clients other than the bridge: a new one past `max` messages or
 * {@link MAX_FOREIGN_RETAINED_BYTES} bytes is refused; an empty payload clears its topic.
 */
function retainedBudget(
  max: number,
  warn: Warn,
): (topic: string, size: number, client: Client | null) => boolean {
  const retained = new Map<string, number>();
  let retainedBytes = 0;
  return (topic, size, client) => {
    const previous = retained.get(topic);
    if (size === 0) {
      if (previous !== undefined) {
        retained.delete(topic);
        retainedBytes -= previous;
      }
    } else {
      const bytes = retainedBytes - (previous ?? 0) + size;
      if ((previous === undefined && retained.size >= max) || bytes > MAX_FOREIGN_RETAINED_BYTES) {
        warn("retained", "retained message refused: the embedded broker holds as many as it keeps", {
          topic: topic.slice(0, 200),
          remote: remoteOf(client),
        });
        return false;
      }
      retained.set(topic, size);
      retainedBytes = bytes;
    }
    return true;
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen({ port, host }, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

function closeAedes(aedes: Aedes): Promise<void> {
  return new Promise((resolve) => aedes.close(() => resolve()));
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The bridge's topics: everything under the parent topic but the command topics (states, labels,
 * settings, values, statuses, its markers), and everything under the discovery prefix but its
 * `status`. Another client publishing one could make Home Assistant show a state the PDU is not in.
 */
function protectedTopics(
  parent: string | undefined,
  discovery: string | undefined,
): (topic: string) => boolean {
  const topics = parent === undefined ? null : new Topics(parent);
  return (topic) => {
    if (topics !== null && parent !== undefined) {
      if (topic === parent) return true;
      if (topic.startsWith(`${parent}/`) && !topics.isCommandShaped(topic)) return true;
    }
    if (discovery !== undefined) {
      if (topic === discovery) return true;
      if (topic.startsWith(`${discovery}/`) && topic !== `${discovery}/status`) return true;
    }
    return false;
  };
}

/** The peer address of each guarded connection, for warnings. */
const remotes = new WeakMap<object, string>();

function remoteOf(client: Client | null): string | undefined {
  const conn: unknown = client?.conn;
  return typeof conn === "object" && conn !== null ? remotes.get(conn) : undefined;
}

type Warn = (reason: string, message: string, fields: Record<string, unknown>) => void;

interface AccessRules {
  /** aedes's authenticate and authorizePublish hooks. */
  readonly rules: AedesOptions;
  /** Forgets the bridge's connection when it ends. */
  disconnected(client: Client): void;
}

/**
 * One warning per reason per 10 s (a hostile client must not flood the log), then one line with the
 * count of the rest (src/log-limit.ts).
 */
function rateLimitedWarn(log: Logger): Warn {
  const folded = new FoldedLog(log, { burst: 1 });
  return (reason: string, message: string, fields: Record<string, unknown>): void => {
    folded.warn(reason, fields, message);
  };
}

/**
 * The socket as aedes sees it, with every MQTT packet's size read from its fixed header: a packet
 * over `max` bytes closes the connection before its body is buffered (aedes's parser would hold
 * all of it in memory first).
 */
function guardPacketSize(socket: Socket, max: number, onTooLarge: (size: number) => void): Duplex {
  let skip = 0; // body bytes of the current packet still to come
  let inLength = false; // reading the remaining-length bytes after the packet's first byte
  let length = 0;
  let multiplier = 1;
  let lengthBytes = 0;
  /** The size of a packet over the limit in `chunk`, or 0. */
  const tooLarge = (chunk: Buffer): number => {
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        skip -= n;
        i += n;
        continue;
      }
      const byte = chunk[i++]!;
      if (!inLength) {
        inLength = true;
        length = 0;
        multiplier = 1;
        lengthBytes = 0;
        continue;
      }
      length += (byte & 0x7f) * multiplier;
      multiplier *= 128;
      lengthBytes++;
      if ((byte & 0x80) !== 0) {
        // A fifth length byte is malformed: refuse it like an oversize packet.
        if (lengthBytes >= 4) return Math.max(length, max + 1);
        continue;
      }
      const size = 1 + lengthBytes + length;
      if (size > max) return size;
      skip = length;
      inLength = false;
    }
    return 0;
  };
  const guarded: Duplex = new Duplex({
    allowHalfOpen: false,
    read: () => {
      socket.resume();
    },
    write: (chunk: Buffer, _encoding, callback) => {
      socket.write(chunk, callback);
    },
    final: (callback) => {
      socket.end(callback);
    },
    destroy: (error, callback) => {
      socket.destroy();
      callback(error);
    },
  });
  socket.on("data", (chunk: Buffer) => {
    const size = tooLarge(chunk);
    if (size > 0) {
      onTooLarge(size);
      socket.destroy();
      return;
    }
    if (!guarded.push(chunk)) socket.pause();
  });
  socket.on("end", () => guarded.push(null));
  socket.on("error", (error) => guarded.destroy(error));
  socket.on("close", () => guarded.destroy());
  return guarded;
}
