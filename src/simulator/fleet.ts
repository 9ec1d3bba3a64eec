/**
 * Loads for the simulators (docs/simulator.md, "Loads and feeds"): servers with one to eight power
 * supplies, each on a cord plugged into an outlet of a simulated PDU, of any kind (Geist and SNMP),
 * shared by every simulated unit of a test in one process. Each unit attaches itself with its name
 * and feed and reads from the fleet what its outlets draw; the fleet asks the units whether a relay
 * is on. An outlet no load is plugged into draws nothing.
 *
 * The physics: a load draws its power (a seeded living value, or a still one) shared evenly over
 * its live cords. A cord is live while it is plugged in (unplugging it is a power supply failing),
 * its outlet's relay is on, its PDU is running and the PDU's feed is up; so switching a cord off,
 * unplugging it, or stopping its PDU or its feed moves its share to the other cords. A start (a
 * cord coming live while every other was dead) draws `startFactor` times the power for
 * `startSeconds`. Energy integrates that power exactly (closed forms between events).
 *
 * Nothing runs on a timer: the load's set of live cords changes only at events (a switch a unit
 * reports as it makes it, a switch a unit scheduled for later such as a reboot's end, a plug, a
 * PDU or feed stopped or started), which the fleet settles in time order whenever anything reads
 * it. Between events a load's draw is a function of time. The ground truth (`truth`), the loads'
 * starts (`starts`, `maxConcurrentStarts`) and every PDU's write journal (`journal`) are what a
 * test compares the bridge with.
 */
import { performance } from "node:perf_hooks";
import { Wave, hash32, random } from "./living.js";

/** An outlet of a simulated PDU: the PDU's fleet name, the device (Geist; absent for SNMP units) and the 0-based index. */
export interface CordRef {
  readonly pdu: string;
  readonly device?: string;
  readonly outlet: number;
}

export interface LoadSpec {
  /** Unique in the fleet. */
  readonly id: string;
  /** Steady draw in watts (more than 0). */
  readonly watts: number;
  /** 0.5 to 1, default 0.95. */
  readonly powerFactor?: number;
  /** 1 to 8 outlets, none used by another cord. */
  readonly cords: readonly CordRef[];
  /** How long a start draws its start-up power, default 3 (0: no start-up power). */
  readonly startSeconds?: number;
  /** The start-up power as a multiple of the steady draw, default 2. */
  readonly startFactor?: number;
}

export interface FleetOptions {
  /** Epoch ms; every unit attached uses it. Default a monotonic clock. */
  readonly clock?: () => number;
  /** Seeds the loads' living values, default 1. */
  readonly seed?: number;
  /** Every load draws its steady power exactly (no living variation), default false. */
  readonly frozen?: boolean;
  /** Starts kept (oldest dropped), default 100000. */
  readonly startLogLimit?: number;
}

/** An entity's current and power as a unit serves them now. */
export interface EntityReading {
  readonly device: string | null;
  readonly key: string;
  readonly amps: number | null;
  readonly watts: number | null;
}

/** A switch a unit executed (its write journal), as the fleet reports it. */
export interface PduWrite {
  readonly time: number;
  readonly pdu: string;
  readonly device: string | null;
  readonly outlet: number;
  readonly action: string;
}

/** What the fleet asks of an attached unit (each simulator implements it). */
export interface FleetPduPort {
  hasOutlet(device: string | null, index: number): boolean;
  /** Whether the outlet's relay is on at `t` (epoch ms, at or after the fleet's last event). */
  relayOn(device: string | null, index: number, t: number): boolean;
  /** Times after `t` at which the outlet's relay is scheduled to switch (a delay, a reboot's end). */
  relayChanges(device: string | null, index: number, t: number): readonly number[];
  /** The volts at the device's outlets at `t`. */
  volts(device: string | null, t: number): number;
  /** The unit stops (false) or resumes answering: it lost or regained its power. */
  setAnswering(answering: boolean): Promise<void>;
  /** Its entities' currents and powers as it serves them now. */
  entities(): readonly EntityReading[];
  /** The switches it executed, in order. */
  writes(): readonly Omit<PduWrite, "pdu">[];
  /**
   * What one of its outlets draws moved at an event (a load's live cords changed): a unit that
   * serves values it computed earlier (the SNMP agent's MIB) refreshes them. Called synchronously
   * while the fleet settles: a unit defers its work.
   */
  changed?(): void;
}

/** What an attached unit reads from the fleet. */
export interface FleetLink {
  /** The fleet's clock (epoch ms). */
  readonly clock: () => number;
  /** Watts the outlet draws at `t`: 0 where no load is plugged or the cord is dead. */
  watts(device: string | null, index: number, t: number): number;
  /** The plugged load's power factor, 1 for an empty outlet. */
  powerFactor(device: string | null, index: number): number;
  /** Watt-hours drawn through the outlet from the fleet's start to `t`: never decreases. */
  energyWh(device: string | null, index: number, t: number): number;
  /** Call before a relay switches at `t` (before the unit changes its state)... */
  switching(t: number): void;
  /** ...and after it switched (or was scheduled to). */
  switched(device: string | null, index: number, t: number): void;
}

export interface CordTruth {
  readonly pdu: string;
  readonly device: string | null;
  readonly outlet: number;
  readonly feed: string | null;
  readonly plugged: boolean;
  readonly relay: boolean;
  /** Its PDU is running and the PDU's feed is up. */
  readonly powered: boolean;
  readonly live: boolean;
  readonly watts: number;
  readonly amps: number;
}

export interface LoadTruth {
  readonly id: string;
  /** The sum over its cords. */
  readonly watts: number;
  readonly amps: number;
  readonly cordsLive: number;
  /** Drawing its start-up power now. */
  readonly starting: boolean;
  readonly energyWh: number;
  readonly cords: readonly CordTruth[];
}

export interface PduTruth {
  readonly name: string;
  readonly feed: string | null;
  /** Not stopped and its feed up. */
  readonly powered: boolean;
  readonly entities: readonly EntityReading[];
}

export interface FleetTruth {
  readonly at: number;
  readonly loads: readonly LoadTruth[];
  readonly pdus: readonly PduTruth[];
}

export interface LoadStart {
  readonly load: string;
  readonly at: number;
  /** When its start-up power ends (or ended early: every cord went dead). */
  readonly until: number;
}

interface Socket {
  /** The cord plugged in, or null. */
  cord: Cord | null;
  /** Energy drawn through it (every load ever plugged in). */
  wh: number;
}

interface Pdu {
  readonly name: string;
  readonly feed: string | null;
  readonly port: FleetPduPort;
  stopped: boolean;
  readonly sockets: Map<string, Socket>;
}

interface Cord {
  readonly load: Load;
  readonly ref: CordRef;
  readonly pdu: Pdu;
  readonly socket: Socket;
  plugged: boolean;
  live: boolean;
}

interface Load {
  readonly id: string;
  readonly wave: Wave;
  readonly powerFactor: number;
  readonly startMs: number;
  readonly startFactor: number;
  readonly cords: Cord[];
  /** Integrated until. */
  at: number;
  live: number;
  energyWh: number;
  start: { at: number; until: number } | null;
}

interface Event {
  readonly at: number;
  readonly load: Load;
}

const MS_PER_HOUR = 3_600_000;
const monotonic = (): number => performance.timeOrigin + performance.now();
const socketKey = (device: string | null | undefined, index: number): string =>
  `${device ?? ""}\u0000${index}`;

function checkNumber(what: string, v: number, min: number, max: number): number {
  if (!Number.isFinite(v) || v < min || v > max)
    throw new RangeError(`fleet: ${what} must be from ${min} to ${max}, got ${String(v)}`);
  return v;
}

export class LoadFleet {
  readonly clock: () => number;
  readonly #seed: number;
  readonly #frozen: boolean;
  readonly #startLimit: number;
  readonly #pdus = new Map<string, Pdu>();
  readonly #loads = new Map<string, Load>();
  readonly #feedsDown = new Set<string>();
  /** Pending events, by time. */
  readonly #events: Event[] = [];
  readonly #starts: LoadStart[] = [];
  #at: number;

  constructor(o: FleetOptions = {}) {
    this.clock = o.clock ?? monotonic;
    this.#seed = o.seed ?? 1;
    this.#frozen = o.frozen === true;
    this.#startLimit = o.startLogLimit ?? 100_000;
    this.#at = this.clock();
  }

  now(): number {
    return Math.max(this.clock(), this.#at);
  }

  /** A unit joins the fleet under `name`, on `feed` (null: on none). */
  attach(name: string, feed: string | null, port: FleetPduPort): FleetLink {
    if (this.#pdus.has(name)) throw new Error(`fleet: a PDU named ${name} is attached already`);
    const pdu: Pdu = { name, feed, port, stopped: false, sockets: new Map() };
    this.#pdus.set(name, pdu);
    const socketOf = (device: string | null, index: number) => pdu.sockets.get(socketKey(device, index));
    return {
      clock: this.clock,
      watts: (device, index, t) => {
        const cord = socketOf(device, index)?.cord;
        if (cord === undefined || cord === null) return 0;
        this.advance(t);
        return cord.live ? this.#loadWatts(cord.load, t) / cord.load.live : 0;
      },
      powerFactor: (device, index) => socketOf(device, index)?.cord?.load.powerFactor ?? 1,
      energyWh: (device, index, t) => {
        const socket = socketOf(device, index);
        if (socket === undefined) return 0;
        this.advance(t);
        if (socket.cord !== null) this.#integrate(socket.cord.load, t);
        return socket.wh;
      },
      switching: (t) => this.advance(t),
      switched: (device, index, t) => {
        const cord = socketOf(device, index)?.cord;
        if (cord === undefined || cord === null) return;
        this.advance(t);
        this.#settle(cord.load, t);
        this.#schedule(cord, t);
      },
    };
  }

  addLoad(spec: LoadSpec): void {
    if (this.#loads.has(spec.id)) throw new Error(`fleet: a load named ${spec.id} exists already`);
    checkNumber(`${spec.id}: watts`, spec.watts, Number.MIN_VALUE, 1e6);
    if (spec.cords.length < 1 || spec.cords.length > 8)
      throw new RangeError(`fleet: ${spec.id} must have 1 to 8 cords, has ${spec.cords.length}`);
    const now = this.now();
    this.advance(now);
    const r = random(hash32(this.#seed, this.#loads.size, 0x10ad));
    const load: Load = {
      id: spec.id,
      wave: new Wave(spec.watts, r, [0.03, 0.015], this.#frozen),
      powerFactor: checkNumber(`${spec.id}: powerFactor`, spec.powerFactor ?? 0.95, 0.5, 1),
      startMs: checkNumber(`${spec.id}: startSeconds`, spec.startSeconds ?? 3, 0, 3600) * 1000,
      startFactor: checkNumber(`${spec.id}: startFactor`, spec.startFactor ?? 2, 1, 20),
      cords: [],
      at: now,
      live: 0,
      energyWh: 0,
      start: null,
    };
    const claimed = new Set<Socket>();
    for (const ref of spec.cords) {
      const pdu = this.#pdu(ref.pdu);
      const device = ref.device ?? null;
      if (!pdu.port.hasOutlet(device, ref.outlet))
        throw new Error(
          `fleet: ${ref.pdu} has no outlet ${ref.outlet}${device === null ? "" : ` on ${device}`}`,
        );
      const key = socketKey(device, ref.outlet);
      let socket = pdu.sockets.get(key);
      if (socket === undefined) pdu.sockets.set(key, (socket = { cord: null, wh: 0 }));
      if (socket.cord !== null || claimed.has(socket))
        throw new Error(`fleet: outlet ${ref.outlet} of ${ref.pdu} is taken already`);
      claimed.add(socket);
      load.cords.push({ load, ref, pdu, socket, plugged: true, live: false });
    }
    for (const cord of load.cords) cord.socket.cord = cord;
    this.#loads.set(load.id, load);
    // A load added is running already (no start-up power): its live cords as they are now.
    for (const cord of load.cords) cord.live = this.#cordLive(cord, now);
    load.live = load.cords.filter((c) => c.live).length;
    for (const cord of load.cords) {
      this.#schedule(cord, now);
      cord.pdu.port.changed?.();
    }
  }

  /** A power supply fails (`plugged` false) or is back: cord `cord` (0-based) of the load. */
  setPlugged(loadId: string, cord: number, plugged: boolean): void {
    const load = this.#load(loadId);
    const c = load.cords[cord];
    if (c === undefined) throw new RangeError(`fleet: ${loadId} has no cord ${cord}`);
    const now = this.now();
    this.advance(now);
    c.plugged = plugged;
    this.#settle(load, now);
  }

  /** The PDU loses its power: no cord through it is live and it stops answering. */
  async stopPdu(name: string): Promise<void> {
    await this.#setStopped([this.#pdu(name)], true);
  }

  async startPdu(name: string): Promise<void> {
    await this.#setStopped([this.#pdu(name)], false);
  }

  /** Every PDU on the feed loses its power (and stops answering). */
  async stopFeed(feed: string): Promise<void> {
    this.#settleAround(() => this.#feedsDown.add(feed), this.#onFeed(feed));
    await Promise.all(this.#onFeed(feed).map((p) => p.port.setAnswering(this.#powered(p))));
  }

  async startFeed(feed: string): Promise<void> {
    this.#settleAround(() => this.#feedsDown.delete(feed), this.#onFeed(feed));
    await Promise.all(this.#onFeed(feed).map((p) => p.port.setAnswering(this.#powered(p))));
  }

  /** Settles every event up to `t` (readers call it; a test need not). */
  advance(t: number): void {
    while (this.#events.length > 0 && this.#events[0]!.at <= t) {
      const event = this.#events.shift()!;
      this.#settle(event.load, event.at);
    }
    if (t > this.#at) this.#at = t;
  }

  load(id: string, at = this.now()): LoadTruth {
    this.advance(at);
    return this.#truthOf(this.#load(id), at);
  }

  truth(): FleetTruth {
    const at = this.now();
    this.advance(at);
    const loads = [...this.#loads.values()].map((l) => this.#truthOf(l, at));
    const pdus = [...this.#pdus.values()].map((p) => ({
      name: p.name,
      feed: p.feed,
      powered: this.#powered(p),
      entities: p.port.entities(),
    }));
    return { at, loads, pdus };
  }

  /** The starts since `since` (epoch ms), in time order. */
  starts(since = -Infinity): LoadStart[] {
    this.advance(this.now());
    return this.#starts.filter((s) => s.at >= since).map((s) => ({ ...s }));
  }

  /** Loads drawing their start-up power at `t` (default now). */
  startingAt(t = this.now()): number {
    this.advance(t);
    let n = 0;
    for (const s of this.#starts) if (s.at <= t && t < s.until) n++;
    return n;
  }

  /** The most loads drawing their start-up power at once, over the starts since `since`. */
  maxConcurrentStarts(since = -Infinity): number {
    const edges: [number, number][] = [];
    for (const s of this.starts(since)) edges.push([s.at, 1], [s.until, -1]);
    edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let n = 0;
    let max = 0;
    for (const [, d] of edges) max = Math.max(max, (n += d));
    return max;
  }

  /** Every switch the attached units executed, in time order (each unit's own order kept). */
  journal(pdu?: string): PduWrite[] {
    const out: PduWrite[] = [];
    for (const p of this.#pdus.values())
      if (pdu === undefined || p.name === pdu)
        for (const w of p.port.writes()) out.push({ ...w, pdu: p.name });
    return out.sort((a, b) => a.time - b.time);
  }

  #pdu(name: string): Pdu {
    const pdu = this.#pdus.get(name);
    if (pdu === undefined) throw new Error(`fleet: no PDU named ${name}`);
    return pdu;
  }

  #load(id: string): Load {
    const load = this.#loads.get(id);
    if (load === undefined) throw new Error(`fleet: no load named ${id}`);
    return load;
  }

  #onFeed(feed: string): Pdu[] {
    return [...this.#pdus.values()].filter((p) => p.feed === feed);
  }

  #powered(pdu: Pdu): boolean {
    return !pdu.stopped && (pdu.feed === null || !this.#feedsDown.has(pdu.feed));
  }

  async #setStopped(pdus: readonly Pdu[], stopped: boolean): Promise<void> {
    this.#settleAround(() => {
      for (const p of pdus) p.stopped = stopped;
    }, pdus);
    await Promise.all(pdus.map((p) => p.port.setAnswering(this.#powered(p))));
  }

  /** Settles every event up to now, applies `change`, then settles the loads with a cord on `pdus` now. */
  #settleAround(change: () => void, pdus: readonly Pdu[]): void {
    const now = this.now();
    this.advance(now);
    change();
    const loads = new Set<Load>();
    for (const p of pdus) for (const s of p.sockets.values()) if (s.cord !== null) loads.add(s.cord.load);
    for (const load of loads) this.#settle(load, now);
  }

  #cordLive(cord: Cord, t: number): boolean {
    return (
      cord.plugged &&
      this.#powered(cord.pdu) &&
      cord.pdu.port.relayOn(cord.ref.device ?? null, cord.ref.outlet, t)
    );
  }

  /** The load's draw at `t` with its live cords as they are (0 with none). */
  #loadWatts(load: Load, t: number): number {
    if (load.live === 0) return 0;
    const starting = load.start !== null && t >= load.start.at && t < load.start.until;
    return load.wave.at(t) * (starting ? load.startFactor : 1);
  }

  /** Integrates the load's energy up to `t` with its live cords as they are. */
  #integrate(load: Load, t: number): void {
    if (t <= load.at) return;
    if (load.live > 0) {
      let wh = 0;
      const piece = (a: number, b: number, factor: number) => {
        if (b > a) wh += ((load.wave.integral(b) - load.wave.integral(a)) * factor) / MS_PER_HOUR;
      };
      const until = load.start === null ? load.at : Math.min(Math.max(load.start.until, load.at), t);
      piece(load.at, until, load.startFactor);
      piece(Math.max(until, load.at), t, 1);
      wh = Math.max(0, wh);
      load.energyWh += wh;
      for (const c of load.cords) if (c.live) c.socket.wh += wh / load.live;
    }
    load.at = t;
  }

  /** Re-reads the load's live cords at `t` (after integrating up to it); a start is logged. */
  #settle(load: Load, t: number): void {
    this.#integrate(load, t);
    const before = load.live;
    let live = 0;
    let moved = false;
    for (const c of load.cords) {
      const now = this.#cordLive(c, t);
      if (now !== c.live) moved = true;
      c.live = now;
      if (now) live++;
    }
    load.live = live;
    if (moved) for (const c of load.cords) c.pdu.port.changed?.();
    if (before === 0 && live > 0 && load.startMs > 0) {
      const start = { load: load.id, at: t, until: t + load.startMs };
      load.start = start;
      if (this.#starts.length >= this.#startLimit) this.#starts.shift();
      this.#starts.push(start);
    } else if (live === 0 && load.start !== null) {
      if (load.start.until > t) load.start.until = t;
      load.start = null;
    }
  }

  /** Queues the cord's relay switches the unit has scheduled after `t`. */
  #schedule(cord: Cord, t: number): void {
    for (const at of cord.pdu.port.relayChanges(cord.ref.device ?? null, cord.ref.outlet, t)) {
      if (at <= t) continue;
      let lo = 0;
      let hi = this.#events.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#events[mid]!.at <= at) lo = mid + 1;
        else hi = mid;
      }
      this.#events.splice(lo, 0, { at, load: cord.load });
    }
  }

  #truthOf(load: Load, at: number): LoadTruth {
    this.#integrate(load, at);
    const share = load.live === 0 ? 0 : this.#loadWatts(load, at) / load.live;
    const cords = load.cords.map((c): CordTruth => {
      const device = c.ref.device ?? null;
      const watts = c.live ? share : 0;
      return {
        pdu: c.pdu.name,
        device,
        outlet: c.ref.outlet,
        feed: c.pdu.feed,
        plugged: c.plugged,
        relay: c.pdu.port.relayOn(device, c.ref.outlet, at),
        powered: this.#powered(c.pdu),
        live: c.live,
        watts,
        amps: watts / (c.pdu.port.volts(device, at) * load.powerFactor),
      };
    });
    const starting = load.start !== null && at >= load.start.at && at < load.start.until;
    return {
      id: load.id,
      watts: cords.reduce((s, c) => s + c.watts, 0),
      amps: cords.reduce((s, c) => s + c.amps, 0),
      cordsLive: load.live,
      starting,
      energyWh: load.energyWh,
      cords,
    };
  }
}
