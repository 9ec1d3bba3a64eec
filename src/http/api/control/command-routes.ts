/** The command routes: switch, reboot or reset one outlet; switch or reboot a group. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../../types.js";
import { API_ROUTES } from "../paths.js";
import { json } from "../schemas.js";
import type { ControlAudit } from "./audit.js";
import { execute } from "./core-calls.js";
import { controlResponses, GroupBody, GroupParams, OutletBody, OutletParams } from "./schemas.js";

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
    schema: {
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
    },
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
    schema: {
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
    },
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
