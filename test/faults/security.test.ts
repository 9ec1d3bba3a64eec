/**
 * Security properties of the running service, measured rather than assumed:
 *   - the API key never appears in a log line, a response (body or header), the OpenAPI document,
 *     the docs page, anything published over MQTT, or check-config's output;
 *   - comparing a wrong key takes as long whatever it shares with the right one (keyMatcher timed);
 *   - the lock-out after 10 wrong keys holds per client address (API bound to `::`, IPv4 and IPv6);
 *   - no CORS header on any answer (also to a preflight), security headers on the docs page;
 *   - the 64 KiB body limit is enforced before the body is read (10 MB bodies, declared and chunked).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { keyMatcher } from "../../src/http/api/key-guard.js";
import { API_CSP, DOCS_CSP } from "../../src/http/listener.js";
import { ClientPool, startBridge, type Answer, type RunningBridge } from "../../testkit/hostile-harness.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { REPO_ROOT } from "../../testkit/repo.js";

failOnUnhandled();

const KEY = `Sec-${Math.random().toString(36).slice(2, 12)}-${Date.now().toString(36)}-K3y`;
const P = "pdu-bridge";

let bridge: RunningBridge;
let api: ClientPool;
let health: ClientPool;
let mqtt: Recorder;
const answers: { what: string; answer: Answer }[] = [];

before(async () => {
  bridge = await startBridge({ apiKey: KEY, instances: { lab: true, ro: false } });
  api = new ClientPool("127.0.0.1", bridge.apiPort);
  health = new ClientPool("127.0.0.1", bridge.healthPort);
  mqtt = await Recorder.connect(bridge.broker, ["#"]);
});

after(async () => {
  await mqtt?.close();
  await api?.close();
  await health?.close();
  await bridge?.close();
});

const outletPath = (index: number, instance = "lab") =>
  `/api/v1/instances/${instance}/outlets/${bridge.deviceId}/${index}/control`;

async function call(
  pool: ClientPool,
  what: string,
  options: Parameters<ClientPool["request"]>[0],
  from?: string,
): Promise<Answer> {
  const answer = await pool.request(options, from);
  answers.push({ what, answer });
  return answer;
}

/** The key in the encodings a leak could take. */
const encodings = (key: string) => [
  key,
  Buffer.from(key).toString("base64"),
  Buffer.from(key).toString("hex"),
  encodeURIComponent(key),
  key.toLowerCase(),
];
const leaks = (text: string) => encodings(KEY).filter((e) => text.includes(e));

// ------------------------------------------------------------------ the key is never shown

test("the API key appears in no log line, response, document, MQTT message or check-config output", async () => {
  const json = { "content-type": "application/json" };
  // REST control with the right key, wrong keys (near misses included), no key, bad bodies.
  for (const [n, key] of [KEY, `${KEY}x`, KEY.slice(0, -1), `x${KEY}`, KEY.toUpperCase(), ""].entries()) {
    await call(
      api,
      `control with key #${n}`,
      {
        method: "POST",
        path: outletPath(n % 8),
        headers: { ...json, "x-api-key": key },
        body: '{"action":"on"}',
      },
      `127.0.2.${n + 1}`,
    );
  }
  await call(api, "control to ro", {
    method: "POST",
    path: outletPath(0, "ro"),
    headers: { ...json, "x-api-key": KEY },
    body: '{"action":"off"}',
  });
  await call(api, "control bad body", {
    method: "POST",
    path: outletPath(1),
    headers: { ...json, "x-api-key": KEY },
    body: `{"action":"${KEY}"}`.replace(KEY, "nope"),
  });
  await call(api, "control duplicate", {
    method: "POST",
    path: outletPath(1),
    headers: { ...json, "x-api-key": KEY },
    body: '{"action":"on","action":"off"}',
  });
  await call(api, "control wrong media type", {
    method: "POST",
    path: outletPath(1),
    headers: { "content-type": "text/plain", "x-api-key": KEY },
    body: "on",
  });
  await call(api, "control too large", {
    method: "POST",
    path: outletPath(1),
    headers: { ...json, "x-api-key": KEY },
    body: `{"action":"on"}${" ".repeat(70_000)}`,
  });
  // Every read endpoint, the documents and the docs page.
  for (const path of [
    "/",
    "/api/v1/instances",
    "/api/v1/health",
    "/api/v1/snapshots",
    "/api/v1/readings",
    "/openapi/v1.json",
    "/docs/v1",
    "/docs/v1/",
    "/docs/v1/json",
    "/docs/v1/static/swagger-initializer.js",
    "/nope",
  ]) {
    await call(api, `GET ${path}`, { method: "GET", path, headers: { "x-api-key": KEY } });
  }
  for (const path of ["/healthz", "/readyz", "/health/integrations", "/nope"]) {
    await call(health, `GET ${path}`, { method: "GET", path, headers: { "x-api-key": KEY } });
  }
  // MQTT commands, accepted and refused.
  await mqtt.publish(`${P}/lab/${bridge.deviceId}/outlets/5/set`, "off");
  await mqtt.publish(`${P}/lab/${bridge.deviceId}/outlets/5/set`, "maybe");
  await mqtt.publish(`${P}/ro/${bridge.deviceId}/outlets/5/reboot`, "");
  await waitFor(
    () => bridge.log.audits.filter((a) => a.source === "mqtt").length >= 3,
    "the MQTT audit lines",
  );

  const document = answers.find((a) => a.what === "GET /openapi/v1.json")?.answer;
  assert.equal(document?.status, 200);
  assert.match(document.body, /"X-Api-Key"/, "the document declares the key header");
  assert.ok(answers.some((a) => a.answer.status === 200 && a.what.startsWith("control with key")));
  assert.ok(answers.filter((a) => a.answer.status === 401).length >= 4, "wrong keys were answered 401");

  const found: string[] = [];
  for (const { what, answer } of answers) {
    if (leaks(answer.body).length > 0) found.push(`${what}: body`);
    if (leaks(JSON.stringify(answer.headers)).length > 0) found.push(`${what}: headers`);
  }
  if (leaks(bridge.log.text()).length > 0) found.push("log");
  for (const m of mqtt.messages) if (leaks(m.topic + m.payload).length > 0) found.push(`MQTT ${m.topic}`);
  assert.deepEqual(found, [], "the key leaked");
  // The log did record the control attempts (the scan looked at something real).
  assert.ok(bridge.log.audits.filter((a) => a.source === "rest").length >= 10);

  // check-config with the key in the environment and in a file: printed masked.
  const dir = mkdtempSync(join(tmpdir(), "security-"));
  try {
    const file = join(dir, "config.yaml");
    writeFileSync(file, "Pdus:\n  a:\n    Connection: { Host: 10.0.0.1 }\nApi: { Enabled: true }\n");
    writeFileSync(join(dir, "key"), `${KEY}\n`);
    for (const env of [{ SERVICE_API_KEY: KEY }, { SERVICE_API_KEY_FILE: join(dir, "key") }]) {
      const run = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [join(REPO_ROOT, "dist/src/main.js"), "check-config", "--config", file],
          {
            env: { PATH: process.env.PATH ?? "", ...env },
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
        let out = "";
        child.stdout.on("data", (c: Buffer) => (out += c.toString()));
        child.stderr.on("data", (c: Buffer) => (out += c.toString()));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, out }));
      });
      assert.equal(run.code, 0, run.out);
      assert.match(run.out, /ApiKey: "\*\*\*"/, "the key is shown as set, masked");
      assert.deepEqual(leaks(run.out), [], "check-config printed the key");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ------------------------------------------------------------------ constant-time comparison

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/**
 * Times each candidate in interleaved batches (a shuffled order each round). Returns, per
 * candidate, the median ns per call and the median of its time relative to the mean of all
 * candidates in the same round: drift of the machine (other processes, frequency scaling) moves a
 * whole round, so the relative figure cancels it.
 */
function timeCandidates(
  candidates: Record<string, () => boolean>,
  rounds: number,
  batch: number,
): { ns: Record<string, number>; relative: Record<string, number> } {
  const names = Object.keys(candidates);
  const absolute = new Map<string, number[]>(names.map((n) => [n, []]));
  const relative = new Map<string, number[]>(names.map((n) => [n, []]));
  for (const name of names) for (let i = 0; i < batch * 20; i++) candidates[name]!(); // warm-up
  for (let round = 0; round < rounds; round++) {
    const order = [...names].sort(() => Math.random() - 0.5);
    const times = new Map<string, number>();
    for (const name of order) {
      const fn = candidates[name]!;
      const start = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) fn();
      times.set(name, Number(process.hrtime.bigint() - start) / batch);
    }
    const mean = [...times.values()].reduce((a, b) => a + b, 0) / names.length;
    for (const [name, t] of times) {
      absolute.get(name)!.push(t);
      relative.get(name)!.push(t / mean);
    }
  }
  return {
    ns: Object.fromEntries(names.map((n) => [n, Math.round(median(absolute.get(n)!))])),
    relative: Object.fromEntries(names.map((n) => [n, median(relative.get(n)!)])),
  };
}

const spread = (medians: Record<string, number>) => {
  const values = Object.values(medians);
  return Math.max(...values) / Math.min(...values) - 1;
};

test("key comparison time does not depend on how much of the key a guess gets right", (t) => {
  const key = "k".repeat(8) + "0123456789abcdefghijklmnopqrstuv"; // 40 characters
  const matches = keyMatcher(key);
  const flip = (c: string) => (c === "x" ? "y" : "x");
  const guesses = {
    "shares no leading character": flip(key[0]!) + key.slice(1),
    "shares all but the last character": key.slice(0, -1) + flip(key.at(-1)!),
    "one character shorter": key.slice(0, -1),
    "five characters longer": `${key}12345`,
  };
  for (const guess of Object.values(guesses)) assert.equal(matches(guess), false);
  assert.equal(matches(key), true);
  const candidates = Object.fromEntries(
    Object.entries(guesses).map(([name, guess]) => [name, () => matches(guess)]),
  );
  // The configured key's own length must not show either (its digest is computed once).
  const short = keyMatcher("s".repeat(12));
  const long = keyMatcher("l".repeat(48));
  const presented = "p".repeat(30);
  const configured = {
    "configured 12 characters": () => short(presented),
    "configured 48 characters": () => long(presented),
  };

  const BOUND = 0.25;
  const measure = (rounds: number) => ({
    guesses: timeCandidates(candidates, rounds, 250),
    configured: timeCandidates(configured, rounds, 250),
  });
  const over = (r: ReturnType<typeof measure>) =>
    spread(r.guesses.relative) >= BOUND || spread(r.configured.relative) >= BOUND;
  let result = measure(400); // 4 × 400 × 250 + 2 × 400 × 250 = 600k comparisons
  if (over(result)) {
    t.diagnostic(`first measurement over the bound, measuring again: ${JSON.stringify(result)}`);
    result = measure(800);
  }
  t.diagnostic(
    `median ns per comparison: ${JSON.stringify({ guesses: result.guesses.ns, configured: result.configured.ns })}; ` +
      `spread of the round-relative medians ${(spread(result.guesses.relative) * 100).toFixed(1)}% (guesses), ` +
      `${(spread(result.configured.relative) * 100).toFixed(1)}% (configured length)`,
  );
  assert.ok(
    spread(result.guesses.relative) < BOUND,
    `comparison time depends on the guess: ${JSON.stringify(result.guesses)}`,
  );
  assert.ok(
    spread(result.configured.relative) < BOUND,
    `comparison time depends on the configured key's length: ${JSON.stringify(result.configured)}`,
  );
});

// ------------------------------------------------------------------ lock-out per address

async function ipv6Loopback(): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "::1", port: 0 }, () => server.close(() => resolve(true)));
  });
}

test("the lock-out after 10 wrong keys holds per client address (API on ::, IPv4 and IPv6)", async (t) => {
  const v6 = await ipv6Loopback();
  // Relay protection off: each address switches the same outlet in quick succession.
  const dual = await startBridge({
    apiKey: KEY,
    instances: { lab: true },
    relayProtection: 0,
    ...(v6 ? { apiBind: "::" } : {}),
  });
  const v4pool = new ClientPool("127.0.0.1", dual.apiPort);
  const v6pool = v6 ? new ClientPool("::1", dual.apiPort) : null;
  try {
    const control = (pool: ClientPool, key: string, from?: string) =>
      pool.request(
        {
          method: "POST",
          path: `/api/v1/instances/lab/outlets/${dual.deviceId}/0/control`,
          headers: { "content-type": "application/json", "x-api-key": key },
          body: '{"action":"on"}',
        },
        from,
      );
    for (let n = 1; n <= 10; n++)
      assert.equal((await control(v4pool, `wrong-${n}`)).status, 401, `wrong key ${n}`);
    const locked = await control(v4pool, "wrong-11");
    assert.equal(locked.status, 429);
    const retryAfter = Number(locked.headers["retry-after"]);
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `Retry-After ${retryAfter}`,
    );
    assert.equal((await control(v4pool, KEY)).status, 429, "locked out even with the right key");
    // Another IPv4 address is not affected.
    assert.equal((await control(v4pool, "wrong", "127.0.0.2")).status, 401);
    assert.equal((await control(v4pool, KEY, "127.0.0.2")).status, 200);
    if (v6pool === null) {
      t.diagnostic("IPv6 loopback (::1) is not available here: the ::1 part was skipped");
      return;
    }
    assert.equal(
      (await control(v6pool, "wrong")).status,
      401,
      "::1 is not locked out by 127.0.0.1's failures",
    );
    assert.equal((await control(v6pool, KEY)).status, 200, "::1 with the right key is served");
    const clients = new Set(dual.log.audits.map((a) => String(a.client)));
    assert.ok(clients.has("::1"), `audit clients: ${[...clients].join(", ")}`);
    assert.ok(
      [...clients].some((c) => c.endsWith("127.0.0.1")),
      `audit clients: ${[...clients].join(", ")}`,
    );
    assert.ok(!dual.log.text().includes(KEY), "the key appears in the log");
  } finally {
    await v4pool.close();
    await v6pool?.close();
    await dual.close();
  }
});

// ------------------------------------------------------------------ CORS and security headers

test("no CORS header on any answer, also to a preflight with Origin", async () => {
  const origin = { origin: "http://evil.example" };
  const preflight = {
    ...origin,
    "access-control-request-method": "POST",
    "access-control-request-headers": "x-api-key, content-type",
  };
  const seen: Answer[] = [];
  for (const path of [
    "/",
    "/api/v1/instances",
    "/api/v1/readings",
    "/openapi/v1.json",
    "/docs/v1/",
    outletPath(0),
    "/nope",
  ]) {
    seen.push(await api.request({ method: "OPTIONS", path, headers: preflight }));
    seen.push(await api.request({ method: "GET", path, headers: origin }));
  }
  seen.push(
    await api.request({
      method: "POST",
      path: outletPath(4),
      headers: { ...origin, "content-type": "application/json", "x-api-key": KEY },
      body: '{"action":"on"}',
    }),
  );
  for (const path of ["/healthz", "/readyz", "/health/integrations"]) {
    seen.push(await health.request({ method: "OPTIONS", path, headers: preflight }));
    seen.push(await health.request({ method: "GET", path, headers: origin }));
  }
  assert.ok(seen.some((a) => a.status === 200) && seen.some((a) => a.status === 405));
  const cors = seen.flatMap((a) => Object.keys(a.headers).filter((h) => h.startsWith("access-control-")));
  assert.deepEqual(cors, [], "CORS headers were sent");
});

test("security headers: the docs page, its assets, JSON and problems", async () => {
  const page = await api.request({ method: "GET", path: "/docs/v1/" });
  assert.equal(page.status, 200);
  assert.match(String(page.headers["content-type"]), /^text\/html/);
  assert.equal(page.headers["content-security-policy"], DOCS_CSP);
  for (const directive of [
    "default-src 'self'",
    "script-src 'self'",
    "object-src 'none'",
    "frame-ancestors 'none'",
  ]) {
    assert.ok(DOCS_CSP.includes(directive), `docs CSP lacks ${directive}`);
  }
  assert.ok(
    !DOCS_CSP.includes("unsafe-inline") && !DOCS_CSP.includes("unsafe-eval") && !/https?:/.test(DOCS_CSP),
  );
  assert.doesNotMatch(page.body, /(src|href)="https?:/, "the page loads something from another origin");
  const others = await Promise.all([
    api.request({ method: "GET", path: "/docs/v1/static/swagger-initializer.js" }),
    api.request({ method: "GET", path: "/api/v1/instances" }),
    api.request({ method: "GET", path: "/nope" }),
    health.request({ method: "GET", path: "/healthz" }),
  ]);
  for (const answer of [page, ...others]) {
    assert.equal(answer.headers["x-content-type-options"], "nosniff");
    assert.equal(answer.headers["x-frame-options"], "DENY");
    assert.equal(answer.headers["referrer-policy"], "no-referrer");
    assert.ok(answer.headers["content-security-policy"], "CSP missing");
  }
  assert.equal(others[1]?.headers["content-security-policy"], API_CSP);
  assert.equal(others[1]?.headers["cache-control"], "no-store");
});

// ------------------------------------------------------------------ body limit before reading

const TEN_MB = 10 * 1024 * 1024;

/**
 * Sends a request head, then the body in 64 KiB writes (waiting for `drain`), and stops writing as
 * soon as an answer arrives. Returns the answer and how many body bytes had been handed to the
 * socket by then (an upper bound of what the server can have read).
 */
function sendLarge(
  port: number,
  head: string,
  chunked: boolean,
  bodyBeforeWaitMs: number,
): Promise<{ status: number; text: string; bodyBytesWritten: number; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    let written = 0;
    let text = "";
    let answered = false;
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 15 s (${written} body bytes written)`));
    }, 15_000);
    const finish = () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, text, bodyBytesWritten: written, closed });
      socket.destroy();
    };
    socket.on("error", () => undefined); // the server may reset the rest of an unread body
    socket.on("close", () => {
      closed = true;
      if (!answered) {
        clearTimeout(timer);
        reject(new Error(`closed without an answer after ${written} body bytes`));
      }
    });
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (!answered && text.includes("\r\n\r\n")) {
        answered = true;
        // Give the body of the answer a moment, then report.
        setTimeout(finish, 50);
      }
    });
    const piece = Buffer.alloc(65536, 0x20);
    const pump = () => {
      while (!answered && !socket.destroyed && written < TEN_MB) {
        const data = chunked ? Buffer.concat([Buffer.from(`10000\r\n`), piece, Buffer.from("\r\n")]) : piece;
        written += piece.length;
        if (!socket.write(data)) {
          socket.once("drain", pump);
          return;
        }
      }
      if (!answered && !socket.destroyed && chunked) socket.write("0\r\n\r\n");
    };
    socket.write(head, () => {
      if (bodyBeforeWaitMs < 0) pump();
      else setTimeout(pump, bodyBeforeWaitMs);
    });
  });
}

test("a declared 10 MB body is refused with 413 before a byte of it is sent or read", async (t) => {
  for (const [listener, port, path] of [
    ["api", bridge.apiPort, outletPath(2)],
    ["health", bridge.healthPort, "/healthz"],
  ] as const) {
    const head =
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: ${KEY}\r\n` +
      `Content-Length: ${TEN_MB}\r\n\r\n`;
    // The body is held back for 2 s: the answer must come without it.
    const result = await sendLarge(port, head, false, 2000);
    t.diagnostic(`${listener}: ${result.status} after ${result.bodyBytesWritten} body bytes`);
    assert.equal(result.status, 413, result.text.slice(0, 300));
    assert.equal(result.bodyBytesWritten, 0, "the answer waited for the body");
    assert.match(result.text, /content-type: application\/problem\+json/i);
    assert.deepEqual(leaks(result.text), []);
  }
  assert.deepEqual(
    bridge.sim.writes().filter((w) => w.path.endsWith("/outlet/2")),
    [],
  );
});

test("a chunked 10 MB body is cut off at 64 KiB with 413", async (t) => {
  const head =
    `POST ${outletPath(2)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: ${KEY}\r\n` +
    "Transfer-Encoding: chunked\r\n\r\n";
  const result = await sendLarge(bridge.apiPort, head, true, -1);
  t.diagnostic(`chunked: ${result.status} after ${result.bodyBytesWritten} body bytes handed to the socket`);
  assert.equal(result.status, 413, result.text.slice(0, 300));
  // What the client handed to its socket bounds what the server read (the rest sits in buffers).
  assert.ok(result.bodyBytesWritten < TEN_MB, "the whole 10 MB went out before the answer");
  assert.deepEqual(
    bridge.sim.writes().filter((w) => w.path.endsWith("/outlet/2")),
    [],
  );
  // The service is fine afterwards.
  assert.equal((await health.request({ method: "GET", path: "/healthz" })).status, 200);
});
