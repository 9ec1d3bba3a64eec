/**
 * The schemas of the settings routes: labels, delays and power-on action of outlets; labels of
 * devices, entities and groups. The route table (../route-schemas.ts) gives them to the plugin.
 */
import type { TObject } from "typebox";
import { json, SettingsBody } from "../schemas.js";
import { controlResponses, DeviceParams, EntityParams, GroupParams, OutletParams } from "./schemas.js";

/** The schema of a settings route: what it does, its operation id and path parameters (which name the target). */
const settingsSchema = <P extends TObject>(
  summary: string,
  description: string,
  operationId: string,
  params: P,
) => ({
  summary,
  description:
    `${description} Needs \`X-Api-Key\` and an instance with \`ActionsEnabled: true\`; ` +
    "values are never converted (a delay sent as a string is 400) and nothing is written unless all are valid.",
  operationId,
  tags: ["Settings"],
  security: [{ ApiKey: [] }],
  body: SettingsBody,
  response: controlResponses(json("SettingsResult", "Written; the settings as sent"), "Problem"),
  params,
});

/** `PATCH /api/v1/instances/:id/outlets/:deviceId/:index`. */
export const OUTLET_SETTINGS_SCHEMA = settingsSchema(
  "Change an outlet's label, delays or power-on action",
  "Any of `label`, `onDelay`, `offDelay`, `rebootDelay`, `poaAction`, written to the PDU in one `set`.",
  "setOutletSettings",
  OutletParams,
);

/** `PATCH /api/v1/instances/:id/devices/:deviceId`. */
export const DEVICE_SETTINGS_SCHEMA = settingsSchema(
  "Rename a device",
  "`label` only.",
  "setDeviceLabel",
  DeviceParams,
);

/** `PATCH /api/v1/instances/:id/entities/:deviceId/:entityKey`. */
export const ENTITY_SETTINGS_SCHEMA = settingsSchema(
  "Rename an entity (a breaker, a phase)",
  "`label` only.",
  "setEntityLabel",
  EntityParams,
);

/** `PATCH /api/v1/instances/:id/groups/:groupKey`. */
export const GROUP_SETTINGS_SCHEMA = settingsSchema(
  "Rename a OneView group",
  "`label` only; written on the master.",
  "setGroupLabel",
  GroupParams,
);
