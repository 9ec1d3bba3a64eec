/**
 * The console with OpenID Connect sign-in, in a real browser (Debian chromium through
 * playwright-core) against a real provider (oidc-provider over HTTPS on loopback) and the whole
 * service polling the simulator: an operator signs in at the provider and switches an outlet (the
 * audit line and the recent activity name them), signs out (the session is gone on the server and at
 * the provider); a viewer sees no control; a user without a role gets the page that says why; a
 * session that timed out sends the browser back to sign in and nothing is switched.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { Agent } from "undici";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import {
  CLIENT_SECRET,
  CookieJar,
  request,
  startTestProvider,
  type TestProvider,
} from "../../testkit/oidc-provider.js";
import { freePort } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

const skip = chromiumMissing;
const KEY = "browser-sign-in-key-0123456789abc";
const SESSION = "pdu-bridge-session";

let op: TestProvider;
let h: AppHarness<"rack">;
/** A second service whose sessions end after 2 s without activity. */
let brief: AppHarness<"rack">;
let bridge: string;
let briefBridge: string;
let dir: string;
const local = new Agent();
const browsers: BrowserSession[] = [];

async function startBridge(port: number, idle: number, ca: string): Promise<AppHarness<"rack">> {
  const started = await startAppHarness<"rack">({
    sims: { rack: { outlets: 4, seed: 21, stateLagMs: 500 } },
    env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: 1 })],
        api: {
          key: KEY,
          port,
          more:
            `PublicUrl: "http://127.0.0.1:${port}", ` +
            `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(ca)}, ` +
            `Scopes: [openid, profile, email, groups], Sessions: { IdleTimeout: ${idle} } }`,
        },
      }),
  });
  await started.waitForPoll("rack");
  return started;
}

before(async () => {
  if (skip) return;
  const [port, briefPort] = [await freePort(), await freePort()];
  bridge = `http://127.0.0.1:${port}`;
  briefBridge = `http://127.0.0.1:${briefPort}`;
  op = await startTestProvider({
    redirectUris: [`${bridge}/ui/auth/callback`, `${briefBridge}/ui/auth/callback`],
    postLogoutRedirectUris: [`${bridge}/ui/auth/signed-out`, `${briefBridge}/ui/auth/signed-out`],
  });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-oidc-ui-"));
  const ca = join(dir, "op.pem");
  await writeFile(ca, op.cert);
  h = await startBridge(port, 1800, ca);
  brief = await startBridge(briefPort, 2, ca);
});

after(async () => {
  if (skip) return;
  for (const b of browsers) await b.close();
  await h?.close();
  await brief?.close();
  await op?.close();
  await local.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A fresh browser (its own cookies at the service and at the provider). */
async function browser(name: string): Promise<BrowserSession> {
  const opened = await openBrowser(name, { width: 1280, height: 900 }, { ignoreHttpsErrors: true });
  browsers.push(opened);
  return opened;
}

/** Opens `url` and signs in at the provider's login page as `user`. */
async function signIn(page: Page, url: string, user: string): Promise<void> {
  await page.goto(url);
  await page.waitForURL((u) => u.href.startsWith(op.issuer), { timeout: 20_000 });
  await page.locator("#login").fill(user);
  await page.locator("button[type=submit]").click();
}

const sessionOf = async (b: BrowserSession): Promise<string | undefined> =>
  (await b.context.cookies()).find((c) => c.name === SESSION)?.value;

test(
  "an operator signs in, switches an outlet (the audit and the activity name them) and signs out",
  { skip },
  async () => {
    const b = await browser("oidc-operator");
    const { page } = b;
    await signIn(page, `${bridge}/ui/`, "alice");
    await page.waitForURL(`${bridge}/ui/`, { timeout: 20_000 });
    await page.locator(".user").filter({ hasText: "Alice Operator · operator" }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator("header button.key-button").textContent(), "Sign out");

    const sim = h.sims.rack;
    const deviceId = sim.deviceIds()[0]!;
    sim.setOutletState(deviceId, 1, "on");
    await page.goto(`${bridge}/ui/#/i/rack`);
    const card = page.locator(`li[data-outlet="${deviceId}/1"]`);
    await card.locator("button[data-action=off]").click({ timeout: 20_000 });
    await page.locator("dialog#confirm button[value=confirm]").click();
    await waitFor(() => sim.outlet(deviceId, 1).state === "off", "the simulator's outlet off", 10_000);
    // The audit line is written once the route has the PDU's answer, a moment after the switch.
    const line = await waitFor(
      () => h.audits().findLast((l) => l.target === `outlet ${deviceId}/1`),
      "the audit line of the switch",
      10_000,
    );
    assert.equal(line.user, "alice");
    assert.equal(line.userName, "Alice Operator");
    assert.equal(line.source, "console");
    await waitFor(
      async () =>
        ((await page.locator(".panel.events").textContent()) ?? "").includes("Alice Operator (console)"),
      "the recent activity names the user",
      10_000,
    );

    const id = await sessionOf(b);
    assert.ok(id);
    await page.locator("header button.key-button").click();
    await page.waitForURL((u) => u.href.startsWith(op.issuer), { timeout: 10_000 });
    await page.locator("button[name=logout]").click();
    await page.waitForURL(`${bridge}/ui/auth/signed-out`, { timeout: 10_000 });
    assert.match((await page.locator("h1").textContent()) ?? "", /Signed out/);
    const jar = new CookieJar();
    jar.set(SESSION, id);
    assert.equal((await request(jar, local, `${bridge}/ui/auth/session`)).status, 401, "the session is gone");
    // Signed out at the provider too: the console asks for the login again.
    await page.goto(`${bridge}/ui/`);
    await page.waitForURL((u) => u.href.startsWith(op.issuer), { timeout: 10_000 });
    await page.locator("#login").waitFor();
  },
);

test("a viewer sees the PDU and no control", { skip }, async () => {
  const { page } = await browser("oidc-viewer");
  await signIn(page, `${bridge}/ui/`, "victor");
  await page.waitForURL(`${bridge}/ui/`, { timeout: 20_000 });
  await page.goto(`${bridge}/ui/#/i/rack`);
  await page.locator("li[data-outlet]").first().waitFor({ timeout: 20_000 });
  assert.equal(await page.locator("button[data-action]").count(), 0);
  assert.match((await page.locator("main").textContent()) ?? "", /viewer role: values only/);
  assert.equal(await page.locator(".user").textContent(), "Victor Viewer · viewer");
});

test("a user without a role is refused with a page that says why", { skip }, async () => {
  const b = await browser("oidc-nobody");
  const { page } = b;
  await signIn(page, `${bridge}/ui/`, "nora");
  await page.waitForURL((u) => u.href.startsWith(`${bridge}/ui/auth/callback`), { timeout: 20_000 });
  assert.equal(await page.locator("h1").textContent(), "No access to this console");
  const why = (await page.locator(".why").textContent()) ?? "";
  assert.match(why, /Nora Nobody/);
  assert.equal(await sessionOf(b), undefined);
  const violations = await page.evaluate<string[]>("window.cspViolations");
  assert.deepEqual(violations, []);
});

test(
  "a session that timed out sends the browser back to sign in; nothing is switched",
  { skip },
  async () => {
    const b = await browser("oidc-expired");
    const { page } = b;
    await signIn(page, `${briefBridge}/ui/#/i/rack`, "alice");
    await page.waitForURL(`${briefBridge}/ui/`, { timeout: 20_000 });
    await page.goto(`${briefBridge}/ui/#/i/rack`);
    const sim = brief.sims.rack;
    const deviceId = sim.deviceIds()[0]!;
    // On, so that its "Off" is offered (the console does not offer the state an outlet is in).
    sim.setOutletState(deviceId, 2, "on");
    const card = page.locator(`li[data-outlet="${deviceId}/2"]`);
    await card.locator("button[data-action=off]").waitFor({ timeout: 20_000 });
    const before = await sessionOf(b);
    const writes = sim.writes().length;
    await new Promise((resolve) => setTimeout(resolve, 3000)); // past Sessions.IdleTimeout: 2
    await card.locator("button[data-action=off]").click();
    await page.locator("dialog#confirm button[value=confirm]").click();
    await waitFor(
      () => b.requests.some((u) => u.startsWith(`${briefBridge}/ui/auth/login?return=`)),
      "sent back to sign in",
      10_000,
    );
    assert.equal(sim.writes().length, writes, "nothing was switched");
    const line = await waitFor(
      () => brief.audits().findLast((l) => l.target === `outlet ${deviceId}/2`),
      "the refusal's audit line",
    );
    assert.equal(line.status, 401, "refused before control, and audited");
    assert.equal(line.user, undefined);
    // The provider still knows the browser: the sign-in completes by itself, with a new session.
    await page.waitForURL(`${briefBridge}/ui/#/i/rack`, { timeout: 20_000 });
    await waitFor(
      async () => (await sessionOf(b)) !== undefined && (await sessionOf(b)) !== before,
      "a new session",
    );
  },
);
