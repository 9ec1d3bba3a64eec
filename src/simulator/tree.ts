/**
 * Builds the JSON trees the simulator serves: a unit's `/api` tree and the master's `/oneview` tree,
 * computed from the state at the moment of the request (values as strings, integer-string keys).
 *
 * The trees have exactly the structure of the wire fixtures in testkit/fixtures/wire/ (answers in
 * the shape real units send): the same key paths and JSON types at every level, checked by
 * test/simulator/wire-shape.test.ts. Add a field here only when real units send it.
 */

import type { SimDevice, SimOutlet, SimState, SimUnit } from "./state.js";
import type { AlarmValue } from "./types.js";

export interface WireMeasurement {
  type: string;
  value: string;
  units: string;
  state: string;
  displayEnabled: boolean;
  datalogEnabled: boolean;
  alarm?: AlarmValue;
}

export interface WireOutlet {
  name: string;
  label: string;
  state: string;
  measurement: Record<string, WireMeasurement>;
  [field: string]: unknown;
}

export interface WireEntity {
  name: string;
  label: string;
  alarm: AlarmValue;
  measurement: Record<string, WireMeasurement>;
  [field: string]: unknown;
}

export interface WireDevice {
  entity: Record<string, WireEntity>;
  outlet: Record<string, WireOutlet>;
  [field: string]: unknown;
}

export interface WireApi {
  sys: Record<string, string>;
  conf: Record<string, unknown>;
  dev: Record<string, WireDevice>;
  auth: Record<string, unknown>;
  alarm: Record<string, unknown>;
}

const UNITS: Readonly<Record<string, string>> = {
  realPower: "W",
  apparentPower: "VA",
  current: "A",
  voltage: "V",
  powerFactor: "%",
  energy: "kWh",
};
const DECIMALS: Readonly<Record<string, number>> = {
  realPower: 0,
  apparentPower: 0,
  current: 2,
  voltage: 1,
  powerFactor: 0,
  energy: 3,
};

const noAlarm = (): AlarmValue => ({ state: "none", severity: "alarm" });
const format = (type: string, value: number): string => value.toFixed(DECIMALS[type] ?? 2);

/** Instantaneous electrical values of one outlet (power 0 while the relay is off). */
export interface Reading {
  readonly realPower: number;
  readonly apparentPower: number;
  readonly current: number;
  readonly voltage: number;
  /** 0..1; 0 while off. */
  readonly powerFactor: number;
  readonly energyKwh: number;
}

export function outletReading(device: SimDevice, outlet: SimOutlet, now: number): Reading {
  const voltage = device.voltage.at(now);
  const realPower = outlet.realPower(now);
  const pf = outlet.pf();
  const apparentPower = realPower / pf;
  return {
    realPower,
    apparentPower,
    current: apparentPower / voltage,
    voltage,
    powerFactor: realPower > 0 ? pf : 0,
    energyKwh: outlet.energyKwh(now),
  };
}

/** Measurement maps keyed "0", "1", ... in list order; `raw` overrides win over living values. */
function measurements(
  list: readonly [type: string, value: number, alarm?: AlarmValue][],
  raw: ReadonlyMap<string, string> | undefined,
): Record<string, WireMeasurement> {
  const out: Record<string, WireMeasurement> = {};
  list.forEach(([type, value, alarm], k) => {
    out[String(k)] = {
      type,
      value: raw?.get(type.toLowerCase()) ?? format(type, value),
      units: UNITS[type] ?? "",
      state: "normal",
      displayEnabled: true,
      datalogEnabled: true,
      ...(alarm ? { alarm } : {}),
    };
  });
  return out;
}

function outletJson(outlet: SimOutlet, r: Reading, now: number, lagMs: number): WireOutlet {
  return {
    name: outlet.name,
    label: outlet.label,
    state: outlet.reportedState(now, lagMs),
    onDelay: outlet.onDelay,
    offDelay: outlet.offDelay,
    rebootDelay: outlet.rebootDelay,
    poaAction: outlet.poaAction,
    poaDelay: 0,
    rebootHoldDelay: 0,
    timeToAction: outlet.secondsToAction(now),
    mode: "normal",
    relayFailure: false,
    parent: outlet.breaker,
    parentBreaker: outlet.breaker,
    parentPhase: "phase0",
    alarm: outlet.alarm ?? noAlarm(),
    measurement: measurements(
      [
        ["current", r.current],
        ["realPower", r.realPower],
        ["apparentPower", r.apparentPower],
        ["powerFactor", r.powerFactor * 100],
        ["energy", r.energyKwh],
        ["voltage", r.voltage],
      ],
      outlet.raw,
    ),
  };
}

function deviceJson(state: SimState, device: SimDevice, now: number): WireDevice {
  const outlets = device.outletList();
  const readings = outlets.map((o) => outletReading(device, o, now));
  const sum = (pick: (r: Reading) => number, filter: (o: SimOutlet) => boolean = () => true): number =>
    readings.reduce((acc, r, k) => acc + (filter(outlets[k] as SimOutlet) ? pick(r) : 0), 0);
  const energyWh = state.deviceEnergyWh(device, now);
  const entity = (
    key: string,
    name: string,
    list: readonly [string, number, AlarmValue?][],
    extra: Record<string, unknown> = {},
  ): WireEntity => ({
    name,
    label: device.entityLabels.get(key) ?? "",
    alarm: device.entityAlarms.get(key) ?? noAlarm(),
    measurement: measurements(list, device.entityRaw.get(key)),
    ...extra,
  });
  const breaker = (key: string, name: string): WireEntity =>
    entity(
      key,
      name,
      [
        [
          "current",
          sum(
            (r) => r.current,
            (o) => o.breaker === key,
          ),
          noAlarm(),
        ],
      ],
      {
        point: { lossOfLoadDetected: { value: false } },
      },
    );
  const outlet: Record<string, WireOutlet> = {};
  outlets.forEach(
    (o, k) => (outlet[String(o.index)] = outletJson(o, readings[k] as Reading, now, state.lagMs)),
  );
  return {
    name: device.name,
    label: device.label,
    type: "rpdu",
    state: "normal",
    order: device.order,
    snmpInstance: device.order,
    lifetimeEnergy: String(Math.floor(energyWh)),
    conf: { outletControlEnabled: device.outletControlEnabled },
    point: { pseCompliant: { value: false } },
    alarm: device.alarm ?? noAlarm(),
    layout: {
      "0": ["entity/phase0"],
      "1": ["entity/total0"],
      "2": ["entity/breaker0", "entity/breaker1"],
      "3": outlets.map((o) => `outlet/${o.index}`),
    },
    entity: {
      phase0: entity("phase0", "Phase", [
        ["voltage", device.voltage.at(now)],
        ["current", sum((r) => r.current), noAlarm()],
      ]),
      total0: entity("total0", "Total", [
        ["realPower", sum((r) => r.realPower)],
        ["apparentPower", sum((r) => r.apparentPower)],
        ["energy", energyWh / 1000],
      ]),
      breaker0: breaker("breaker0", "Breaker 1"),
      breaker1: breaker("breaker1", "Breaker 2"),
    },
    outlet,
  };
}

/** The whole `/api` tree of one unit. */
export function apiTree(state: SimState, unit: SimUnit): WireApi {
  const now = state.now();
  const dev: Record<string, WireDevice> = {};
  for (const device of unit.devices.values()) dev[device.id] = deviceJson(state, device, now);
  return {
    sys: {
      label: unit.label,
      name: "rPDU",
      oem: "GEI",
      model: "SIM-RPDU",
      modelNumber: "SIM-RPDU-SIMULATED",
      serialNumber: unit.serialNumber,
      version: "1.0",
      appVersion: "5.10.4",
      apiVersion: "1.0.1",
      partNumber: "SIM-RPDU-PN",
      build: "sim",
      platform: "sim",
    },
    conf: {
      network: {
        ethernet: { macAddr: unit.macAddress, address: { "1": { address: unit.ipAddress } } },
      },
      oneview: { enabled: unit.role === "master" },
    },
    dev,
    // Real units answer these two empty on a read without credentials.
    auth: {},
    alarm: {},
  };
}

const numeric = (raw: string | undefined): number | null => {
  if (raw === undefined || raw.trim() === "") return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
};

const valueOf = (map: Record<string, WireMeasurement> | undefined, type: string): number | null =>
  numeric(Object.values(map ?? {}).find((m) => m.type === type)?.value);

const clearRollupAlarm = (): AlarmValue => ({ state: "none", severity: "" });

/**
 * One rollup measurement: string statistics over the members' values. Energy and the `total`
 * group's rollups carry `sumValue` only, as on real units; no numeric values: no statistics at all.
 */
function rollup(type: string, values: readonly (number | null)[], sumOnly = false): Record<string, unknown> {
  const nums = values.filter((v): v is number => v !== null);
  const out: Record<string, unknown> = {
    type,
    units: UNITS[type] ?? "",
    state: "normal",
    displayEnabled: true,
    datalogEnabled: true,
    alarm: clearRollupAlarm(),
  };
  if (nums.length === 0) return out;
  const total = nums.reduce((a, b) => a + b, 0);
  out.sumValue = format(type, total);
  if (sumOnly || type === "energy") return out;
  out.avgValue = format(type, total / nums.length);
  out.minValue = format(type, Math.min(...nums));
  out.maxValue = format(type, Math.max(...nums));
  return out;
}

/**
 * A rollup node (`entity.outlet.0` of a user group, `entity.pduTotal.0` of `total`): the rollup
 * measurements sit one level down, under `measurement`, like an outlet's (docs/simulator.md, OneView cluster layout).
 */
const rollupNode = (name: string, list: readonly Record<string, unknown>[]): Record<string, unknown> => ({
  name,
  alarm: clearRollupAlarm(),
  measurement: keyedList(list),
});

const keyedList = <T>(list: readonly T[]): Record<string, T> =>
  Object.fromEntries(list.map((v, k) => [String(k), v]));

/** The master's `/oneview` tree; `proxyPort` gives a member's listener port. */
export function oneviewTree(state: SimState, proxyPort: (unit: SimUnit) => number): Record<string, unknown> {
  const trees = state.units.map((unit) => apiTree(state, unit));
  const devices = new Map<string, WireDevice>();
  for (const tree of trees) for (const [id, device] of Object.entries(tree.dev)) devices.set(id, device);

  const host: Record<string, unknown> = {};
  state.units.forEach((unit, u) => {
    const dev: Record<string, unknown> = {};
    for (const device of unit.devices.values()) {
      const outlet: Record<string, unknown> = {};
      for (const o of device.outletList())
        outlet[String(o.index)] = { group: state.groupOf.get(`${device.id}/${o.index}`) ?? null };
      dev[device.id] = { outlet };
    }
    const master = unit.role === "master";
    host[unit.hostKey] = {
      type: "rpdu",
      state: "normal",
      webPort: master ? 0 : proxyPort(unit),
      httpsPort: master ? -1 : proxyPort(unit),
      snmpPort: 161,
      order: u + 1,
      snmpInstance: u + 1,
      group: null,
      cache: trees[u],
      groupMap: { dev },
    };
  });

  const group: Record<string, unknown> = {};
  for (const info of [...state.groups.values()].sort((a, b) => a.order - b.order)) {
    // As on real units: the built-in `total` group rolls up every device's total (`pduTotal`),
    // `unassigned` has no rollups, a user group rolls up its member outlets (`outlet`).
    const entity: Record<string, unknown> = {};
    if (info.key === "total") {
      const totals = [...devices.values()].map((d) => d.entity.total0?.measurement);
      entity.pduTotal = keyedList([
        rollupNode(
          "pduTotal",
          ["realPower", "apparentPower", "energy"].map((type) =>
            rollup(
              type,
              totals.map((m) => valueOf(m, type)),
              true,
            ),
          ),
        ),
      ]);
    } else if (info.key !== "unassigned") {
      const members = state
        .groupMembers(info.key)
        .map((m) => devices.get(m.deviceId)?.outlet[String(m.index)]);
      entity.outlet = keyedList([
        rollupNode(
          "outlet",
          ["realPower", "apparentPower", "current", "energy"].map((type) =>
            rollup(
              type,
              members.map((o) => valueOf(o?.measurement, type)),
            ),
          ),
        ),
      ]);
    }
    group[info.key] = {
      name: info.name,
      label: info.label,
      state: "normal",
      order: info.order,
      snmpInstance: info.order + 1,
      entity,
    };
  }

  return {
    info: { apiVersion: "1.0.1", dirtyCount: 0, state: "normal" },
    conf: {},
    cli: { state: "idle", code: 0 },
    host,
    group,
  };
}
