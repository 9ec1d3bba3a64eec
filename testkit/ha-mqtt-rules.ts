/**
 * Home Assistant's own rules for MQTT discovery configs of the `number`, `select` and `text`
 * platforms (read-write), and of the `sensor`, `binary_sensor` and `event` platforms (read-only:
 * `MQTT_RO_SCHEMA`, a required `state_topic`), transcribed by hand (no code copied) from
 * home-assistant/core, homeassistant/components/mqtt/: sensor.py (`_PLATFORM_SCHEMA_BASE` and
 * `validate_sensor_state_and_device_class_config`), binary_sensor.py (`PLATFORM_SCHEMA_MODERN`),
 * event.py (`_PLATFORM_SCHEMA_BASE`), the device and state classes of components/sensor/const.py,
 * binary_sensor/__init__.py and event/__init__.py, and number.py (`_PLATFORM_SCHEMA_BASE` and `validate_config`, the
 * layout built on `config.MQTT_RW_SCHEMA` and `schemas.MQTT_ENTITY_COMMON_SCHEMA`, HA 2024/2025),
 * select.py (`PLATFORM_SCHEMA_MODERN`; older releases also required two options, checked here too),
 * text.py (commit 9acf305f9a616979c30115de819ffbadcd348748: `valid_text_size_configuration`),
 * config.py (commit a5c8209270205b905bb35a9082c39708b0d5f52f: `MQTT_RW_SCHEMA`) and schemas.py
 * (commit c6ca7f5f416326437e8e652a5623aa5eff7b3d00: `MQTT_ENTITY_COMMON_SCHEMA`).
 *
 * Discovery schemas drop keys they do not know (`extra=vol.REMOVE_EXTRA`), so an unknown key is not
 * an error there but a silently ignored setting: the check reports it so a typo cannot pass.
 * `default_entity_id` is newer than the schemas.py read; it is accepted as a known key.
 *
 * The `device` and `origin` blocks are different: their schemas (`MQTT_ENTITY_DEVICE_INFO_SCHEMA`,
 * `MQTT_ORIGIN_INFO_SCHEMA` in schemas.py) take no key they do not know, and a config whose block
 * has one is refused whole. Which device keys a release knows is {@link DEVICE_KEYS_SINCE}; the
 * checks are made for {@link EARLIEST_SUPPORTED_HA} unless told another release, so a key newer
 * than the earliest release docs/mqtt.md supports fails them. The `switch` and `button` platforms
 * are from switch.py and button.py (`PLATFORM_SCHEMA_MODERN`).
 */

type Json = Record<string, unknown>;

/** The keys every MQTT entity may carry (MQTT_RW/RO_SCHEMA + MQTT_ENTITY_COMMON_SCHEMA + availability). */
const COMMON_KEYS = [
  "state_topic",
  "qos",
  "retain",
  "encoding",
  "optimistic",
  "availability",
  "availability_topic",
  "availability_mode",
  "availability_template",
  "payload_available",
  "payload_not_available",
  "device",
  "origin",
  "enabled_by_default",
  "entity_category",
  "icon",
  "json_attributes_topic",
  "json_attributes_template",
  "object_id",
  "default_entity_id",
  "unique_id",
  "name",
  "value_template",
];

/** MQTT_RW_SCHEMA's own keys. */
const RW_KEYS = ["command_topic", "command_template", "optimistic", "retain"];

const PLATFORM_KEYS: Readonly<Record<string, readonly string[]>> = {
  number: [...RW_KEYS, "device_class", "max", "min", "mode", "payload_reset", "step", "unit_of_measurement"],
  select: [...RW_KEYS, "options"],
  text: [...RW_KEYS, "max", "min", "mode", "pattern"],
  sensor: [
    "device_class",
    "expire_after",
    "force_update",
    "last_reset_value_template",
    "options",
    "suggested_display_precision",
    "state_class",
    "unit_of_measurement",
  ],
  binary_sensor: ["device_class", "expire_after", "force_update", "off_delay", "payload_off", "payload_on"],
  event: ["device_class", "event_types"],
  switch: [...RW_KEYS, "device_class", "payload_off", "payload_on", "state_off", "state_on"],
  button: ["command_template", "command_topic", "device_class", "payload_press", "retain"],
};

/** A Home Assistant release, `[year, month]`. */
export type HaRelease = readonly [number, number];

/**
 * The earliest Home Assistant release the bridge's discovery supports (docs/mqtt.md, "Home
 * Assistant versions"): 2024.8, the first whose device schema knows `model_id`.
 */
export const EARLIEST_SUPPORTED_HA: HaRelease = [2024, 8];

/**
 * The keys of the `device` block and the release that first knew each ([0, 0]: every release the
 * rules consider). Abbreviations are the same keys.
 */
const DEVICE_KEYS_SINCE: Readonly<Record<string, HaRelease>> = {
  connections: [0, 0],
  identifiers: [0, 0],
  manufacturer: [0, 0],
  model: [0, 0],
  name: [0, 0],
  sw_version: [0, 0],
  hw_version: [0, 0],
  serial_number: [0, 0],
  suggested_area: [0, 0],
  configuration_url: [0, 0],
  via_device: [0, 0],
  model_id: [2024, 8],
};
const DEVICE_ABBREVIATIONS: Readonly<Record<string, string>> = {
  cns: "connections",
  ids: "identifiers",
  mf: "manufacturer",
  mdl: "model",
  mdl_id: "model_id",
  sw: "sw_version",
  hw: "hw_version",
  sn: "serial_number",
  sa: "suggested_area",
  cu: "configuration_url",
};
const ORIGIN_KEYS = new Set(["name", "sw_version", "support_url", "sw", "url"]);
const SWITCH_DEVICE_CLASSES = new Set(["outlet", "switch"]);
const BUTTON_DEVICE_CLASSES = new Set(["identify", "restart", "update"]);

const atLeast = (release: HaRelease, since: HaRelease): boolean =>
  release[0] > since[0] || (release[0] === since[0] && release[1] >= since[1]);

/** Why Home Assistant `release` would refuse a config for its `device` block; [] when it takes it. */
export function haDeviceProblems(device: Json, release: HaRelease = EARLIEST_SUPPORTED_HA): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(device)) {
    const since = DEVICE_KEYS_SINCE[DEVICE_ABBREVIATIONS[key] ?? key];
    const name = `${release[0]}.${release[1]}`;
    if (since === undefined) problems.push(`device key ${key} is unknown to Home Assistant ${name}`);
    else if (!atLeast(release, since))
      problems.push(
        `device key ${key} is unknown to Home Assistant ${name} (known since ${since.join(".")})`,
      );
  }
  const ids = device.identifiers ?? device.ids;
  const connections = device.connections ?? device.cns;
  if (!(Array.isArray(ids) && ids.length > 0) && !(Array.isArray(connections) && connections.length > 0))
    problems.push("device needs identifiers or connections");
  for (const key of [
    "name",
    "manufacturer",
    "model",
    "model_id",
    "sw_version",
    "hw_version",
    "serial_number",
  ])
    if (device[key] !== undefined && typeof device[key] !== "string")
      problems.push(`device ${key} must be a string`);
  if (device.via_device !== undefined && typeof device.via_device !== "string")
    problems.push("device via_device must be a string");
  return problems;
}

/** Platforms that only read (MQTT_RO_SCHEMA: state_topic required, no command topic). */
const READ_ONLY = new Set(["sensor", "binary_sensor", "event"]);

/** SensorDeviceClass values (components/sensor/const.py). */
const SENSOR_DEVICE_CLASSES = new Set([
  "date",
  "enum",
  "timestamp",
  "apparent_power",
  "aqi",
  "atmospheric_pressure",
  "battery",
  "carbon_monoxide",
  "carbon_dioxide",
  "current",
  "data_rate",
  "data_size",
  "distance",
  "duration",
  "energy",
  "energy_storage",
  "frequency",
  "gas",
  "humidity",
  "illuminance",
  "irradiance",
  "moisture",
  "monetary",
  "nitrogen_dioxide",
  "nitrogen_monoxide",
  "nitrous_oxide",
  "ozone",
  "ph",
  "pm1",
  "pm10",
  "pm25",
  "power_factor",
  "power",
  "precipitation",
  "precipitation_intensity",
  "pressure",
  "reactive_energy",
  "reactive_power",
  "signal_strength",
  "sound_pressure",
  "speed",
  "sulphur_dioxide",
  "temperature",
  "volatile_organic_compounds",
  "volatile_organic_compounds_parts",
  "voltage",
  "volume",
  "volume_storage",
  "water",
  "weight",
  "wind_speed",
]);
const STATE_CLASSES = new Set(["measurement", "total", "total_increasing"]);
/** BinarySensorDeviceClass values (components/binary_sensor/__init__.py). */
const BINARY_SENSOR_DEVICE_CLASSES = new Set([
  "battery",
  "battery_charging",
  "carbon_monoxide",
  "cold",
  "connectivity",
  "door",
  "garage_door",
  "gas",
  "heat",
  "light",
  "lock",
  "moisture",
  "motion",
  "moving",
  "occupancy",
  "opening",
  "plug",
  "power",
  "presence",
  "problem",
  "running",
  "safety",
  "smoke",
  "sound",
  "tamper",
  "update",
  "vibration",
  "window",
]);
/** EventDeviceClass values (components/event/__init__.py). */
const EVENT_DEVICE_CLASSES = new Set(["button", "doorbell", "motion"]);

/** HA's MAX_LENGTH_STATE_STATE: the longest state, so the longest text. */
const MAX_STATE_LENGTH = 255;

/** A value for a message: strings as they are, anything else as JSON. */
const show = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));
/** A value that must be one of `allowed` (absent and null pass). */
const oneOf = (v: unknown, allowed: ReadonlySet<string>): boolean =>
  v === undefined || v === null || (typeof v === "string" && allowed.has(v));
const isTopic = (v: unknown): boolean => typeof v === "string" && v !== "" && !/[+#]/.test(v);
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/**
 * Why Home Assistant (`release`, default the earliest supported) would refuse, or silently drop part
 * of, a discovery config; [] when it accepts it.
 */
export function haDiscoveryProblems(
  component: string,
  config: Json,
  release: HaRelease = EARLIEST_SUPPORTED_HA,
): string[] {
  const problems: string[] = [];
  const platform = PLATFORM_KEYS[component];
  if (platform === undefined) return [`no rules transcribed for ${component}`];
  for (const key of Object.keys(config)) {
    if (!COMMON_KEYS.includes(key) && !platform.includes(key)) problems.push(`unknown key ${key}`);
  }
  if (component === "button") {
    // MQTT_BASE_SCHEMA and a command topic; no state.
    if (!isTopic(config.command_topic))
      problems.push("command_topic is required and must be a publish topic");
    if (config.state_topic !== undefined) problems.push("a button has no state_topic");
  } else if (READ_ONLY.has(component)) {
    // MQTT_RO_SCHEMA
    if (!isTopic(config.state_topic)) problems.push("state_topic is required and must be a topic");
  } else {
    // MQTT_RW_SCHEMA
    if (!isTopic(config.command_topic))
      problems.push("command_topic is required and must be a publish topic");
    if (config.state_topic !== undefined && !isTopic(config.state_topic))
      problems.push("state_topic is not a topic");
  }
  if (config.value_template !== undefined && typeof config.value_template !== "string")
    problems.push("value_template must be a template string");
  if (config.qos !== undefined && ![0, 1, 2].includes(config.qos as number))
    problems.push("qos must be 0, 1 or 2");
  if (config.retain !== undefined && typeof config.retain !== "boolean")
    problems.push("retain must be a boolean");
  // MQTT_ENTITY_COMMON_SCHEMA
  if (
    config.entity_category !== undefined &&
    !["config", "diagnostic"].includes(config.entity_category as string)
  )
    problems.push("entity_category must be config or diagnostic");
  if (config.name !== undefined && config.name !== null && typeof config.name !== "string")
    problems.push("name must be a string or null");
  if (config.unique_id !== undefined && typeof config.unique_id !== "string")
    problems.push("unique_id must be a string");
  if (config.availability !== undefined) {
    if (config.availability_topic !== undefined)
      problems.push("availability and availability_topic are exclusive");
    const list = config.availability;
    if (!Array.isArray(list) || list.some((a) => !isTopic((a as Json | null)?.topic)))
      problems.push("availability must be a list of {topic}");
  }
  if (
    config.availability_mode !== undefined &&
    !["all", "any", "latest"].includes(config.availability_mode as string)
  )
    problems.push("availability_mode must be all, any or latest");
  const device = config.device as Json | undefined;
  if (device !== undefined) problems.push(...haDeviceProblems(device, release));
  const origin = config.origin as Json | undefined;
  if (origin !== undefined) {
    if (typeof origin.name !== "string") problems.push("origin needs a name");
    for (const key of Object.keys(origin))
      if (!ORIGIN_KEYS.has(key)) problems.push(`origin key ${key} is unknown`);
  }

  switch (component) {
    case "number": {
      // min/max default 1 and 100; step at least 0.001; min < max; mode auto, box or slider.
      const min = config.min ?? 1;
      const max = config.max ?? 100;
      if (!isNumber(min) || !isNumber(max)) problems.push("min and max must be numbers");
      else if (min >= max) problems.push("'max' must be > 'min'");
      const step = config.step ?? 1;
      if (!isNumber(step) || step < 1e-3) problems.push("step must be a number of at least 0.001");
      if (config.mode !== undefined && !["auto", "box", "slider"].includes(config.mode as string))
        problems.push("mode must be auto, box or slider");
      if (config.unit_of_measurement !== undefined && typeof config.unit_of_measurement !== "string")
        problems.push("unit_of_measurement must be a string");
      if (
        config.device_class === "duration" &&
        !["d", "h", "min", "s", "ms"].includes(config.unit_of_measurement as string)
      )
        problems.push("a duration needs a unit of d, h, min, s or ms");
      break;
    }
    case "select": {
      const options = config.options;
      if (!Array.isArray(options)) problems.push("options is required and must be a list");
      else {
        if (options.length < 2) problems.push("options must include at least 2 options");
        if (options.some((o) => typeof o !== "string")) problems.push("options must be strings");
      }
      break;
    }
    case "sensor": {
      const deviceClass = config.device_class;
      if (!oneOf(deviceClass, SENSOR_DEVICE_CLASSES))
        problems.push(`unknown sensor device_class ${show(deviceClass)}`);
      const stateClass = config.state_class;
      if (!oneOf(stateClass, STATE_CLASSES)) problems.push(`unknown state_class ${show(stateClass)}`);
      if (config.last_reset_value_template !== undefined && stateClass !== "total")
        problems.push("last_reset_value_template needs state_class total");
      if (config.options !== undefined) {
        if (!Array.isArray(config.options) || config.options.length === 0)
          problems.push("options must be a non-empty list");
        if (stateClass !== undefined || config.unit_of_measurement !== undefined)
          problems.push("options cannot go with state_class or unit_of_measurement");
        if (deviceClass !== "enum") problems.push("options need device_class enum");
      }
      if (config.expire_after !== undefined && !isPositiveInt(config.expire_after))
        problems.push("expire_after must be a non-negative integer");
      if (
        config.suggested_display_precision !== undefined &&
        !isPositiveInt(config.suggested_display_precision)
      )
        problems.push("suggested_display_precision must be a non-negative integer");
      break;
    }
    case "binary_sensor": {
      const deviceClass = config.device_class;
      if (!oneOf(deviceClass, BINARY_SENSOR_DEVICE_CLASSES))
        problems.push(`unknown binary_sensor device_class ${show(deviceClass)}`);
      for (const key of ["payload_on", "payload_off"])
        if (config[key] !== undefined && typeof config[key] !== "string")
          problems.push(`${key} must be a string`);
      for (const key of ["expire_after", "off_delay"])
        if (config[key] !== undefined && !isPositiveInt(config[key]))
          problems.push(`${key} must be a non-negative integer`);
      break;
    }
    case "event": {
      const types = config.event_types;
      if (!Array.isArray(types) || types.some((t) => typeof t !== "string"))
        problems.push("event_types is required and must be a list of strings");
      const deviceClass = config.device_class;
      if (!oneOf(deviceClass, EVENT_DEVICE_CLASSES))
        problems.push(`unknown event device_class ${show(deviceClass)}`);
      break;
    }
    case "switch":
      if (!oneOf(config.device_class, SWITCH_DEVICE_CLASSES))
        problems.push(`unknown switch device_class ${show(config.device_class)}`);
      break;
    case "button":
      if (!oneOf(config.device_class, BUTTON_DEVICE_CLASSES))
        problems.push(`unknown button device_class ${show(config.device_class)}`);
      break;
    case "text": {
      // min default 0, max default 255; both non-negative integers; min <= max <= 255.
      const min = config.min ?? 0;
      const max = config.max ?? MAX_STATE_LENGTH;
      if (!isPositiveInt(min) || !isPositiveInt(max))
        problems.push("min and max must be non-negative integers");
      else {
        if (min > max) problems.push("text length min must be <= max");
        if (max > MAX_STATE_LENGTH) problems.push(`max text length must be <= ${MAX_STATE_LENGTH}`);
      }
      if (config.mode !== undefined && !["text", "password"].includes(config.mode as string))
        problems.push("mode must be text or password");
      break;
    }
  }
  return problems;
}
