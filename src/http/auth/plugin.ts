/**
 * Signing in to the web console with OpenID Connect (`Api.Oidc`), as one fastify plugin on the REST
 * API's app. It adds:
 *
 * - a request hook that finds who a request comes from (a live console session, unless the request
 *   carries `X-Api-Key`: then the key alone speaks, as for any machine), refuses a state-changing
 *   request made with a session unless it comes from the service's own origin with the session's
 *   CSRF token, sends a browser without a session from the console page to the sign-in, and with
 *   `Api.Oidc.ProtectReads` lets reads through only with a session or the key;
 * - the sign-in routes under `/ui/auth/`: `login` (to the provider, PKCE S256, state and nonce in a
 *   sealed cookie), `callback` (the code exchanged and the ID token checked, the role decided, a new
 *   session), `session` (who is signed in, the CSRF token), `logout` and `signed-out`.
 *
 * The control routes ask {@link consolePrincipal} who may control (operators); the audit line and
 * the metrics name the surface `console` and the user.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import Type from "typebox";
import { CONSOLE_PREFIX } from "../listener.js";
import { clientAddressResolver, type FailedKeyLimiter, keyMatcher } from "../api/key-guard.js";
import { API_PATHS } from "../api/paths.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { cookieNames, CookieSeal, readCookie, setCookie } from "./cookies.js";
import { AUTH_CSS, AUTH_PREFIX, AUTH_STYLESHEET, authPage } from "./pages.js";
import { consolePrincipal, setConsolePrincipal } from "./principal.js";
import { OidcProvider, SignInError } from "./provider.js";
import { claimAt, claimValues, roleOf, userOf } from "./roles.js";
import { type Session, SessionStore } from "./sessions.js";

export const LOGIN_PATH = `${AUTH_PREFIX}/login`;
export const CALLBACK_PATH = `${AUTH_PREFIX}/callback`;
export const SESSION_PATH = `${AUTH_PREFIX}/session`;
export const LOGOUT_PATH = `${AUTH_PREFIX}/logout`;
export const SIGNED_OUT_PATH = `${AUTH_PREFIX}/signed-out`;
const EVENTS_PATH = API_PATHS.events;
const CONSOLE_HOME = `${CONSOLE_PREFIX}/`;
/** How long a sign-in may take at the provider (the sealed cookie's life). */
const SIGN_IN_MS = 600_000;

/** The sign-in in progress, as sealed in its cookie. */
interface Flow {
  /** state, nonce, PKCE verifier, return path, redirect URI, started (epoch ms) */
  readonly s: string;
  readonly n: string;
  readonly v: string;
  readonly r: string;
  readonly u: string;
  readonly t: number;
}

function isFlow(value: unknown): value is Flow {
  if (typeof value !== "object" || value === null) return false;
  const f = value as Record<string, unknown>;
  return ["s", "n", "v", "r", "u"].every((k) => typeof f[k] === "string") && typeof f.t === "number";
}

/**
 * Where to go after signing in: a path of the console (`/ui/...`), else the console's home. Never
 * another origin (`//host`, `https://host`), a backslash trick or a path that leaves `/ui/`.
 */
export function safeReturnPath(value: unknown): string {
  if (typeof value !== "string" || value.length > 2048 || !value.startsWith(CONSOLE_HOME))
    return CONSOLE_HOME;
  if (/[\\\p{Cc}]/u.test(value)) return CONSOLE_HOME;
  const base = "http://return.invalid";
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return CONSOLE_HOME;
  }
  if (
    url.origin !== base ||
    !url.pathname.startsWith(CONSOLE_HOME) ||
    url.pathname.startsWith(`${AUTH_PREFIX}/`)
  )
    return CONSOLE_HOME;
  return `${url.pathname}${url.search}${url.hash}`;
}

/** A Host header that names a host (and port) and nothing else. */
const HOST_PATTERN =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
};

const randomToken = (): string => randomBytes(32).toString("base64url");

export interface ConsoleAuthOptions {
  readonly deps: HttpDeps;
  /** The listener's lock-out of wrong API keys (shared with the control routes). */
  readonly limiter: FailedKeyLimiter;
}

const plugin: FastifyPluginCallbackTypebox<ConsoleAuthOptions> = (app, { deps, limiter }, pluginDone) => {
  const api = deps.config.Api;
  const settings = api.Oidc;
  const now = deps.now ?? Date.now;
  const logger = deps.logger.child({ component: "console-sign-in" });
  const secure = api.PublicUrl !== null ? api.PublicUrl.startsWith("https:") : api.Tls.CertFile !== null;
  const names = cookieNames(secure);
  const seal = new CookieSeal();
  const sessions = new SessionStore({
    idleMs: settings.Sessions.IdleTimeout * 1000,
    absoluteMs: settings.Sessions.AbsoluteTimeout * 1000,
    max: settings.Sessions.Max,
  });
  const provider = new OidcProvider({
    issuer: settings.Issuer ?? "",
    clientId: settings.ClientId,
    clientSecret: settings.ClientSecret,
    caFile: settings.CaFile,
    scopes: settings.Scopes,
  });
  const matchesKey = api.ApiKey === "" ? null : keyMatcher(api.ApiKey);
  const resolveClient = clientAddressResolver(api.TrustedProxies);
  const clientOf = (request: FastifyRequest): string =>
    resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);

  if (!secure) {
    logger.warn(
      "console sessions travel over plain HTTP: set Api.Tls, or serve the API behind a TLS proxy and set Api.PublicUrl to its https URL",
    );
  }
  // Discovered at start so that a wrong issuer shows in the log at once; sign-ins retry it.
  provider.configuration().then(
    () => logger.info({ issuer: settings.Issuer }, "identity provider discovered"),
    (error: unknown) =>
      logger.warn(
        { issuer: settings.Issuer, err: error },
        "identity provider not reachable yet; sign-ins retry",
      ),
  );
  app.addHook("onClose", (_app, closed) => {
    provider.close().then(() => closed(), closed);
  });

  /** How browsers reach this service: Api.PublicUrl, else the request's Host and the listener's scheme. */
  const originOf = (request: FastifyRequest): string | null => {
    if (api.PublicUrl !== null) return api.PublicUrl;
    const host = request.headers.host;
    if (typeof host !== "string" || !HOST_PATTERN.test(host)) return null;
    return `${api.Tls.CertFile !== null ? "https" : "http"}://${host.toLowerCase()}`;
  };

  const page = (reply: FastifyReply, status: number, html: string): FastifyReply =>
    reply.code(status).type("text/html; charset=utf-8").send(html);

  const loginHref = (returnPath: string = CONSOLE_HOME): string =>
    `${LOGIN_PATH}?return=${encodeURIComponent(returnPath)}`;

  /** The cross-site defence of a state-changing request made with a session; a refusal, or null. */
  const crossSiteProblem = (request: FastifyRequest, session: Session): string | null => {
    const origin = request.headers.origin;
    const expected = originOf(request);
    if (typeof origin !== "string" || expected === null || origin.toLowerCase() !== expected) {
      return (
        `cross-site request refused: a change made with a console session must come from the console at ` +
        `${expected ?? "this service"} (Origin: ${typeof origin === "string" ? origin.slice(0, 200) : "missing"}); nothing was done`
      );
    }
    const token = request.headers["x-csrf-token"];
    if (typeof token !== "string" || !sameText(token, session.csrfToken)) {
      return "cross-site request refused: the X-CSRF-Token header is missing or wrong; reload the console and try again";
    }
    return null;
  };

  /** Reads with ProtectReads: the key (with the lock-out) when no session; a refusal was sent, or false. */
  const refuseRead = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const presented = request.headers["x-api-key"];
    if (presented === undefined) {
      const detail =
        "reads need a console session or the X-Api-Key header (Api.Oidc.ProtectReads); sign in at /ui/ or send the API key";
      sendProblem(reply, problem(401, detail), { "www-authenticate": 'ApiKey header="X-Api-Key"' });
      return true;
    }
    const client = clientOf(request);
    const locked = limiter.retryAfter(client);
    if (locked > 0) {
      const detail = `too many wrong API keys from ${client}; try again in ${locked} s with the right X-Api-Key`;
      sendProblem(reply, problem(429, detail), { "retry-after": String(locked) });
      return true;
    }
    if (typeof presented === "string" && presented !== "" && matchesKey?.(presented) === true) return false;
    if (!limiter.recordFailure(client)) {
      const wait = limiter.fullRetryAfter();
      const detail = `too many clients are sending wrong API keys; try again in ${wait} s with the right X-Api-Key`;
      sendProblem(reply, problem(429, detail), { "retry-after": String(wait) });
      return true;
    }
    const retry = limiter.retryAfter(client);
    if (retry > 0) {
      const detail = `too many wrong API keys from ${client}; try again in ${retry} s with the right X-Api-Key`;
      sendProblem(reply, problem(429, detail), { "retry-after": String(retry) });
      return true;
    }
    const detail =
      matchesKey === null
        ? "reads need a console session: no API key is configured (Api.Oidc.ProtectReads)"
        : "the X-Api-Key header does not match the configured API key";
    sendProblem(reply, problem(401, detail), { "www-authenticate": 'ApiKey header="X-Api-Key"' });
    return true;
  };

  // For tests of the bound: how many sessions are kept.
  app.decorate("consoleSessionCount", () => sessions.size);

  app.addHook("onRequest", (request, reply, done) => {
    const url = request.url;
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const read = request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS";
    const keyed = request.headers["x-api-key"] !== undefined;
    const cookieId = readCookie(request.headers.cookie, names.session);
    const session = keyed ? null : sessions.get(cookieId, now());
    if (session !== null && cookieId !== undefined) {
      if (!read) {
        const refused = crossSiteProblem(request, session);
        if (refused !== null) {
          logger.warn(
            { client: clientOf(request), user: session.user.sub, path },
            "cross-site request refused",
          );
          sendProblem(reply, problem(403, refused));
          return;
        }
      }
      setConsolePrincipal(request, { user: session.user, role: session.role });
      // Activity: what the user does, not the page's own checks or its event stream reconnecting.
      if (path !== SESSION_PATH && path !== EVENTS_PATH) sessions.touch(cookieId, session, now());
    } else if (!read && !keyed && cookieId !== undefined && path.startsWith("/api/")) {
      const detail = `the console session has ended (signed out or timed out); sign in again at ${LOGIN_PATH}`;
      sendProblem(reply, problem(401, detail));
      return;
    }
    if (session === null && read && (path === CONSOLE_PREFIX || path === CONSOLE_HOME)) {
      void reply.redirect(loginHref(CONSOLE_HOME), 302);
      return;
    }
    if (
      settings.ProtectReads &&
      session === null &&
      read &&
      path.startsWith("/api/") &&
      refuseRead(request, reply)
    )
      return;
    done();
  });

  app.get(AUTH_STYLESHEET, { schema: { hide: true } }, (_request, reply) =>
    reply.header("cache-control", "public, max-age=86400").type("text/css; charset=utf-8").send(AUTH_CSS),
  );

  app.get(
    LOGIN_PATH,
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          { return: Type.Optional(Type.String({ maxLength: 2048 })) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const origin = originOf(request);
      if (origin === null) {
        const why =
          "the request's Host header is not a host name; set Api.PublicUrl to the address browsers use";
        return page(reply, 400, authPage("Cannot sign in", [why], []));
      }
      const flow: Flow = {
        s: randomToken(),
        n: randomToken(),
        v: randomToken(),
        r: safeReturnPath(request.query.return),
        u: `${origin}${CALLBACK_PATH}`,
        t: now(),
      };
      let target: URL;
      try {
        target = await provider.authorizationUrl({
          redirectUri: flow.u,
          state: flow.s,
          nonce: flow.n,
          codeVerifier: flow.v,
        });
      } catch (error) {
        const message =
          error instanceof SignInError ? error.message : "the identity provider cannot be asked";
        logger.warn({ err: error }, "sign-in could not start");
        return page(
          reply,
          502,
          authPage("Cannot sign in", [message], [{ href: loginHref(flow.r), text: "Try again" }], true),
        );
      }
      return reply
        .header("set-cookie", setCookie(names.signIn, seal.seal(flow), secure, SIGN_IN_MS / 1000))
        .redirect(target.href, 302);
    },
  );

  app.get(
    CALLBACK_PATH,
    {
      schema: {
        hide: true,
        querystring: Type.Object({}, { additionalProperties: Type.String({ maxLength: 4096 }) }),
      },
    },
    async (request, reply) => {
      const clearFlow = setCookie(names.signIn, "", secure, 0);
      const client = clientOf(request);
      const refuse = (status: number, why: string, title = "Sign-in refused") => {
        logger.warn({ client, status, reason: why }, "console sign-in refused");
        reply.header("set-cookie", clearFlow);
        return page(
          reply,
          status,
          authPage(
            title,
            [why, "Nothing was signed in."],
            [{ href: LOGIN_PATH, text: "Sign in again" }],
            true,
          ),
        );
      };
      const opened = seal.open(readCookie(request.headers.cookie, names.signIn) ?? "");
      if (!isFlow(opened) || now() - opened.t > SIGN_IN_MS || now() < opened.t) {
        return refuse(
          400,
          "this sign-in was not started in this browser, was already finished, or took longer than 10 minutes",
        );
      }
      const flow = opened;
      const mark = request.url.indexOf("?");
      const search = mark < 0 ? "" : request.url.slice(mark);
      const params = new URLSearchParams(search);
      const error = params.get("error");
      if (error !== null) {
        const description = params.get("error_description");
        const said = description === null ? "" : `: ${description.slice(0, 300)}`;
        return refuse(403, `the identity provider refused the sign-in (${error.slice(0, 100)}${said})`);
      }
      const state = params.get("state");
      if (state === null || !sameText(state, flow.s)) {
        return refuse(
          400,
          "the sign-in's state does not match the one this browser started (a forged or mixed-up sign-in)",
        );
      }
      let user;
      let role;
      let idToken;
      try {
        const callbackUrl = new URL(flow.u);
        callbackUrl.search = search;
        const result = await provider.exchange(callbackUrl, {
          state: flow.s,
          nonce: flow.n,
          codeVerifier: flow.v,
        });
        user = userOf(result.claims);
        if (user === null) return refuse(400, "the ID token names no usable subject (sub)");
        let claim = claimAt(result.claims, settings.RolesClaim);
        if (claim === undefined)
          claim = claimAt((await provider.userinfo(result.accessToken, user.sub)) ?? {}, settings.RolesClaim);
        role = roleOf(claimValues(claim), settings.Roles);
        idToken = result.idToken;
      } catch (error) {
        if (error instanceof SignInError) return refuse(error.status, error.message);
        throw error;
      }
      // A completed sign-in replaces whatever session the browser had (and never adopts its id).
      sessions.delete(readCookie(request.headers.cookie, names.session));
      const clearSession = setCookie(names.session, "", secure, 0);
      if (role === null) {
        logger.warn(
          { client, user: user.sub, userName: user.name, claim: settings.RolesClaim },
          "console sign-in without a role refused",
        );
        reply.header("set-cookie", [clearFlow, clearSession]);
        const groups = (list: readonly string[]) => (list.length === 0 ? "(none)" : list.join(", "));
        return page(
          reply,
          403,
          authPage(
            "No access to this console",
            [
              `You are signed in as ${user.name} (${user.sub}), but your account has none of the groups or roles that may use this console.`,
              `Viewers need one of ${groups(settings.Roles.Viewer)}; operators one of ${groups(settings.Roles.Operator)} (in the claim ${settings.RolesClaim}). Ask your administrator to add you to one.`,
            ],
            [{ href: LOGIN_PATH, text: "Sign in as someone else" }],
            true,
          ),
        );
      }
      const created = sessions.create({ user, role, idToken }, now());
      if (created.evicted > 0) {
        logger.warn(
          { evicted: created.evicted, max: settings.Sessions.Max },
          "console sessions ended to make room (Api.Oidc.Sessions.Max)",
        );
      }
      logger.info({ client, user: user.sub, userName: user.name, role }, "console sign-in");
      return reply
        .header("set-cookie", [clearFlow, setCookie(names.session, created.id, secure)])
        .redirect(flow.r, 303);
    },
  );

  app.get(SESSION_PATH, { schema: { hide: true } }, (request, reply) => {
    const principal = consolePrincipal(request);
    const session = sessions.get(readCookie(request.headers.cookie, names.session), now());
    if (principal === null || session === null) {
      return sendProblem(reply, problem(401, `not signed in; sign in at ${LOGIN_PATH}`));
    }
    const ends = sessions.endsAt(session);
    return {
      user: { sub: session.user.sub, name: session.user.name },
      role: session.role,
      csrfToken: session.csrfToken,
      idleExpiresUtc: new Date(ends.idle).toISOString(),
      expiresUtc: new Date(ends.absolute).toISOString(),
    };
  });

  app.post(LOGOUT_PATH, { schema: { hide: true } }, (request, reply) => {
    const id = readCookie(request.headers.cookie, names.session);
    const session = sessions.get(id, now());
    sessions.delete(id);
    const origin = originOf(request);
    const location =
      (origin === null
        ? null
        : provider.endSessionUrl(session?.idToken ?? null, `${origin}${SIGNED_OUT_PATH}`)) ?? SIGNED_OUT_PATH;
    if (session !== null)
      logger.info({ client: clientOf(request), user: session.user.sub }, "console sign-out");
    return reply.header("set-cookie", setCookie(names.session, "", secure, 0)).send({ location });
  });

  app.get(SIGNED_OUT_PATH, { schema: { hide: true } }, (_request, reply) =>
    page(
      reply,
      200,
      authPage(
        "Signed out",
        ["You have signed out of the pdu-bridge console."],
        [{ href: LOGIN_PATH, text: "Sign in again" }],
      ),
    ),
  );

  pluginDone();
};

/** The sign-in, registered on the API's root context so that its request hook sees every route. */
export const consoleAuth = fastifyPlugin(plugin, { name: "pdu-bridge-console-auth", fastify: "5.x" });
