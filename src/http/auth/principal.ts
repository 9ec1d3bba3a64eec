/**
 * Who a request of the REST API comes from, as the console's sign-in (./plugin.ts) found it: a
 * signed-in console user with a role, or nobody (the API key, when present, speaks for machines).
 * Kept apart from the plugin so that the control routes can ask without loading the OpenID client.
 */
import type { FastifyRequest } from "fastify";
import type { ConsoleUser } from "../../control/types.js";

export type ConsoleRole = "viewer" | "operator";

export interface ConsolePrincipal {
  readonly user: ConsoleUser;
  readonly role: ConsoleRole;
}

const principals = new WeakMap<FastifyRequest, ConsolePrincipal>();

/** Set by the sign-in plugin's request hook for a request that carries a live console session. */
export function setConsolePrincipal(request: FastifyRequest, principal: ConsolePrincipal): void {
  principals.set(request, principal);
}

/**
 * The console user a request acts for: set when it carries a live session and no `X-Api-Key`
 * (a request with the key is a machine's, judged by the key alone). A state-changing request only
 * gets here after the plugin's cross-site check passed. Null without sign-in.
 */
export function consolePrincipal(request: FastifyRequest): ConsolePrincipal | null {
  return principals.get(request) ?? null;
}

const keyReaders = new WeakSet<FastifyRequest>();

/** Set by the sign-in plugin for a read whose `X-Api-Key` it checked (`Api.Oidc.ProtectReads`). */
export function setKeyReader(request: FastifyRequest): void {
  keyReaders.add(request);
}

/**
 * Whether a request is a signed-in console's or a checked key holder's (not anonymous): the
 * console's event streams keep a place for these (src/ui/feed.ts).
 */
export function isSignedIn(request: FastifyRequest): boolean {
  return principals.has(request) || keyReaders.has(request);
}
