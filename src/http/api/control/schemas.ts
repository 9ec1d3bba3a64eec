/** The schemas of the control and settings routes: path parameters, bodies and documented answers. */
import Type from "typebox";
import { GROUP_ACTIONS, OUTLET_ACTIONS } from "../../../control/types.js";
import {
  DeviceIdParam,
  EntityKeyParam,
  GroupKeyParam,
  InstanceIdParam,
  OutletIndexParam,
} from "../params.js";
import { INTERNAL_ERROR, json, problemResponse, RetryAfterHeader, SettingsBody } from "../schemas.js";

export const OutletParams = Type.Object({
  id: InstanceIdParam,
  deviceId: DeviceIdParam,
  index: OutletIndexParam,
});

export const GroupParams = Type.Object({ id: InstanceIdParam, groupKey: GroupKeyParam });
export const DeviceParams = Type.Object({ id: InstanceIdParam, deviceId: DeviceIdParam });
export const EntityParams = Type.Object({
  id: InstanceIdParam,
  deviceId: DeviceIdParam,
  entityKey: EntityKeyParam,
});

export const OutletBody = Type.Object(
  { action: Type.Enum([...OUTLET_ACTIONS], { description: "What to do with the outlet" }) },
  { additionalProperties: false, description: "The action" },
);

export const GroupBody = Type.Object(
  { action: Type.Enum([...GROUP_ACTIONS], { description: "What to do with every outlet of the group" }) },
  { additionalProperties: false, description: "The action (resetStats is outlet-only)" },
);

/** The answers of a control or settings route: `success` on 200, `failureSchema` on 502–504. */
export const controlResponses = (success: ReturnType<typeof json>, failureSchema: string) => ({
  200: success,
  400: problemResponse(
    "Body not valid JSON, action missing or not allowed, an extra property, or a bad path parameter",
  ),
  401: problemResponse("X-Api-Key missing or wrong"),
  403: problemResponse("Control is disabled: no API key is configured"),
  404: problemResponse("Unknown instance, device, outlet or group, or a group without outlets"),
  409: problemResponse(
    "The instance has ActionsEnabled: false; off or reboot of a Protected outlet or group (type ending `protected`), or a group action that includes a protected outlet; superseded by a later on/off for the outlet; a reboot of the outlet is running or within its reboot delay",
  ),
  413: problemResponse("Body larger than 64 KiB"),
  415: problemResponse("Body not application/json"),
  429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
  500: INTERNAL_ERROR,
  502: problemResponse(
    "The PDU refused the command or failed; or (type ending `outcome-unknown`) the outcome is not known: check the outlet before retrying",
    undefined,
    failureSchema,
  ),
  503: problemResponse(
    "The instance has not been polled yet, the service is stopping (or control is not available), or the command waited over 30 s behind others for the outlet (expired; not sent)",
    { "Retry-After": RetryAfterHeader },
    failureSchema,
  ),
  504: problemResponse("The PDU did not answer in time", undefined, failureSchema),
});

/** The schema of a settings route (its `params` added by the route). */
export const settingsSchema = (summary: string, description: string, operationId: string) => ({
  summary,
  description:
    `${description} Needs \`X-Api-Key\` and an instance with \`ActionsEnabled: true\`; ` +
    "values are never converted (a delay sent as a string is 400) and nothing is written unless all are valid.",
  operationId,
  tags: ["Settings"],
  security: [{ ApiKey: [] }],
  body: SettingsBody,
  response: controlResponses(json("SettingsResult", "Written; the settings as sent"), "Problem"),
});
