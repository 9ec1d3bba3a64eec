/** Builders of model snapshots (single units and OneView clusters) for the tests of every surface. */
import type {
  Alarm,
  Device,
  Entity,
  Group,
  GroupMeasurement,
  Measurement,
  Outlet,
  OutletState,
  PduSystem,
  Snapshot,
  Vendor,
} from "../src/pdu/model.js";

/** The vendor a Geist unit's snapshots carry (what discovery names its maker). */
export const VENDOR: Vendor = Object.freeze({ manufacturer: "Vertiv", groupModel: "OneView group" });

export const CLEAR_ALARM: Alarm = { state: "none", severity: "alarm", raised: false };
export const RAISED_ALARM: Alarm = { state: "alarm", severity: "alarm", raised: true };

export function system(label: string, serial: string): PduSystem {
  return {
    label,
    oem: "GEI",
    model: "SIM-2",
    modelNumber: "SIM-2-OUT",
    serialNumber: serial,
    hardwareVersion: "1.0",
    firmwareVersion: "5.0.0",
    apiVersion: "1.0.1",
    macAddress: "02:00:5e:00:53:01",
    ipAddress: "192.0.2.50",
  };
}

export function measurement(type: string, value: number | null, units: string): Measurement {
  return { type, value, units, alarm: null };
}

export interface OutletSpec {
  readonly state?: OutletState;
  readonly label?: string;
  /** W; null: the PDU sent a non-numeric value. */
  readonly power?: number | null;
  readonly current?: number;
  readonly energy?: number;
}

export function outlet(index: number, spec: OutletSpec = {}): Outlet {
  const state = spec.state ?? "on";
  const label = spec.label ?? "";
  const name = `Outlet ${index + 1}`;
  const power = spec.power === undefined ? (state === "on" ? 58 : 0) : spec.power;
  return {
    index,
    name,
    label,
    displayName: label !== "" ? label : name,
    state,
    alarm: CLEAR_ALARM,
    onDelay: 0,
    offDelay: 0,
    rebootDelay: 5,
    poaAction: "last",
    measurements: [
      measurement("current", spec.current ?? 0.52, "A"),
      measurement("energy", spec.energy ?? 301.118, "kWh"),
      measurement("realPower", power, "W"),
    ],
  };
}

export interface DeviceSpec {
  readonly id: string;
  readonly label?: string;
  readonly outlets: readonly Outlet[];
  readonly alarm?: Alarm;
  readonly state?: string;
  readonly voltage?: number;
  readonly system?: PduSystem;
  /** OneView member reached through the master (null/undefined: the polled unit itself). */
  readonly proxied?: boolean;
  /** {@link Device.canResetOutletEnergy}; default true (as a Geist unit). */
  readonly canResetOutletEnergy?: boolean;
  /** {@link Device.canSwitchOutlets}; default true (as a Geist unit). */
  readonly canSwitchOutlets?: boolean;
}

export function device(spec: DeviceSpec): Device {
  const label = spec.label ?? "";
  const phase: Entity = {
    key: "phase0",
    name: "Phase",
    label: "",
    displayName: "Phase",
    alarm: CLEAR_ALARM,
    measurements: [measurement("current", 1.1, "A"), measurement("voltage", spec.voltage ?? 121.4, "V")],
  };
  const total: Entity = {
    key: "total0",
    name: "Total",
    label: "",
    displayName: "Total",
    alarm: CLEAR_ALARM,
    measurements: [measurement("energy", 812.337, "kWh"), measurement("realPower", 109, "W")],
  };
  return {
    id: spec.id,
    name: "Rack PDU",
    label,
    displayName: label !== "" ? label : "Rack PDU",
    type: "rpdu",
    state: spec.state ?? "normal",
    alarm: spec.alarm ?? CLEAR_ALARM,
    order: 1,
    outletControlEnabled: true,
    canResetOutletEnergy: spec.canResetOutletEnergy ?? true,
    canSwitchOutlets: spec.canSwitchOutlets ?? true,
    lifetimeEnergy: 123456,
    system: spec.system ?? system("Rack PDU A", `SER-${spec.id}`),
    route: spec.proxied === true ? { hostKey: `host-${spec.id}`, webPort: 8001, httpsPort: 0 } : null,
    outlets: spec.outlets,
    entities: [phase, total],
  };
}

export function groupMeasurement(
  key: string,
  type: string,
  units: string,
  stats: { sum: number | null; avg: number | null; min: number | null; max: number | null },
): GroupMeasurement {
  return { key, type, units, ...stats };
}

export function group(
  key: string,
  label: string,
  members: Group["members"],
  measurements: GroupMeasurement[],
): Group {
  return {
    key,
    name: `Group ${key}`,
    label,
    displayName: label !== "" ? label : `Group ${key}`,
    state: "normal",
    order: null,
    members,
    measurements,
  };
}

export function snapshot(
  instanceId: string,
  devices: readonly Device[],
  groups: readonly Group[] = [],
  timestamp = Date.now(),
): Snapshot {
  return {
    instanceId,
    timestamp,
    mode: groups.length > 0 ? "oneview" : "single",
    vendor: VENDOR,
    system: devices[0]?.system ?? system("empty", "none"),
    devices: [...devices].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    groups,
  };
}

/** A single unit: one device with `outlets` outlets (outlet 1 off, the rest on). */
export function singleUnit(
  instanceId: string,
  deviceId: string,
  outlets = 2,
  specs: OutletSpec[] = [],
): Snapshot {
  const list = Array.from({ length: outlets }, (_, i) =>
    outlet(i, specs[i] ?? { state: i === 1 ? "off" : "on" }),
  );
  return snapshot(instanceId, [device({ id: deviceId, outlets: list })]);
}

/** A OneView cluster: master + one member, groups `total` (with pduTotal rollups) and `2`. */
export function cluster(instanceId: string, masterId: string, memberId: string): Snapshot {
  const master = device({
    id: masterId,
    label: "Master",
    outlets: [outlet(0), outlet(1)],
    system: system("Cluster master", "SER-M"),
  });
  const member = device({
    id: memberId,
    label: "Member",
    outlets: [outlet(0), outlet(1, { state: "off" })],
    system: system("Cluster member", "SER-N"),
    proxied: true,
  });
  const stats = { sum: 116, avg: 58, min: 0, max: 58 };
  return snapshot(
    instanceId,
    [master, member],
    [
      group(
        "total",
        "Total",
        [
          { deviceId: masterId, index: 0 },
          { deviceId: masterId, index: 1 },
          { deviceId: memberId, index: 0 },
          { deviceId: memberId, index: 1 },
        ],
        [
          groupMeasurement("realPower", "realPower", "W", stats),
          groupMeasurement("pduTotalRealPower", "realPower", "W", { sum: 218, avg: 109, min: 109, max: 109 }),
        ],
      ),
      group(
        "2",
        "Web servers",
        [
          { deviceId: masterId, index: 0 },
          { deviceId: memberId, index: 0 },
        ],
        [
          groupMeasurement("realPower", "realPower", "W", stats),
          groupMeasurement("voltage", "voltage", "V", { sum: 242.8, avg: 121.4, min: 121.4, max: 121.4 }),
        ],
      ),
    ],
  );
}

/**
 * (This file is the tests' one snapshot builder, not only the MQTT tests'.)
 *
 * A minimal snapshot at `timestamp`: one device `DEV0` without entities, whose outlets have the
 * given states and only a realPower measurement (50 W when on, else 0).
 */
export function snapshotWith(
  instanceId: string,
  timestamp: number,
  states: readonly OutletState[],
): Snapshot {
  const outlets = states.map((state, i) => ({
    ...outlet(i, { state }),
    measurements: [measurement("realPower", state === "on" ? 50 : 0, "W")],
  }));
  const only = { ...device({ id: "DEV0", outlets }), entities: [], lifetimeEnergy: null };
  return snapshot(instanceId, [only], [], timestamp);
}
