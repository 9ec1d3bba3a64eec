/**
 * `GET /api/v1/key`: whether `X-Api-Key` is the configured API key (204), without doing anything.
 * The console checks a key with it before keeping it, so a wrong key is found when it is typed, not
 * at the first switch. The same checks as the control endpoints, in the same order (403 no key
 * configured, 429 locked out, 401 missing or wrong), with the listener's one lock-out: a wrong key
 * here counts as one there.
 */
import type { HttpApp } from "../types.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { API_PATHS, API_ROUTES } from "./paths.js";
import { clientAddressResolver, keyMatcher, type FailedKeyLimiter } from "./key-guard.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

export const KEY_CHECK_PATH = API_PATHS.keyCheck;

export function registerKeyCheck(app: HttpApp, deps: HttpDeps, limiter: FailedKeyLimiter): void {
  const configured = deps.config.Api.ApiKey;
  const matches = keyMatcher(configured);
  const resolveClient = clientAddressResolver(deps.config.Api.TrustedProxies);
  app.route({
    ...API_ROUTES.keyCheck,
    schema: API_ROUTE_SCHEMAS.keyCheck,
    handler: (request, reply) => {
      if (configured === "") {
        const detail =
          "control is disabled because no API key is configured; set Api.ApiKey (or SERVICE_API_KEY / SERVICE_API_KEY_FILE)";
        return sendProblem(reply, problem(403, detail));
      }
      const client = resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
      const locked = limiter.retryAfter(client);
      if (locked > 0) {
        const detail = `too many wrong API keys from ${client}; try again in ${locked} s with the right X-Api-Key`;
        return sendProblem(reply, problem(429, detail), { "retry-after": String(locked) });
      }
      const presented = request.headers["x-api-key"];
      if (typeof presented === "string" && presented !== "" && matches(presented)) {
        return reply.code(204).send(null);
      }
      deps.logger.warn({ client }, "API key check: the key sent is not the configured one");
      if (!limiter.recordFailure(client)) {
        const wait = limiter.fullRetryAfter();
        const detail = `too many clients are sending wrong API keys; try again in ${wait} s with the right X-Api-Key`;
        return sendProblem(reply, problem(429, detail), { "retry-after": String(wait) });
      }
      const detail =
        presented === undefined || presented === ""
          ? "the X-Api-Key header is missing; send the configured API key in X-Api-Key"
          : "the X-Api-Key header does not match the configured API key";
      return sendProblem(reply, problem(401, detail), { "www-authenticate": 'ApiKey header="X-Api-Key"' });
    },
  });
}
