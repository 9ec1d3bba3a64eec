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
import { CONSOLE_PREFIX, routedPath } from "../listener.js";
import { clientAddressResolver, type FailedKeyLimiter, keyMatcher } from "../api/key-guard.js";
import { API_PATHS } from "../api/paths.js";
import { problem, sendProblem } from "../problem.js";
import { ConfigError } from "../../config/errors.js";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { cookieNames, CookieSeal, readCookie, setCookie } from "./cookies.js";
import { AUTH_CSS, AUTH_PREFIX, AUTH_STYLESHEET, authPage } from "./pages.js";
import { consolePrincipal, setConsolePrincipal, setKeyReader } from "./principal.js";
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

/** Builds a page of the sign-in. */
const page = (reply: FastifyReply, status: number, html: string): FastifyReply =>
  reply.code(status).type("text/html; charset=utf-8").send(html);

const loginHref = (returnPath: string = CONSOLE_HOME): string =>
  `${LOGIN_PATH}?return=${encodeURIComponent(returnPath)}`;

const UNAUTHORIZED = { "www-authenticate": 'ApiKey header="X-Api-Key"' };

/** The sign-in's state (sessions, the provider, the sealed cookies) and its hook and handlers. */
class ConsoleSignIn {
  readonly api: Config["Api"];
  readonly settings: Config["Api"]["Oidc"];
  readonly now: () => number;
  readonly logger: Logger;
  /**
   * How browsers reach this service: `Api.PublicUrl` (required with sign-in) as written, for the
   * redirect URIs. They and the origin check use it, never a request's Host header, which a client
   * writes as it likes.
   */
  readonly origin: string;
  /** {@link origin} as a browser's `Origin` header serialises it (lower case, no default port). */
  readonly #browserOrigin: string;
  /** The session cookie is `Secure` (HTTPS, directly or behind a proxy). */
  readonly secure: boolean;
  readonly names: ReturnType<typeof cookieNames>;
  readonly seal = new CookieSeal();
  readonly sessions: SessionStore;
  readonly provider: OidcProvider;
  readonly #limiter: FailedKeyLimiter;
  readonly #matchesKey: ((key: string) => boolean) | null;
  readonly #resolveClient: ReturnType<typeof clientAddressResolver>;

  constructor({ deps, limiter }: ConsoleAuthOptions) {
    this.api = deps.config.Api;
    this.settings = this.api.Oidc;
    this.now = deps.now ?? Date.now;
    this.logger = deps.logger.child({ component: "console-sign-in" });
    const api = this.api;
    if (api.PublicUrl === null)
      throw new ConfigError("Api.PublicUrl", "is required when Api.Oidc.Enabled is true");
    this.origin = api.PublicUrl;
    this.#browserOrigin = new URL(api.PublicUrl).origin;
    this.secure = this.#browserOrigin.startsWith("https:");
    this.names = cookieNames(this.secure);
    const settings = this.settings;
    this.sessions = new SessionStore({
      idleMs: settings.Sessions.IdleTimeout * 1000,
      absoluteMs: settings.Sessions.AbsoluteTimeout * 1000,
      max: settings.Sessions.Max,
    });
    this.provider = new OidcProvider({
      issuer: settings.Issuer ?? "",
      clientId: settings.ClientId,
      clientSecret: settings.ClientSecret,
      caFile: settings.CaFile,
      scopes: settings.Scopes,
    });
    this.#limiter = limiter;
    this.#matchesKey = api.ApiKey === "" ? null : keyMatcher(api.ApiKey);
    this.#resolveClient = clientAddressResolver(api.TrustedProxies);
  }

  clientOf(request: FastifyRequest): string {
    return this.#resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
  }

  /** The cross-site defence of a state-changing request made with a session; a refusal, or null. */
  crossSiteProblem(request: FastifyRequest, session: Session): string | null {
    const origin = request.headers.origin;
    const expected = this.#browserOrigin;
    if (typeof origin !== "string" || origin.toLowerCase() !== expected) {
      return (
        `cross-site request refused: a change made with a console session must come from the console at ` +
        `${expected} (Origin: ${typeof origin === "string" ? origin.slice(0, 200) : "missing"}); nothing was done`
      );
    }
    const token = request.headers["x-csrf-token"];
    if (typeof token !== "string" || !sameText(token, session.csrfToken)) {
      return "cross-site request refused: the X-CSRF-Token header is missing or wrong; reload the console and try again";
    }
    return null;
  }

  /** Reads with ProtectReads: the key (with the lock-out) when no session; a refusal was sent, or false. */
  refuseRead(request: FastifyRequest, reply: FastifyReply): boolean {
    const presented = request.headers["x-api-key"];
    if (presented === undefined) {
      const detail =
        "reads need a console session or the X-Api-Key header (Api.Oidc.ProtectReads); sign in at /ui/ or send the API key";
      sendProblem(reply, problem(401, detail), UNAUTHORIZED);
      return true;
    }
    const limiter = this.#limiter;
    const client = this.clientOf(request);
    const locked = limiter.retryAfter(client);
    if (locked > 0) {
      const detail = `too many wrong API keys from ${client}; try again in ${locked} s with the right X-Api-Key`;
      sendProblem(reply, problem(429, detail), { "retry-after": String(locked) });
      return true;
    }
    if (typeof presented === "string" && presented !== "" && this.#matchesKey?.(presented) === true) {
      setKeyReader(request);
      return false;
    }
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
      this.#matchesKey === null
        ? "reads need a console session: no API key is configured (Api.Oidc.ProtectReads)"
        : "the X-Api-Key header does not match the configured API key";
    sendProblem(reply, problem(401, detail), UNAUTHORIZED);
    return true;
  }

  /** The `onRequest` hook: who the request comes from, the cross-site defence, ProtectReads. */
  readonly onRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    // The route the request reaches, never the request line as written (see routedPath).
    const path = routedPath(request);
    const api = path?.startsWith("/api/") === true;
    const read = request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS";
    const keyed = request.headers["x-api-key"] !== undefined;
    const cookieId = readCookie(request.headers.cookie, this.names.session);
    const session = keyed ? null : this.sessions.get(cookieId, this.now());
    if (session !== null && cookieId !== undefined) {
      if (!read) {
        const refused = this.crossSiteProblem(request, session);
        if (refused !== null) {
          this.logger.warn(
            { client: this.clientOf(request), user: session.user.sub, path: request.url.slice(0, 200) },
            "cross-site request refused",
          );
          sendProblem(reply, problem(403, refused));
          return;
        }
      }
      setConsolePrincipal(request, { user: session.user, role: session.role });
      // Activity: what the user does, not the page's own checks or its event stream reconnecting.
      if (path !== SESSION_PATH && path !== EVENTS_PATH) this.sessions.touch(cookieId, session, this.now());
    } else if (!read && !keyed && cookieId !== undefined && api) {
      const detail = `the console session has ended (signed out or timed out); sign in again at ${LOGIN_PATH}`;
      sendProblem(reply, problem(401, detail));
      return;
    }
    if (session === null && read && (path === CONSOLE_PREFIX || path === CONSOLE_HOME)) {
      void reply.redirect(loginHref(CONSOLE_HOME), 302);
      return;
    }
    if (this.settings.ProtectReads && session === null && read && api && this.refuseRead(request, reply))
      return;
    done();
  };

  /** `login`: to the provider, with the flow sealed in a cookie. */
  async login(reply: FastifyReply, returnTo: string | undefined) {
    const flow: Flow = {
      s: randomToken(),
      n: randomToken(),
      v: randomToken(),
      r: safeReturnPath(returnTo),
      u: `${this.origin}${CALLBACK_PATH}`,
      t: this.now(),
    };
    let target: URL;
    try {
      target = await this.provider.authorizationUrl({
        redirectUri: flow.u,
        state: flow.s,
        nonce: flow.n,
        codeVerifier: flow.v,
      });
    } catch (error) {
      const message = error instanceof SignInError ? error.message : "the identity provider cannot be asked";
      this.logger.warn({ err: error }, "sign-in could not start");
      return page(
        reply,
        502,
        authPage("Cannot sign in", [message], [{ href: loginHref(flow.r), text: "Try again" }], true),
      );
    }
    return reply
      .header(
        "set-cookie",
        setCookie(this.names.signIn, this.seal.seal(flow), this.secure, SIGN_IN_MS / 1000),
      )
      .redirect(target.href, 302);
  }

  /** `callback`: the flow checked, the code exchanged, the role decided, a new session. */
  async callback(request: FastifyRequest, reply: FastifyReply) {
    const refusal = new CallbackRefusal(this, request, reply);
    const opened = this.seal.open(readCookie(request.headers.cookie, this.names.signIn) ?? "");
    const now = this.now();
    if (!isFlow(opened) || now - opened.t > SIGN_IN_MS || now < opened.t) {
      return refusal.send(
        400,
        "this sign-in was not started in this browser, was already finished, or took longer than 10 minutes",
      );
    }
    const mark = request.url.indexOf("?");
    const search = mark < 0 ? "" : request.url.slice(mark);
    const params = new URLSearchParams(search);
    const error = params.get("error");
    if (error !== null) {
      const description = params.get("error_description");
      const said = description === null ? "" : `: ${description.slice(0, 300)}`;
      return refusal.send(403, `the identity provider refused the sign-in (${error.slice(0, 100)}${said})`);
    }
    const state = params.get("state");
    if (state === null || !sameText(state, opened.s)) {
      return refusal.send(
        400,
        "the sign-in's state does not match the one this browser started (a forged or mixed-up sign-in)",
      );
    }
    const signedIn = await this.#exchange(opened, search);
    if (typeof signedIn === "string") return refusal.send(400, signedIn);
    if ("status" in signedIn) return refusal.send(signedIn.status, signedIn.message);
    return this.#startSession(request, reply, refusal, opened, signedIn);
  }

  /** The code exchanged and the ID token checked: the user, their role and the ID token, or why not. */
  async #exchange(
    flow: Flow,
    search: string,
  ): Promise<SignedIn | string | { readonly status: number; readonly message: string }> {
    try {
      const callbackUrl = new URL(flow.u);
      callbackUrl.search = search;
      const result = await this.provider.exchange(callbackUrl, {
        state: flow.s,
        nonce: flow.n,
        codeVerifier: flow.v,
      });
      const user = userOf(result.claims);
      if (user === null) return "the ID token names no usable subject (sub)";
      const rolesClaim = this.settings.RolesClaim;
      let claim = claimAt(result.claims, rolesClaim);
      if (claim === undefined)
        claim = claimAt((await this.provider.userinfo(result.accessToken, user.sub)) ?? {}, rolesClaim);
      const role = roleOf(claimValues(claim), this.settings.Roles);
      return { user, role, idToken: result.idToken };
    } catch (error) {
      if (error instanceof SignInError) return { status: error.status, message: error.message };
      throw error;
    }
  }

  /** A completed sign-in replaces whatever session the browser had (and never adopts its id). */
  #startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    refusal: CallbackRefusal,
    flow: Flow,
    { user, role, idToken }: SignedIn,
  ) {
    const settings = this.settings;
    this.sessions.delete(readCookie(request.headers.cookie, this.names.session));
    if (role === null) return refusal.noRole(user);
    const created = this.sessions.create({ user, role, idToken }, this.now());
    if (created.evicted > 0) {
      this.logger.warn(
        { evicted: created.evicted, max: settings.Sessions.Max },
        "console sessions ended to make room (Api.Oidc.Sessions.Max)",
      );
    }
    this.logger.info(
      { client: refusal.client, user: user.sub, userName: user.name, role },
      "console sign-in",
    );
    return reply
      .header("set-cookie", [refusal.clearFlow, setCookie(this.names.session, created.id, this.secure)])
      .redirect(flow.r, 303);
  }

  /** `session`: who is signed in, and the CSRF token. */
  session(request: FastifyRequest, reply: FastifyReply) {
    const principal = consolePrincipal(request);
    const session = this.sessions.get(readCookie(request.headers.cookie, this.names.session), this.now());
    if (principal === null || session === null) {
      return sendProblem(reply, problem(401, `not signed in; sign in at ${LOGIN_PATH}`));
    }
    const ends = this.sessions.endsAt(session);
    return {
      user: { sub: session.user.sub, name: session.user.name },
      role: session.role,
      csrfToken: session.csrfToken,
      idleExpiresUtc: new Date(ends.idle).toISOString(),
      expiresUtc: new Date(ends.absolute).toISOString(),
    };
  }

  /** `logout`: the session ended here, and where the browser goes next (the provider's sign-out). */
  logout(request: FastifyRequest, reply: FastifyReply) {
    const id = readCookie(request.headers.cookie, this.names.session);
    const session = this.sessions.get(id, this.now());
    this.sessions.delete(id);
    const location =
      this.provider.endSessionUrl(session?.idToken ?? null, `${this.origin}${SIGNED_OUT_PATH}`) ??
      SIGNED_OUT_PATH;
    if (session !== null)
      this.logger.info({ client: this.clientOf(request), user: session.user.sub }, "console sign-out");
    return reply.header("set-cookie", setCookie(this.names.session, "", this.secure, 0)).send({ location });
  }
}

/** What a sign-in's exchange gives: the user, their role (null: none) and the ID token. */
interface SignedIn {
  readonly user: NonNullable<ReturnType<typeof userOf>>;
  readonly role: ReturnType<typeof roleOf>;
  readonly idToken: string | null;
}

/** The refusals of one callback: a page, the sign-in cookie cleared, a log line. */
class CallbackRefusal {
  readonly client: string;
  readonly clearFlow: string;
  readonly #signIn: ConsoleSignIn;
  readonly #reply: FastifyReply;

  constructor(signIn: ConsoleSignIn, request: FastifyRequest, reply: FastifyReply) {
    this.#signIn = signIn;
    this.#reply = reply;
    this.client = signIn.clientOf(request);
    this.clearFlow = setCookie(signIn.names.signIn, "", signIn.secure, 0);
  }

  send(status: number, why: string, title = "Sign-in refused"): FastifyReply {
    this.#signIn.logger.warn({ client: this.client, status, reason: why }, "console sign-in refused");
    this.#reply.header("set-cookie", this.clearFlow);
    return page(
      this.#reply,
      status,
      authPage(title, [why, "Nothing was signed in."], [{ href: LOGIN_PATH, text: "Sign in again" }], true),
    );
  }

  /** Signed in at the provider, but with none of the groups that may use the console. */
  noRole(user: SignedIn["user"]): FastifyReply {
    const { logger, settings, names, secure } = this.#signIn;
    logger.warn(
      { client: this.client, user: user.sub, userName: user.name, claim: settings.RolesClaim },
      "console sign-in without a role refused",
    );
    this.#reply.header("set-cookie", [this.clearFlow, setCookie(names.session, "", secure, 0)]);
    const groups = (list: readonly string[]) => (list.length === 0 ? "(none)" : list.join(", "));
    return page(
      this.#reply,
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
}

/** Discovers the provider at start, so that a wrong issuer shows in the log at once; sign-ins retry it. */
function startSignIn(app: HttpApp, signIn: ConsoleSignIn): void {
  const { logger, settings, provider } = signIn;
  if (!signIn.secure) {
    logger.warn(
      "console sessions travel over plain HTTP: set Api.Tls, or serve the API behind a TLS proxy and set Api.PublicUrl to its https URL",
    );
  }
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
}

const plugin: FastifyPluginCallbackTypebox<ConsoleAuthOptions> = (app, options, pluginDone) => {
  const signIn = new ConsoleSignIn(options);
  startSignIn(app, signIn);
  // For tests of the bound: how many sessions are kept.
  app.decorate("consoleSessionCount", () => signIn.sessions.size);
  app.addHook("onRequest", signIn.onRequest);
  app.get(AUTH_STYLESHEET, { schema: { hide: true } }, (_request, reply) =>
    reply.header("cache-control", "public, max-age=86400").type("text/css; charset=utf-8").send(AUTH_CSS),
  );
  const loginQuery = Type.Object(
    { return: Type.Optional(Type.String({ maxLength: 2048 })) },
    { additionalProperties: false },
  );
  app.get(LOGIN_PATH, { schema: { hide: true, querystring: loginQuery } }, (request, reply) =>
    signIn.login(reply, request.query.return),
  );
  const callbackQuery = Type.Object({}, { additionalProperties: Type.String({ maxLength: 4096 }) });
  app.get(CALLBACK_PATH, { schema: { hide: true, querystring: callbackQuery } }, (request, reply) =>
    signIn.callback(request, reply),
  );
  app.get(SESSION_PATH, { schema: { hide: true } }, (request, reply) => signIn.session(request, reply));
  app.post(LOGOUT_PATH, { schema: { hide: true } }, (request, reply) => signIn.logout(request, reply));
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
