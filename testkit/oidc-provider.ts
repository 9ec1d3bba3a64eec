/**
 * A real OpenID provider for the sign-in tests: `oidc-provider` (8.x, a certified OP; its 9.x line
 * warns "Unsupported runtime" on Node 20) over HTTPS on 127.0.0.1 with a self-signed certificate,
 * one confidential client (`pdu-bridge`), and users with group claims. Its login page takes a user
 * name (no password: the users are test fixtures) and consent is implied, so a browser or
 * {@link signInOverHttp} can finish a sign-in in a few requests.
 *
 * Test switches change what the real provider issues: `idTokenTtl` (seconds; negative issues ID
 * tokens that have already expired), `tamperIdTokens` (the token answer's ID token gets another
 * payload after signing: its signature no longer matches, as after tampering on the way), and
 * `groupsInIdToken` (false: groups only in the userinfo answer, as providers that follow the
 * claims rules of OpenID Connect strictly do).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, { type Configuration, type KoaContextWithOIDC } from "oidc-provider";
import { Agent, fetch } from "undici";
import { selfSignedCertificate } from "../src/simulator/cert.js";

export const CLIENT_ID = "pdu-bridge";
export const CLIENT_SECRET = "test-client-secret-0123456789abcdef";

export interface TestUser {
  readonly name: string;
  readonly email: string;
  readonly groups: readonly string[];
}

/** The users: an operator, a viewer, someone with neither role, and an operator by a Keycloak-style full path. */
export const USERS: Readonly<Record<string, TestUser>> = {
  alice: { name: "Alice Operator", email: "alice@example.test", groups: ["staff", "pdu-operators"] },
  victor: { name: "Victor Viewer", email: "victor@example.test", groups: ["pdu-viewers"] },
  nora: { name: "Nora Nobody", email: "nora@example.test", groups: ["staff"] },
};

export interface TestProvider {
  readonly issuer: string;
  /** PEM of the provider's certificate: the bridge's Api.Oidc.CaFile and the test client's CA. */
  readonly cert: string;
  /** An undici agent that trusts the provider's certificate. */
  readonly agent: Agent;
  idTokenTtl: number;
  tamperIdTokens: boolean;
  groupsInIdToken: boolean;
  /** Grants issued so far (one per completed sign-in). */
  readonly grants: () => number;
  close(): Promise<void>;
}

const escape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1>${body}</body></html>`;

/** Reads a small url-encoded form body. */
async function formBody(request: IncomingMessage): Promise<URLSearchParams> {
  let text = "";
  for await (const chunk of request) {
    text += String(chunk);
    if (text.length > 4096) break;
  }
  return new URLSearchParams(text);
}

/** The provider's storage: one map per model, in this process (what its own development store does). */
function memoryAdapter() {
  const store = new Map<string, Record<string, unknown>>();
  return class MemoryAdapter {
    readonly #name: string;
    constructor(name: string) {
      this.#name = name;
    }
    #key(id: string) {
      return `${this.#name}:${id}`;
    }
    upsert(id: string, payload: Record<string, unknown>): Promise<void> {
      store.set(this.#key(id), payload);
      return Promise.resolve();
    }
    find(id: string) {
      return Promise.resolve(store.get(this.#key(id)));
    }
    findByUid(uid: string) {
      return Promise.resolve([...store.values()].find((p) => p.uid === uid));
    }
    findByUserCode(code: string) {
      return Promise.resolve([...store.values()].find((p) => p.userCode === code));
    }
    consume(id: string): Promise<void> {
      const payload = store.get(this.#key(id));
      if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000);
      return Promise.resolve();
    }
    destroy(id: string): Promise<void> {
      store.delete(this.#key(id));
      return Promise.resolve();
    }
    revokeByGrantId(grantId: string): Promise<void> {
      for (const [key, payload] of store) if (payload.grantId === grantId) store.delete(key);
      return Promise.resolve();
    }
  };
}

/**
 * Starts the provider. `redirectUris`: the bridge's callback URLs (its port is chosen before, with
 * freePort); `postLogoutRedirectUris`: where it may send a browser after signing out.
 */
export async function startTestProvider(options: {
  redirectUris: readonly string[];
  postLogoutRedirectUris: readonly string[];
}): Promise<TestProvider> {
  const tls = await selfSignedCertificate();
  let handler: (request: IncomingMessage, response: ServerResponse) => void = (_q, s) => s.end();
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (q, s) => handler(q, s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: "jwk" }), kid: "test-key", alg: "RS256", use: "sig" };

  let grants = 0;
  const state: Pick<TestProvider, "idTokenTtl" | "tamperIdTokens" | "groupsInIdToken"> = {
    idTokenTtl: 600,
    tamperIdTokens: false,
    groupsInIdToken: true,
  };
  const configuration: Configuration = {
    adapter: memoryAdapter(),
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [...options.redirectUris],
        post_logout_redirect_uris: [...options.postLogoutRedirectUris],
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    claims: {
      openid: ["sub"],
      profile: ["name", "preferred_username"],
      email: ["email"],
      groups: ["groups"],
    },
    scopes: ["openid", "profile", "email", "groups"],
    pkce: { required: () => true, methods: ["S256"] },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx: KoaContextWithOIDC, form: string) => {
          ctx.body = page(
            "Sign out of the test provider?",
            `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>`,
          );
        },
        postLogoutSuccessSource: (ctx: KoaContextWithOIDC) => {
          ctx.body = page("Signed out of the test provider", "");
        },
      },
    },
    renderError: (ctx: KoaContextWithOIDC, out: object) => {
      ctx.type = "html";
      ctx.body = page("Provider error", `<pre>${escape(JSON.stringify(out))}</pre>`);
    },
    ttl: {
      IdToken: () => state.idTokenTtl,
      AccessToken: 600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    conformIdTokenClaims: false,
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction) => `/interaction/${interaction.uid}` },
    // Consent is implied: every client of this provider gets the scopes it asks for.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const accountId = ctx.oidc.session?.accountId;
      const client = ctx.oidc.client;
      if (accountId === undefined || client === undefined) return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId });
      grant.addOIDCScope("openid profile email groups");
      await grant.save();
      grants++;
      return grant;
    },
    findAccount: (_ctx: KoaContextWithOIDC, id: string) => {
      const user = USERS[id];
      if (user === undefined) return undefined;
      return {
        accountId: id,
        claims: (use: string) => ({
          sub: id,
          name: user.name,
          preferred_username: id,
          email: user.email,
          ...(use === "id_token" && !state.groupsInIdToken ? {} : { groups: [...user.groups] }),
        }),
      };
    },
  };
  const provider = new Provider(issuer, configuration);
  // A tampered answer: the ID token's payload is replaced after signing (more groups for the user).
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (!state.tamperIdTokens || ctx.path !== "/token" || typeof body?.id_token !== "string") return;
    const [header, payload, signature] = body.id_token.split(".");
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    claims.groups = ["pdu-operators"];
    body.id_token = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${signature}`;
  });
  const callback = provider.callback();
  handler = (request, response) => {
    const path = (request.url ?? "").split("?", 1)[0] ?? "";
    const match = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/.exec(path);
    if (match === null) {
      void callback(request, response);
      return;
    }
    void (async () => {
      try {
        await provider.interactionDetails(request, response);
        if (match[2] === undefined) {
          response.setHeader("content-type", "text/html; charset=utf-8");
          response.end(
            page(
              "Sign in to the test provider",
              `<form method="post" action="/interaction/${match[1]}/login"><label for="login">User</label>` +
                `<input id="login" name="login" autofocus><button type="submit">Sign in</button></form>`,
            ),
          );
          return;
        }
        const login = (await formBody(request)).get("login") ?? "";
        const result =
          USERS[login] === undefined
            ? { error: "access_denied", error_description: "no such test user" }
            : { login: { accountId: login } };
        await provider.interactionFinished(request, response, result, { mergeWithLastSubmission: false });
      } catch (error) {
        response.statusCode = 400;
        response.end(page("Interaction failed", escape(String(error))));
      }
    })();
  };
  const agent = new Agent({ connect: { ca: tls.cert } });
  return {
    issuer,
    cert: tls.cert,
    agent,
    get idTokenTtl() {
      return state.idTokenTtl;
    },
    set idTokenTtl(v) {
      state.idTokenTtl = v;
    },
    get tamperIdTokens() {
      return state.tamperIdTokens;
    },
    set tamperIdTokens(v) {
      state.tamperIdTokens = v;
    },
    get groupsInIdToken() {
      return state.groupsInIdToken;
    },
    set groupsInIdToken(v) {
      state.groupsInIdToken = v;
    },
    grants: () => grants,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await agent.close();
    },
  };
}

/** Cookies as a browser keeps them for one host (ports share cookies, as in browsers). */
export class CookieJar {
  readonly #cookies = new Map<string, string>();

  take(response: { headers: { getSetCookie(): string[] } }): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const gone = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (gone || value === "") this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.#cookies.get(name);
  }

  set(name: string, value: string): void {
    this.#cookies.set(name, value);
  }

  delete(name: string): void {
    this.#cookies.delete(name);
  }

  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

export interface HttpAnswer {
  readonly status: number;
  readonly location: string | null;
  readonly body: string;
  readonly url: string;
}

/** One request with the jar's cookies, redirects not followed. */
export async function request(
  jar: CookieJar,
  agent: Agent,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer> {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    redirect: "manual",
    dispatcher: agent,
    headers: { ...(jar.header() === "" ? {} : { cookie: jar.header() }), ...(init.headers ?? {}) },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  jar.take(response);
  const location = response.headers.get("location");
  return {
    status: response.status,
    location: location === null ? null : new URL(location, url).href,
    body: await response.text(),
    url,
  };
}

export interface HttpSignIn {
  /** The provider's answer to the bridge: the callback URL with code and state. */
  readonly callbackUrl: string;
  /** The bridge's answer to the callback. */
  readonly answer: HttpAnswer;
}

/**
 * A sign-in as a browser makes it, request by request: the bridge's login (optionally with
 * `returnTo`), the provider's authorization endpoint (`editAuthorizationUrl` may change it on the
 * way), the login form as `user`, back to the bridge's callback (`editCallbackUrl` may change it).
 */
export async function signInOverHttp(
  jar: CookieJar,
  agent: Agent,
  bridge: string,
  user: string,
  edits: {
    returnTo?: string;
    editAuthorizationUrl?: (url: URL) => void;
    editCallbackUrl?: (url: URL) => void;
  } = {},
): Promise<HttpSignIn> {
  const login = `${bridge}/ui/auth/login${edits.returnTo === undefined ? "" : `?return=${encodeURIComponent(edits.returnTo)}`}`;
  const start = await request(jar, agent, login);
  if (start.status !== 302 || start.location === null)
    throw new Error(`login answered ${start.status}: ${start.body}`);
  const authorization = new URL(start.location);
  edits.editAuthorizationUrl?.(authorization);
  let step = await request(jar, agent, authorization.href);
  for (let hops = 0; hops < 10; hops++) {
    if (step.location === null)
      throw new Error(`the provider stopped at ${step.url}: ${step.status} ${step.body}`);
    if (step.location.startsWith(bridge)) break;
    if (/\/interaction\/[^/]+$/.test(step.location)) {
      await request(jar, agent, step.location);
      step = await request(jar, agent, `${step.location}/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ login: user }).toString(),
      });
    } else {
      step = await request(jar, agent, step.location);
    }
  }
  const callback = new URL(step.location ?? "");
  edits.editCallbackUrl?.(callback);
  const answer = await request(jar, agent, callback.href);
  return { callbackUrl: callback.href, answer };
}
