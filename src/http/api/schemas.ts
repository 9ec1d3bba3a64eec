/**
 * The REST API's schemas (typebox): they validate requests, serialise responses (fast-json-stringify)
 * and are the OpenAPI document. Shared ones carry an `$id` and appear under `#/components/schemas`.
 */
import Type, { type Static, type TSchema } from "typebox";
import {
  DELAY_MAX,
  LABEL_MAX,
  OUTLET_SETTINGS,
  POA_ACTIONS,
  type SettingRow,
} from "../../control/settings.js";
import { GROUP_ACTIONS, OUTLET_ACTIONS } from "../../control/types.js";
import { LABEL_FORMAT } from "./params.js";
import { ProblemSchema } from "../problem.js";

const time = (description: string) => Type.String({ format: "date-time", description });
/**
 * `T | null`. A schema with one primitive `type` becomes `type: [T, "null"]` (OpenAPI 3.1 allows it)
 * rather than `anyOf`: fast-json-stringify serialises a type list with `typeof` checks, but an
 * `anyOf` by validating every value against each branch, a large share of /api/v1/health's time
 * (docs/performance.md, "Measurements behind the code").
 */
export const nullable = <T extends TSchema>(schema: T, description: string): TSchema => {
  const { type, ...rest } = schema as TSchema & { type?: unknown };
  return typeof type === "string"
    ? Type.Unsafe<Static<T> | null>({ ...rest, type: [type, "null"], description })
    : Type.Union([schema, Type.Null()], { description });
};

export const InstanceSchema = Type.Object(
  {
    id: Type.String({ description: "Instance id (the key under `Pdus`)" }),
    primary: Type.Boolean({ description: "True for `default`, else the first instance in the file" }),
    host: Type.String({ description: "PDU host name or address" }),
    port: Type.Integer({ description: "PDU port" }),
    scheme: Type.Enum(["http", "https"], { description: "How the PDU is reached" }),
    pollInterval: Type.Number({ description: "Seconds between polls" }),
    actionsEnabled: Type.Boolean({ description: "Whether control of this PDU is allowed" }),
  },
  { $id: "Instance", description: "A configured PDU instance" },
);

export const InstanceHealthSchema = Type.Object(
  {
    id: Type.String({ description: "Instance id" }),
    lastPollUtc: nullable(
      time("When the last poll finished"),
      "When the last poll (success or failure) finished",
    ),
    lastError: nullable(Type.String(), "Message of the last failed poll; null after a success"),
    consecutiveFailures: Type.Integer({ minimum: 0, description: "Failed polls since the last success" }),
  },
  { $id: "InstanceHealth", description: "Poll status of one instance" },
);

export const ApiHealthSchema = Type.Object(
  {
    startedUtc: time("When the service started"),
    uptimeSeconds: Type.Integer({ minimum: 0, description: "Whole seconds since the start" }),
    mqttConnected: Type.Boolean({ description: "Whether the MQTT connection is up" }),
    lastPollUtc: nullable(time("Latest poll"), "The latest `lastPollUtc` of the instances"),
    instances: Type.Array(Type.Ref("InstanceHealth"), { description: "In configuration order" }),
  },
  { $id: "Health", description: "Service health" },
);

export const SnapshotInfoSchema = Type.Object(
  {
    instanceId: Type.String({ description: "Instance id" }),
    timestampUtc: nullable(
      time("Snapshot time"),
      "When the latest snapshot was polled; null before the first poll",
    ),
    ageSeconds: nullable(
      Type.Number({ minimum: 0 }),
      "Age of the latest snapshot in seconds; null before the first poll",
    ),
  },
  { $id: "SnapshotInfo", description: "The latest snapshot of one instance" },
);

export const ReadingSchema = Type.Object(
  {
    instanceId: Type.String(),
    deviceId: Type.String({ description: "The PDU's device id" }),
    device: Type.String({ description: "Display name of the device" }),
    source: Type.String({ description: "Display name of the outlet or entity" }),
    sourceType: Type.Enum(["outlet", "entity"]),
    outletIndex: nullable(Type.Integer({ minimum: 0 }), "0-based outlet index; null for entities"),
    entityKey: nullable(Type.String(), "Entity key (phase0, total0, ...); null for outlets"),
    type: Type.String({ description: "Measurement type as the PDU reports it (realPower, energy, ...)" }),
    value: Type.Number(),
    units: Type.String({ description: "Units as the PDU reports them; may be empty" }),
    state: nullable(
      Type.Enum(["on", "off", "unknown"]),
      "The outlet's state (the commanded state while a switch is latched); null for entities",
    ),
    timestampUtc: time("When the snapshot was polled"),
    hidden: Type.Optional(
      Type.Literal(true, {
        description:
          "Present (true) only when the outlet or entity is hidden by the configuration's overrides: it has no MQTT topics and no Home Assistant entities",
      }),
    ),
  },
  { $id: "Reading", description: "One numeric measurement of an outlet or entity" },
);

export const OutletRefSchema = Type.Object(
  { deviceId: Type.String(), index: Type.Integer({ minimum: 0 }) },
  { $id: "OutletRef", description: "One outlet" },
);

export const OutletControlResultSchema = Type.Object(
  {
    ok: Type.Literal(true),
    instanceId: Type.String(),
    deviceId: Type.String(),
    index: Type.Integer({ minimum: 0 }),
    action: Type.Enum([...OUTLET_ACTIONS]),
  },
  { $id: "OutletControlResult", description: "The outlet action was done" },
);

export const GroupControlResultSchema = Type.Object(
  {
    ok: Type.Literal(true),
    instanceId: Type.String(),
    groupKey: Type.String(),
    action: Type.Enum([...GROUP_ACTIONS]),
    outlets: Type.Array(Type.Ref("OutletRef"), { description: "Every member outlet acted on" }),
  },
  { $id: "GroupControlResult", description: "The group action was done on every member outlet" },
);

export const OutletResultSchema = Type.Object(
  {
    deviceId: Type.String(),
    index: Type.Integer({ minimum: 0 }),
    ok: Type.Boolean(),
    error: Type.Optional(Type.String({ description: "Why this outlet failed" })),
  },
  { $id: "OutletResult", description: "Result of a group action on one outlet" },
);

export const ControlProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    outlets: Type.Optional(
      Type.Array(Type.Ref("OutletResult"), {
        description: "Per-outlet results of a partially failed group action",
      }),
    ),
  },
  { $id: "ControlProblem", description: "RFC 9457 problem details of a failed control request" },
);

/** One setting's schema, from its row of the settings table (the one rule; nothing is converted). */
function settingSchema(row: SettingRow): TSchema {
  const description = row.description;
  switch (row.kind) {
    case "label":
      return Type.String({ minLength: 1, maxLength: LABEL_MAX, format: LABEL_FORMAT, description });
    case "delay":
      return Type.Integer({ minimum: 0, maximum: DELAY_MAX, description });
    case "poaAction":
      return Type.Enum([...POA_ACTIONS], { description });
  }
}

const SETTINGS_PROPERTIES = Object.fromEntries(
  OUTLET_SETTINGS.map((row) => [row.name, Type.Optional(settingSchema(row))]),
);
const SETTINGS_OPTIONS = {
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the outlet's settings (a device, an entity or a group: `label` only)",
};

/** The body of a settings write (docs/http.md, "Settings endpoints"), built from the settings table. */
export const SettingsBody = Type.Object(SETTINGS_PROPERTIES, SETTINGS_OPTIONS);
/** The same, shared in the OpenAPI document (the 200 answer echoes it). */
export const SettingsSchema = Type.Object(SETTINGS_PROPERTIES, { ...SETTINGS_OPTIONS, $id: "Settings" });

export const SettingsResultSchema = Type.Object(
  {
    ok: Type.Literal(true),
    instanceId: Type.String(),
    deviceId: Type.Optional(Type.String()),
    index: Type.Optional(Type.Integer({ minimum: 0 })),
    entityKey: Type.Optional(Type.String()),
    groupKey: Type.Optional(Type.String()),
    settings: Type.Ref("Settings"),
  },
  { $id: "SettingsResult", description: "The settings written, and where" },
);

export const AlarmSchema = Type.Object(
  {
    instanceId: Type.String({
      description:
        "Instance id; `$assets` for an asset's redundancy, `$feeds` for a feed's loss (alarms about several PDUs)",
    }),
    id: Type.String({
      description:
        "Unique within the instance while the alarm lasts: `<deviceId>/<where>/<source>`; `<assetId>/asset/redundancy`; `<feed>/<instance>/<deviceId>/entity/<key>/feed-loss`",
    }),
    deviceId: Type.String({ description: "The PDU's device id; the asset's id under `$assets`" }),
    target: Type.Union(
      [
        Type.Object(
          {
            kind: Type.Literal("outlet"),
            index: Type.Integer({ minimum: 0, description: "0-based outlet index" }),
          },
          { additionalProperties: false },
        ),
        Type.Object(
          {
            kind: Type.Literal("entity"),
            key: Type.String({ description: "Entity key (phase0, breaker1, ...)" }),
          },
          { additionalProperties: false },
        ),
        Type.Object({ kind: Type.Literal("device") }, { additionalProperties: false }),
      ],
      { description: "Where the alarm is: an outlet, an entity or the device itself" },
    ),
    name: Type.String({ description: "Display name of the outlet, entity or device" }),
    source: Type.Enum(["load", "tripped", "breaker-trip-suspected", "pdu", "redundancy", "feed-loss"], {
      description:
        "load: a current against its rating, or a load state the PDU reports; tripped: a breaker or fuse the PDU reports open; breaker-trip-suspected: a breaker or bank the PDU reports nothing about fell to 0 A under outlets that are on; pdu: another alarm the PDU reports; redundancy: an asset lost a cord; feed-loss: a feed's loss would overload the entity",
    }),
    severity: Type.Enum(["warning", "critical"], { description: "How bad" }),
    percent: nullable(Type.Integer(), "The load in whole percent of the rating; null without a rating"),
    reported: nullable(
      Type.String(),
      "The state the PDU reports (nearOverload, tripped, alarm, ...); null when only the rating raised it",
    ),
    sinceUtc: time("When the alarm was raised"),
    stale: Type.Boolean({
      description: "The instance's last poll failed: the alarm is from its last good snapshot",
    }),
    hidden: Type.Optional(Type.Literal(true, { description: "Present when the overrides hide the thing" })),
    feed: Type.Optional(Type.String({ description: "feed-loss: the feed whose loss is projected" })),
    entityInstanceId: Type.Optional(Type.String({ description: "feed-loss: the instance of the entity" })),
  },
  { $id: "Alarm", description: "An active alarm" },
);

/** Every shared schema, in dependency order (for `addSchema`). */
export const SHARED_SCHEMAS = [
  ProblemSchema,
  InstanceSchema,
  InstanceHealthSchema,
  ApiHealthSchema,
  SnapshotInfoSchema,
  ReadingSchema,
  OutletRefSchema,
  OutletControlResultSchema,
  GroupControlResultSchema,
  OutletResultSchema,
  ControlProblemSchema,
  SettingsSchema,
  SettingsResultSchema,
  AlarmSchema,
] as const;

/** A response of one status: JSON described by a shared schema (by `$id`). */
export const json = (id: string, description: string) => ({
  description,
  content: { "application/json": { schema: Type.Ref(id) } },
});

export const jsonArray = (id: string, description: string) => ({
  description,
  content: { "application/json": { schema: Type.Array(Type.Ref(id)) } },
});

/** A problem response, optionally with headers (Retry-After, ...). */
export const problemResponse = (
  description: string,
  headers?: Record<string, TSchema>,
  schemaId = "Problem",
) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/problem+json": { schema: Type.Ref(schemaId) } },
});

export const RetryAfterHeader = Type.Integer({
  minimum: 1,
  description: "Seconds to wait before trying again",
});

export const INTERNAL_ERROR = problemResponse("The service failed; the error is logged");
