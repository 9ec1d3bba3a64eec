/**
 * The OpenID provider as the console's sign-in sees it, through `openid-client`: discovery from the
 * issuer (kept once it succeeded; a failure is tried again on the next sign-in, at most every
 * {@link RETRY_DISCOVERY_MS}), the authorization request (code flow with PKCE S256, state and nonce),
 * the code exchange with the ID token checked (signature against the provider's keys, issuer,
 * audience, expiry, nonce), userinfo, and the end-session URL where the provider has one.
 *
 * Requests go through undici with `Api.Oidc.CaFile` (a private CA) when set, and a deadline.
 * Plain HTTP is allowed for a loopback issuer only (the configuration refuses any other).
 */
import { readFile } from "node:fs/promises";
import * as oidc from "openid-client";
import { Agent, fetch as undiciFetch } from "undici";
import { isLoopbackHost } from "../../config/oidc.js";

/** Deadline of every request to the provider (discovery, keys, token, userinfo). */
const REQUEST_TIMEOUT_S = 10;
const RETRY_DISCOVERY_MS = 10_000;

export interface ProviderSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string | null;
  readonly caFile: string | null;
  readonly scopes: readonly string[];
}

export interface SignInRequest {
  readonly redirectUri: string;
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

export interface SignInResult {
  readonly claims: Readonly<Record<string, unknown>>;
  readonly idToken: string;
  readonly accessToken: string;
}

/** Why a sign-in was refused: what the page tells the user, and the status it is answered with. */
export class SignInError extends Error {
  override readonly name = "SignInError";
  constructor(
    readonly status: 400 | 403 | 502,
    message: string,
  ) {
    super(message);
  }
}

export class OidcProvider {
  readonly #settings: ProviderSettings;
  #configuration: oidc.Configuration | null = null;
  #discovering: Promise<oidc.Configuration> | null = null;
  #failedAt = -Infinity;
  #failure = "";
  #agent: Agent | null = null;

  constructor(settings: ProviderSettings) {
    this.#settings = settings;
  }

  /** The provider's configuration (discovered once); a SignInError 502 while it cannot be reached. */
  async configuration(): Promise<oidc.Configuration> {
    if (this.#configuration !== null) return this.#configuration;
    if (Date.now() - this.#failedAt < RETRY_DISCOVERY_MS) {
      throw new SignInError(
        502,
        `the identity provider cannot be reached (${this.#failure}); try again shortly`,
      );
    }
    this.#discovering ??= this.#discover().finally(() => (this.#discovering = null));
    return this.#discovering;
  }

  async #discover(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret, caFile } = this.#settings;
    try {
      const ca = caFile === null ? undefined : await readFile(caFile, "utf8");
      this.#agent ??= new Agent({
        connect: { ...(ca === undefined ? {} : { ca }), timeout: REQUEST_TIMEOUT_S * 1000 },
        headersTimeout: REQUEST_TIMEOUT_S * 1000,
        bodyTimeout: REQUEST_TIMEOUT_S * 1000,
      });
      const agent = this.#agent;
      const url = new URL(issuer);
      const execute = [oidc.enableNonRepudiationChecks];
      if (url.protocol === "http:" && isLoopbackHost(url.hostname)) execute.push(oidc.allowInsecureRequests);
      const fetcher: oidc.CustomFetch = (input, options) =>
        undiciFetch(input, { ...options, dispatcher: agent });
      const options = { execute, timeout: REQUEST_TIMEOUT_S, [oidc.customFetch]: fetcher };
      const discovered = await oidc.discovery(url, clientId, undefined, oidc.None(), options);
      const metadata = discovered.serverMetadata();
      // Client authentication as the provider announces it; RFC 8414's default is client_secret_basic.
      const methods = metadata.token_endpoint_auth_methods_supported;
      const auth =
        clientSecret === null
          ? oidc.None()
          : methods !== undefined &&
              !methods.includes("client_secret_basic") &&
              methods.includes("client_secret_post")
            ? oidc.ClientSecretPost(clientSecret)
            : oidc.ClientSecretBasic(clientSecret);
      const configuration = new oidc.Configuration(metadata, clientId, undefined, auth);
      configuration[oidc.customFetch] = fetcher;
      configuration.timeout = REQUEST_TIMEOUT_S;
      for (const step of execute) step(configuration);
      this.#configuration = configuration;
      return configuration;
    } catch (error) {
      this.#failedAt = Date.now();
      this.#failure = describe(error);
      throw new SignInError(
        502,
        `the identity provider at ${issuer} cannot be reached or answered wrongly (${this.#failure}); try again shortly`,
      );
    }
  }

  /** Where to send the browser to sign in. */
  async authorizationUrl(request: SignInRequest): Promise<URL> {
    const configuration = await this.configuration();
    return oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: request.redirectUri,
      scope: this.#settings.scopes.join(" "),
      response_type: "code",
      code_challenge: await oidc.calculatePKCECodeChallenge(request.codeVerifier),
      code_challenge_method: "S256",
      state: request.state,
      nonce: request.nonce,
    });
  }

  /**
   * Exchanges the code of `callbackUrl` (the redirect URI with the provider's answer as its query)
   * and checks the ID token; every refusal is a SignInError saying what was wrong.
   */
  async exchange(callbackUrl: URL, expected: Omit<SignInRequest, "redirectUri">): Promise<SignInResult> {
    const configuration = await this.configuration();
    let tokens;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: expected.codeVerifier,
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      throw refusal(error);
    }
    const claims = tokens.claims();
    if (claims === undefined || tokens.id_token === undefined)
      throw new SignInError(400, "the identity provider sent no ID token");
    return { claims, idToken: tokens.id_token, accessToken: tokens.access_token };
  }

  /** The userinfo answer's claims, or null when the provider has no userinfo endpoint. */
  async userinfo(accessToken: string, subject: string): Promise<Readonly<Record<string, unknown>> | null> {
    const configuration = await this.configuration();
    if (configuration.serverMetadata().userinfo_endpoint === undefined) return null;
    try {
      return await oidc.fetchUserInfo(configuration, accessToken, subject);
    } catch (error) {
      throw new SignInError(502, `the identity provider's userinfo answer was refused (${describe(error)})`);
    }
  }

  /** The provider's end-session URL for this ID token, or null when it has none (or is not discovered). */
  endSessionUrl(idToken: string | null, postLogoutRedirectUri: string): string | null {
    const configuration = this.#configuration;
    if (configuration?.serverMetadata().end_session_endpoint === undefined) return null;
    return oidc
      .buildEndSessionUrl(configuration, {
        post_logout_redirect_uri: postLogoutRedirectUri,
        client_id: this.#settings.clientId,
        ...(idToken === null ? {} : { id_token_hint: idToken }),
      })
      .toString();
  }

  async close(): Promise<void> {
    await this.#agent?.close();
  }
}

/** An error's message with its cause's, without stack or data. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`.slice(0, 300);
}

/** What openid-client refused in the answer, as the sign-in page says it. */
function refusal(error: unknown): SignInError {
  if (error instanceof oidc.AuthorizationResponseError) {
    const said = error.error_description === undefined ? "" : `: ${error.error_description}`;
    return new SignInError(403, `the identity provider refused the sign-in (${error.error}${said})`);
  }
  if (error instanceof oidc.ResponseBodyError) {
    const said = error.error_description === undefined ? "" : `: ${error.error_description}`;
    const hint =
      error.error === "invalid_grant"
        ? "; an authorization code is good for one sign-in only and for a short time: sign in again"
        : "";
    return new SignInError(
      400,
      `the identity provider refused the authorization code (${error.error}${said})${hint}`,
    );
  }
  const code = (error as { code?: unknown }).code;
  const message = describe(error);
  if (code === "OAUTH_JWT_TIMESTAMP_CHECK_FAILED")
    return new SignInError(400, `the ID token was refused: it has expired or is not valid yet (${message})`);
  if (code === "OAUTH_JWT_CLAIM_COMPARISON_FAILED" || code === "OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED")
    return new SignInError(400, `the ID token was refused: ${message}`);
  if (typeof code === "string" && code.startsWith("OAUTH_"))
    return new SignInError(400, `the identity provider's answer was refused: ${message}`);
  return new SignInError(502, `the identity provider could not be asked (${message}); try again`);
}
