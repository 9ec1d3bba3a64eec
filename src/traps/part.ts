/**
 * The SNMP trap receiver (docs/events.md, "SNMP traps"): a part of the service (src/lifecycle.ts)
 * with `Traps.Enabled`, bound to its own UDP port (`Traps.Port`) through net-snmp's receiver. Each
 * trap is matched to an SNMP instance (./sources.ts), read within the bounds (./read.ts), made an
 * event by the profiles' trap tables (`trapEvent`, through the driver seam) and told on the bus
 * (`trap`), and asks the poller for a poll of its instance at once, at most one a second
 * (./repoll.ts). What is dropped is counted by reason and logged folded, never per packet.
 *
 * Among several replicas the chart's Service sends a trap to any replica; only the one that polls
 * the instance (its bucket's holder) acts on it. Another counts it dropped (`not-held`): the
 * holder's next poll finds what the trap told.
 */
import type { RemoteInfo, Socket } from "node:dgram";
import snmp from "net-snmp";
import type { EventBus } from "../bus.js";
import type { Config } from "../config/schema.js";
import { isSnmpV3 } from "../config/traps.js";
import type { Logger } from "../log.js";
import { FoldedLog } from "../log-limit.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import { trapEvent } from "../pdu/drivers.js";
import type { TrapEventKind } from "../pdu/trap-events.js";
import { readTrap } from "./read.js";
import { RepollLimiter } from "./repoll.js";
import { normalAddress, TrapSources, type TrapCredentials, type TrapDropReason } from "./sources.js";

/** What the metrics read of the receiver (counters since start). */
export interface TrapCounts {
  readonly dropped: ReadonlyMap<TrapDropReason, number>;
  /** Per instance, per kind. */
  readonly events: ReadonlyMap<string, ReadonlyMap<TrapEventKind, number>>;
  /** Extra polls asked for, per instance. */
  readonly polls: ReadonlyMap<string, number>;
}

export interface TrapPartOptions {
  readonly config: Config;
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly ownership?: Ownership;
  readonly now?: () => number;
}

/** What the receiver's callback is handed (net-snmp's typings leave it untyped). */
interface Received {
  readonly pdu?: { readonly community?: unknown; readonly user?: unknown } & Record<string, unknown>;
  readonly rinfo?: { readonly address?: unknown; readonly port?: unknown };
}

interface Receiver {
  close(callback?: () => void): void;
  getAuthorizer(): { addCommunity(c: string): void; addUser(u: Record<string, unknown>): void };
  readonly listener: { readonly sockets?: Record<string, Socket> };
}

export class TrapPart {
  readonly name = "traps";
  readonly #options: TrapPartOptions;
  readonly #log: FoldedLog;
  readonly #ownership: Ownership;
  readonly #now: () => number;
  readonly #dropped = new Map<TrapDropReason, number>();
  readonly #events = new Map<string, Map<TrapEventKind, number>>();
  readonly #polls = new Map<string, number>();
  readonly #repoll: RepollLimiter;
  #sources: TrapSources | null = null;
  #receiver: Receiver | null = null;

  constructor(options: TrapPartOptions) {
    this.#options = options;
    this.#ownership = options.ownership ?? OWN_ALL;
    this.#now = options.now ?? Date.now;
    this.#log = new FoldedLog(options.logger, { burst: 1, windowMs: 60_000 });
    this.#repoll = new RepollLimiter((id) => {
      this.#polls.set(id, (this.#polls.get(id) ?? 0) + 1);
      options.bus.emit("pollSoon", { instanceId: id, delayMs: 0 });
    }, this.#now);
  }

  /** The UDP port it listens on (after start). */
  get port(): number {
    const socket = Object.values(this.#receiver?.listener.sockets ?? {})[0];
    return socket?.address().port ?? 0;
  }

  counts(): TrapCounts {
    return { dropped: this.#dropped, events: this.#events, polls: this.#polls };
  }

  async start(): Promise<void> {
    const { config } = this.#options;
    this.#sources = await TrapSources.of(config.instances, config.Traps.Communities);
    try {
      this.#receiver = await this.#listen("udp6");
    } catch (error) {
      // A machine without IPv6 takes traps over IPv4 alone.
      if (!/EAFNOSUPPORT|EADDRNOTAVAIL/.test(String(error))) throw error;
      this.#receiver = await this.#listen("udp4");
    }
    this.#options.logger.info({ port: this.port }, "SNMP trap receiver listening");
  }

  /** A receiver on `Traps.Port` (udp6: both IPv6 and IPv4 senders), bound, with the credentials it takes. */
  async #listen(transport: "udp4" | "udp6"): Promise<Receiver> {
    const { config } = this.#options;
    const receiver = snmp.createReceiver(
      { port: config.Traps.Port, transport, includeAuthentication: true },
      (error: unknown, data: unknown) => this.#received(error, data as Received | undefined),
    ) as Receiver;
    const authorizer = receiver.getAuthorizer();
    for (const community of config.Traps.Communities) authorizer.addCommunity(community);
    for (const user of v3Users(config)) authorizer.addUser(user);
    try {
      await bound(receiver);
      widenBuffer(receiver);
      this.#screen(receiver);
      return receiver;
    } catch (error) {
      receiver.close();
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.#repoll.stop();
    this.#log.close();
    const receiver = this.#receiver;
    this.#receiver = null;
    if (receiver !== null) await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }

  /**
   * A datagram from an address no instance has is counted and dropped before net-snmp reads it: a
   * flood from elsewhere costs no decoding, and nothing is ever sent back to such an address (an
   * SNMPv3 discovery probe is otherwise answered with a report, which would make the receiver a
   * reflector for spoofed sources).
   */
  #screen(receiver: Receiver): void {
    for (const socket of Object.values(receiver.listener.sockets ?? {})) {
      const decoders = socket.listeners("message") as ((buffer: Buffer, rinfo: RemoteInfo) => void)[];
      socket.removeAllListeners("message");
      socket.on("message", (buffer: Buffer, rinfo: RemoteInfo) => {
        if (this.#sources?.known(rinfo.address) !== true) return this.#drop("unknown-source", rinfo.address);
        try {
          for (const decode of decoders) decode(buffer, rinfo);
        } catch (caught) {
          this.#drop("malformed", rinfo.address, caught);
        }
      });
    }
  }

  /** Every datagram's outcome. Never throws: net-snmp calls it from its socket's listener. */
  #received(error: unknown, data: Received | undefined): void {
    try {
      if (error !== null && error !== undefined) this.#refused(error);
      else this.#accept(data);
    } catch (caught) {
      this.#drop("malformed", "", caught);
    }
  }

  #refused(error: unknown): void {
    // The socket's own errors (its bind at start) are start's to report, not a trap's.
    if (typeof (error as { code?: unknown }).code === "string" && !("rinfo" in (error as object))) return;
    // Only known sources reach net-snmp (#screen).
    const rinfo = (error as { rinfo?: { address?: unknown } }).rinfo;
    const address = typeof rinfo?.address === "string" ? rinfo.address : "";
    const message = error instanceof Error ? error.message : "";
    const reason: TrapDropReason = /community/i.test(message)
      ? "bad-community"
      : /user/i.test(message)
        ? "bad-user"
        : /decrypt|authentic|digest/i.test(message)
          ? "bad-auth"
          : "malformed";
    this.#drop(reason, address, reason === "malformed" ? error : undefined);
  }

  #accept(data: Received | undefined): void {
    const address = typeof data?.rinfo?.address === "string" ? data.rinfo.address : "";
    const pdu = data?.pdu;
    const credentials = credentialsOf(pdu);
    if (this.#sources === null || credentials === null) return this.#drop("malformed", address);
    const matched = this.#sources.match(address, credentials);
    if (typeof matched === "string") return this.#drop(matched, address);
    const trap = readTrap(pdu);
    if (trap === null) return this.#drop("malformed", address);
    const id = matched.id;
    if (!this.#ownership.owns(id)) return this.#drop("not-held", address);
    const event = trapEvent(trap);
    const kinds = this.#events.get(id) ?? new Map<TrapEventKind, number>();
    kinds.set(event.kind, (kinds.get(event.kind) ?? 0) + 1);
    this.#events.set(id, kinds);
    this.#repoll.trap(id);
    this.#options.bus.emit("trap", { instanceId: id, at: this.#now(), event });
  }

  #drop(reason: TrapDropReason, address: string, error?: unknown): void {
    this.#dropped.set(reason, (this.#dropped.get(reason) ?? 0) + 1);
    const fields: Record<string, unknown> = { reason, source: normalAddress(address).slice(0, 64) };
    if (error instanceof Error) fields.error = error.message.slice(0, 200);
    this.#log.warn(reason, fields, "SNMP trap dropped");
  }
}

function credentialsOf(pdu: Received["pdu"]): TrapCredentials | null {
  if (typeof pdu?.community === "string") return { community: pdu.community };
  if (typeof pdu?.user === "string") return { user: pdu.user };
  return null;
}

/** The SNMPv3 users of the SNMP instances, one per name (the configuration's rule). */
function v3Users(config: Config): Record<string, unknown>[] {
  const users = new Map<string, Record<string, unknown>>();
  for (const instance of config.instances.filter(isSnmpV3)) {
    const s = instance.Snmp;
    const name = s.Auth.Username;
    if (name === null || s.AuthKey === null || users.has(name)) continue;
    const priv = s.Auth.PrivProtocol === "aes" && s.PrivKey !== null;
    users.set(name, {
      name,
      level: priv ? snmp.SecurityLevel.authPriv : snmp.SecurityLevel.authNoPriv,
      authProtocol: s.Auth.Protocol === "sha256" ? snmp.AuthProtocols.sha256 : snmp.AuthProtocols.sha,
      authKey: s.AuthKey,
      ...(priv ? { privProtocol: snmp.PrivProtocols.aes, privKey: s.PrivKey } : {}),
    });
  }
  return [...users.values()];
}

/**
 * The socket's receive buffer: a burst of traps waits there while the loop is busy (a poll's
 * answer, a GC) instead of being dropped by the kernel. The kernel caps it (net.core.rmem_max): the
 * memory it holds is the kernel's and bounded.
 */
export const TRAP_RECEIVE_BUFFER = 4 * 1024 * 1024;

function widenBuffer(receiver: Receiver): void {
  for (const socket of Object.values(receiver.listener.sockets ?? {})) {
    try {
      socket.setRecvBufferSize(TRAP_RECEIVE_BUFFER);
    } catch {
      // A kernel that refuses keeps its default buffer: traps beyond it are lost as UDP is.
    }
  }
}

/** Resolves when the receiver's socket listens; rejects with its bind error (a port taken). */
function bound(receiver: Receiver): Promise<void> {
  const socket = Object.values(receiver.listener.sockets ?? {})[0];
  if (socket === undefined) return Promise.reject(new Error("the trap receiver opened no socket"));
  return new Promise((resolve, reject) => {
    socket.once("listening", () => resolve());
    socket.once("error", (error) => reject(new Error(`Traps.Port: ${error.message}`)));
  });
}
