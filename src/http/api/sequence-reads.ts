/**
 * `GET /api/v1/sequences/:id`: a sequence's progress, read from its journal (among several replicas
 * any replica answers, from the coordination engine). A read: no API key (Api.Oidc.ProtectReads
 * applies as to every read).
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { sendSequenceAnswer } from "./control/sequence-answers.js";
import { API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

export const sequenceReads: FastifyPluginCallbackTypebox<{ readonly deps: HttpDeps }> = (
  app,
  { deps },
  done,
) => {
  app.route({
    ...API_ROUTES.sequenceGet,
    schema: API_ROUTE_SCHEMAS.sequenceGet,
    handler: async (request, reply) => {
      if (deps.sequences === undefined)
        return sendProblem(reply, problem(404, `no sequence ${request.params.id}: no assets are configured`));
      return sendSequenceAnswer(reply, await deps.sequences.progress(request.params.id));
    },
  });
  done();
};
