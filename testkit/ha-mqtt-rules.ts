/**
 * Home Assistant's own rules for MQTT discovery configs of the `number`, `select` and `text`
 * platforms, transcribed by hand (no code copied) from home-assistant/core,
 * homeassistant/components/mqtt/: number.py (`_PLATFORM_SCHEMA_BASE` and `validate_config`, the
 * layout built on `config.MQTT_RW_SCHEMA` and `schemas.MQTT_ENTITY_COMMON_SCHEMA`, HA 2024/2025),
 * select.py (`PLATFORM_SCHEMA_MODERN`; older releases also required two options, checked here too),
 * text.py (commit 9acf305f9a616979c30115de819ffbadcd348748: `valid_text_size_configuration`),
 * config.py (commit a5c8209270205b905bb35a9082c39708b0d5f52f: `MQTT_RW_SCHEMA`) and schemas.py
 * (commit c6ca7f5f416326437e8e652a5623aa5eff7b3d00: `MQTT_ENTITY_COMMON_SCHEMA`).
 *
 * Discovery schemas drop keys they do not know (`extra=vol.REMOVE_EXTRA`), so an unknown key is not
 * an error there but a silently ignored setting: the check reports it so a typo cannot pass.
 * `default_entity_id` is newer than the schemas.py read; it is accepted as a known key.
 */

type Json = Record<string, unknown>;

/** The keys every MQTT entity may carry (MQTT_RW_SCHEMA + MQTT_ENTITY_COMMON_SCHEMA + availability). */
const COMMON_KEYS = [
  "command_topic",
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
  "command_template",
];

const PLATFORM_KEYS: Readonly<Record<string, readonly string[]>> = {
  number: ["device_class", "max", "min", "mode", "payload_reset", "step", "unit_of_measurement"],
  select: ["options"],
  text: ["max", "min", "mode", "pattern"],
};

/** HA's MAX_LENGTH_STATE_STATE: the longest state, so the longest text. */
const MAX_STATE_LENGTH = 255;

const isTopic = (v: unknown): boolean => typeof v === "string" && v !== "" && !/[+#]/.test(v);
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/** Why Home Assistant would refuse (or silently drop part of) a discovery config; [] when it accepts it. */
export function haDiscoveryProblems(component: string, config: Json): string[] {
  const problems: string[] = [];
  const platform = PLATFORM_KEYS[component];
  if (platform === undefined) return [`no rules transcribed for ${component}`];
  for (const key of Object.keys(config)) {
    if (!COMMON_KEYS.includes(key) && !platform.includes(key)) problems.push(`unknown key ${key}`);
  }
  // MQTT_RW_SCHEMA
  if (!isTopic(config.command_topic)) problems.push("command_topic is required and must be a publish topic");
  if (config.state_topic !== undefined && !isTopic(config.state_topic))
    problems.push("state_topic is not a topic");
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
  if (device !== undefined) {
    const ids = device.identifiers;
    const connections = device.connections;
    if (!(Array.isArray(ids) && ids.length > 0) && !(Array.isArray(connections) && connections.length > 0))
      problems.push("device needs identifiers or connections");
  }
  const origin = config.origin as Json | undefined;
  if (origin !== undefined && typeof origin.name !== "string") problems.push("origin needs a name");

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
