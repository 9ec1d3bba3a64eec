/**
 * The receiving end of the protocol between replicas (./protocol.ts, docs/cluster.md "REST on any
 * replica"): a control or settings request of an instance this replica holds, carried out by its own
 * control core and answered with the core's outcome; one instance's readings from this replica's
 * snapshots; and what this replica's web console shows of the instances it holds (./console.ts is
 * the asking end). Its own encapsulated context: the API key guard and the control audit of the
 * public routes do not apply; instead every request must carry a replica's signature meant for this
 * replica (./signing.ts: checked in constant time before the body is parsed, within its time window,
 * its nonce never seen before), and the audit line is written here, once, with the user or client
 * the receiving replica authenticated. Every answer is signed for the request it answers.
 *
 * A request is never passed on: an instance this replica does not hold now is answered 503
 * `not-held` (the sending replica passes it to its client, with Retry-After).
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import { auditControl } from "../../control/audit.js";
import { NOT_HELD_RETRY_AFTER, refuse } from "../../control/outcomes.js";
import { SETTINGS_ACTION } from "../../control/settings.js";
import type { ControlOutcome, ControlService, SettingsOutcome } from "../../control/types.js";
import { PROBLEM_CONTENT_TYPE, problem, type Problem } from "../../http/problem.js";
import type { HttpDeps, LocalReadings } from "../../http/types.js";
import { FoldedLog } from "../../log-limit.js";
import { findInstance } from "../../config/instance-lookup.js";
import {
  claimedUser,
  CONSOLE_PATH,
  FORWARD_BODY_LIMIT,
  FORWARD_PATH,
  parseConsoleAsk,
  parseForward,
  parseRead,
  READ_PATH,
  type ConsoleAsk,
  type ForwardMessage,
} from "./protocol.js";
import { NonceCache, REPLICA_HEADERS, signAnswer, verifyRequest, type VerifiedRequest } from "./signing.js";

/** What a replica needs to carry out the requests other replicas hand it. */
export interface ReplicaControl {
  readonly member: string;
  /** `<member>/<incarnation>`: the receiver every request to this replica must name. */
  readonly identity: string;
  /** Whether this replica holds the instance now. */
  holds(instanceId: string): boolean;
  /** This replica's own control core (never the forwarding one: a forward is never forwarded again). */
  readonly local: ControlService;
  /** What its web console shows of the instances it holds, as JSON; null without a console. */
  console(ask: ConsoleAsk): string | null;
}

export interface ReplicaRouteOptions {
  readonly deps: HttpDeps;
  readonly replica: ReplicaControl;
  readonly readings: LocalReadings;
}

/** The answer to a verified request: signed for its nonce. */
function answer(
  reply: FastifyReply,
  secret: string,
  nonce: string,
  status: number,
  body: string,
  type = "application/json",
): FastifyReply {
  return reply
    .code(status)
    .headers({
      "content-type": type,
      "cache-control": "no-store",
      [REPLICA_HEADERS.signature]: signAnswer(secret, nonce, status, body),
    })
    .send(body);
}

const answerProblem = (reply: FastifyReply, secret: string, nonce: string, body: Problem) =>
  answer(reply, secret, nonce, body.status, JSON.stringify(body), PROBLEM_CONTENT_TYPE);

export const replicaRoute: FastifyPluginCallback<ReplicaRouteOptions> = (
  app,
  { deps, replica, readings },
  done,
) => {
  const logger = deps.logger.child({ component: "forward" });
  const secret = deps.config.Cluster.Secret;
  const nonces = new NonceCache();
  // Driven from outside (anyone who reaches the port): folded, one key for every reason.
  const refusals = new FoldedLog(logger);
  app.addHook("onClose", (_app, next) => {
    refusals.close();
    next();
  });
  // The body is signed as it was sent: it is kept as text, checked, and only then parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    { parseAs: "string", bodyLimit: FORWARD_BODY_LIMIT },
    (_request, body, next) => next(null, body),
  );
  /** The verified request, or null once it was refused (401, logged folded). */
  const accept = (request: FastifyRequest, reply: FastifyReply, path: string): VerifiedRequest | null => {
    const body = typeof request.body === "string" ? request.body : "";
    const verified = verifyRequest(
      secret,
      replica.identity,
      { method: "POST", path, body },
      request.headers,
      nonces,
    );
    if (verified.ok) return verified;
    refusals.warn(
      "signature",
      { reason: verified.reason, from: verified.from, client: request.socket.remoteAddress, path },
      "replica: refused a request without a valid replica signature",
    );
    void reply
      .code(401)
      .type(PROBLEM_CONTENT_TYPE)
      .send(
        problem(401, "this path takes only requests from replicas of this installation", "Not a replica"),
      );
    return null;
  };
  const options = { schema: { hide: true }, bodyLimit: FORWARD_BODY_LIMIT } as const;
  app.post(FORWARD_PATH, options, async (request, reply) => {
    const verified = accept(request, reply, FORWARD_PATH);
    if (verified === null) return reply;
    const message = parseForward(typeof request.body === "string" ? request.body : "");
    const bad = (detail: string) => answerProblem(reply, secret, verified.nonce, problem(400, detail));
    if (message === null) return bad("the body is not a forward message of this version");
    if (claimedUser(message.source) !== verified.user)
      return bad("the message's user is not the one signed for");
    const outcome = await carryOut(deps, replica, message);
    if (outcome === null) return bad("a command names an outlet or a group");
    auditForward(deps, message, outcome, verified.from);
    return answer(reply, secret, verified.nonce, 200, JSON.stringify({ outcome }));
  });
  app.post(READ_PATH, options, (request, reply) => {
    const verified = accept(request, reply, READ_PATH);
    return verified === null
      ? reply
      : answerRead(deps, replica, readings, request.body, reply, verified.nonce);
  });
  app.post(CONSOLE_PATH, options, (request, reply) => {
    const verified = accept(request, reply, CONSOLE_PATH);
    if (verified === null) return reply;
    const ask = parseConsoleAsk(typeof request.body === "string" ? request.body : "");
    const body = ask === null ? null : replica.console(ask);
    if (body !== null) return answer(reply, secret, verified.nonce, 200, body);
    const refusal =
      ask === null
        ? problem(400, "the body is not a console ask of this version")
        : problem(503, `this replica (${replica.member}) serves no web console`);
    return answerProblem(reply, secret, verified.nonce, refusal);
  });
  done();
};

/** A verified read: one instance's readings from this replica's snapshots, or why not (signed). */
function answerRead(
  deps: HttpDeps,
  replica: ReplicaControl,
  readings: LocalReadings,
  raw: unknown,
  reply: FastifyReply,
  nonce: string,
): FastifyReply {
  const secret = deps.config.Cluster.Secret;
  const read = parseRead(typeof raw === "string" ? raw : "");
  if (read === null)
    return answerProblem(reply, secret, nonce, problem(400, "the body is not a read of this version"));
  const id = configuredId(deps, read.instanceId);
  if (id === null) {
    return answerProblem(
      reply,
      secret,
      nonce,
      problem(404, `unknown instance ${JSON.stringify(read.instanceId)}`),
    );
  }
  const body = replica.holds(id) ? readings.readingsOf(id) : null;
  if (body === null) {
    const detail = `this replica (${replica.member}) does not hold instance ${id} now; try again shortly`;
    return answerProblem(
      reply,
      secret,
      nonce,
      problem(503, detail, "Instance not held", { retryAfter: NOT_HELD_RETRY_AFTER }),
    );
  }
  return answer(reply, secret, nonce, 200, body.toString("utf8"));
}

/** The configured id of an instance named exactly, else ignoring case; null when none is. */
function configuredId(deps: HttpDeps, requested: string): string | null {
  return findInstance(deps.config.instances, requested)?.id ?? null;
}

/** The audit line of a forward carried out (or refused) here, with the replica it came through. */
function auditForward(
  deps: HttpDeps,
  message: ForwardMessage,
  outcome: ControlOutcome | SettingsOutcome,
  via: string,
): void {
  auditControl(
    { logger: deps.logger, bus: deps.bus },
    {
      source: message.source,
      instanceId: message.instanceId,
      target: message.target,
      action: message.kind === "command" ? message.action : SETTINGS_ACTION,
      status: outcome.status,
      ...(outcome.ok ? {} : { detail: outcome.detail }),
      ...(outcome.ok || outcome.problem === undefined ? {} : { problem: outcome.problem }),
      fromCore: true,
      via,
      ...(message.kind === "command" && message.asset !== undefined ? { asset: message.asset } : {}),
    },
  );
}

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
  const id = configuredId(deps, instanceId);
  if (id !== null && !replica.holds(id)) {
    return refuse(
      503,
      "Instance not held",
      `this replica (${replica.member}) no longer holds instance ${id}: nothing was sent; try again shortly`,
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
      ...(message.once === true ? { once: true } : {}),
      ...(message.asset === undefined ? {} : { asset: message.asset }),
      ...(message.assetCycle === true ? { assetCycle: true } : {}),
    });
  }
  const { local } = replica;
  return local.applySettings === undefined
    ? refuse(503, "Settings unavailable", "settings writes are not available in this process")
    : local.applySettings({ instanceId, target, settings: message.settings, source: message.source });
}
