/** Public types of the built-in Geist PDU simulator (re-exported by `index.ts`). */

import type { OutletRef } from "../pdu/model.js";
import type { LoadFleet } from "./fleet.js";

export type { OutletRef };

/** How a simulator joins a fleet of loads (./fleet.ts, docs/simulator.md "Loads and feeds"). */
export interface FleetMembership {
  readonly fleet: LoadFleet;
  /** Its name in the fleet (what a load's cord names); a OneView cluster joins as one, its outlets by device id. */
  readonly name: string;
  /** The feed the unit hangs on; null or absent: none. */
  readonly feed?: string | null;
}

/** The hostile answer modes (src/simulator/hostile.ts), as `setFault` takes them. */
export type HostileMode = `huge-id:${number}` | `huge-label:${number}` | `outlets:${number}` | "new-id";

export type OutletSwitch = "on" | "off";

/**
 * Fault injection (see docs/simulator.md):
 * - `refuse`: stop listening (connections refused); clearing listens again on the same port.
 * - `hang`: accept and read the request, never answer.
 * - `slow:<ms>`: answer normally after a delay.
 * - `http500`: HTTP 500 with a plain-text body.
 * - `truncated`: a complete HTTP answer whose JSON body is cut in the middle.
 * - `wrong-shape`: a valid envelope with `data` of the wrong shape (`dev`/`host` as arrays, a
 *   non-boolean for `oneview/enabled`, a numeric login token, else `data` wrapped in an array).
 * - `huge`: a >50 MB body, streamed (chunked, no Content-Length) without being built in memory.
 * - the hostile answers of ./hostile.ts (`huge-id:<n>`, `huge-label:<n>`, `outlets:<n>`, `new-id`):
 *   `GET /api` and `GET /oneview` answer what a broken or malicious PDU could.
 */
export type SimulatorFault =
  "refuse" | "hang" | `slow:${number}` | "http500" | "truncated" | "wrong-shape" | "huge" | HostileMode;

export interface SimulatorOptions {
  /** Listening address of every unit, default "127.0.0.1". */
  host?: string;
  /** Port of the master / single unit, default 0 (ephemeral). Members always get ephemeral ports. */
  port?: number;
  /** Serve HTTPS with a self-signed certificate (CN localhost, SANs 127.0.0.1, ::1, localhost). */
  https?: boolean;
  /** Devices per PDU (per unit), default 1. */
  devices?: number;
  /** Outlets per device, default 8. */
  outlets?: number;
  /** OneView cluster: the master plus `members` member PDUs (default 2), each on its own proxy port. */
  oneview?: boolean | { members: number };
  /** Users and passwords, default `{ admin: "admin" }`. */
  users?: Record<string, string>;
  /** Seeds device ids and the measurement waveforms, default 1. Distinct seeds give distinct ids. */
  seed?: number;
  /** Reported outlet state lags the real state by this long after a switch (ms), default 0. */
  stateLagMs?: number;
  /** Reset the connection of POSTs sent chunked (no Content-Length), default true (real units do). */
  rejectChunked?: boolean;
  /** Destroy keep-alive connections idle this long (ms), default null (off). */
  idleDropMs?: number | null;
  /** Off period of a reboot in ms, default 250; null uses the outlet's `rebootDelay` seconds. */
  rebootMs?: number | null;
  /** Clock in epoch ms, default a monotonic clock. Tests pass a settable one for exact values. */
  clock?: () => number;
  /**
   * Freeze every measurement, default false: power, current and voltage stay at their seeded base
   * and energy does not accrue, so two reads give the same values unless something is written
   * (a switched-off outlet still reads 0 W). Outlet switching, reboots and the clock work as usual.
   */
  frozen?: boolean;
  /** Keep at most this many recorded requests (oldest dropped first), default 10000. */
  requestLogLimit?: number;
  /** Nominal volts of every device, default 120. */
  voltage?: number;
  /**
   * Join a fleet of loads: every outlet then draws what the loads plugged into it draw (nothing
   * while none is), the fleet's clock replaces `clock`, and stopping the unit in the fleet (its PDU
   * or its feed) makes it refuse connections until it is started again.
   */
  fleet?: FleetMembership;
}

export interface RecordedRequest {
  /** Clock time (epoch ms) when the request was complete (or refused). */
  readonly time: number;
  readonly method: string;
  /** Path without the query string, as sent (still URL-escaped). */
  readonly path: string;
  /** The listener port that received it (a member's proxy port for member units). */
  readonly port: number;
  /** Index of the unit that received it in `Simulator.units`. */
  readonly unit: number;
  /** Sent with `Transfer-Encoding: chunked`. */
  readonly chunked: boolean;
  /** The `Content-Length` header as a number, or null when the request had none. */
  readonly contentLength: number | null;
  /** Parsed JSON body with any `data.password` replaced by "[redacted]"; undefined when none/invalid. */
  readonly body: unknown;
  /** The body's `cmd` (`login`, `control`, `set`, `reset`, ...), else null. */
  readonly cmd: string | null;
  /**
   * The bridge replica that sent it (its `X-Pdu-Bridge-Member` header), null without one,
   * `"(invalid)"` when the header was not a plain member name.
   */
  readonly member: string | null;
}

/** A write the simulator executed (a POST other than login/logout that it answered with OK). */
export interface JournalEntry {
  /** Clock time (epoch ms) when it was executed. */
  readonly time: number;
  /** Index of the unit that executed it in `Simulator.units`. */
  readonly unit: number;
  /** Path without the query string, as sent. */
  readonly path: string;
  /** The body's `cmd` (`control`, `set`, `reset`). */
  readonly cmd: string;
  /** The body's `data` (e.g. `{ action: "reboot" }`). */
  readonly data: Readonly<Record<string, unknown>>;
  /** The replica that sent it, as in {@link RecordedRequest.member}. */
  readonly member: string | null;
}

export interface AlarmValue {
  state: string;
  severity: string;
}

/** What the simulator knows about one outlet, at the time of the call. */
export interface OutletView {
  readonly deviceId: string;
  readonly index: number;
  readonly name: string;
  readonly label: string;
  /** The real relay state (drives power). */
  readonly state: OutletSwitch;
  /** What the API reports (lags `state` by `stateLagMs`, or pinned by `setReportedState`). */
  readonly reportedState: OutletSwitch;
  readonly onDelay: number;
  readonly offDelay: number;
  readonly rebootDelay: number;
  readonly poaAction: "on" | "off" | "last";
  readonly energyKwh: number;
  readonly realPowerW: number;
  readonly apparentPowerVa: number;
  readonly currentA: number;
  readonly voltageV: number;
  /** 0..1 (reported on the wire as a percentage). */
  readonly powerFactor: number;
  /** OneView group key from the groupMap (`"2"`, `"unassigned"`, null); null outside OneView. */
  readonly group: string | null;
}

export interface SimulatedUnit {
  /** 0 = the master (or the single unit); members follow. */
  readonly index: number;
  readonly role: "single" | "master" | "member";
  /** Key of this unit in the master's `/oneview` `host` map. */
  readonly hostKey: string;
  readonly macAddress: string;
  readonly serialNumber: string;
  readonly label: string;
  /** The unit's own listener: the master's port, or a member's proxy port on the same host. */
  readonly port: number;
  readonly url: string;
  /** Device ids of this unit (after removals). */
  readonly deviceIds: readonly string[];
}

export interface Simulator {
  readonly host: string;
  /** Port of the master / single unit. */
  readonly port: number;
  readonly scheme: "http" | "https";
  /** Base URL of the master / single unit, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** PEM of the self-signed certificate (use as a CA file) when https, else null. */
  readonly certificatePem: string | null;
  readonly units: readonly SimulatedUnit[];

  /** Every device id across all units (unit order, then device order). */
  deviceIds(): string[];
  /** Throws when the device or outlet does not exist. */
  outlet(deviceId: string, index: number): OutletView;
  /** Switch the real state now, as if by hand (the reported state follows after `stateLagMs`). */
  setOutletState(deviceId: string, index: number, state: OutletSwitch): void;
  /** Pin the reported state (null: follow the real state again). Cleared by the next switch. */
  setReportedState(deviceId: string, index: number, state: OutletSwitch | null): void;
  setEnergy(deviceId: string, index: number, kwh: number): void;
  /**
   * An outlet's ground truth in Wh: its energy counter when the simulator started plus the power
   * it drew since, integrated over time, whatever happened to the counter (resets, a replaced unit).
   */
  energyTruthWh(deviceId: string, index: number): number;
  /**
   * Replaces a device by a new unit in its place: another device id (a Geist device id is its
   * serial), the same outlets and loads, every energy counter at 0. Returns the new id.
   */
  replaceDevice(deviceId: string): string;
  /**
   * Override the raw string of one measurement (`"n/a"`, `""`, `"12.5"`); null restores the living
   * value. `target` is an outlet index, or an entity key (`phase0`, `total0`, `breaker0`, `breaker1`).
   */
  setMeasurementRaw(deviceId: string, target: number | string, type: string, raw: string | null): void;
  /**
   * Pin the current of an entity (`breaker0`, `phase0`, ...) to `amps`, written as the PDU writes
   * currents (`"13.60"`): how tests drive a breaker towards its rating; null restores the living value.
   */
  setEntityCurrent(deviceId: string, entityKey: string, amps: number | null): void;
  /**
   * Trips a breaker (`breaker0`, `breaker1`) silently, as a Geist unit does: the breaker's current
   * and its outlets' currents fall to 0 while the outlets stay `on` and no alarm is reported;
   * false resets it (the outlets draw again).
   */
  tripBreaker(deviceId: string, breakerKey: string, tripped: boolean): void;
  /** Set an alarm on the device (target null), an outlet (index) or an entity (key); null clears. */
  setAlarm(deviceId: string, target: number | string | null, alarm: AlarmValue | null): void;
  /** `conf.outletControlEnabled` of a device; control writes are refused with retCode 2003 when false. */
  setOutletControlEnabled(deviceId: string, enabled: boolean): void;
  removeOutlet(deviceId: string, index: number): void;
  removeDevice(deviceId: string): void;
  /** OneView only: make exactly these outlets the members of `groupKey` (created if new). */
  setGroupMembers(groupKey: string, outlets: readonly OutletRef[]): void;
  /** OneView only: the outlets whose groupMap entry names `groupKey` (case-insensitive). */
  groupMembers(groupKey: string): OutletRef[];
  /** Invalidate every login token on every port. */
  expireTokens(): void;
  /** Change (or add) a user's password. Existing tokens stay valid until `expireTokens()`. */
  setPassword(user: string, password: string): void;
  /**
   * Inject a fault on every unit, or only on `units[unit]`; null (or `[]`) clears. A list combines
   * faults: any number of hostile answer modes and at most one of the others. Resolves once in
   * effect.
   */
  setFault(fault: SimulatorFault | readonly SimulatorFault[] | null, unit?: number): Promise<void>;

  readonly requests: ReadonlyArray<RecordedRequest>;
  clearRequests(): void;
  /** TCP connections open now, over every unit's port (a client's kept-alive ones included). */
  readonly openConnections: number;
  /** Recorded POSTs other than login/logout. */
  writes(): RecordedRequest[];
  /**
   * Every write the simulator executed, in order, with the replica that sent it (bounded like the
   * request log, by `requestLogLimit`, but kept apart from it: reads never push a write out).
   */
  journal(): JournalEntry[];
  /** Reads (GETs) received per sending replica since `since` (epoch ms; default: all kept). */
  pollers(since?: number): Map<string | null, number>;
  close(): Promise<void>;
}
