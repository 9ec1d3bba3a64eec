/**
 * The schemas of the control routes (an outlet's and a group's command) and of the key check, and
 * what they share with the settings routes (settings-schemas.ts): path parameters, bodies and
 * documented answers. The route table (../route-schemas.ts) gives them to the plugins.
 */
import Type from "typebox";
import { GROUP_ACTIONS, OUTLET_ACTIONS } from "../../../control/types.js";
import {
  DeviceIdParam,
  EntityKeyParam,
  GroupKeyParam,
  InstanceIdParam,
  OutletIndexParam,
} from "../params.js";
import { INTERNAL_ERROR, json, problemResponse, RetryAfterHeader } from "../schemas.js";

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

/** `POST /api/v1/instances/:id/outlets/:deviceId/:index/control`. */
export const OUTLET_CONTROL_SCHEMA = {
  summary: "Switch, reboot or reset the statistics of one outlet",
  description:
    "Needs `X-Api-Key` and an instance with `ActionsEnabled: true`. `on`/`off` are reported as the " +
    "outlet's state at once (latched until a poll agrees); `reboot` power-cycles; `resetStats` resets energy.",
  operationId: "controlOutlet",
  tags: ["Control"],
  security: [{ ApiKey: [] }],
  params: OutletParams,
  body: OutletBody,
  response: controlResponses(json("OutletControlResult", "Done"), "Problem"),
};

/** `POST /api/v1/instances/:id/groups/:groupKey/control`. */
export const GROUP_CONTROL_SCHEMA = {
  summary: "Switch or reboot every outlet of a OneView group",
  description:
    "Needs `X-Api-Key` and an instance with `ActionsEnabled: true`. A partial failure answers 502 with " +
    "the result of every outlet in `outlets`.",
  operationId: "controlGroup",
  tags: ["Control"],
  security: [{ ApiKey: [] }],
  params: GroupParams,
  body: GroupBody,
  response: controlResponses(json("GroupControlResult", "Done on every member outlet"), "ControlProblem"),
};

/** `GET /api/v1/key`: the same checks as the control routes, without doing anything. */
export const KEY_CHECK_SCHEMA = {
  summary: "Check an API key",
  description:
    "204 when `X-Api-Key` is the configured API key; nothing else happens. A wrong key counts towards " +
    "the lock-out of the control endpoints (429 with Retry-After once an address is locked out).",
  operationId: "checkApiKey",
  tags: ["Control"],
  security: [{ ApiKey: [] }],
  response: {
    204: { description: "The key is the configured one", type: "null" },
    401: problemResponse("X-Api-Key missing or wrong"),
    403: problemResponse("Control is disabled: no API key is configured"),
    429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
    500: INTERNAL_ERROR,
  },
};
