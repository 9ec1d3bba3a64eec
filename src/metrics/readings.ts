/**
 * The reading families of `/metrics` (docs/metrics.md): every numeric measurement of the latest good
 * snapshots, named by Prometheus conventions, built from the snapshot model at scrape time.
 *
 * No prom-client child per series: at 1,000 PDUs that is about 150,000 series, and keeping them in
 * step with the snapshots would be work on every poll whether anyone scrapes or not. Instead one walk
 * over the snapshots appends each sample to its family's text, and the families are joined in a
 * fixed order (a family's samples must be one group in both text formats).
 *
 * What a PDU names becomes a label value only when it is a safe name (src/names.ts, the rule of
 * MQTT topics): a device, entity or group whose id is not is left out. And at most
 * {@link MAX_SERIES_PER_INSTANCE} series of one instance are written: whole devices in order, then
 * whole groups, as long as they fit. What is left out is counted per instance and reason
 * ({@link metricsPlan}); the bridge's metrics export the counts.
 */
import { NO_ENERGY, type EnergyReader } from "../energy-reader.js";
import type { Device, Group, Measurement, Snapshot } from "../pdu/model.js";
import { isSafeName } from "../names.js";

/** How one measurement type becomes a metric: the name after `pdu_outlet_` and the unit scale. */
interface Kind {
  /** `power_watts`, `energy_joules`, ... (counters get `_total` on their samples). */
  readonly base: string;
  readonly help: string;
  /**
   * Accepted units (as the PDU writes them, case-sensitive) and the factor to the base unit; a
   * negative factor divides (`%` → ratio: 94 / 100 is 0.94, where 94 × 0.01 is 0.9400000000000001).
   */
  readonly units: Readonly<Record<string, number>>;
  /** True for energy: a counter on outlets and entities (a reset of statistics is a counter reset). */
  readonly counter: boolean;
}

/**
 * Measurement types with a family of their own (the table in docs/metrics.md), by the PDU's exact
 * type. Empty units mean the PDU's usual unit; any other unit is left out rather than exported on a
 * wrong scale.
 */
const KINDS: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ["realPower", { base: "power_watts", help: "real power", units: { W: 1, "": 1 }, counter: false }],
  [
    "apparentPower",
    { base: "apparent_power_voltamperes", help: "apparent power", units: { VA: 1, "": 1 }, counter: false },
  ],
  ["current", { base: "current_amperes", help: "current", units: { A: 1, "": 1 }, counter: false }],
  ["voltage", { base: "voltage_volts", help: "voltage", units: { V: 1, "": 1 }, counter: false }],
  [
    "energy",
    {
      base: "energy_joules",
      help: "energy since the PDU's statistics were last reset",
      units: { kWh: 3.6e6, Wh: 3600, "": 3.6e6 },
      counter: true,
    },
  ],
  [
    "powerFactor",
    {
      base: "power_factor_ratio",
      help: "power factor (0-1)",
      units: { "%": -100, "": -100 },
      counter: false,
    },
  ],
]);

/** The value in the metric's base unit, or null when it must be left out. */
function scaled(kind: Kind, m: Measurement): number | null {
  if (m.value === null) return null;
  const factor = kind.units[m.units];
  if (factor === undefined) return null;
  return applyFactor(m.value, factor);
}

function applyFactor(value: number, factor: number): number | null {
  const result = factor < 0 ? value / -factor : value * factor;
  return Number.isFinite(result) ? result : null;
}

type Format = "text" | "openmetrics";

interface Family {
  /** Name of the family (OpenMetrics: without `_total` / `_info`). */
  readonly name: string;
  /** Name of its samples. */
  readonly sample: string;
  readonly type: "gauge" | "counter" | "info";
  readonly help: string;
}

function family(sample: string, type: Family["type"], help: string): Family {
  const suffix = type === "counter" ? "_total" : type === "info" ? "_info" : "";
  return { name: sample.slice(0, sample.length - suffix.length), sample, type, help };
}

const KIND_LIST = [...KINDS.entries()];

/** Family index per place and measurement type. */
const OUTLET_STATE = 0;
const OUTLET_INFO = 1;
const DEVICE_INFO = 2;
const FAMILIES: Family[] = [
  family("pdu_outlet_state", "gauge", "Outlet state: 1 on, 0 off (left out while unknown)"),
  family("pdu_outlet_info", "info", "Names and labels of an outlet (always 1)"),
  family("pdu_device_info", "info", "Label, model and serial number of a device (always 1)"),
];
const outletFamily = new Map<string, number>();
const entityFamily = new Map<string, number>();
const groupFamily = new Map<string, number>();
const groupTotalFamily = new Map<string, number>();
for (const [type, kind] of KIND_LIST) {
  const counterName = `${kind.base}${kind.counter ? "_total" : ""}`;
  const type_ = kind.counter ? "counter" : "gauge";
  outletFamily.set(
    type,
    FAMILIES.push(family(`pdu_outlet_${counterName}`, type_, `Outlet ${kind.help}`)) - 1,
  );
  entityFamily.set(
    type,
    FAMILIES.push(family(`pdu_entity_${counterName}`, type_, `Entity ${kind.help}`)) - 1,
  );
}
for (const [type, kind] of KIND_LIST) {
  // Rollups are statistics over outlets (sum, avg, min, max): gauges, energy included.
  const help = `OneView group rollup of outlet ${kind.help}`;
  groupFamily.set(type, FAMILIES.push(family(`pdu_group_${kind.base}`, "gauge", help)) - 1);
  const totalHelp = `OneView group rollup of PDU total ${kind.help}`;
  groupTotalFamily.set(
    type,
    FAMILIES.push(family(`pdu_group_pdu_total_${kind.base}`, "gauge", totalHelp)) - 1,
  );
}

// The lifetime energy counters (src/energy/, docs/energy.md): counters that never decrease, in Wh.
const LIFETIME_OUTLET =
  FAMILIES.push(
    family(
      "pdu_outlet_energy_lifetime_wh_total",
      "counter",
      "Outlet lifetime energy in watt-hours: never decreases (carried on through the PDU's resets, a replaced unit, restarts)",
    ),
  ) - 1;
const LIFETIME_ENTITY =
  FAMILIES.push(
    family(
      "pdu_entity_energy_lifetime_wh_total",
      "counter",
      "Entity lifetime energy in watt-hours: never decreases (carried on through the PDU's resets, a replaced unit, restarts)",
    ),
  ) - 1;

/** Every reading family name, as its samples are named (for documentation and tests). */
export const READING_METRICS: readonly string[] = FAMILIES.map((f) => f.sample);

const NEEDS_ESCAPE = /[\\"\n]/;

/** A label value as both formats want it: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

const STATS = ["sum", "avg", "min", "max"] as const;

/**
 * Reading series of one instance at most in a scrape: a OneView cluster of 1,536 outlets writes
 * about 13,000, a hostile PDU within the bounds on what a PDU sends (src/pdu/bounds.ts) up to
 * about 40,000.
 */
export const MAX_SERIES_PER_INSTANCE = 20_000;

/** Why series of an instance are left out of a scrape. */
export type LeftOutReason = "unsafe-name" | "series-cap";

/** What one snapshot writes: its parts with safe names that fit the cap, and what was left out. */
export interface MetricsPlan {
  readonly instanceId: string;
  readonly devices: readonly Device[];
  readonly groups: readonly Group[];
  /** Series the snapshot's parts would have written, left out per reason. */
  readonly leftOut: Readonly<Record<LeftOutReason, number>>;
}

/** Plans per snapshot parts (a restamped snapshot shares them, so its plan is found again). */
const plans = new WeakMap<readonly Device[], { groups: readonly Group[]; plan: MetricsPlan }>();

/** The plan of one snapshot, made once per content ({@link MetricsPlan}). */
export function metricsPlan(snapshot: Snapshot): MetricsPlan {
  const known = plans.get(snapshot.devices);
  if (
    known !== undefined &&
    known.groups === snapshot.groups &&
    known.plan.instanceId === snapshot.instanceId
  )
    return known.plan;
  const plan = makePlan(snapshot);
  plans.set(snapshot.devices, { groups: snapshot.groups, plan });
  return plan;
}

function makePlan(snapshot: Snapshot): MetricsPlan {
  const leftOut = { "unsafe-name": 0, "series-cap": 0 };
  let written = 0;
  const devices: Device[] = [];
  let changed = false;
  for (const device of snapshot.devices) {
    const unsafe = !isSafeName(device.id);
    let kept = device;
    if (!unsafe && device.entities.some((e) => !isSafeName(e.key))) {
      const entities = device.entities.filter((e) => isSafeName(e.key));
      leftOut["unsafe-name"] += entitySeries(device.entities) - entitySeries(entities);
      kept = { ...device, entities };
    }
    const n = deviceSeries(kept);
    if (unsafe) leftOut["unsafe-name"] += n;
    else if (written + n > MAX_SERIES_PER_INSTANCE) leftOut["series-cap"] += n;
    else {
      written += n;
      devices.push(kept);
      if (kept === device) continue;
    }
    changed = true;
  }
  const groups: Group[] = [];
  for (const group of snapshot.groups) {
    const n = groupSeries(group);
    if (!isSafeName(group.key)) leftOut["unsafe-name"] += n;
    else if (written + n > MAX_SERIES_PER_INSTANCE) leftOut["series-cap"] += n;
    else {
      written += n;
      groups.push(group);
    }
  }
  return Object.freeze({
    instanceId: snapshot.instanceId,
    devices: changed ? devices : snapshot.devices,
    groups: groups.length === snapshot.groups.length ? snapshot.groups : groups,
    leftOut: Object.freeze(leftOut),
  });
}

/** Series a kind writes for one measurement list (an outlet's or an entity's). */
function kindSeries(measurements: readonly Measurement[]): number {
  let n = 0;
  for (const [type, kind] of KIND_LIST) {
    const m = measurements.find((x) => x.type === type);
    // An energy reading has its lifetime counter beside it.
    if (m !== undefined && scaled(kind, m) !== null) n += type === "energy" ? 2 : 1;
  }
  return n;
}

function entitySeries(entities: Device["entities"]): number {
  let n = 0;
  for (const entity of entities) n += kindSeries(entity.measurements);
  return n;
}

/** Series one device writes: its info, each outlet's state, info and readings, its entities' readings. */
function deviceSeries(device: Device): number {
  let n = 1;
  for (const outlet of device.outlets)
    n += (outlet.state === "unknown" ? 1 : 2) + kindSeries(outlet.measurements);
  return n + entitySeries(device.entities);
}

/** Series one group writes: a statistic per rollup the families export. */
function groupSeries(group: Group): number {
  let n = 0;
  for (const [type, kind] of KIND_LIST) {
    for (const key of [type, `pduTotal${type.charAt(0).toUpperCase()}${type.slice(1)}`]) {
      const m = group.measurements.find((x) => x.key === key && x.type === type);
      if (m === undefined || kind.units[m.units] === undefined) continue;
      const factor = kind.units[m.units]!;
      for (const stat of STATS) if (m[stat] !== null && applyFactor(m[stat], factor) !== null) n++;
    }
  }
  return n;
}

type Writer = (plan: MetricsPlan, out: string, energy: EnergyReader) => string;

/** `{instance="…",device="…"` of a device of a snapshot. */
const devicePrefix = (plan: MetricsPlan, deviceId: string): string =>
  `{instance="${escapeLabel(plan.instanceId)}",device="${escapeLabel(deviceId)}"`;

/** `pdu_outlet_state`: 1 on, 0 off; an outlet whose state is unknown has no sample. */
const writeOutletStates: Writer = (plan, out) => {
  for (const device of plan.devices) {
    const dev = devicePrefix(plan, device.id);
    for (const outlet of device.outlets) {
      if (outlet.state === "unknown") continue;
      out += `pdu_outlet_state${dev},outlet="${outlet.index}"} ${outlet.state === "on" ? 1 : 0}\n`;
    }
  }
  return out;
};

const writeOutletInfo: Writer = (plan, out) => {
  for (const device of plan.devices) {
    const dev = devicePrefix(plan, device.id);
    for (const outlet of device.outlets) {
      out +=
        `pdu_outlet_info${dev},outlet="${outlet.index}",label="${escapeLabel(outlet.label)}",` +
        `name="${escapeLabel(outlet.name)}"} 1\n`;
    }
  }
  return out;
};

const writeDeviceInfo: Writer = (plan, out) => {
  for (const device of plan.devices) {
    out +=
      `pdu_device_info${devicePrefix(plan, device.id)},label="${escapeLabel(device.label)}",` +
      `model="${escapeLabel(device.system.model)}",serial="${escapeLabel(device.system.serialNumber)}"} 1\n`;
  }
  return out;
};

/** A group family's samples: one per statistic of each group's rollup `key` of this type. */
function groupWriter(sample: string, type: string, kind: Kind, key: string): Writer {
  return (plan, out) => {
    for (const group of plan.groups) {
      const m = group.measurements.find((x) => x.key === key && x.type === type);
      if (m === undefined) continue;
      const factor = kind.units[m.units];
      if (factor === undefined) continue;
      const grp = `${sample}{instance="${escapeLabel(plan.instanceId)}",group="${escapeLabel(group.key)}",stat="`;
      for (const stat of STATS) {
        const raw = m[stat];
        const value = raw === null ? null : applyFactor(raw, factor);
        if (value !== null) out += `${grp}${stat}"} ${value}\n`;
      }
    }
    return out;
  };
}

/** A lifetime counter's sample: to a thousandth of a Wh, rounded down (never above a later one). */
const whText = (wh: number): string => String(Math.floor(wh * 1000) / 1000);

/** `pdu_outlet_energy_lifetime_wh_total`: the lifetime counter of each outlet that has one. */
const writeOutletLifetimes: Writer = (plan, out, energy) => {
  for (const device of plan.devices) {
    const dev = `pdu_outlet_energy_lifetime_wh_total${devicePrefix(plan, device.id)},outlet="`;
    for (const outlet of device.outlets) {
      const wh = energy.outletWh(plan.instanceId, device.id, outlet.index);
      if (wh !== null) out += `${dev}${outlet.index}"} ${whText(wh)}\n`;
    }
  }
  return out;
};

const writeEntityLifetimes: Writer = (plan, out, energy) => {
  for (const device of plan.devices) {
    const dev = `pdu_entity_energy_lifetime_wh_total${devicePrefix(plan, device.id)},entity="`;
    for (const entity of device.entities) {
      const wh = energy.entityWh(plan.instanceId, device.id, entity.key);
      if (wh !== null) out += `${dev}${escapeLabel(entity.key)}"} ${whText(wh)}\n`;
    }
  }
  return out;
};

/** How each family's samples are written from one snapshot, in the order of FAMILIES. */
const WRITERS: Writer[] = FAMILIES.map((f, index): Writer => {
  if (index === LIFETIME_OUTLET) return writeOutletLifetimes;
  if (index === LIFETIME_ENTITY) return writeEntityLifetimes;
  if (index === OUTLET_STATE) return writeOutletStates;
  if (index === OUTLET_INFO) return writeOutletInfo;
  if (index === DEVICE_INFO) return writeDeviceInfo;
  for (const [type, kind] of KIND_LIST) {
    if (outletFamily.get(type) === index)
      return (plan, out) => {
        for (const device of plan.devices) {
          const dev = `${f.sample}${devicePrefix(plan, device.id)},outlet="`;
          for (const outlet of device.outlets) {
            const m = outlet.measurements.find((x) => x.type === type);
            const value = m === undefined ? null : scaled(kind, m);
            if (value !== null) out += `${dev}${outlet.index}"} ${value}\n`;
          }
        }
        return out;
      };
    if (entityFamily.get(type) === index)
      return (plan, out) => {
        for (const device of plan.devices) {
          const dev = `${f.sample}${devicePrefix(plan, device.id)},entity="`;
          for (const entity of device.entities) {
            const m = entity.measurements.find((x) => x.type === type);
            const value = m === undefined ? null : scaled(kind, m);
            if (value !== null) out += `${dev}${escapeLabel(entity.key)}"} ${value}\n`;
          }
        }
        return out;
      };
    const total = groupTotalFamily.get(type) === index;
    // Outlet rollups are keyed by their type; PDU-total rollups by `pduTotal` + Type.
    if (total)
      return groupWriter(f.sample, type, kind, `pduTotal${type.charAt(0).toUpperCase()}${type.slice(1)}`);
    if (groupFamily.get(type) === index) return groupWriter(f.sample, type, kind, type);
  }
  throw new Error(`no writer for ${f.sample}`);
});

/** Chunks are handed on at about this many characters, so a scrape never holds the whole text. */
const CHUNK_CHARS = 64 * 1024;

/**
 * The reading families of these snapshots (each the latest good snapshot of an instance whose last
 * poll succeeded, in the order given) in the Prometheus text format or OpenMetrics (without `# EOF`),
 * as chunks of about 64 KB: family by family (each family's samples are one group, as both formats
 * require), so that a scrape of a large fleet holds a chunk at a time rather than the whole text
 * (docs/performance.md, "Metrics scenario").
 */
export function* readingChunks(
  snapshots: readonly Snapshot[],
  format: Format,
  energy: EnergyReader = NO_ENERGY,
): Generator<string> {
  const planned = snapshots.map(metricsPlan);
  let out = "";
  for (const [i, f] of FAMILIES.entries()) {
    const name = format === "openmetrics" ? f.name : f.sample;
    const type = format === "openmetrics" || f.type !== "info" ? f.type : "gauge";
    out += `# HELP ${name} ${f.help}\n# TYPE ${name} ${type}\n`;
    const write = WRITERS[i]!;
    for (const plan of planned) {
      out = write(plan, out, energy);
      if (out.length >= CHUNK_CHARS) {
        yield out;
        out = "";
      }
    }
  }
  if (out !== "") yield out;
}

/** {@link readingChunks} as one string (tests, small fleets). */
export function renderReadings(
  snapshots: readonly Snapshot[],
  format: Format,
  energy: EnergyReader = NO_ENERGY,
): string {
  return [...readingChunks(snapshots, format, energy)].join("");
}
