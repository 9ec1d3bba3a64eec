/**
 * Home Assistant MQTT discovery: the one place that builds discovery payloads.
 *
 * A snapshot is first reduced to its {@link DiscoveryShape}: exactly the fields discovery depends on
 * (ids, display names, measurement types and units). Payloads are built from the shape alone, so
 * an unchanged shape means unchanged discovery, and the publisher rebuilds only when it changes.
 *
 * Ids (`unique_id`, `object_id`, `default_entity_id`, device identifiers, the topic's node and
 * object ids) come from the parent topic, instance id, device id, outlet index, entity key, group
 * key and measurement type only, never from labels: renaming an outlet renames the Home Assistant
 * device but creates no new entities.
 */
import { createHash } from "node:crypto";
import { RAISED_ALARM_STATES, type Snapshot, type Vendor } from "../pdu/model.js";
import type { TopicIdGuard, Topics } from "./topics.js";

/**
 * The device alarm's Home Assistant template: ON exactly when the parser's `Alarm.raised` is true
 * (the published payload is the PDU's `alarm.state`), from the one list in the model.
 */
export const ALARM_TEMPLATE = `{{ 'ON' if (value | trim | lower) in [${RAISED_ALARM_STATES.map((s) => `'${s}'`).join(", ")}] else 'OFF' }}`;

export interface DiscoveryOptions {
  readonly topics: Topics;
  /** `HomeAssistant.DiscoveryTopic`. */
  readonly prefix: string;
  /** `HomeAssistant.SensorExpireAfterSeconds`; 0: no `expire_after`. */
  readonly expireAfter: number;
}

interface MeasurementShape {
  readonly type: string;
  readonly units: string;
}

interface DeviceShape {
  readonly id: string;
  readonly name: string;
  readonly oem: string;
  readonly model: string;
  readonly modelNumber: string;
  readonly serialNumber: string;
  readonly firmwareVersion: string;
  readonly hardwareVersion: string;
  readonly outlets: readonly {
    readonly index: number;
    readonly label: string;
    readonly name: string;
    readonly measurements: readonly MeasurementShape[];
  }[];
  readonly entities: readonly {
    readonly key: string;
    readonly name: string;
    readonly measurements: readonly MeasurementShape[];
  }[];
}

interface GroupShape {
  readonly key: string;
  readonly name: string;
  readonly measurements: readonly (MeasurementShape & { readonly key: string })[];
}

/** Everything discovery is derived from (and nothing else). Topic-unsafe ids are already left out. */
export interface DiscoveryShape {
  readonly devices: readonly DeviceShape[];
  readonly groups: readonly GroupShape[];
  /** The device OneView groups hang from: the polled unit's own device, else the first. */
  readonly masterDeviceId: string | null;
  /** Manufacturer and group model, from the driver that made the snapshot. */
  readonly vendor: Vendor;
}

export function discoveryShape(instanceId: string, snapshot: Snapshot, guard: TopicIdGuard): DiscoveryShape {
  const measurements = (list: readonly MeasurementShape[]) =>
    list
      .filter((m) => guard.ok(instanceId, "measurement type", m.type))
      .map((m) => ({ type: m.type, units: m.units }));
  const devices = snapshot.devices
    .filter((d) => guard.ok(instanceId, "device id", d.id))
    .map((d): DeviceShape => ({
      id: d.id,
      name: d.displayName,
      oem: d.system.oem,
      model: d.system.model,
      modelNumber: d.system.modelNumber,
      serialNumber: d.system.serialNumber,
      firmwareVersion: d.system.firmwareVersion,
      hardwareVersion: d.system.hardwareVersion,
      outlets: d.outlets.map((o) => ({
        index: o.index,
        label: o.label,
        name: o.displayName,
        measurements: measurements(o.measurements),
      })),
      entities: d.entities
        .filter((e) => guard.ok(instanceId, "entity key", e.key))
        .map((e) => ({ key: e.key, name: e.displayName, measurements: measurements(e.measurements) })),
    }));
  const groups = snapshot.groups
    .filter((g) => guard.ok(instanceId, "group key", g.key))
    .map((g) => ({
      key: g.key,
      name: g.displayName,
      measurements: g.measurements
        .filter((m) => guard.ok(instanceId, "group measurement key", m.key))
        .map((m) => ({ key: m.key, type: m.type, units: m.units })),
    }));
  const direct = snapshot.devices.find((d) => d.route === null && devices.some((s) => s.id === d.id));
  const vendor = { manufacturer: snapshot.vendor.manufacturer, groupModel: snapshot.vendor.groupModel };
  return { devices, groups, masterDeviceId: direct?.id ?? devices[0]?.id ?? null, vendor };
}

/**
 * Equal signatures: equal discovery. A digest of the shape, not the shape's JSON: the publisher keeps
 * one per instance, and at 1000 PDUs the JSON (about 7 KB each) was a sizeable part of the heap.
 */
export function discoverySignature(shape: DiscoveryShape): string {
  return createHash("sha256").update(JSON.stringify(shape)).digest("base64");
}

interface SensorClass {
  readonly device_class?: string;
  readonly state_class: "measurement" | "total_increasing";
  readonly unit?: string;
  /** Which statistic of a OneView group rollup the group's sensor shows. */
  readonly stat: "sum" | "avg";
}

/** By measurement type, lower-cased (types compare case-insensitively). */
const SENSOR_CLASSES: ReadonlyMap<string, SensorClass> = new Map([
  ["realpower", { device_class: "power", state_class: "measurement", unit: "W", stat: "sum" }],
  ["apparentpower", { device_class: "apparent_power", state_class: "measurement", unit: "VA", stat: "sum" }],
  ["energy", { device_class: "energy", state_class: "total_increasing", unit: "kWh", stat: "sum" }],
  ["current", { device_class: "current", state_class: "measurement", unit: "A", stat: "sum" }],
  ["voltage", { device_class: "voltage", state_class: "measurement", unit: "V", stat: "avg" }],
  ["powerfactor", { device_class: "power_factor", state_class: "measurement", unit: "%", stat: "avg" }],
]);
const OTHER: SensorClass = { state_class: "measurement", stat: "avg" };

export function sensorClass(type: string): SensorClass {
  return SENSOR_CLASSES.get(type.toLowerCase()) ?? OTHER;
}

type Component = "sensor" | "binary_sensor" | "switch" | "button";
type Json = Record<string, unknown>;

const ORIGIN = { name: "pdu-bridge" };

/** One id level for Home Assistant: kept when it is `[A-Za-z0-9-]+`, else made so plus a hash of the original. */
export function idPart(id: string): string {
  if (/^[A-Za-z0-9-]+$/.test(id)) return id;
  const hash = createHash("sha256").update(id).digest("hex").slice(0, 8);
  return `${id.replace(/[^A-Za-z0-9-]/g, "-")}-${hash}`;
}

/**
 * Discovery of one instance: config topic → JSON payload. `actionsEnabled` adds the switches and
 * buttons; without it outlets get a read-only power binary sensor.
 */
export function buildDiscovery(
  options: DiscoveryOptions,
  instanceId: string,
  actionsEnabled: boolean,
  shape: DiscoveryShape,
): Map<string, string> {
  const { topics, prefix } = options;
  const nodeId = `${idPart(topics.parent)}_${instanceId}`;
  const expire = options.expireAfter > 0 ? { expire_after: options.expireAfter } : {};
  // Parts shared by many configs are serialised once and spliced in (this runs for every entity).
  const tail =
    `,"availability":${JSON.stringify([{ topic: topics.bridgeStatus() }, { topic: topics.instanceStatus(instanceId) }])}` +
    `,"availability_mode":"all","origin":${JSON.stringify(ORIGIN)}}`;
  const out = new Map<string, string>();

  /** `device` is the Home Assistant device block, already serialised. */
  const add = (component: Component, parts: readonly string[], device: string, fields: Json) => {
    const objectId = parts.map(idPart).join("_");
    const uniqueId = `${nodeId}_${objectId}`;
    const slug = uniqueId.toLowerCase().replace(/[^a-z0-9]+/g, "_");
    const head = JSON.stringify({
      ...fields,
      unique_id: uniqueId,
      object_id: slug,
      default_entity_id: `${component}.${slug}`,
    });
    out.set(
      `${prefix}/${component}/${nodeId}/${objectId}/config`,
      `${head.slice(0, -1)},"device":${device}${tail}`,
    );
  };
  const sensor = (type: string, units: string, stateTopic: string, extra: Json = {}): Json => {
    const cls = sensorClass(type);
    const unit = units !== "" ? units : cls.unit;
    return {
      state_topic: stateTopic,
      ...extra,
      ...(cls.device_class === undefined ? {} : { device_class: cls.device_class }),
      state_class: cls.state_class,
      ...(unit === undefined ? {} : { unit_of_measurement: unit }),
      ...expire,
    };
  };
  const deviceIdentifier = (id: string) => `${nodeId}_device_${idPart(id)}`;

  for (const d of shape.devices) {
    const maker = shape.vendor.manufacturer;
    const manufacturer = d.oem === "" ? maker : `${maker} (${d.oem})`;
    const pdu = JSON.stringify({
      identifiers: [deviceIdentifier(d.id)],
      name: d.name,
      manufacturer,
      ...nonEmpty({
        model: d.model,
        model_id: d.modelNumber,
        serial_number: d.serialNumber,
        sw_version: d.firmwareVersion,
        hw_version: d.hardwareVersion,
      }),
    });
    add("binary_sensor", ["device", d.id, "alarm"], pdu, {
      name: "Alarm",
      state_topic: topics.deviceAlarm(instanceId, d.id),
      device_class: "problem",
      value_template: ALARM_TEMPLATE,
      ...expire,
    });
    add("sensor", ["device", d.id, "state"], pdu, {
      name: "State",
      state_topic: topics.deviceState(instanceId, d.id),
      entity_category: "diagnostic",
      ...expire,
    });
    for (const e of d.entities) {
      for (const m of e.measurements) {
        add("sensor", ["entity", d.id, e.key, m.type], pdu, {
          name: `${e.name} ${humanize(m.type).toLowerCase()}`,
          ...sensor(m.type, m.units, topics.entityMeasurement(instanceId, d.id, e.key, m.type)),
        });
      }
    }
    for (const o of d.outlets) {
      const index = String(o.index);
      const outlet = JSON.stringify({
        identifiers: [`${nodeId}_outlet_${idPart(d.id)}_${index}`],
        name: o.label !== "" ? o.label : `${d.name} ${o.name}`,
        manufacturer,
        model: "Outlet",
        via_device: deviceIdentifier(d.id),
      });
      const state = topics.outletState(instanceId, d.id, o.index);
      if (actionsEnabled) {
        add("switch", ["outlet", d.id, index, "power"], outlet, {
          name: null,
          state_topic: state,
          command_topic: topics.outletCommand(instanceId, d.id, o.index, "set"),
          payload_on: "on",
          payload_off: "off",
          state_on: "on",
          state_off: "off",
          device_class: "outlet",
          qos: 1,
        });
        add("button", ["outlet", d.id, index, "reboot"], outlet, {
          name: "Reboot",
          command_topic: topics.outletCommand(instanceId, d.id, o.index, "reboot"),
          payload_press: "reboot",
          device_class: "restart",
          qos: 1,
        });
        add("button", ["outlet", d.id, index, "reset-stats"], outlet, {
          name: "Reset statistics",
          command_topic: topics.outletCommand(instanceId, d.id, o.index, "resetStats"),
          payload_press: "resetStats",
          entity_category: "config",
          qos: 1,
        });
      } else {
        add("binary_sensor", ["outlet", d.id, index, "power"], outlet, {
          name: null,
          state_topic: state,
          payload_on: "on",
          payload_off: "off",
          device_class: "power",
        });
      }
      for (const m of o.measurements) {
        add("sensor", ["outlet", d.id, index, m.type], outlet, {
          name: humanize(m.type),
          ...sensor(m.type, m.units, topics.outletMeasurement(instanceId, d.id, o.index, m.type)),
        });
      }
    }
  }

  for (const g of shape.groups) {
    const group = JSON.stringify({
      identifiers: [`${nodeId}_group_${idPart(g.key)}`],
      name: g.name,
      manufacturer: shape.vendor.manufacturer,
      model: shape.vendor.groupModel,
      ...(shape.masterDeviceId === null ? {} : { via_device: deviceIdentifier(shape.masterDeviceId) }),
    });
    for (const m of g.measurements) {
      const stat = sensorClass(m.type).stat;
      add("sensor", ["group", g.key, m.key], group, {
        name: humanize(m.key),
        ...sensor(m.type, m.units, topics.groupMeasurement(instanceId, g.key, m.key), {
          value_template: `{{ value_json.${stat} }}`,
        }),
      });
    }
    if (actionsEnabled) {
      const command_topic = topics.groupCommand(instanceId, g.key);
      const buttons = [
        ["on", "All outlets on"],
        ["off", "All outlets off"],
        ["reboot", "Reboot all outlets"],
      ] as const;
      for (const [payload, name] of buttons) {
        add("button", ["group", g.key, payload], group, {
          name,
          command_topic,
          payload_press: payload,
          ...(payload === "reboot" ? { device_class: "restart" } : {}),
          qos: 1,
        });
      }
    }
  }
  return out;
}

/** `realPower` → `Real power`, `pduTotalRealPower` → `Pdu total real power`. */
export function humanize(type: string): string {
  const words = type.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function nonEmpty(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ""));
}
