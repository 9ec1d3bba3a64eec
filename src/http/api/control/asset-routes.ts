/**
 * The asset control route and the sequence routes that write (start, stop), in the control context
 * (the key guard, the audit of what is refused before a handler). Asset control audits each cord's
 * write itself (with the asset named), so a request it answered is not audited again here.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import type { AssetOutcome } from "../../../control/asset-control.js";
import { problem, PROBLEM_TYPE_PREFIX, sendProblem } from "../../problem.js";
import { API_ROUTES } from "../paths.js";
import { API_ROUTE_SCHEMAS } from "../route-schemas.js";
import type { ControlContextOptions } from "./command-routes.js";
import { sendSequenceAnswer } from "./sequence-answers.js";

/** Retry-After of a 503 when none is given (seconds). */
const DEFAULT_RETRY_AFTER = 5;

/** An asset's outcome as the route answers it: 200 executed, else a problem with each cord's writes. */
export function sendAssetOutcome(reply: FastifyReply, outcome: AssetOutcome): FastifyReply | object {
  const cords = outcome.cords.map((c) => ({
    cord: c.cord,
    instanceId: c.instanceId,
    deviceId: c.deviceId,
    index: c.index,
    result: c.result,
    writes: c.writes.map((w) => ({
      action: w.action,
      result: w.result,
      status: w.status,
      ...(w.detail === undefined ? {} : { detail: w.detail }),
      ...(w.problem === undefined ? {} : { problem: w.problem }),
    })),
  }));
  if (outcome.ok)
    return { ok: true, asset: outcome.asset, action: outcome.action, outcome: "executed", cords };
  const body = problem(outcome.status, outcome.detail, outcome.title, {
    asset: outcome.asset,
    outcome: outcome.outcome,
    cords,
  });
  const typed =
    outcome.problem === undefined ? body : { ...body, type: PROBLEM_TYPE_PREFIX + outcome.problem };
  const headers: Record<string, string> =
    outcome.status === 503
      ? { "retry-after": String(Math.max(1, Math.ceil(outcome.retryAfter ?? DEFAULT_RETRY_AFTER))) }
      : {};
  return sendProblem(reply, typed, headers);
}

export const assetRoutes: FastifyPluginCallbackTypebox<ControlContextOptions> = (
  app,
  { deps, audit },
  done,
) => {
  app.route({
    ...API_ROUTES.assetControl,
    schema: API_ROUTE_SCHEMAS.assetControl,
    handler: async (request, reply) => {
      const control = deps.assetControl;
      const action = request.body.action;
      if (control === undefined) {
        const detail = "asset control is not available in this process: no assets are configured";
        audit.record(request, 503, action, detail);
        return sendProblem(reply, problem(503, detail), { "retry-after": String(DEFAULT_RETRY_AFTER) });
      }
      const outcome = await control.execute({
        assetId: request.params.id,
        action,
        confirm: request.body.confirm === true,
        source: audit.sourceOf(request, true),
      });
      audit.auditedElsewhere(request);
      return sendAssetOutcome(reply, outcome);
    },
  });

  app.route({
    ...API_ROUTES.sequenceStart,
    schema: API_ROUTE_SCHEMAS.sequenceStart,
    handler: async (request, reply) => {
      const sequences = deps.sequences;
      const source = audit.sourceOf(request, true);
      if (sequences === undefined) {
        const detail = "sequences are not available in this process: no assets are configured";
        audit.record(request, 503, request.body.action, detail);
        return sendProblem(reply, problem(503, detail), { "retry-after": String(DEFAULT_RETRY_AFTER) });
      }
      const body = request.body;
      const answer = await sequences.start(
        {
          action: body.action,
          assets: body.assets,
          ...(body.tags === undefined ? {} : { tags: body.tags }),
          dryRun: body.dryRun === true,
        },
        source,
      );
      audit.record(request, answer.status, body.action, answer.ok ? undefined : answer.detail);
      return sendSequenceAnswer(reply, answer);
    },
  });

  app.route({
    ...API_ROUTES.sequenceStop,
    schema: API_ROUTE_SCHEMAS.sequenceStop,
    handler: async (request, reply) => {
      const sequences = deps.sequences;
      if (sequences === undefined) {
        const detail = "sequences are not available in this process: no assets are configured";
        audit.record(request, 503, "stop", detail);
        return sendProblem(reply, problem(503, detail), { "retry-after": String(DEFAULT_RETRY_AFTER) });
      }
      const answer = await sequences.stop(request.params.id, audit.sourceOf(request, true));
      audit.record(request, answer.status, "stop", answer.ok ? undefined : answer.detail);
      return sendSequenceAnswer(reply, answer);
    },
  });
  done();
};
