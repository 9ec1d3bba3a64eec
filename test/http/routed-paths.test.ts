/**
 * The sign-in's path rules decide on what the router routes, not on the request line as written:
 * with `Api.Oidc` on and `ProtectReads`, every spelling of a read path (a letter percent-encoded,
 * double encoding, `//`, `/./`, `..`, mixed case, a backslash, an absolute-form request target) is
 * 401 or 404, never 200 with data; every spelling of the console page sends a browser to the
 * sign-in (or is 404), never serves the page; a control request under any spelling without the key
 * reaches no outlet. Raw sockets against the real listener, with and without the API worker
 * thread, and a real OpenID provider.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildApiServer } from "../../src/http/api/server.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { configFrom, harness } from "../../testkit/http-harness.js";
import { CLIENT_SECRET, startTestProvider, type TestProvider } from "../../testkit/oidc-provider.js";
import { rawGet, rawRequest, type RawAnswer } from "../../testkit/raw-http.js";
import { freePort } from "../../testkit/repo.js";

const KEY = "routed-paths-key-0123456789abcdef";

let op: TestProvider;
let dir: string;
const ports: number[] = [];

/** `%xx` of a character, lower- or upper-case hex. */
const pct = (c: string, upper: boolean): string => {
  const hex = c.charCodeAt(0).toString(16).padStart(2, "0");
  return `%${upper ? hex.toUpperCase() : hex}`;
};

/**
 * Spellings of `path` (no query) that a router might take for it: every letter percent-encoded on
 * its own (both hex cases), all letters at once, double encoding, slashes and dot segments, case,
 * a backslash, `%2F` for a slash.
 */
function pathVariants(path: string): string[] {
  const out = new Set<string>();
  const chars = [...path];
  chars.forEach((c, i) => {
    if (!/[A-Za-z0-9]/.test(c)) return;
    for (const upper of [false, true])
      out.add([...chars.slice(0, i), pct(c, upper), ...chars.slice(i + 1)].join(""));
    out.add([...chars.slice(0, i), `%25${pct(c, false).slice(1)}`, ...chars.slice(i + 1)].join(""));
    const flipped = c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase();
    if (flipped !== c) out.add([...chars.slice(0, i), flipped, ...chars.slice(i + 1)].join(""));
  });
  out.add(chars.map((c) => (/[A-Za-z]/.test(c) ? pct(c, false) : c)).join(""));
  out.add(chars.map((c) => (/[A-Za-z]/.test(c) ? `%25${pct(c, true).slice(1)}` : c)).join(""));
  out.add(path.toUpperCase());
  const slashes = [...path.matchAll(/\//g)].map((m) => m.index);
  for (const at of slashes) {
    const before = path.slice(0, at);
    const after = path.slice(at);
    out.add(`${before}/${after}`);
    out.add(`${before}/.${after}`);
    out.add(`${before}/%2e${after}`);
    out.add(`${before}/x/..${after}`);
    out.add(`${before}/x/%2e%2e${after}`);
    if (at > 0) out.add(`${before}%2F${after.slice(1)}`);
    if (at > 0) out.add(`${before}%2f${after.slice(1)}`);
  }
  out.add(`${path}/`);
  out.add(`${path}/.`);
  out.add(`${path};x`);
  out.add(`${path}%00`);
  out.add(path.replaceAll("/", "\\"));
  out.add(`/${path}`);
  out.delete(path);
  return [...out];
}

/** Absolute-form request targets for `path` (as a proxy would be sent them). */
function absoluteForms(port: number, path: string): string[] {
  return [
    `http://127.0.0.1:${port}${path}`,
    `HTTP://127.0.0.1:${port}${path}`,
    `http://evil.example${path}`,
    `https://127.0.0.1:${port}${path}`,
    `http://127.0.0.1:${port}/${path}`,
    `http://127.0.0.1:${port}${path.replace("/api/", "/%61pi/").replace("/ui", "/%75i")}`,
  ];
}

interface Tally {
  tried: number;
  leaked: string[];
  crashed: number;
}

/** An answer that gives data away: any 2xx. */
const leaks = (answer: RawAnswer): boolean => answer.status >= 200 && answer.status < 300;

before(async () => {
  ports.push(await freePort(), await freePort());
  op = await startTestProvider({
    redirectUris: ports.map((p) => `http://127.0.0.1:${p}/ui/auth/callback`),
    postLogoutRedirectUris: ports.map((p) => `http://127.0.0.1:${p}/ui/auth/signed-out`),
  });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-paths-"));
  await writeFile(join(dir, "op.pem"), op.cert);
});

after(async () => {
  await op?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

for (const [i, worker] of [false, true].entries()) {
  describe(`path rules on the routed path (Api.Worker: ${worker})`, () => {
    let h: AppHarness<"rack">;
    let port: number;
    let dev: string;

    before(async () => {
      port = ports[i]!;
      h = await startAppHarness<"rack">({
        sims: { rack: { outlets: 2, seed: 41 } },
        env: { SERVICE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
        yaml: (sims) =>
          appYaml({
            pdus: [pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: 1 })],
            api: {
              key: KEY,
              port,
              worker,
              more:
                `PublicUrl: "http://127.0.0.1:${port}", ` +
                `Oidc: { Enabled: true, Issuer: ${JSON.stringify(op.issuer)}, CaFile: ${JSON.stringify(join(dir, "op.pem"))}, ` +
                "Scopes: [openid, profile, email, groups], ProtectReads: true }",
            },
          }),
      });
      await h.waitForPoll("rack");
      dev = h.sims.rack.deviceIds()[0]!;
    });

    after(async () => {
      await h?.close();
    });

    test("every spelling of a read path is 401 or 404, never data", async (t) => {
      const reads = [
        "/api/v1/readings",
        "/api/v1/health",
        "/api/v1/instances",
        "/api/v1/snapshots",
        "/api/v1/alarms",
        "/api/v1/events",
        `/api/v1/instances/rack/outlets/${dev}/0/history`,
      ];
      const tally: Tally = { tried: 0, leaked: [], crashed: 0 };
      for (const path of reads) {
        const plain = await rawGet(port, path);
        assert.equal(plain.status, 401, `${path} as written: ${plain.head}`);
        const targets = [...pathVariants(path), ...absoluteForms(port, path)];
        if (path === "/api/v1/readings") targets.push(...targets.map((t) => `${t}?instance=rack`));
        for (const target of targets) {
          tally.tried++;
          const answer = await rawGet(port, target, [], { waitMs: 200 });
          if (answer.status === 0) tally.crashed++;
          if (leaks(answer)) tally.leaked.push(`${target} → ${answer.status}`);
          else
            assert.ok(
              [400, 401, 404, 405].includes(answer.status),
              `${target}: ${answer.status} ${answer.head.split("\r\n")[0]}`,
            );
        }
      }
      assert.deepEqual(
        tally.leaked,
        [],
        `${tally.leaked.length} of ${tally.tried} spellings answered with data`,
      );
      assert.equal(tally.crashed, 0);
      assert.ok(tally.tried > 500, `${tally.tried} spellings tried`);
      t.diagnostic(
        `read paths: ${tally.tried} spellings, ${tally.crashed} unanswered, ${tally.leaked.length} leaked`,
      );
    });

    test("every spelling of the console page sends the browser to sign in, or is 404", async (t) => {
      const tally: Tally = { tried: 0, leaked: [], crashed: 0 };
      for (const path of ["/ui/", "/ui"]) {
        for (const target of [...pathVariants(path), ...absoluteForms(port, path)]) {
          tally.tried++;
          const answer = await rawGet(port, target);
          if (answer.status === 0) tally.crashed++;
          if (leaks(answer)) tally.leaked.push(`${target} → ${answer.status}`);
          if (answer.status === 302) {
            const location = /\r\nlocation: ([^\r]*)/i.exec(answer.head)?.[1] ?? "";
            assert.ok(
              location.startsWith("/ui/auth/login") || location === "/ui/",
              `${target} redirects to ${location}`,
            );
          } else assert.ok([400, 404].includes(answer.status), `${target}: ${answer.head.split("\r\n")[0]}`);
        }
      }
      assert.deepEqual(tally.leaked, []);
      assert.equal(tally.crashed, 0);
      t.diagnostic(
        `console page: ${tally.tried} spellings, ${tally.crashed} unanswered, ${tally.leaked.length} served`,
      );
      const page = await rawGet(port, "/%75i/");
      assert.equal(page.status, 302, page.head);
      assert.match(page.head, /\r\nlocation: \/ui\/auth\/login/i);
    });

    test("no spelling of a control request without the key reaches an outlet", async (t) => {
      h.sims.rack.clearRequests();
      const body = JSON.stringify({ action: "off" });
      const path = `/api/v1/instances/rack/outlets/${dev}/0/control`;
      let tried = 0;
      for (const target of [path, ...pathVariants(path), ...absoluteForms(port, path)]) {
        tried++;
        const answer = await rawRequest(
          port,
          `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        assert.ok(!leaks(answer), `${target}: ${answer.head.split("\r\n")[0]}`);
      }
      assert.ok(tried > 200);
      assert.deepEqual(h.sims.rack.writes(), [], "no request reached the PDU");
      t.diagnostic(`control: ${tried} spellings, ${h.sims.rack.writes().length} writes reached the PDU`);
    });
  });
}

test("every spelling of the docs' static/index.html redirects to the docs page, never to itself", async (t) => {
  const h = harness(
    await configFrom(
      "Pdus:\n  lab:\n    Connection: { Host: 192.0.2.1 }\nApi: { Enabled: true, Bind: 127.0.0.1, Port: 0 }\n",
    ),
  );
  const app = await buildApiServer(h.deps);
  t.after(() => app.close());
  const path = "/docs/v1/static/index.html";
  let tried = 0;
  for (const url of [path, `${path}?x=1`, ...pathVariants(path)]) {
    tried++;
    const answer = await app.inject({ url });
    if (answer.statusCode !== 302) continue;
    assert.equal(answer.headers.location, "/docs/v1/", `${url} redirects to ${answer.headers.location}`);
  }
  assert.ok(tried > 50);
  t.diagnostic(`docs index: ${tried} spellings, none redirects to itself`);
});
