/**
 * The receiving end of the protocol between replicas (./protocol.ts, docs/cluster.md "REST on any
 * replica"): a control or settings request of an instance this replica holds, carried out by its own
 * control core and answered with the core's outcome. Its own encapsulated context: the API key
 * guard and the control audit of the public routes do not apply; instead the body must carry the
 * installation's signature (checked in constant time before anything else is read), and the audit
 * line is written here, once, with the user or client the receiving replica authenticated.
 *
 * A forwarded request is never forwarded again: an instance this replica does not hold now is
 * answered 503 `not-held` (the sending replica passes it to its client, with Retry-After).
 */
import type { FastifyPluginCallback } from "fastify";
import { auditControl } from "../../control/audit.js";
import { NOT_HELD_RETRY_AFTER, refuse } from "../../control/outcomes.js";
import { SETTINGS_ACTION } from "../../control/settings.js";
import type { ControlOutcome, ControlService, SettingsOutcome } from "../../control/types.js";
import { problem, sendProblem } from "../../http/problem.js";
import type { HttpDeps } from "../../http/types.js";
import {
  FORWARD_BODY_LIMIT,
  FORWARD_FROM_HEADER,
  FORWARD_PATH,
  FORWARD_SIGNATURE_HEADER,
  forwardSigned,
  parseForward,
  type ForwardMessage,
} from "./protocol.js";

/** What a replica needs to carry out the requests other replicas hand it. */
export interface ReplicaControl {
  readonly member: string;
  /** Whether this replica holds the instance now. */
  holds(instanceId: string): boolean;
  /** This replica's own control core (never the forwarding one: a forward is never forwarded again). */
  readonly local: ControlService;
}

export interface ReplicaRouteOptions {
  readonly deps: HttpDeps;
  readonly replica: ReplicaControl;
}

/** A member name as another replica states it, for the logs only (never trusted for anything else). */
function fromOf(value: unknown): string | undefined {
  return typeof value === "string" && /^[a-z0-9.-]{1,63}$/.test(value) ? value : undefined;
}

export const replicaRoute: FastifyPluginCallback<ReplicaRouteOptions> = (app, { deps, replica }, done) => {
  const logger = deps.logger.child({ component: "forward" });
  // The body is signed as it was sent: it is kept as text, checked, and only then parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    { parseAs: "string", bodyLimit: FORWARD_BODY_LIMIT },
    (_request, body, next) => next(null, body),
  );
  app.post(
    FORWARD_PATH,
    { schema: { hide: true }, bodyLimit: FORWARD_BODY_LIMIT },
    async (request, reply) => {
      const from = fromOf(request.headers[FORWARD_FROM_HEADER]);
      const body = typeof request.body === "string" ? request.body : "";
      if (!forwardSigned(deps.config.Api.ApiKey, body, request.headers[FORWARD_SIGNATURE_HEADER])) {
        logger.warn(
          { from, client: request.socket.remoteAddress },
          "forward: refused a request without a valid replica signature",
        );
        return sendProblem(
          reply,
          problem(401, "this path takes only requests from replicas of this installation", "Not a replica"),
        );
      }
      const message = parseForward(body);
      if (message === null) {
        logger.warn({ from }, "forward: refused a signed request that is not a forward message");
        return sendProblem(reply, problem(400, "the body is not a forward message of this version"));
      }
      const outcome = await carryOut(deps, replica, message);
      if (outcome === null) return sendProblem(reply, problem(400, "a command names an outlet or a group"));
      const action = message.kind === "command" ? message.action : SETTINGS_ACTION;
      auditControl(
        { logger: deps.logger, bus: deps.bus },
        {
          source: message.source,
          instanceId: message.instanceId,
          target: message.target,
          action,
          status: outcome.status,
          ...(outcome.ok ? {} : { detail: outcome.detail }),
          ...(outcome.ok || outcome.problem === undefined ? {} : { problem: outcome.problem }),
          fromCore: true,
          ...(from === undefined ? {} : { via: from }),
        },
      );
      return reply.header("cache-control", "no-store").send({ outcome });
    },
  );
  done();
};

/**
 * The message carried out by this replica's own core, or a 503 `not-held` when it does not hold the
 * instance now (never forwarded again); null for a command whose target is not an outlet or a group.
 */
async function carryOut(
  deps: HttpDeps,
  replica: ReplicaControl,
  message: ForwardMessage,
): Promise<ControlOutcome | SettingsOutcome | null> {
  const { instanceId, target } = message;
  const lower = instanceId.toLowerCase();
  const instances = deps.config.instances;
  const instance =
    instances.find((i) => i.id === instanceId) ?? instances.find((i) => i.id.toLowerCase() === lower);
  if (instance !== undefined && !replica.holds(instance.id)) {
    return refuse(
      503,
      "Instance not held",
      `this replica (${replica.member}) no longer holds instance ${instance.id}: nothing was sent; try again shortly`,
      { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
    );
  }
  if (message.kind === "command") {
    if (target.kind !== "outlet" && target.kind !== "group") return null;
    return replica.local.execute({
      instanceId,
      target,
      action: message.action,
      source: message.source,
      commandId: message.commandId,
    });
  }
  const { local } = replica;
  return local.applySettings === undefined
    ? refuse(503, "Settings unavailable", "settings writes are not available in this process")
    : local.applySettings({ instanceId, target, settings: message.settings, source: message.source });
}
