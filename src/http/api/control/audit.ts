/**
 * The audit of the control routes: every request is audited exactly once, never with the key. The
 * outcome of the core is audited by the route; anything refused or failed before (the key guard,
 * parsing, validation, limits) by the `onResponse` hook of the control context.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { auditControl } from "../../../control/audit.js";
import type { ControlOutcome, ControlSource, SettingsOutcome } from "../../../control/types.js";
import { consolePrincipal } from "../../auth/principal.js";
import { problemSentWith } from "../../problem.js";
import type { HttpDeps } from "../../types.js";
import { clientAddressResolver } from "../key-guard.js";
import { actionOf, scopeOf } from "./requests.js";

/** Who sent each request of the control context and what was audited of it. */
export class ControlAudit {
  readonly #deps: HttpDeps;
  readonly #audited = new WeakSet<FastifyRequest>();
  /** The action of a request the key guard refused, read from its body for the audit line. */
  readonly #refused = new WeakMap<FastifyRequest, string>();
  /** Requests whose API key matched (their audit line says `api-key`). */
  readonly #keyed = new WeakSet<FastifyRequest>();
  readonly #resolveClient: ReturnType<typeof clientAddressResolver>;

  constructor(deps: HttpDeps) {
    this.#deps = deps;
    this.#resolveClient = clientAddressResolver(deps.config.Api.TrustedProxies);
  }

  /** The client's address (Api.TrustedProxies applied). */
  clientOf(request: FastifyRequest): string {
    return this.#resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
  }

  /** The request's API key matched. */
  keyMatched(request: FastifyRequest): void {
    this.#keyed.add(request);
  }

  /** The action of a request the key guard refuses, for its audit line. */
  refusedWith(request: FastifyRequest, action: string): void {
    this.#refused.set(request, action);
  }

  /**
   * A signed-in console user (web console sessions), else a machine with the API key; `audited`
   * adds whether the key matched, for the audit line.
   */
  sourceOf(request: FastifyRequest, audited = false): ControlSource {
    const client = this.clientOf(request);
    const principal = consolePrincipal(request);
    if (principal !== null) return { surface: "console", client, user: principal.user };
    const key = audited && this.#keyed.has(request) ? { key: true } : {};
    return { surface: "rest", client, ...key };
  }

  /** One audit line for the request, unless it has one. */
  record(
    request: FastifyRequest,
    status: number,
    action: string | null,
    detail?: string,
    kind?: string,
    fromCore = false,
  ): void {
    if (this.#audited.has(request)) return;
    this.#audited.add(request);
    auditControl(this.#deps, {
      source: this.sourceOf(request, true),
      ...scopeOf(request),
      action,
      status,
      ...(detail === undefined ? {} : { detail }),
      ...(kind === undefined ? {} : { problem: kind }),
      fromCore,
    });
  }

  /**
   * The request was carried out by another replica, which wrote its audit line: none here (every
   * request is audited exactly once across the replicas), an info line naming the holder instead.
   */
  forwarded(request: FastifyRequest, action: string, holder: string, status: number): void {
    this.#audited.add(request);
    this.#deps.logger.info(
      { instance: scopeOf(request).instanceId, action, status, holder },
      "control: carried out by the replica holding the instance (its audit line)",
    );
  }

  /** The request's attempt was audited where it was carried out (asset control, sequences). */
  auditedElsewhere(request: FastifyRequest): void {
    this.#audited.add(request);
  }

  /** The core's outcome of the request. */
  outcome(request: FastifyRequest, action: string, outcome: SettingsOutcome | ControlOutcome): void {
    if (outcome.ok) this.record(request, outcome.status, action, undefined, undefined, true);
    else this.record(request, outcome.status, action, outcome.detail, outcome.problem, true);
  }

  /** The `onResponse` hook: a request refused or failed before its handler is audited here. */
  readonly onResponse = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const action = actionOf(request) ?? this.#refused.get(request) ?? null;
    this.record(request, reply.statusCode, action, problemSentWith(reply)?.detail);
    done();
  };
}
