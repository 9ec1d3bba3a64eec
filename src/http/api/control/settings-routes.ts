/** The settings routes: labels, delays and power-on action of outlets; labels of devices, entities, groups. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { ControlContextOptions } from "./command-routes.js";
import { API_ROUTES } from "../paths.js";
import { API_ROUTE_SCHEMAS } from "../route-schemas.js";
import { applySettings } from "./core-calls.js";

/** The settings routes by name; each one's path parameters name its target. */
const SETTINGS_ROUTES = ["outletSettings", "deviceSettings", "entitySettings", "groupSettings"] as const;

export const settingsRoutes: FastifyPluginCallbackTypebox<ControlContextOptions> = (
  app,
  { deps, audit },
  done,
) => {
  for (const name of SETTINGS_ROUTES) {
    app.route({
      ...API_ROUTES[name],
      schema: API_ROUTE_SCHEMAS[name],
      handler: (request, reply) => applySettings({ deps, audit, request, reply }),
    });
  }
  done();
};
