/**
 * Signing in to the console against a real OpenID provider (oidc-provider over HTTPS on loopback),
 * request by request as a browser makes them, with the whole service polling the simulator: an
 * operator switches an outlet with the session (the audit line names the user, the metrics say
 * console), a viewer may not, a user without a role is refused with a page that says why, and every
 * hostile case (a wrong state or nonce, a replayed code, an expired or tampered ID token, a request
 * from another origin, an open redirect through the return path, a planted session cookie) is
 * refused with a clear message and nothing done. The API key keeps working and the OpenAPI document
 * is the same as without sign-in.
 */
import assert from "node:assert/strict";
import { writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Agent } from "undici";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../../testkit/app-harness.js";
import {
  CLIENT_SECRET,
  CookieJar,
  request,
  signInOverHttp,
  startTestProvider,
  type TestProvider,
} from "../../../testkit/oidc-provider.js";
import { rawRequest } from "../../../testkit/raw-http.js";
import { freePort } from "../../../testkit/repo.js";
import { waitFor } from "../../../testkit/wait.js";

const KEY = "sign-in-test-key-0123456789abcdef";
const SESSION = "pdu-bridge-session";
const FLOW = "pdu-bridge-signin";

let op: TestProvider;
let h: AppHarness<"rack">;
let plain: AppHarness<"rack"> | undefined;
let bridge: string;
let dir: string;
const local = new Agent();
let deviceId: string;

before(async () => {
  const port = await freePort();
  bridge = `http://127.0.0.1:${port}`;
  op = await startTestProvider({
    redirectUris: [`${bridge}/ui/auth/callback`],
    postLogoutRedirectUris: [`${bridge}/ui/auth/signed-out`],
  });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-oidc-"));
  const ca = join(dir, "op.pem");
  await writeFile(ca, op.cert);
  h = await startAppHarness<"rack">({
    sims: { rack: { outlets: 4, seed: 11 } },
    env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: 1 })],
        api: {
          key: KEY,
          port,
          more:
            `PublicUrl: ${JSON.stringify(bridge)}, ` +
            `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(ca)}, ` +
            "Scopes: [openid, profile, email, groups] }",
        },
      }),
  });
  await h.waitForPoll("rack");
  deviceId = h.sims.rack.deviceIds()[0]!;
});

after(async () => {
  await plain?.close();
  await h?.close();
  await op?.close();
  await local.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A signed-in jar of `user` (the sign-in must succeed). */
async function signedIn(user: string): Promise<{ jar: CookieJar; csrf: string }> {
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, user);
  assert.equal(answer.status, 303, `${user} signs in: ${answer.body}`);
  const session = await request(jar, local, `${bridge}/ui/auth/session`);
  assert.equal(session.status, 200, session.body);
  return { jar, csrf: (JSON.parse(session.body) as { csrfToken: string }).csrfToken };
}

const controlUrl = (index: number) => `${bridge}/api/v1/instances/rack/outlets/${deviceId}/${index}/control`;

function control(jar: CookieJar, index: number, action: string, headers: Record<string, string>) {
  return request(jar, local, controlUrl(index), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ action }),
  });
}

const auditsOf = (index: number) => h.audits().filter((l) => l.target === `outlet ${deviceId}/${index}`);

test("an operator signs in, gets a session cookie and switches an outlet; the audit line names them", async () => {
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, "alice");
  assert.equal(answer.status, 303);
  assert.equal(answer.location, `${bridge}/ui/`);
  assert.equal(jar.get(FLOW), undefined, "the sign-in cookie is gone");
  const id = jar.get(SESSION);
  assert.match(id ?? "", /^[A-Za-z0-9_-]{43}$/);

  const who = await request(jar, local, `${bridge}/ui/auth/session`);
  const info = JSON.parse(who.body) as {
    user: { sub: string; name: string };
    role: string;
    csrfToken: string;
  };
  assert.deepEqual(info.user, { sub: "alice", name: "Alice Operator" });
  assert.equal(info.role, "operator");

  h.sims.rack.setOutletState(deviceId, 0, "on");
  const done = await control(jar, 0, "off", { origin: bridge, "x-csrf-token": info.csrfToken });
  assert.equal(done.status, 200, done.body);
  await waitFor(() => h.sims.rack.outlet(deviceId, 0).state === "off", "the outlet off at the PDU");
  const line = auditsOf(0).at(-1)!;
  assert.equal(line.source, "console");
  assert.equal(line.user, "alice");
  assert.equal(line.userName, "Alice Operator");
  assert.equal(line.outcome, "done");
  const metrics = await h.health.get("/metrics");
  assert.match(
    metrics.text,
    /pdu_bridge_control_commands_total\{source="console",action="off",outcome="done"\} 1/,
  );
});

test("an operator's settings write names them in the audit line; a viewer's is refused", async () => {
  const operator = await signedIn("alice");
  const url = `${bridge}/api/v1/instances/rack/outlets/${deviceId}/0`;
  const write = (who: { jar: CookieJar; csrf: string }, label: string) =>
    request(who.jar, local, url, {
      method: "PATCH",
      headers: { "content-type": "application/json", origin: bridge, "x-csrf-token": who.csrf },
      body: JSON.stringify({ label }),
    });
  const done = await write(operator, "web-01");
  assert.equal(done.status, 200, done.body);
  await waitFor(() => h.sims.rack.outlet(deviceId, 0).label === "web-01", "the label at the PDU");
  const line = h.audits().findLast((l) => l.action === "set")!;
  assert.equal(line.user, "alice");
  assert.equal(line.source, "console");
  const viewer = await signedIn("victor");
  const refused = await write(viewer, "other");
  assert.equal(refused.status, 403);
  assert.equal(h.sims.rack.outlet(deviceId, 0).label, "web-01");
});

test("the sign-in cookie is HttpOnly and SameSite=Lax (no Secure over plain HTTP)", async () => {
  const jar = new CookieJar();
  const start = await request(jar, op.agent, `${bridge}/ui/auth/login`);
  const flowCookie = (await fetchSetCookie(start.url)).find((c) => c.startsWith(`${FLOW}=`)) ?? "";
  assert.match(flowCookie, /HttpOnly/);
  assert.match(flowCookie, /SameSite=Lax/);
  assert.doesNotMatch(flowCookie, /Secure/);
});

async function fetchSetCookie(url: string): Promise<string[]> {
  const { fetch } = await import("undici");
  const response = await fetch(url, { redirect: "manual", dispatcher: local });
  await response.text();
  return response.headers.getSetCookie();
}

test("a viewer sees the session and may not control: 403, nothing sent, the audit line names them", async () => {
  const { jar, csrf } = await signedIn("victor");
  const who = JSON.parse((await request(jar, local, `${bridge}/ui/auth/session`)).body) as { role: string };
  assert.equal(who.role, "viewer");
  h.sims.rack.setOutletState(deviceId, 1, "on");
  const refused = await control(jar, 1, "off", { origin: bridge, "x-csrf-token": csrf });
  assert.equal(refused.status, 403);
  assert.match(refused.body, /viewer/);
  assert.equal(h.sims.rack.outlet(deviceId, 1).state, "on");
  const line = auditsOf(1).at(-1)!;
  assert.equal(line.user, "victor");
  assert.equal(line.status, 403);
  const reads = await request(jar, local, `${bridge}/api/v1/instances`);
  assert.equal(reads.status, 200);
});

test("a user with neither role is refused after signing in, with a page that says why; no session", async () => {
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, "nora");
  assert.equal(answer.status, 403);
  assert.match(answer.body, /Nora Nobody/);
  assert.match(answer.body, /none of the groups or roles/);
  assert.match(answer.body, /pdu-operators/);
  assert.equal(jar.get(SESSION), undefined);
  assert.equal((await request(jar, local, `${bridge}/ui/auth/session`)).status, 401);
  // The console page sends them back to sign in.
  const home = await request(jar, local, `${bridge}/ui/`);
  assert.equal(home.status, 302);
  assert.equal(home.location, `${bridge}/ui/auth/login?return=%2Fui%2F`);
});

test("groups only in the userinfo answer are read from there", async () => {
  op.groupsInIdToken = false;
  try {
    const { jar } = await signedIn("alice");
    const who = JSON.parse((await request(jar, local, `${bridge}/ui/auth/session`)).body) as { role: string };
    assert.equal(who.role, "operator");
  } finally {
    op.groupsInIdToken = true;
  }
});

test("a wrong state is refused and signs nobody in", async () => {
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, "alice", {
    editCallbackUrl: (url) => url.searchParams.set("state", "forged-state"),
  });
  assert.equal(answer.status, 400);
  assert.match(answer.body, /state does not match/);
  assert.equal(jar.get(SESSION), undefined);
});

test("a wrong nonce (an ID token minted for another sign-in) is refused", async () => {
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, "alice", {
    editAuthorizationUrl: (url) => url.searchParams.set("nonce", "another-sign-in"),
  });
  assert.equal(answer.status, 400);
  assert.match(answer.body, /nonce/);
  assert.equal(jar.get(SESSION), undefined);
});

test("a replayed authorization code is refused by the provider, and no second session is made", async () => {
  const jar = new CookieJar();
  let flow: string | undefined;
  const { callbackUrl, answer } = await signInOverHttp(jar, op.agent, bridge, "alice", {
    editCallbackUrl: () => (flow = jar.get(FLOW)),
  });
  assert.equal(answer.status, 303);
  const replay = new CookieJar();
  replay.set(FLOW, flow!);
  const again = await request(replay, local, callbackUrl);
  assert.equal(again.status, 400);
  assert.match(again.body, /invalid_grant/);
  assert.equal(replay.get(SESSION), undefined);
  // Without the browser's sign-in cookie, a stolen callback URL is worth nothing either.
  const stranger = await request(new CookieJar(), local, callbackUrl);
  assert.equal(stranger.status, 400);
  assert.match(stranger.body, /not started in this browser/);
});

test("an expired ID token is refused", async () => {
  op.idTokenTtl = -600;
  try {
    const jar = new CookieJar();
    const { answer } = await signInOverHttp(jar, op.agent, bridge, "alice");
    assert.equal(answer.status, 400);
    assert.match(answer.body, /expired/);
    assert.equal(jar.get(SESSION), undefined);
  } finally {
    op.idTokenTtl = 600;
  }
});

test("a tampered ID token (groups changed after signing) is refused", async () => {
  op.tamperIdTokens = true;
  try {
    const jar = new CookieJar();
    const { answer } = await signInOverHttp(jar, op.agent, bridge, "victor");
    assert.equal(answer.status, 400);
    assert.match(answer.body, /signature/i);
    assert.equal(jar.get(SESSION), undefined);
  } finally {
    op.tamperIdTokens = false;
  }
});

test("a request from another origin with the session is refused and nothing is done", async () => {
  const { jar, csrf } = await signedIn("alice");
  h.sims.rack.setOutletState(deviceId, 2, "on");
  const attempts: Record<string, string>[] = [
    { origin: "http://evil.example", "x-csrf-token": csrf },
    { origin: "http://127.0.0.1:1", "x-csrf-token": csrf },
    { "x-csrf-token": csrf },
    { origin: bridge },
    { origin: bridge, "x-csrf-token": "forged" },
  ];
  for (const headers of attempts) {
    const refused = await control(jar, 2, "off", headers);
    assert.equal(refused.status, 403, JSON.stringify(headers));
    assert.match(refused.body, /cross-site request refused/);
  }
  // The form a page elsewhere could post (text/plain, no headers of its own).
  const form = await request(jar, local, controlUrl(2), {
    method: "POST",
    headers: { "content-type": "text/plain", origin: "http://evil.example" },
    body: '{"action":"off"}',
  });
  assert.equal(form.status, 403);
  assert.equal(h.sims.rack.outlet(deviceId, 2).state, "on", "the outlet was not switched");
  assert.ok(auditsOf(2).every((l) => l.status === 403 && l.outcome === "refused"));
});

test("a forged Host header changes neither the redirect URIs nor the origin a change must come from", async () => {
  const port = new URL(bridge).port;
  const hosts = ["evil.example", "evil.example:443", `127.0.0.1:${port}.evil.example`, "localhost", "[::1]"];
  for (const host of hosts) {
    const login = await rawRequest(
      Number(port),
      `GET /ui/auth/login HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(login.status, 302, `${host}: ${login.head}`);
    const location = new URL(/\r\nlocation: ([^\r]*)/i.exec(login.head)?.[1] ?? "");
    assert.equal(location.origin, op.issuer, host);
    assert.equal(location.searchParams.get("redirect_uri"), `${bridge}/ui/auth/callback`, host);
  }
  // Signing out with a forged Host: the provider is told to send the browser to Api.PublicUrl.
  const { jar, csrf } = await signedIn("alice");
  const out = await rawRequest(
    Number(port),
    `POST /ui/auth/logout HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://evil.example\r\n` +
      `X-CSRF-Token: ${csrf}\r\nCookie: ${jar.header()}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
  );
  assert.equal(out.status, 403, "the forged Host does not make its own origin the service's");
  const right = await request(jar, local, `${bridge}/ui/auth/logout`, {
    method: "POST",
    headers: { origin: bridge, "x-csrf-token": csrf, host: "evil.example" },
  });
  assert.equal(right.status, 200, right.body);
  const next = new URL((JSON.parse(right.body) as { location: string }).location);
  assert.equal(next.searchParams.get("post_logout_redirect_uri"), `${bridge}/ui/auth/signed-out`);
});

test("the return path cannot redirect off the console", async () => {
  const cases: [string, string][] = [
    ["https://evil.example/", "/ui/"],
    ["//evil.example/ui/", "/ui/"],
    ["/ui/\\evil.example", "/ui/"],
    ["/\\evil.example", "/ui/"],
    ["/ui/../docs/v1", "/ui/"],
    ["/ui/auth/logout", "/ui/"],
    ["javascript:alert(1)", "/ui/"],
    ["/ui/#/i/rack", "/ui/#/i/rack"],
  ];
  for (const [returnTo, expected] of cases) {
    const jar = new CookieJar();
    const { answer } = await signInOverHttp(jar, op.agent, bridge, "victor", { returnTo });
    assert.equal(answer.status, 303, returnTo);
    assert.equal(answer.location, `${bridge}${expected}`, returnTo);
  }
});

test("a planted session cookie is never adopted: signing in makes a new session and ends the old one", async () => {
  // A made-up id stays worthless.
  const planted = "A".repeat(43);
  const jar = new CookieJar();
  jar.set(SESSION, planted);
  await signInOverHttp(jar, op.agent, bridge, "alice");
  assert.notEqual(jar.get(SESSION), planted);
  const check = new CookieJar();
  check.set(SESSION, planted);
  assert.equal((await request(check, local, `${bridge}/ui/auth/session`)).status, 401);

  // An attacker's own live session planted in the victim's browser ends when the victim signs in.
  const attacker = await signedIn("victor");
  const attackerId = attacker.jar.get(SESSION)!;
  const victim = new CookieJar();
  victim.set(SESSION, attackerId);
  await signInOverHttp(victim, op.agent, bridge, "alice");
  assert.notEqual(victim.get(SESSION), attackerId);
  assert.equal((await request(attacker.jar, local, `${bridge}/ui/auth/session`)).status, 401);
  const who = JSON.parse((await request(victim, local, `${bridge}/ui/auth/session`)).body) as {
    user: { sub: string };
  };
  assert.equal(who.user.sub, "alice");
});

test("signing out ends the session on the server and points to the provider's end-session endpoint", async () => {
  const { jar, csrf } = await signedIn("alice");
  const id = jar.get(SESSION)!;
  const cross = await request(jar, local, `${bridge}/ui/auth/logout`, {
    method: "POST",
    headers: { origin: "http://evil.example", "x-csrf-token": csrf },
  });
  assert.equal(cross.status, 403, "a cross-site sign-out is refused too");
  const out = await request(jar, local, `${bridge}/ui/auth/logout`, {
    method: "POST",
    headers: { origin: bridge, "x-csrf-token": csrf },
  });
  assert.equal(out.status, 200);
  const location = new URL((JSON.parse(out.body) as { location: string }).location);
  assert.equal(location.origin, op.issuer);
  assert.equal(location.searchParams.get("post_logout_redirect_uri"), `${bridge}/ui/auth/signed-out`);
  assert.ok(location.searchParams.get("id_token_hint"));
  const old = new CookieJar();
  old.set(SESSION, id);
  assert.equal((await request(old, local, `${bridge}/ui/auth/session`)).status, 401);
  const late = await control(old, 3, "off", { origin: bridge, "x-csrf-token": csrf });
  assert.equal(late.status, 401);
  assert.match(late.body, /session has ended/);
});

test("the API key keeps working for machines, and its audit line says api-key", async () => {
  h.sims.rack.setOutletState(deviceId, 3, "off");
  const done = await request(new CookieJar(), local, controlUrl(3), {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY },
    body: JSON.stringify({ action: "on" }),
  });
  assert.equal(done.status, 200, done.body);
  const line = auditsOf(3).at(-1)!;
  assert.equal(line.source, "rest");
  assert.equal(line.user, "api-key");
  assert.equal(line.userName, undefined);
});

test("the OpenAPI document is the same as without sign-in", async () => {
  plain = await startAppHarness<"rack">({
    sims: { rack: { outlets: 4, seed: 11 } },
    captureLogs: false,
    yaml: (sims) => appYaml({ pdus: [pduYaml("rack", sims.rack, { pollInterval: 60 })], api: { key: KEY } }),
  });
  const withSignIn = await h.api.get("/openapi/v1.json");
  const without = await plain.api.get("/openapi/v1.json");
  assert.equal(withSignIn.status, 200);
  assert.deepEqual(withSignIn.json(), without.json());
});
