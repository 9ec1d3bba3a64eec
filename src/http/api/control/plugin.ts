/**
 * The control context of the REST API: the command and settings routes, each a fastify plugin,
 * registered inside one encapsulated context whose two hooks apply to them only (never to the read
 * routes or the docs): the key guard (`onRequest`, key-guard-hook.ts) and the audit of what is
 * refused or fails before a handler (`onResponse`, audit.ts). A small JSON body of a request the
 * guard refuses is still read, only to name its action in the audit line. Every request is audited
 * exactly once, never with the key.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../../types.js";
import { FailedKeyLimiter } from "../key-guard.js";
import { assetRoutes } from "./asset-routes.js";
import { ControlAudit } from "./audit.js";
import { commandRoutes } from "./command-routes.js";
import { keyGuardHook } from "./key-guard-hook.js";
import { settingsRoutes } from "./settings-routes.js";

export interface ControlRoutesOptions {
  readonly deps: HttpDeps;
  /** The lock-out of wrong keys, when shared with other key checks of the listener; default its own. */
  readonly limiter?: FailedKeyLimiter;
}

/**
 * Register it as it is (not wrapped in fastify-plugin) so that its hooks stay in its own context.
 */
export const controlRoutes: FastifyPluginAsyncTypebox<ControlRoutesOptions> = async (
  app,
  { deps, limiter = new FailedKeyLimiter(deps.now) },
) => {
  const audit = new ControlAudit(deps);
  app.addHook("onRequest", keyGuardHook(deps, limiter, audit));
  app.addHook("onResponse", audit.onResponse);
  await app.register(commandRoutes, { deps, audit });
  await app.register(settingsRoutes, { deps, audit });
  await app.register(assetRoutes, { deps, audit });
};
