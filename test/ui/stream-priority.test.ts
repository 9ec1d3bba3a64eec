/**
 * Signed-in consoles keep their event streams against anonymous ones, through the whole service
 * (API worker) with a real OpenID provider and raw sockets from chosen loopback addresses: with
 * every place taken by 64 anonymous addresses, a signed-in console gets its stream at once (the
 * oldest anonymous stream ends) while an anonymous newcomer waits for the rotation age; anonymous
 * newcomers then rotating through every place never end the signed-in stream.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import {
  CLIENT_SECRET,
  CookieJar,
  signInOverHttp,
  startTestProvider,
  type TestProvider,
} from "../../testkit/oidc-provider.js";
import { RawStream } from "../../testkit/raw-http.js";
import { freePort, sleep } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

// Longer than opening 64 streams takes on a busy machine, so that none is old enough before the check.
const ROTATE_MS = 10_000;

let op: TestProvider;
let dir: string;
let h: AppHarness<"rack">;
let port: number;
const open: RawStream[] = [];

before(async () => {
  port = await freePort();
  op = await startTestProvider({
    redirectUris: [`http://127.0.0.1:${port}/ui/auth/callback`],
    postLogoutRedirectUris: [`http://127.0.0.1:${port}/ui/auth/signed-out`],
  });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-priority-"));
  await writeFile(join(dir, "op.pem"), op.cert);
  h = await startAppHarness<"rack">({
    sims: { rack: { outlets: 2, seed: 5 } },
    env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    consoleLimits: { rotateAfterMs: ROTATE_MS },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("rack", sims.rack, { pollInterval: 1 })],
        api: {
          key: "",
          port,
          worker: true,
          more:
            `PublicUrl: "http://127.0.0.1:${port}", ` +
            `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(join(dir, "op.pem"))}, ` +
            "Scopes: [openid, profile, email, groups] }",
        },
      }),
  });
  await h.waitForPoll("rack");
});

after(async () => {
  for (const s of open) s.close();
  await h?.close();
  await op?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function stream(from: string, headers: Record<string, string> = {}): Promise<RawStream> {
  const s = new RawStream(port, from, true, headers);
  open.push(s);
  await s.answered.catch(() => undefined);
  return s;
}

test("a signed-in console takes an anonymous place at once, and anonymous ones never take it back", async (t) => {
  const feed = h.app.console!;
  const jar = new CookieJar();
  const { answer } = await signInOverHttp(jar, op.agent, `http://127.0.0.1:${port}`, "victor");
  assert.equal(answer.status, 303, answer.body);

  const anonymous: RawStream[] = [];
  for (let a = 1; a <= 64; a++) anonymous.push(await stream(`127.0.5.${a}`));
  assert.ok(anonymous.every((s) => s.status === 200));
  const refused = await stream("127.0.0.6");
  assert.equal(refused.status, 503, "an anonymous newcomer waits");
  refused.close();

  const signedIn = await stream("127.0.0.7", { cookie: jar.header() });
  assert.equal(signedIn.status, 200, signedIn.head);
  await waitFor(() => /^event: snapshot$/m.test(signedIn.body), "the signed-in console's snapshot");
  assert.equal(feed.streams, 64);
  await waitFor(() => anonymous[0]!.closed || anonymous[0]!.dechunked().ended, "the oldest anonymous ended");

  // Every anonymous stream passes the rotation age; anonymous newcomers then take their places,
  // one each, until none is old enough: the signed-in stream, the oldest of all, is never taken.
  await sleep(ROTATE_MS + 100);
  let admitted = 0;
  let tried = 0;
  for (let a = 1; a <= 70; a++) {
    tried++;
    const s = await stream(`127.0.6.${a}`);
    if (s.status === 200) admitted++;
    else s.close();
  }
  assert.equal(admitted, 63, "each anonymous place taken once");
  assert.equal(feed.streamsOf("127.0.0.7"), 1, "the signed-in stream is still open");
  assert.ok(!signedIn.closed && !signedIn.dechunked().ended);
  t.diagnostic(`64 anonymous holders, 1 signed-in, ${tried} anonymous newcomers: ${admitted} rotated in`);
});
