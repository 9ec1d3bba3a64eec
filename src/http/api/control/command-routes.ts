/** The command routes: switch, reboot or reset one outlet; switch or reboot a group. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../../types.js";
import { API_ROUTES } from "../paths.js";
import { API_ROUTE_SCHEMAS } from "../route-schemas.js";
import type { ControlAudit } from "./audit.js";
import { execute } from "./core-calls.js";

export interface ControlContextOptions {
  readonly deps: HttpDeps;
  readonly audit: ControlAudit;
}

export const commandRoutes: FastifyPluginCallbackTypebox<ControlContextOptions> = (
  app,
  { deps, audit },
  done,
) => {
  app.route({
    ...API_ROUTES.outletControl,
    schema: API_ROUTE_SCHEMAS.outletControl,
    handler: (request, reply) =>
      execute(
        { deps, audit, request, reply },
        request.params.id,
        // The pattern admits plain decimal only, so Number() reads it exactly.
        { kind: "outlet", deviceId: request.params.deviceId, index: Number(request.params.index) },
        request.body.action,
      ),
  });

  app.route({
    ...API_ROUTES.groupControl,
    schema: API_ROUTE_SCHEMAS.groupControl,
    handler: (request, reply) =>
      execute(
        { deps, audit, request, reply },
        request.params.id,
        { kind: "group", groupKey: request.params.groupKey },
        request.body.action,
      ),
  });
  done();
};
