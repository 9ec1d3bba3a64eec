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
import { commandsFor, offeredOn, type CommandRow } from "../control/commands.js";
import {
  DELAY_MAX,
  LABEL_MAX,
  offeredPoaActions,
  OUTLET_SETTINGS,
  type SettingName,
} from "../control/settings.js";
import { ENERGY_LIFETIME } from "../energy-reader.js";
import { EMPTY_REPORT, measuresLoad } from "../pdu/load.js";
import {
  RAISED_ALARM_STATES,
  type Device,
  type LoadReport,
  type LoadTarget,
  type Snapshot,
  type Vendor,
} from "../pdu/model.js";
import { ALARM_EVENT_TYPES } from "./alarms.js";
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
  /** The model's capability: without it the outlets' reset button (`needs` of its row) is not announced. */
  readonly canResetOutletEnergy: boolean;
  /** The model's capability: without it no power switch nor reboot button is announced. */
  readonly canSwitchOutlets: boolean;
  readonly outlets: readonly {
    readonly index: number;
    readonly label: string;
    readonly name: string;
    readonly measurements: readonly MeasurementShape[];
    /**
     * The settings the PDU reports a value of (the others would have no state in Home Assistant).
     * Not the label of an outlet renamed by an override: its label topic carries the override's Name,
     * not the PDU's label, so a `text` entity would show the Name and saving it unchanged would write
     * the Name to the PDU (which keeps its own label; docs/mqtt.md, Overrides).
     */
    readonly settings: readonly SettingName[];
    /** `Protected` (overrides): the settings a protected outlet refuses are not offered. */
    readonly protected: boolean;
  }[];
  readonly entities: readonly {
    readonly key: string;
    readonly name: string;
    readonly measurements: readonly MeasurementShape[];
  }[];
  /** Outlets and entities with a `load` topic (src/mqtt/alarms.ts), and whether each has a percent. */
  readonly loads: readonly LoadShape[];
}

interface LoadShape {
  readonly outlet: number | null;
  readonly entity: string | null;
  readonly name: string;
  /** A rating and a current to compare with it: the load percent can be known (its sensor is offered). */
  readonly rated: boolean;
}

interface GroupShape {
  readonly key: string;
  readonly name: string;
  /** `Protected`, or a member outlet is: the group commands a protected target refuses are not offered. */
  readonly protected: boolean;
  /** It has member outlets: a group without any refuses every command (nothing to switch). */
  readonly switchable: boolean;
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

export function discoveryShape(
  instanceId: string,
  snapshot: Snapshot,
  guard: TopicIdGuard,
  load: LoadReport = EMPTY_REPORT,
  /** Whether the bridge keeps lifetime energy counters (src/energy/): announced beside each energy reading. */
  lifetime = false,
): DiscoveryShape {
  const loadsOf = (device: Device): LoadShape[] =>
    load.points
      .filter(
        (p) =>
          p.deviceId === device.id &&
          p.hidden !== true &&
          (p.target.kind === "outlet" || guard.ok(instanceId, "entity key", p.target.key)),
      )
      .map((p) => ({
        outlet: p.target.kind === "outlet" ? p.target.index : null,
        entity: p.target.kind === "entity" ? p.target.key : null,
        name: p.name,
        rated: p.rating !== null && measuresLoad(measurementsAt(device, p.target)),
      }));
  // A thing with an energy reading has a lifetime counter too (src/energy/), on the bridge's own topic.
  const measurements = (list: readonly MeasurementShape[]) => {
    const shapes = list
      .filter((m) => m.type !== ENERGY_LIFETIME && guard.ok(instanceId, "measurement type", m.type))
      .map((m) => ({ type: m.type, units: m.units }));
    return lifetime && shapes.some((m) => m.type === "energy") ? [...shapes, LIFETIME_SHAPE] : shapes;
  };
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
      canResetOutletEnergy: d.canResetOutletEnergy,
      canSwitchOutlets: d.canSwitchOutlets,
      outlets: d.outlets.map((o) => ({
        index: o.index,
        // An override's Name names the outlet's Home Assistant device as the PDU's label would.
        label: o.renamed === true ? o.displayName : o.label,
        name: o.displayName,
        measurements: measurements(o.measurements),
        // A protected outlet refuses some settings whatever their value: no entity offers them.
        settings: OUTLET_SETTINGS.filter(
          (row) =>
            row.current(o) !== null &&
            !(row.kind === "label" && o.renamed === true) &&
            !(o.protected === true && row.whenProtected?.refuses === "all"),
        ).map((row) => row.name),
        protected: o.protected === true,
      })),
      entities: d.entities
        .filter((e) => guard.ok(instanceId, "entity key", e.key))
        .map((e) => ({ key: e.key, name: e.displayName, measurements: measurements(e.measurements) })),
      loads: loadsOf(d),
    }));
  // Protected outlets by `<device>/<index>`, for the groups that include one.
  const shielded = new Set<string>();
  if (snapshot.groups.length > 0) {
    for (const d of snapshot.devices)
      for (const o of d.outlets) if (o.protected === true) shielded.add(`${d.id}/${o.index}`);
  }
  const groups = snapshot.groups
    .filter((g) => guard.ok(instanceId, "group key", g.key))
    .map((g) => ({
      key: g.key,
      name: g.displayName,
      protected: g.protected === true || g.members.some((m) => shielded.has(`${m.deviceId}/${m.index}`)),
      switchable: g.members.length > 0,
      measurements: g.measurements
        .filter((m) => guard.ok(instanceId, "group measurement key", m.key))
        .map((m) => ({ key: m.key, type: m.type, units: m.units })),
    }));
  const direct = snapshot.devices.find((d) => d.route === null && devices.some((s) => s.id === d.id));
  const vendor = { manufacturer: snapshot.vendor.manufacturer, groupModel: snapshot.vendor.groupModel };
  return { devices, groups, masterDeviceId: direct?.id ?? devices[0]?.id ?? null, vendor };
}

/** The measurements of the outlet or entity a load point is of ([] when it is not in the device). */
function measurementsAt(device: Device, target: LoadTarget) {
  return (
    (target.kind === "outlet"
      ? device.outlets.find((o) => o.index === target.index)?.measurements
      : device.entities.find((e) => e.key === target.key)?.measurements) ?? []
  );
}

/**
 * Equal signatures: equal discovery. A digest of the shape, not the shape's JSON: the publisher keeps
 * one per instance, and the shape's JSON per PDU adds up across a fleet
 * (docs/performance.md, "Measurements behind the code").
 */
export function discoverySignature(shape: DiscoveryShape): string {
  return createHash("sha256").update(JSON.stringify(shape)).digest("base64");
}

interface SensorClass {
  readonly device_class?: string;
  readonly state_class: "measurement" | "total" | "total_increasing";
  readonly unit?: string;
  /** Which statistic of a OneView group rollup the group's sensor shows. */
  readonly stat: "sum" | "avg";
}

/** By measurement type, lower-cased (types compare case-insensitively). */
const SENSOR_CLASSES: ReadonlyMap<string, SensorClass> = new Map([
  ["realpower", { device_class: "power", state_class: "measurement", unit: "W", stat: "sum" }],
  ["apparentpower", { device_class: "apparent_power", state_class: "measurement", unit: "VA", stat: "sum" }],
  // The PDU's own counter can be reset: `total`, so Home Assistant never reads a reset as a new cycle.
  ["energy", { device_class: "energy", state_class: "total", unit: "kWh", stat: "sum" }],
  // The lifetime counter (src/energy/) never decreases.
  ["energylifetime", { device_class: "energy", state_class: "total_increasing", unit: "kWh", stat: "sum" }],
  ["current", { device_class: "current", state_class: "measurement", unit: "A", stat: "sum" }],
  ["voltage", { device_class: "voltage", state_class: "measurement", unit: "V", stat: "avg" }],
  ["powerfactor", { device_class: "power_factor", state_class: "measurement", unit: "%", stat: "avg" }],
  ["temperature", { device_class: "temperature", state_class: "measurement", unit: "°C", stat: "avg" }],
  ["humidity", { device_class: "humidity", state_class: "measurement", unit: "%", stat: "avg" }],
]);
const OTHER: SensorClass = { state_class: "measurement", stat: "avg" };

export function sensorClass(type: string): SensorClass {
  return SENSOR_CLASSES.get(type.toLowerCase()) ?? OTHER;
}

type Component = "sensor" | "binary_sensor" | "switch" | "button" | "number" | "select" | "text" | "event";
type Json = Record<string, unknown>;

const ORIGIN = { name: "pdu-bridge" };

/** One id level for Home Assistant: kept when it is `[A-Za-z0-9-]+`, else made so plus a hash of the original. */
export function idPart(id: string): string {
  if (/^[A-Za-z0-9-]+$/.test(id)) return id;
  const hash = createHash("sha256").update(id).digest("hex").slice(0, 8);
  return `${id.replace(/[^A-Za-z0-9-]/g, "-")}-${hash}`;
}

/** What every step of one instance's discovery shares. */
interface Builder {
  readonly topics: Topics;
  readonly instanceId: string;
  /** `<parent>_<instance>`: the prefix of every id. */
  readonly nodeId: string;
  readonly expire: Json;
  /** Adds one config; `device` is the Home Assistant device block, already serialised. */
  add(component: Component, parts: readonly string[], device: string, fields: Json): void;
}

/**
 * Discovery of one instance: config topic → JSON payload. `actionsEnabled` adds the switches and
 * buttons of the command table (src/control/commands.ts); without it outlets get a read-only power
 * binary sensor.
 */
export function buildDiscovery(
  options: DiscoveryOptions,
  instanceId: string,
  actionsEnabled: boolean,
  shape: DiscoveryShape,
): Map<string, string> {
  const out = new Map<string, string>();
  const b = builder(options, instanceId, out);
  for (const d of shape.devices) {
    const pdu = deviceBlock(b, d, shape.vendor);
    addDeviceSensors(b, d, pdu);
    addDeviceAlarms(b, d, pdu);
    for (const o of d.outlets) {
      const outlet = outletBlock(b, d, o, shape.vendor);
      if (actionsEnabled) {
        addOutletCommands(b, d, o, outlet);
        addOutletSettings(b, d.id, o, outlet);
      }
      // Without actions, the power as a sensor (with actions, addOutletCommands adds it wherever no
      // switch is offered: a device that cannot switch, a protected outlet).
      if (!actionsEnabled) addOutletPowerSensor(b, d.id, o.index, outlet);
      addOutletSensors(b, d.id, o, outlet);
      const load = d.loads.find((l) => l.outlet === o.index);
      if (load?.rated === true) addLoadSensor(b, d.id, load, outlet);
    }
  }
  for (const g of shape.groups) {
    const group = groupBlock(b, g, shape);
    addGroupSensors(b, g, group);
    if (actionsEnabled) addGroupCommands(b, g, group);
  }
  return out;
}

/** The `node_id` topic level of an instance's discovery configs: `<P>_<instance>`. */
export function discoveryNodeId(parentTopic: string, instanceId: string): string {
  return `${idPart(parentTopic)}_${instanceId}`;
}

/** The shared parts, and `add`, which writes configs into `out`. */
function builder(options: DiscoveryOptions, instanceId: string, out: Map<string, string>): Builder {
  const { topics, prefix } = options;
  const nodeId = discoveryNodeId(topics.parent, instanceId);
  // Parts shared by many configs are serialised once and spliced in (this runs for every entity).
  const tail =
    `,"availability":${JSON.stringify([{ topic: topics.availability(instanceId) }, { topic: topics.instanceStatus(instanceId) }])}` +
    `,"availability_mode":"all","origin":${JSON.stringify(ORIGIN)}}`;
  return {
    topics,
    instanceId,
    nodeId,
    expire: options.expireAfter > 0 ? { expire_after: options.expireAfter } : {},
    add(component, parts, device, fields) {
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
    },
  };
}

/** A measurement's sensor fields (device and state class, unit, expiry). */
function sensorFields(b: Builder, type: string, units: string, stateTopic: string, extra: Json = {}): Json {
  const cls = sensorClass(type);
  const unit = units !== "" ? units : cls.unit;
  return {
    state_topic: stateTopic,
    ...extra,
    ...(cls.device_class === undefined ? {} : { device_class: cls.device_class }),
    state_class: cls.state_class,
    ...(unit === undefined ? {} : { unit_of_measurement: unit }),
    // A lifetime counter is retained and sent when it moves: it stays true while nothing is drawn.
    ...(type === ENERGY_LIFETIME ? {} : b.expire),
  };
}

/** The lifetime counter of a thing with an energy reading, as discovery shows it. */
const LIFETIME_SHAPE: MeasurementShape = Object.freeze({ type: ENERGY_LIFETIME, units: "kWh" });

const deviceIdentifier = (b: Builder, id: string) => `${b.nodeId}_device_${idPart(id)}`;

const manufacturerOf = (d: DeviceShape, vendor: Vendor) =>
  d.oem === "" ? vendor.manufacturer : `${vendor.manufacturer} (${d.oem})`;

/**
 * A Home Assistant device name that says which PDU: the instance id (unique in the configuration)
 * before the PDU's own name, unless that name has it already. PDUs of one model often share their
 * names, and their outlets' labels (`Outlet 1`) always do.
 */
export function pduDeviceName(instanceId: string, name: string): string {
  return name.toLowerCase().includes(instanceId.toLowerCase()) ? name : `${instanceId} ${name}`;
}

/** The Home Assistant device of a PDU device, serialised. */
function deviceBlock(b: Builder, d: DeviceShape, vendor: Vendor): string {
  return JSON.stringify({
    identifiers: [deviceIdentifier(b, d.id)],
    name: pduDeviceName(b.instanceId, d.name),
    manufacturer: manufacturerOf(d, vendor),
    ...nonEmpty({
      model: d.model,
      model_id: d.modelNumber,
      serial_number: d.serialNumber,
      sw_version: d.firmwareVersion,
      hw_version: d.hardwareVersion,
    }),
  });
}

/** A device's alarm, state and entity measurement sensors. */
function addDeviceSensors(b: Builder, d: DeviceShape, pdu: string): void {
  const { topics, instanceId } = b;
  b.add("binary_sensor", ["device", d.id, "alarm"], pdu, {
    name: "Alarm",
    state_topic: topics.deviceAlarm(instanceId, d.id),
    device_class: "problem",
    value_template: ALARM_TEMPLATE,
    ...b.expire,
  });
  b.add("sensor", ["device", d.id, "state"], pdu, {
    name: "State",
    state_topic: topics.deviceState(instanceId, d.id),
    entity_category: "diagnostic",
    ...b.expire,
  });
  for (const e of d.entities) {
    for (const m of e.measurements) {
      b.add("sensor", ["entity", d.id, e.key, m.type], pdu, {
        name: `${e.name} ${humanize(m.type).toLowerCase()}`,
        ...sensorFields(b, m.type, m.units, topics.entityMeasurement(instanceId, d.id, e.key, m.type)),
      });
    }
  }
}

/** A string for a Jinja template: single-quoted, with `\` and `'` escaped. */
const jinjaString = (text: string): string => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

/** ON while a load's state is not normal (the retained `load` topic's `state`). */
const LOAD_PROBLEM_TEMPLATE = "{{ 'ON' if value_json.state != 'normal' else 'OFF' }}";

/**
 * A device's alarms: a `problem` binary sensor that is on while any alarm of the device is active
 * (from the retained `alarms` list), an `event` entity of its alarms raised, changed and cleared
 * (from `events`, which carries every device's: the template passes this device's only), and per
 * phase, breaker or other load entity a `problem` binary sensor and, where rated, a load sensor.
 */
function addDeviceAlarms(b: Builder, d: DeviceShape, pdu: string): void {
  const { topics, instanceId } = b;
  const id = jinjaString(d.id);
  b.add("binary_sensor", ["device", d.id, "problem"], pdu, {
    name: "Problem",
    state_topic: topics.alarms(instanceId),
    device_class: "problem",
    value_template: `{{ 'ON' if value_json | selectattr('deviceId', 'eq', ${id}) | list | count > 0 else 'OFF' }}`,
  });
  b.add("event", ["device", d.id, "alarm-events"], pdu, {
    name: "Alarm events",
    state_topic: topics.events(instanceId),
    event_types: [...ALARM_EVENT_TYPES],
    value_template: `{{ value if value_json.deviceId == ${id} else '' }}`,
  });
  for (const load of d.loads) {
    if (load.entity === null) continue;
    b.add("binary_sensor", ["entity", d.id, load.entity, "load-problem"], pdu, {
      name: `${load.name} problem`,
      state_topic: topics.entityLoad(instanceId, d.id, load.entity),
      device_class: "problem",
      value_template: LOAD_PROBLEM_TEMPLATE,
    });
    if (load.rated) addLoadSensor(b, d.id, load, pdu);
  }
}

/** The load in percent of the rating, as a `%` sensor of the outlet's or the PDU's device. */
function addLoadSensor(b: Builder, deviceId: string, load: LoadShape, device: string): void {
  const { topics, instanceId } = b;
  const outlet = load.outlet;
  const entity = load.entity ?? "";
  b.add(
    "sensor",
    outlet === null
      ? ["entity", deviceId, entity, "load-percent"]
      : ["outlet", deviceId, String(outlet), "load-percent"],
    device,
    {
      name: outlet === null ? `${load.name} load` : "Load",
      state_topic:
        outlet === null
          ? topics.entityLoad(instanceId, deviceId, entity)
          : topics.outletLoad(instanceId, deviceId, outlet),
      value_template: "{{ value_json.percent }}",
      unit_of_measurement: "%",
      state_class: "measurement",
      suggested_display_precision: 0,
    },
  );
}

type OutletShape = DeviceShape["outlets"][number];

/**
 * The Home Assistant device of one outlet (below its PDU device), serialised: named after its PDU's
 * device, then its label (or name), so outlets sort under their PDU and no two PDUs' share a name.
 */
function outletBlock(b: Builder, d: DeviceShape, o: OutletShape, vendor: Vendor): string {
  return JSON.stringify({
    identifiers: [`${b.nodeId}_outlet_${idPart(d.id)}_${String(o.index)}`],
    name: `${pduDeviceName(b.instanceId, d.name)} ${o.label !== "" ? o.label : o.name}`,
    manufacturer: manufacturerOf(d, vendor),
    model: "Outlet",
    via_device: deviceIdentifier(b, d.id),
  });
}

/**
 * Whether a command is offered on a target: the device can carry it out ({@link offeredOn}), and
 * the target is not protected where the command's row says a protected target refuses it (the
 * control core's rule, src/control/checks.ts): a command refused every time is not offered.
 */
function offered(row: CommandRow, device: DeviceShape, isProtected: boolean): boolean {
  return offeredOn(row, device) && !(isProtected && row.refusedWhenProtected);
}

/**
 * The outlet's power switch and one button per button command of the table that the device can
 * carry out and the outlet does not refuse ({@link offered}); a protected outlet, which refuses
 * `off`, gets no switch but its power as a read-only binary sensor. A config that stops being
 * offered is cleared like any config gone.
 */
function addOutletCommands(b: Builder, d: DeviceShape, o: OutletShape, outlet: string): void {
  const { topics, instanceId } = b;
  const deviceId = d.id;
  const index = o.index;
  const rows = commandsFor("outlet").filter((r) => offered(r, d, o.protected));
  const switched = rows.filter((r) => r.outlet?.homeAssistant.entity === "switch");
  const on = switched.find((r) => r.latches === "on")?.outlet?.mqtt;
  const off = switched.find((r) => r.latches === "off")?.outlet?.mqtt;
  if (on !== undefined && off !== undefined && on.level === off.level) {
    b.add("switch", ["outlet", deviceId, String(index), "power"], outlet, {
      name: null,
      state_topic: topics.outletState(instanceId, deviceId, index),
      command_topic: topics.outletCommand(instanceId, deviceId, index, on.level),
      payload_on: on.payload ?? "on",
      payload_off: off.payload ?? "off",
      state_on: "on",
      state_off: "off",
      device_class: "outlet",
      qos: 1,
    });
  } else addOutletPowerSensor(b, deviceId, index, outlet);
  for (const row of rows) {
    const form = row.outlet;
    if (form === null || form.homeAssistant.entity !== "button") continue;
    const ha = form.homeAssistant;
    b.add("button", ["outlet", deviceId, String(index), ha.objectId], outlet, {
      name: ha.name,
      command_topic: topics.outletCommand(instanceId, deviceId, index, form.mqtt.level),
      payload_press: form.mqtt.payload ?? row.name,
      ...ha.fields,
      qos: 1,
    });
  }
}

/**
 * The outlet's settings (src/control/settings.ts) the PDU reports: a `number` per delay, a `select`
 * for the power-on action, a `text` for the label; commands go to `…/<setting>/set`.
 */
function addOutletSettings(b: Builder, deviceId: string, o: OutletShape, outlet: string): void {
  const { topics, instanceId } = b;
  for (const row of OUTLET_SETTINGS) {
    if (!o.settings.includes(row.name)) continue;
    const common = {
      name: row.title,
      state_topic: topics.outletSetting(instanceId, deviceId, o.index, row.name),
      command_topic: topics.outletSettingCommand(instanceId, deviceId, o.index, row.name),
      entity_category: "config",
      qos: 1,
    };
    const parts = ["outlet", deviceId, String(o.index), row.name];
    switch (row.kind) {
      case "delay":
        b.add("number", parts, outlet, {
          ...common,
          min: 0,
          max: DELAY_MAX,
          step: 1,
          mode: "box",
          unit_of_measurement: "s",
          device_class: "duration",
        });
        break;
      case "poaAction":
        b.add("select", parts, outlet, { ...common, options: [...offeredPoaActions(o.protected)] });
        break;
      case "label":
        b.add("text", parts, outlet, { ...common, min: 1, max: LABEL_MAX, mode: "text" });
        break;
    }
  }
}

/** Without control: the outlet's power as a read-only binary sensor. */
function addOutletPowerSensor(b: Builder, deviceId: string, index: number, outlet: string): void {
  b.add("binary_sensor", ["outlet", deviceId, String(index), "power"], outlet, {
    name: null,
    state_topic: b.topics.outletState(b.instanceId, deviceId, index),
    payload_on: "on",
    payload_off: "off",
    device_class: "power",
  });
}

function addOutletSensors(b: Builder, deviceId: string, o: OutletShape, outlet: string): void {
  for (const m of o.measurements) {
    b.add("sensor", ["outlet", deviceId, String(o.index), m.type], outlet, {
      name: humanize(m.type),
      ...sensorFields(
        b,
        m.type,
        m.units,
        b.topics.outletMeasurement(b.instanceId, deviceId, o.index, m.type),
      ),
    });
  }
}

/** The Home Assistant device of a group (below the polled unit's device), serialised. */
function groupBlock(b: Builder, g: GroupShape, shape: DiscoveryShape): string {
  return JSON.stringify({
    identifiers: [`${b.nodeId}_group_${idPart(g.key)}`],
    name: pduDeviceName(b.instanceId, g.name),
    manufacturer: shape.vendor.manufacturer,
    model: shape.vendor.groupModel,
    ...(shape.masterDeviceId === null ? {} : { via_device: deviceIdentifier(b, shape.masterDeviceId) }),
  });
}

/** A group's rollups, each showing the statistic its type calls for (sum or average). */
function addGroupSensors(b: Builder, g: GroupShape, group: string): void {
  for (const m of g.measurements) {
    const stat = sensorClass(m.type).stat;
    b.add("sensor", ["group", g.key, m.key], group, {
      name: humanize(m.key),
      ...sensorFields(b, m.type, m.units, b.topics.groupMeasurement(b.instanceId, g.key, m.key), {
        value_template: `{{ value_json.${stat} }}`,
      }),
    });
  }
}

/**
 * One button per group command of the table that the group does not refuse every time: none for a
 * group without member outlets, `on` only for a protected one (src/control/targets.ts, checks.ts).
 */
function addGroupCommands(b: Builder, g: GroupShape, group: string): void {
  const groupKey = g.key;
  if (!g.switchable) return;
  for (const row of commandsFor("group")) {
    if (g.protected && row.refusedWhenProtected) continue;
    const form = row.group;
    if (form === null || form.homeAssistant.entity !== "button") continue;
    const ha = form.homeAssistant;
    b.add("button", ["group", groupKey, ha.objectId], group, {
      name: ha.name,
      command_topic: b.topics.groupCommand(b.instanceId, groupKey, form.mqtt.level),
      payload_press: form.mqtt.payload ?? row.name,
      ...ha.fields,
      qos: 1,
    });
  }
}

/** `realPower` → `Real power`, `pduTotalRealPower` → `Pdu total real power`. */
export function humanize(type: string): string {
  if (type === ENERGY_LIFETIME) return "Lifetime energy";
  const words = type.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function nonEmpty(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ""));
}
