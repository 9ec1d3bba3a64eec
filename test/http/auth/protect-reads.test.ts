/**
 * `Api.Oidc.ProtectReads` and `Api.Tls`, through the whole service with the API worker thread (it
 * owns the socket and answers plain reads itself) and without it: over HTTPS, reads and the event
 * stream need a console session or the API key (the worker answers none of them itself), wrong keys
 * count towards the lock-out, and the session cookie is `Secure` with the `__Host-` prefix.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, fetch } from "undici";
import { selfSignedCertificate } from "../../../src/simulator/cert.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../../testkit/app-harness.js";
import {
  CLIENT_SECRET,
  CookieJar,
  request,
  signInOverHttp,
  startTestProvider,
  type TestProvider,
} from "../../../testkit/oidc-provider.js";
import { canConnect, freePort } from "../../../testkit/repo.js";

const KEY = "protect-reads-key-0123456789abcde";
const SESSION = "__Host-pdu-bridge-session";

let op: TestProvider;
let dir: string;
let tls: Agent;
const ports: number[] = [];

before(async () => {
  ports.push(await freePort(), await freePort());
  op = await startTestProvider({
    redirectUris: ports.map((p) => `https://127.0.0.1:${p}/ui/auth/callback`),
    postLogoutRedirectUris: ports.map((p) => `https://127.0.0.1:${p}/ui/auth/signed-out`),
  });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-reads-"));
  const cert = await selfSignedCertificate();
  await writeFile(join(dir, "op.pem"), op.cert);
  await writeFile(join(dir, "api.pem"), cert.cert);
  await writeFile(join(dir, "api.key"), cert.key);
  // The API and the provider use the same self-signed certificate (one per process).
  tls = new Agent({ connect: { ca: cert.cert } });
});

after(async () => {
  await op?.close();
  await tls?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

for (const [i, worker] of [false, true].entries()) {
  describe(`Api.Worker: ${worker}`, () => {
    let h: AppHarness<"rack">;
    let base: string;

    before(async () => {
      const port = ports[i]!;
      base = `https://127.0.0.1:${port}`;
      h = await startAppHarness<"rack">({
        sims: { rack: { outlets: 2, seed: 31 } },
        env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
        yaml: (sims) =>
          appYaml({
            pdus: [pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: 1 })],
            api: {
              key: KEY,
              port,
              worker,
              more:
                `PublicUrl: ${JSON.stringify(base)}, ` +
                `Tls: { CertFile: ${JSON.stringify(join(dir, "api.pem"))}, KeyFile: ${JSON.stringify(join(dir, "api.key"))} }, ` +
                `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(join(dir, "op.pem"))}, ` +
                "Scopes: [openid, profile, email, groups], ProtectReads: true }",
            },
          }),
      });
      await h.waitForPoll("rack");
    });

    after(async () => {
      await h?.close();
    });

    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { dispatcher: tls, headers, redirect: "manual" });

    test("the listener speaks HTTPS only", async () => {
      const answer = await get("/openapi/v1.json");
      assert.equal(answer.status, 200);
      await answer.text();
      const plain = await fetch(`http://127.0.0.1:${ports[i]}/api/v1/health`).then(
        () => "answered",
        () => "refused",
      );
      assert.equal(plain, "refused");
      assert.ok(await canConnect(ports[i]!));
    });

    test("reads and the event stream need a session or the key; the worker answers none itself", async () => {
      for (const path of [
        "/api/v1/health",
        "/api/v1/readings",
        "/api/v1/readings?instance=rack",
        "/api/v1/instances",
        "/api/v1/events",
      ]) {
        const anonymous = await get(path);
        assert.equal(anonymous.status, 401, path);
        assert.match(await anonymous.text(), /console session or the X-Api-Key/);
      }
      const keyed = await get("/api/v1/readings", { "x-api-key": KEY });
      assert.equal(keyed.status, 200);
      assert.ok(((await keyed.json()) as unknown[]).length > 0);
      const wrong = await get("/api/v1/health", { "x-api-key": "wrong-key-0123456789abcdef" });
      assert.equal(wrong.status, 401);
      await wrong.text();
      // The documentation stays open.
      const docs = await get("/openapi/v1.json");
      assert.equal(docs.status, 200);
      await docs.text();
    });

    test("a signed-in browser reads with its Secure __Host- session cookie", async () => {
      const jar = new CookieJar();
      const raw = await fetch(`${base}/ui/auth/login`, { dispatcher: tls, redirect: "manual" });
      await raw.text();
      const flow = raw.headers.getSetCookie().join("\n");
      assert.match(flow, /^__Host-pdu-bridge-signin=.*; Path=\/; HttpOnly; SameSite=Lax; Secure/m);
      const { answer } = await signInOverHttp(jar, tls, base, "victor");
      assert.equal(answer.status, 303, answer.body);
      assert.ok(jar.get(SESSION));
      const health = await request(jar, tls, `${base}/api/v1/health`);
      assert.equal(health.status, 200);
      const events = await fetch(`${base}/api/v1/events?snapshots=false`, {
        dispatcher: tls,
        headers: { cookie: jar.header() },
      });
      assert.equal(events.status, 200);
      assert.match(events.headers.get("content-type") ?? "", /text\/event-stream/);
      await events.body?.cancel();
    });

    test("more than 10 wrong keys on reads lock the address out, as on control", async () => {
      let last = 0;
      for (let n = 0; n < 11; n++) {
        const answer = await get("/api/v1/instances", { "x-api-key": `wrong-key-${n}-0123456789abcdef` });
        last = answer.status;
        await answer.text();
      }
      assert.equal(last, 429);
      const right = await get("/api/v1/instances", { "x-api-key": KEY });
      assert.equal(right.status, 429, "locked out even with the right key");
      await right.text();
    });
  });
}
