/**
 * The protected-asset rule on the console's path: an operator signed in with OpenID Connect (a
 * real provider over HTTPS on loopback) sends what the console's buttons send, with the session
 * cookie and the CSRF token. The last live cord's off, a setting that holds it off and the asset's
 * off are refused (409 naming the asset), nothing reaching the simulators; the asset's confirmed
 * reboot runs, and each cord's audit line names the user and the asset.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Agent } from "undici";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { feedAssetBook, type FedBook } from "../../testkit/asset-book.js";
import {
  CLIENT_SECRET,
  CookieJar,
  request,
  signInOverHttp,
  startTestProvider,
  type TestProvider,
} from "../../testkit/oidc-provider.js";
import { freePort } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "protected-console-key-0f3a9b27c1d4e5f6";

let op: TestProvider;
let h: AppHarness<"a" | "b">;
let fed: FedBook;
let bridge: string;
let dir: string;
const local = new Agent();
let devA = "";
let devB = "";
let session: { jar: CookieJar; csrf: string };

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
  h = await startAppHarness<"a" | "b">({
    sims: { a: { outlets: 2, seed: 21 }, b: { outlets: 2, seed: 22 } },
    env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    yaml: (sims) =>
      appYaml({
        pdus: [
          pduYaml("a", sims.a, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
          pduYaml("b", sims.b, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
        ],
        api: {
          key: KEY,
          port,
          more:
            `PublicUrl: ${JSON.stringify(bridge)}, ` +
            `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(ca)}, ` +
            "Scopes: [openid, profile, email, groups] }",
        },
      }),
    waitForFirstPolls: true,
  });
  devA = h.sims.a.deviceIds()[0]!;
  devB = h.sims.b.deviceIds()[0]!;
  fed = feedAssetBook(h.app, {
    Pdus: { a: {}, b: {} },
    Assets: {
      "db-01": {
        Protected: true,
        Cords: [
          { Instance: "a", Outlet: 0 },
          { Instance: "b", Outlet: 0 },
        ],
      },
    },
  });
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, bridge, "alice");
  assert.equal(answer.status, 303, answer.body);
  const info = await request(jar, local, `${bridge}/ui/auth/session`);
  session = { jar, csrf: (JSON.parse(info.body) as { csrfToken: string }).csrfToken };
});

after(async () => {
  fed?.close();
  await h?.close();
  await op?.close();
  await local.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A request as the console sends it: the session cookie, the CSRF token, the same origin. */
function send(method: string, path: string, body: object) {
  return request(session.jar, local, `${bridge}${path}`, {
    method,
    headers: { "content-type": "application/json", origin: bridge, "x-csrf-token": session.csrf },
    body: JSON.stringify(body),
  });
}

const writes = () => h.sims.a.journal().length + h.sims.b.journal().length;

test("the console's off, setting and asset off of a protected asset's last live cord: refused, nothing sent", async () => {
  // The second cord off first (allowed: the first is live), through the console too.
  const first = await send("POST", `/api/v1/instances/b/outlets/${devB}/0/control`, { action: "off" });
  assert.equal(first.status, 200, first.body);
  await waitFor(() => fed.book.get("db-01")?.readings[1]?.status === "off", "cord 2 off in the book");
  const before = writes();
  const off = await send("POST", `/api/v1/instances/a/outlets/${devA}/0/control`, { action: "off" });
  assert.equal(off.status, 409, off.body);
  assert.match(off.body, /protected asset db-01 would be left with no live cord/);
  const setting = await send("PATCH", `/api/v1/instances/a/outlets/${devA}/0`, { poaAction: "off" });
  assert.equal(setting.status, 409, setting.body);
  assert.match(setting.body, /protected asset db-01/);
  const asset = await send("POST", `/api/v1/assets/db-01/control`, { action: "off" });
  assert.equal(asset.status, 409, asset.body);
  assert.equal(writes(), before, "nothing was sent to either PDU");
  assert.equal(h.sims.a.outlet(devA, 0).state, "on");
  const refused = h.audits().filter((l) => l.source === "console" && l.status === 409);
  assert.ok(refused.length >= 3, JSON.stringify(refused));
});

test("the console's confirmed reboot of the protected asset runs, audited with the user and the asset", async () => {
  const on = await send("POST", `/api/v1/assets/db-01/control`, { action: "on" });
  assert.equal(on.status, 200, on.body);
  const res = await send("POST", `/api/v1/assets/db-01/control`, { action: "reboot", confirm: true });
  assert.equal(res.status, 200, res.body);
  const lines = h.audits().filter((l) => l.asset === "db-01" && l.source === "console" && l.status === 200);
  assert.ok(lines.length >= 4, `${lines.length} lines`);
  assert.ok(
    lines.every((l) => typeof l.user === "string" && String(l.user).length > 0),
    JSON.stringify(lines[0]),
  );
});
