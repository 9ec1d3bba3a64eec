/**
 * The simulated world: units (PDUs) → devices → outlets, users and OneView groups.
 *
 * Nothing here runs on a timer. An outlet keeps a short timeline of switches (past and scheduled),
 * so its real state at time t, its reported state (the state at t - stateLagMs) and its energy
 * (power integrated over the "on" stretches) are all computed lazily when read.
 */

import { Wave, between, hash32, random } from "./living.js";
import type { AlarmValue, OutletSwitch } from "./types.js";

export type PoaAction = "on" | "off" | "last";
export type OutletAction = "on" | "off" | "reboot";

export const ENTITY_KEYS: readonly string[] = ["phase0", "total0", "breaker0", "breaker1"];

const MS_PER_HOUR = 3_600_000;

interface Transition {
  readonly at: number;
  readonly state: OutletSwitch;
}

/**
 * What a load plugged into the outlet draws, from the simulator's fleet of loads (./fleet.ts),
 * in the simulator's time (ms since it started). An outlet of a simulator in a fleet draws only
 * what its socket says (nothing while no load is plugged in).
 */
export interface OutletSocket {
  watts(t: number): number;
  powerFactor(): number;
  /** Energy drawn through the outlet since the fleet began: never decreases. */
  energyWh(t: number): number;
  /** Before the outlet's relay switches (or is scheduled to) at `t`... */
  switching(t: number): void;
  /** ...and after. */
  switched(t: number): void;
}

export class SimOutlet {
  label: string;
  onDelay = 0;
  offDelay = 0;
  rebootDelay = 5;
  poaAction: PoaAction;
  reportedPin: OutletSwitch | null = null;
  alarm: AlarmValue | null = null;
  /** Raw value overrides by lower-case measurement type. */
  readonly raw = new Map<string, string>();
  /** Sorted by time; the first entry is the baseline (at = -Infinity). */
  private timeline: Transition[];
  private energyWh: number;
  /** Energy since the simulator started; never reset (feeds the device totals). */
  private gainedWh = 0;
  /** The counter when the simulator started: with {@link gainedWh}, the ground truth. */
  private readonly startWh: number;
  private energyAt: number;
  private readonly still: boolean;
  /** Set when the simulator is in a fleet of loads: what the outlet draws comes from it. */
  private socket: OutletSocket | null = null;
  /** The socket's energy counter when last read. */
  private socketWh = 0;
  /** Its breaker has tripped: no power at the socket, the relay as it was ({@link setPowered}). */
  private unpowered = false;

  constructor(
    readonly index: number,
    readonly breaker: string,
    readonly power: Wave,
    readonly powerFactor: number,
    init: {
      state: OutletSwitch;
      energyWh: number;
      label: string;
      poaAction: PoaAction;
      now: number;
      /** Energy does not accumulate (a frozen simulator). */
      still?: boolean;
    },
  ) {
    this.still = init.still === true;
    this.timeline = [{ at: -Infinity, state: init.state }];
    this.energyWh = init.energyWh;
    this.startWh = init.energyWh;
    this.energyAt = init.now;
    this.label = init.label;
    this.poaAction = init.poaAction;
  }

  get name(): string {
    return `Outlet ${this.index + 1}`;
  }

  /** Plugs the outlet into a fleet's socket at `now` (its living power is no longer drawn). */
  attach(socket: OutletSocket, now: number): void {
    this.advance(now);
    this.socket = socket;
    this.socketWh = socket.energyWh(now);
  }

  get attached(): OutletSocket | null {
    return this.socket;
  }

  /** The power factor of what it draws (0..1). */
  pf(): number {
    return this.socket?.powerFactor() ?? this.powerFactor;
  }

  /** Times after `t` at which the outlet's relay is scheduled to switch. */
  changesAfter(t: number): number[] {
    return this.timeline.filter((tr) => tr.at > t).map((tr) => tr.at);
  }

  stateAt(t: number): OutletSwitch {
    let state: OutletSwitch = "off";
    for (const tr of this.timeline) {
      if (tr.at > t) break;
      state = tr.state;
    }
    return state;
  }

  reportedState(now: number, lagMs: number): OutletSwitch {
    return this.reportedPin ?? this.stateAt(now - lagMs);
  }

  /** Whole seconds until the next scheduled switch, 0 when none is pending. */
  secondsToAction(now: number): number {
    const next = this.timeline.find((tr) => tr.at > now);
    return next ? Math.ceil((next.at - now) / 1000) : 0;
  }

  realPower(now: number): number {
    if (this.unpowered) return 0;
    if (this.socket !== null) return this.socket.watts(now);
    return this.stateAt(now) === "on" ? this.power.at(now) : 0;
  }

  /** Integrates power over the "on" stretches since the last call. */
  advance(now: number): void {
    if (now <= this.energyAt) return;
    if (this.unpowered) {
      if (this.socket !== null) this.socketWh = this.socket.energyWh(now);
      this.energyAt = now;
      return;
    }
    if (this.socket !== null) {
      const total = this.socket.energyWh(now);
      const wh = Math.max(0, total - this.socketWh);
      this.socketWh = total;
      this.energyWh += wh;
      this.gainedWh += wh;
      this.energyAt = now;
      return;
    }
    if (this.still) {
      this.energyAt = now;
      return;
    }
    let wh = 0;
    this.timeline.forEach((tr, k) => {
      const start = Math.max(tr.at, this.energyAt);
      const end = Math.min(this.timeline[k + 1]?.at ?? now, now);
      if (tr.state === "on" && end > start) wh += this.power.integral(end) - this.power.integral(start);
    });
    wh = Math.max(0, wh) / MS_PER_HOUR;
    this.energyWh += wh;
    this.gainedWh += wh;
    this.energyAt = now;
  }

  /**
   * Power at the socket (false: its breaker tripped): the outlet draws nothing and counts no
   * energy while its relay, and the state it reports, stay as they were.
   */
  setPowered(now: number, powered: boolean): void {
    this.advance(now);
    this.unpowered = !powered;
  }

  energyKwh(now: number): number {
    this.advance(now);
    return this.energyWh / 1000;
  }

  gained(now: number): number {
    this.advance(now);
    return this.gainedWh;
  }

  /**
   * The ground truth (Wh): the counter at the start plus the power drawn at this place integrated
   * over time, whatever happened to the counter since (resets, a replaced unit).
   */
  truthWh(now: number): number {
    this.advance(now);
    return this.startWh + this.gainedWh;
  }

  setEnergyKwh(now: number, kwh: number): void {
    this.advance(now);
    this.energyWh = kwh * 1000;
  }

  /** Cancels pending switches and schedules `steps` (times >= now). */
  schedule(now: number, lagMs: number, steps: readonly Transition[]): void {
    this.socket?.switching(now);
    this.advance(now);
    // keep the last entry at or before now - lag (the reported state needs it), drop older ones
    const cutoff = now - lagMs;
    while (this.timeline.length > 1 && (this.timeline[1]?.at ?? Infinity) <= cutoff) this.timeline.shift();
    this.timeline = this.timeline.filter((tr) => tr.at <= now).concat(steps);
    this.reportedPin = null;
    this.socket?.switched(now);
  }
}

export class SimDevice {
  label = "";
  outletControlEnabled = true;
  alarm: AlarmValue | null = null;
  readonly entityLabels = new Map<string, string>();
  /** entity key → lower-case type → raw value */
  readonly entityRaw = new Map<string, Map<string, string>>();
  readonly entityAlarms = new Map<string, AlarmValue>();
  readonly outlets = new Map<number, SimOutlet>();
  /** Energy of removed outlets, so that the device totals never go down. */
  retiredWh = 0;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly order: number,
    readonly voltage: Wave,
    readonly baseEnergyWh: number,
  ) {}

  outletList(): SimOutlet[] {
    return [...this.outlets.values()].sort((a, b) => a.index - b.index);
  }
}

export class SimUnit {
  readonly devices = new Map<string, SimDevice>();

  constructor(
    readonly index: number,
    readonly role: "single" | "master" | "member",
    readonly label: string,
    readonly macAddress: string,
    readonly ipAddress: string,
    readonly serialNumber: string,
  ) {}

  get hostKey(): string {
    return this.macAddress.replaceAll(":", "").toUpperCase();
  }
}

export interface GroupInfo {
  readonly key: string;
  readonly name: string;
  label: string;
  readonly order: number;
}

export interface StateOptions {
  readonly seed: number;
  /** 1 for a single unit, 1 + members for a cluster. */
  readonly units: number;
  readonly cluster: boolean;
  readonly devices: number;
  readonly outlets: number;
  readonly users: Record<string, string>;
  readonly stateLagMs: number;
  readonly rebootMs: number | null;
  readonly clock: () => number;
  /** Every measurement stands still (flat waveforms, no energy accrual). */
  readonly frozen: boolean;
  /** Nominal volts of every device. */
  readonly voltage: number;
}

const hex = (n: number, width: number): string => (n >>> 0).toString(16).toUpperCase().padStart(width, "0");
const byte = (n: number): string => hex(n & 0xff, 2).toLowerCase();

export function deviceIdFor(seed: number, unit: number, device: number): string {
  return `E4A1${hex(seed & 0xffffff, 6)}${hex(unit, 2)}${hex(device + 1, 4)}`;
}

/** The default OneView membership (see docs/simulator.md). */
function defaultGroup(device: number, outlet: number): string | null {
  if (device === 0 && outlet < 2) return "2";
  if (device === 0 && outlet < 4) return "3";
  return outlet % 2 === 0 ? "unassigned" : null;
}

export class SimState {
  readonly units: SimUnit[] = [];
  readonly users: Map<string, string>;
  readonly groups = new Map<string, GroupInfo>();
  /** `${deviceId}/${index}` → group key as written in the groupMap (null when absent). */
  readonly groupOf = new Map<string, string | null>();
  readonly lagMs: number;
  readonly rebootMs: number | null;
  readonly cluster: boolean;
  private readonly clock: () => number;
  private readonly t0: number;

  constructor(o: StateOptions) {
    this.clock = o.clock;
    this.t0 = o.clock();
    this.lagMs = o.stateLagMs;
    this.rebootMs = o.rebootMs;
    this.cluster = o.cluster;
    this.users = new Map(Object.entries(o.users));
    for (let u = 0; u < o.units; u++) this.units.push(this.buildUnit(o, u));
    if (o.cluster) {
      const builtIn: [string, string, string][] = [
        ["total", "Total", ""],
        ["unassigned", "Unassigned", ""],
        ["2", "Group 2", "Web servers"],
        ["3", "Group 3", "Storage"],
      ];
      builtIn.forEach(([key, name, label], order) => this.groups.set(key, { key, name, label, order }));
    }
  }

  private buildUnit(o: StateOptions, u: number): SimUnit {
    const letter = String.fromCharCode(65 + (u % 26));
    const role = !o.cluster ? "single" : u === 0 ? "master" : "member";
    const mac = ["02", "00", byte(o.seed >> 16), byte(o.seed >> 8), byte(o.seed), byte(u + 1)].join(":");
    const serial = `SIM${hex(o.seed & 0xffffff, 6)}${String(u).padStart(4, "0")}`;
    const unit = new SimUnit(u, role, `Rack PDU ${letter}`, mac, `192.0.2.${50 + u}`, serial);
    const now = this.now();
    for (let d = 0; d < o.devices; d++) {
      const id = deviceIdFor(o.seed, u, d);
      const r = random(hash32(o.seed, u, d));
      const outlets: SimOutlet[] = [];
      for (let i = 0; i < o.outlets; i++) {
        const ro = random(hash32(o.seed, u, d, i, 0x0e));
        const outlet = new SimOutlet(
          i,
          i < Math.ceil(o.outlets / 2) ? "breaker0" : "breaker1",
          new Wave(Math.round(between(ro, 20, 300)), ro, undefined, o.frozen),
          between(ro, 0.9, 0.99),
          {
            state: i % 4 === 3 ? "off" : "on",
            energyWh: Math.round(between(ro, 5, 500) * 1000),
            label: i % 3 === 0 ? `${letter.toLowerCase()}${d + 1}-srv-${String(i + 1).padStart(2, "0")}` : "",
            poaAction: (["last", "on", "off"] as const)[i % 3] ?? "last",
            now,
            still: o.frozen,
          },
        );
        outlets.push(outlet);
        if (o.cluster) this.groupOf.set(`${id}/${i}`, defaultGroup(d, i));
      }
      const initialWh = outlets.reduce((sum, x) => sum + x.energyKwh(now) * 1000, 0);
      const name = o.devices > 1 ? `Rack PDU ${letter}${d + 1}` : `Rack PDU ${letter}`;
      const device = new SimDevice(
        id,
        name,
        d + 1,
        new Wave(o.voltage, r, [0.01, 0.004], o.frozen),
        Math.round(initialWh + between(r, 100, 1000) * 1000),
      );
      for (const outlet of outlets) device.outlets.set(outlet.index, outlet);
      unit.devices.set(id, device);
    }
    return unit;
  }

  /** Absolute clock time (epoch ms). */
  time(): number {
    return this.clock();
  }

  /** Milliseconds since the simulator started: the time base of every waveform and timeline. */
  now(): number {
    return this.clock() - this.t0;
  }

  /** The clock's time (epoch ms) when the simulator started: `now()` is counted from it. */
  get origin(): number {
    return this.t0;
  }

  locate(deviceId: string): { unit: SimUnit; device: SimDevice } | undefined {
    for (const unit of this.units) {
      const device = unit.devices.get(deviceId);
      if (device) return { unit, device };
    }
    return undefined;
  }

  device(deviceId: string): SimDevice {
    const found = this.locate(deviceId);
    if (!found) throw new Error(`simulator: no device ${deviceId}`);
    return found.device;
  }

  outlet(deviceId: string, index: number): { device: SimDevice; outlet: SimOutlet } {
    const device = this.device(deviceId);
    const outlet = device.outlets.get(index);
    if (!outlet) throw new Error(`simulator: no outlet ${index} on device ${deviceId}`);
    return { device, outlet };
  }

  /** Total energy of a device in Wh: a lifetime counter that only rises. */
  deviceEnergyWh(device: SimDevice, now: number): number {
    let wh = device.baseEnergyWh + device.retiredWh;
    for (const outlet of device.outlets.values()) wh += outlet.gained(now);
    return wh;
  }

  removeOutlet(deviceId: string, index: number): void {
    const { device, outlet } = this.outlet(deviceId, index);
    const now = this.now();
    outlet.attached?.switching(now);
    device.retiredWh += outlet.gained(now);
    device.outlets.delete(index);
    this.groupOf.delete(`${deviceId}/${index}`);
    outlet.attached?.switched(now);
  }

  /**
   * Puts a new unit in the device's place: another device id (the id is the serial), the same
   * outlets and loads, every energy counter at 0; the outlets' ground truth goes on. The new id.
   */
  replaceDevice(deviceId: string): string {
    const found = this.locate(deviceId);
    if (!found) throw new Error(`simulator: no device ${deviceId}`);
    const { unit, device } = found;
    const now = this.now();
    let id = deviceId;
    for (let n = 1; n < 4096 && (id === deviceId || this.locate(id)); n++)
      id = `${deviceId.slice(0, -4)}F${hex(n, 3)}`;
    // The new unit's totals start at 0: its base takes away what its outlets gained before.
    let gained = 0;
    for (const outlet of device.outlets.values()) gained += outlet.gained(now);
    const fresh = new SimDevice(id, device.name, device.order, device.voltage, -gained);
    fresh.label = device.label;
    fresh.outletControlEnabled = device.outletControlEnabled;
    for (const [index, outlet] of device.outlets) {
      outlet.setEnergyKwh(now, 0);
      fresh.outlets.set(index, outlet);
      const key = `${deviceId}/${index}`;
      if (this.groupOf.has(key)) {
        this.groupOf.set(`${id}/${index}`, this.groupOf.get(key) ?? null);
        this.groupOf.delete(key);
      }
    }
    unit.devices.delete(deviceId);
    unit.devices.set(id, fresh);
    return id;
  }

  removeDevice(deviceId: string): void {
    const found = this.locate(deviceId);
    if (!found) throw new Error(`simulator: no device ${deviceId}`);
    const now = this.now();
    const outlets = [...found.device.outlets.values()];
    for (const outlet of outlets) outlet.attached?.switching(now);
    found.unit.devices.delete(deviceId);
    for (const index of found.device.outlets.keys()) this.groupOf.delete(`${deviceId}/${index}`);
    for (const outlet of outlets) outlet.attached?.switched(now);
  }

  /** Switch an outlet now (or after its configured delays when `delay` is true). */
  control(outlet: SimOutlet, action: OutletAction, delay: boolean): void {
    const now = this.now();
    const after = (seconds: number): number => now + (delay ? seconds * 1000 : 0);
    if (action === "reboot") {
      const offAt = after(outlet.offDelay);
      const offFor = this.rebootMs ?? outlet.rebootDelay * 1000;
      outlet.schedule(now, this.lagMs, [
        { at: offAt, state: "off" },
        { at: offAt + offFor, state: "on" },
      ]);
    } else {
      const at = after(action === "on" ? outlet.onDelay : outlet.offDelay);
      outlet.schedule(now, this.lagMs, [{ at, state: action }]);
    }
  }

  /** Group keys are matched case-insensitively, as a client scanning the groupMap does. */
  findGroup(key: string): GroupInfo | undefined {
    const lower = key.toLowerCase();
    for (const group of this.groups.values()) if (group.key.toLowerCase() === lower) return group;
    return undefined;
  }

  /** Outlets whose groupMap entry names the group (case-insensitive); `total` is every outlet. */
  groupMembers(key: string): { deviceId: string; index: number }[] {
    const lower = key.toLowerCase();
    const members: { deviceId: string; index: number }[] = [];
    for (const unit of this.units) {
      for (const device of unit.devices.values()) {
        for (const outlet of device.outletList()) {
          // A null group in the groupMap counts as unassigned, as the bridge's parser reads it.
          const group = this.groupOf.get(`${device.id}/${outlet.index}`) ?? "unassigned";
          if (lower === "total" || group.toLowerCase() === lower)
            members.push({ deviceId: device.id, index: outlet.index });
        }
      }
    }
    return members;
  }
}
