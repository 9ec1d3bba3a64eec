/** The settings routes: labels, delays and power-on action of outlets; labels of devices, entities, groups. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { ControlContextOptions } from "./command-routes.js";
import { API_ROUTES } from "../paths.js";
import { applySettings } from "./core-calls.js";
import { DeviceParams, EntityParams, GroupParams, OutletParams, settingsSchema } from "./schemas.js";

/** The settings routes: the route, what it does, operation id, path parameters (the target follows from them). */
const SETTINGS_ROUTES = [
  [
    API_ROUTES.outletSettings,
    "Change an outlet's label, delays or power-on action",
    "Any of `label`, `onDelay`, `offDelay`, `rebootDelay`, `poaAction`, written to the PDU in one `set`.",
    "setOutletSettings",
    OutletParams,
  ],
  [API_ROUTES.deviceSettings, "Rename a device", "`label` only.", "setDeviceLabel", DeviceParams],
  [
    API_ROUTES.entitySettings,
    "Rename an entity (a breaker, a phase)",
    "`label` only.",
    "setEntityLabel",
    EntityParams,
  ],
  [
    API_ROUTES.groupSettings,
    "Rename a OneView group",
    "`label` only; written on the master.",
    "setGroupLabel",
    GroupParams,
  ],
] as const;

export const settingsRoutes: FastifyPluginCallbackTypebox<ControlContextOptions> = (
  app,
  { deps, audit },
  done,
) => {
  for (const [route, summary, description, operationId, params] of SETTINGS_ROUTES) {
    app.route({
      ...route,
      schema: { ...settingsSchema(summary, description, operationId), params },
      handler: (request, reply) => applySettings({ deps, audit, request, reply }),
    });
  }
  done();
};
