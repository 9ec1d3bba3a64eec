/**
 * The built-in Vertiv/Geist rPDU simulator: a single unit or a OneView cluster (master + members,
 * each member on its own proxy port), over real HTTP or HTTPS. See docs/simulator.md.
 */

import { performance } from "node:perf_hooks";
import type { TlsMaterial } from "./cert.js";
import { selfSignedCertificate } from "./cert.js";
import { joinGeistFleet } from "./fleet-geist.js";
import type { ListenerOwner } from "./listener.js";
import { Listener, parseFaults } from "./listener.js";
import type { SimOutlet, SimUnit } from "./state.js";
import { ENTITY_KEYS, SimState } from "./state.js";
import { outletReading } from "./tree.js";
import type {
  AlarmValue,
  JournalEntry,
  OutletRef,
  OutletSwitch,
  OutletView,
  RecordedRequest,
  SimulatedUnit,
  Simulator,
  SimulatorFault,
  SimulatorOptions,
} from "./types.js";

export type * from "./types.js";
export { RET } from "./api.js";
export { HUGE_BODY_BYTES } from "./listener.js";
export { MAX_HOSTILE_SIZE } from "./hostile.js";
export { LoadFleet } from "./fleet.js";
export type {
  CordRef,
  CordTruth,
  EntityReading,
  FleetOptions,
  FleetTruth,
  LoadSpec,
  LoadStart,
  LoadTruth,
  PduTruth,
  PduWrite,
} from "./fleet.js";

const monotonicClock = (): number => performance.timeOrigin + performance.now();

function intOption(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max)
    throw new RangeError(`simulator: ${name} must be an integer from ${min} to ${max}, got ${String(v)}`);
  return v;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const tls = options.https === true ? await selfSignedCertificate() : null;
  const sim = new GeistSimulator(options, tls);
  try {
    await sim.start(options.port ?? 0);
  } catch (err) {
    await sim.close();
    throw err;
  }
  return sim;
}

class GeistSimulator implements Simulator, ListenerOwner {
  readonly host: string;
  readonly scheme: "http" | "https";
  readonly certificatePem: string | null;
  readonly units: readonly SimulatedUnit[];
  readonly state: SimState;
  readonly rejectChunked: boolean;
  readonly idleDropMs: number | null;
  private readonly listeners: Listener[];
  private readonly log: RecordedRequest[] = [];
  private readonly journalLog: JournalEntry[] = [];
  private readonly logLimit: number;

  constructor(o: SimulatorOptions, tls: TlsMaterial | null) {
    const members =
      o.oneview === undefined || o.oneview === false
        ? 0
        : intOption("oneview.members", o.oneview === true ? 2 : o.oneview.members, 2, 1, 64);
    this.host = o.host ?? "127.0.0.1";
    this.scheme = tls ? "https" : "http";
    this.certificatePem = tls?.cert ?? null;
    this.rejectChunked = o.rejectChunked ?? true;
    this.idleDropMs = o.idleDropMs ?? null;
    if (this.idleDropMs !== null) intOption("idleDropMs", this.idleDropMs, 0, 1, 2 ** 31 - 1);
    this.logLimit = intOption("requestLogLimit", o.requestLogLimit, 10_000, 0, 2 ** 31 - 1);
    const rebootMs = o.rebootMs === undefined ? 250 : o.rebootMs;
    if (rebootMs !== null) intOption("rebootMs", rebootMs, 0, 0, 3_600_000);
    this.state = new SimState({
      seed: intOption("seed", o.seed, 1, 0, 2 ** 32 - 1),
      units: 1 + members,
      cluster: members > 0,
      devices: intOption("devices", o.devices, 1, 0, 64),
      outlets: intOption("outlets", o.outlets, 8, 0, 128),
      users: o.users ?? { admin: "admin" },
      stateLagMs: intOption("stateLagMs", o.stateLagMs, 0, 0, 3_600_000),
      rebootMs,
      clock: o.fleet?.fleet.clock ?? o.clock ?? monotonicClock,
      frozen: o.frozen === true,
      voltage: intOption("voltage", o.voltage, 120, 1, 1000),
    });
    this.listeners = this.state.units.map((unit) => new Listener(this, unit, tls));
    this.units = this.state.units.map((unit, k) => this.unitView(unit, this.listeners[k] as Listener));
    if (o.fleet !== undefined) joinGeistFleet(this, o.fleet);
  }

  async start(port: number): Promise<void> {
    intOption("port", port, 0, 0, 65535);
    const [master, ...members] = this.listeners;
    await master?.listen(this.host, port);
    await Promise.all(members.map((l) => l.listen(this.host, 0)));
  }

  private unitView(unit: SimUnit, listener: Listener): SimulatedUnit {
    const urlOf = (port: number): string => this.urlFor(port);
    return {
      index: unit.index,
      role: unit.role,
      hostKey: unit.hostKey,
      macAddress: unit.macAddress,
      serialNumber: unit.serialNumber,
      label: unit.label,
      get port() {
        return listener.port;
      },
      get url() {
        return urlOf(listener.port);
      },
      get deviceIds() {
        return [...unit.devices.keys()];
      },
    };
  }

  private urlFor(port: number): string {
    const host = this.host.includes(":") ? `[${this.host}]` : this.host;
    return `${this.scheme}://${host}:${port}`;
  }

  get port(): number {
    return this.listeners[0]?.port ?? 0;
  }

  get url(): string {
    return this.urlFor(this.port);
  }

  // ListenerOwner

  record(entry: RecordedRequest): void {
    if (this.logLimit === 0) return;
    if (this.log.length >= this.logLimit) this.log.shift();
    this.log.push(entry);
  }

  executed(entry: JournalEntry): void {
    if (this.logLimit === 0) return;
    if (this.journalLog.length >= this.logLimit) this.journalLog.shift();
    this.journalLog.push(entry);
  }

  proxyPort(unit: SimUnit): number {
    return this.listeners[unit.index]?.port ?? 0;
  }

  // Simulator

  deviceIds(): string[] {
    return this.state.units.flatMap((unit) => [...unit.devices.keys()]);
  }

  outlet(deviceId: string, index: number): OutletView {
    const { device, outlet } = this.state.outlet(deviceId, index);
    const now = this.state.now();
    const r = outletReading(device, outlet, now);
    return {
      deviceId,
      index,
      name: outlet.name,
      label: outlet.label,
      state: outlet.stateAt(now),
      reportedState: outlet.reportedState(now, this.state.lagMs),
      onDelay: outlet.onDelay,
      offDelay: outlet.offDelay,
      rebootDelay: outlet.rebootDelay,
      poaAction: outlet.poaAction,
      energyKwh: r.energyKwh,
      realPowerW: r.realPower,
      apparentPowerVa: r.apparentPower,
      currentA: r.current,
      voltageV: r.voltage,
      powerFactor: r.powerFactor,
      group: this.state.cluster ? (this.state.groupOf.get(`${deviceId}/${index}`) ?? null) : null,
    };
  }

  private simOutlet(deviceId: string, index: number): SimOutlet {
    return this.state.outlet(deviceId, index).outlet;
  }

  setOutletState(deviceId: string, index: number, state: OutletSwitch): void {
    const now = this.state.now();
    this.simOutlet(deviceId, index).schedule(now, this.state.lagMs, [{ at: now, state }]);
  }

  setReportedState(deviceId: string, index: number, state: OutletSwitch | null): void {
    this.simOutlet(deviceId, index).reportedPin = state;
  }

  setEnergy(deviceId: string, index: number, kwh: number): void {
    if (!Number.isFinite(kwh) || kwh < 0) throw new RangeError(`simulator: bad energy ${kwh}`);
    this.simOutlet(deviceId, index).setEnergyKwh(this.state.now(), kwh);
  }

  energyTruthWh(deviceId: string, index: number): number {
    return this.simOutlet(deviceId, index).truthWh(this.state.now());
  }

  replaceDevice(deviceId: string): string {
    return this.state.replaceDevice(deviceId);
  }

  setMeasurementRaw(deviceId: string, target: number | string, type: string, raw: string | null): void {
    const key = type.toLowerCase();
    let map: Map<string, string>;
    if (typeof target === "number") map = this.simOutlet(deviceId, target).raw;
    else {
      const device = this.state.device(deviceId);
      if (!ENTITY_KEYS.includes(target)) throw new Error(`simulator: no entity ${target}`);
      map = device.entityRaw.get(target) ?? new Map<string, string>();
      device.entityRaw.set(target, map);
    }
    if (raw === null) map.delete(key);
    else map.set(key, raw);
  }

  setEntityCurrent(deviceId: string, entityKey: string, amps: number | null): void {
    if (amps !== null && (!Number.isFinite(amps) || amps < 0))
      throw new RangeError(`simulator: bad current ${amps}`);
    this.setMeasurementRaw(deviceId, entityKey, "current", amps === null ? null : amps.toFixed(2));
  }

  tripBreaker(deviceId: string, breakerKey: string, tripped: boolean): void {
    const device = this.state.device(deviceId);
    const now = this.state.now();
    const outlets = device.outletList().filter((o) => o.breaker === breakerKey);
    if (outlets.length === 0) throw new Error(`simulator: no outlet on ${breakerKey}`);
    for (const o of outlets) o.setPowered(now, !tripped);
  }

  setAlarm(deviceId: string, target: number | string | null, alarm: AlarmValue | null): void {
    const device = this.state.device(deviceId);
    const value = alarm ? { ...alarm } : null;
    if (target === null) device.alarm = value;
    else if (typeof target === "number") this.simOutlet(deviceId, target).alarm = value;
    else if (!ENTITY_KEYS.includes(target)) throw new Error(`simulator: no entity ${target}`);
    else if (value) device.entityAlarms.set(target, value);
    else device.entityAlarms.delete(target);
  }

  setOutletControlEnabled(deviceId: string, enabled: boolean): void {
    this.state.device(deviceId).outletControlEnabled = enabled;
  }

  removeOutlet(deviceId: string, index: number): void {
    this.state.removeOutlet(deviceId, index);
  }

  removeDevice(deviceId: string): void {
    this.state.removeDevice(deviceId);
  }

  setGroupMembers(groupKey: string, outlets: readonly OutletRef[]): void {
    if (!this.state.cluster) throw new Error("simulator: groups exist only in OneView mode");
    if (groupKey.toLowerCase() === "total") throw new Error("simulator: the total group takes every outlet");
    for (const ref of outlets) this.state.outlet(ref.deviceId, ref.index);
    const group = this.state.findGroup(groupKey) ?? {
      key: groupKey,
      name: `Group ${groupKey}`,
      label: "",
      order: this.state.groups.size,
    };
    this.state.groups.set(group.key, group);
    for (const ref of this.state.groupMembers(group.key))
      this.state.groupOf.set(`${ref.deviceId}/${ref.index}`, "unassigned");
    for (const ref of outlets) this.state.groupOf.set(`${ref.deviceId}/${ref.index}`, group.key);
  }

  groupMembers(groupKey: string): OutletRef[] {
    return this.state.groupMembers(groupKey);
  }

  expireTokens(): void {
    for (const listener of this.listeners) listener.tokens.clear();
  }

  setPassword(user: string, password: string): void {
    this.state.users.set(user, password);
  }

  async setFault(fault: SimulatorFault | readonly SimulatorFault[] | null, unit?: number): Promise<void> {
    const parsed = parseFaults(fault);
    const one = unit === undefined ? undefined : this.listeners[unit];
    if (unit !== undefined && !one) throw new RangeError(`simulator: no unit ${unit}`);
    await Promise.all((one ? [one] : this.listeners).map((l) => l.setFault(parsed)));
  }

  get requests(): ReadonlyArray<RecordedRequest> {
    return this.log;
  }

  get openConnections(): number {
    return this.listeners.reduce((n, l) => n + l.openConnections, 0);
  }

  clearRequests(): void {
    this.log.length = 0;
  }

  writes(): RecordedRequest[] {
    return this.log.filter((r) => r.method === "POST" && r.cmd !== "login" && r.cmd !== "logout");
  }

  journal(): JournalEntry[] {
    return [...this.journalLog];
  }

  pollers(since = -Infinity): Map<string | null, number> {
    const counts = new Map<string | null, number>();
    for (const r of this.log) {
      if (r.method === "GET" && r.time >= since) counts.set(r.member, (counts.get(r.member) ?? 0) + 1);
    }
    return counts;
  }

  async close(): Promise<void> {
    await Promise.all(this.listeners.map((l) => l.close()));
  }
}
