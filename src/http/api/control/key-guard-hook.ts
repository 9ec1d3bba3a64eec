/**
 * The key guard of the control routes, their `onRequest` hook. It runs before the body is read, so a
 * request with a wrong key is refused whatever its body; the checks run in the order of
 * docs/http.md: 403 no API key configured → 429 address locked out → 401 key missing or wrong →
 * 415 not application/json (a `DELETE` has no body). A signed-in console user (no X-Api-Key sent; the sign-in plugin has
 * checked the session and the cross-site defence) may control as an operator only.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { consolePrincipal, type ConsolePrincipal } from "../../auth/principal.js";
import { problem, sendProblem, type Problem } from "../../problem.js";
import type { HttpDeps } from "../../types.js";
import { type FailedKeyLimiter, keyMatcher } from "../key-guard.js";
import type { ControlAudit } from "./audit.js";
import { isJson, refusedAction } from "./requests.js";

type Hook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** A refusal of the key guard: its problem and headers. */
interface Refusal {
  readonly body: Problem;
  readonly headers?: Record<string, string>;
}

const NOT_JSON = () => problem(415, 'send the body as JSON with "Content-Type: application/json"');

const DISABLED_DETAIL =
  "control is disabled because no API key is configured; set Api.ApiKey (or SERVICE_API_KEY / " +
  "SERVICE_API_KEY_FILE) to enable the control endpoints";

const lockedOut = (detail: string, seconds: number): Refusal => ({
  body: problem(429, detail),
  headers: { "retry-after": String(seconds) },
});

/** A signed-in console user: 403 for a viewer, 415 for a body not JSON, else null (let through). */
function consoleRefusal(principal: ConsolePrincipal, request: FastifyRequest): Problem | null {
  if (principal.role !== "operator") {
    const detail = `${principal.user.name} is signed in as a viewer: viewers see everything and control nothing; ask for an operator group`;
    return problem(403, detail);
  }
  return jsonOrNoBody(request) ? null : NOT_JSON();
}

/** A body sent as JSON, or a request that has none (`DELETE` of a sequence). */
const jsonOrNoBody = (request: FastifyRequest): boolean =>
  request.method === "DELETE" || isJson(request.headers["content-type"]);

/** The refusal of a key that is missing or wrong, counted against the client's address. */
function wrongKey(limiter: FailedKeyLimiter, client: string, presented: unknown): Refusal {
  if (!limiter.recordFailure(client)) {
    // Every remembered address is locked out: no room to count this one, so refuse it.
    const wait = limiter.fullRetryAfter();
    return lockedOut(
      `too many clients are sending wrong API keys; try again in ${wait} s with the right X-Api-Key`,
      wait,
    );
  }
  const retry = limiter.retryAfter(client);
  if (retry > 0)
    return lockedOut(
      `too many wrong API keys from ${client}; try again in ${retry} s with the right X-Api-Key`,
      retry,
    );
  const detail =
    presented === undefined || presented === ""
      ? "the X-Api-Key header is missing; send the configured API key in X-Api-Key"
      : "the X-Api-Key header does not match the configured API key";
  return { body: problem(401, detail), headers: { "www-authenticate": 'ApiKey header="X-Api-Key"' } };
}

/** The `onRequest` hook of the control context. */
export function keyGuardHook(deps: HttpDeps, limiter: FailedKeyLimiter, audit: ControlAudit): Hook {
  const configuredKey = deps.config.Api.ApiKey;
  const matches = keyMatcher(configuredKey);
  /** Whether the API key lets the request through; null if so, else the refusal. */
  const keyRefusal = (request: FastifyRequest): Refusal | null => {
    if (configuredKey === "") return { body: problem(403, DISABLED_DETAIL) };
    const client = audit.clientOf(request);
    const lockedFor = limiter.retryAfter(client);
    if (lockedFor > 0)
      return lockedOut(
        `too many wrong API keys from ${client}; try again in ${lockedFor} s with the right X-Api-Key`,
        lockedFor,
      );
    const presented = request.headers["x-api-key"];
    if (typeof presented !== "string" || presented === "" || !matches(presented))
      return wrongKey(limiter, client, presented);
    return null;
  };
  /** Sends a refusal once the request's action (for the audit) is known. */
  const refuse = (request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void => {
    void refusedAction(request).then((action) => {
      if (action !== null) audit.refusedWith(request, action);
      sendProblem(reply, refusal.body, refusal.headers);
    });
  };
  return (request, reply, done) => {
    const principal = consolePrincipal(request);
    if (principal !== null) {
      const refusal = consoleRefusal(principal, request);
      if (refusal === null) done();
      else sendProblem(reply, refusal);
      return;
    }
    const refusal = keyRefusal(request);
    if (refusal !== null) return refuse(request, reply, refusal);
    audit.keyMatched(request);
    if (jsonOrNoBody(request)) done();
    else sendProblem(reply, NOT_JSON());
  };
}
