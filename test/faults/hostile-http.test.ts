/**
 * Hostile input on both HTTP listeners of the real service (simulator + App, API with a key and an
 * ActionsEnabled instance): random methods, paths, query strings, headers and bodies through a
 * keep-alive client, and random malformed HTTP through raw sockets. Every answer must be a status
 * the contract and the OpenAPI document allow for that listener, every error must be an
 * `application/problem+json` problem without a stack trace, never a 500; no CORS header anywhere;
 * and the service keeps running (health /healthz OK at the end, no error logged, no unhandled error).
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import fc from "fast-check";
import {
  ClientPool,
  mediaType,
  printedAs,
  startBridge,
  type Answer,
  type RunningBridge,
} from "../../testkit/hostile-harness.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const KEY = `hostile-http-${Math.random().toString(36).slice(2)}-key`;
const API_RUNS = 6000;
const HEALTH_RUNS = 3000;
const RAW_RUNS = 2000;

/** Statuses each listener may answer (contract §4/§5, docs/http.md "Errors", the OpenAPI document). */
const API_STATUSES = new Set([
  200, 302, 304, 400, 401, 403, 404, 405, 409, 413, 414, 415, 429, 431, 502, 503, 504,
]);
/** Headers that make a GET conditional (RFC 9110 13.1): the docs assets may answer them 304. */
const CONDITIONAL = new Set(["if-none-match", "if-modified-since"]);
const HEALTH_STATUSES = new Set([200, 400, 404, 405, 413, 431, 503]);
const CONTROL_PATH = /^\/api\/v1\/instances\/[^/?]+\/(outlets\/[^/?]+\/[^/?]+|groups\/[^/?]+)\/control$/;
const STACK = /\n\s+at\s|\bat\s+\S+\s+\(\S+:\d+:\d+\)/;

let bridge: RunningBridge;
let api: ClientPool;
let health: ClientPool;
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

before(async () => {
  bridge = await startBridge({ apiKey: KEY, instances: { lab: true, ro: false } });
  api = new ClientPool("127.0.0.1", bridge.apiPort);
  health = new ClientPool("127.0.0.1", bridge.healthPort);
});

after(async () => {
  await api?.close();
  await health?.close();
  await bridge?.close();
});

// ------------------------------------------------------------------ generators

const SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~";
const TOKEN = `${SAFE}!#$%&'*+^\`|`;
const VISIBLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));

const segment = (deviceId: () => string) =>
  fc.oneof(
    fc.constantFrom(
      "lab",
      "LAB",
      "ro",
      "nope",
      "0",
      "7",
      "8",
      "-1",
      "00",
      "1e3",
      "0x1",
      "1.5",
      "9999999999",
      "..",
      ".",
      "%2e%2e",
      "%2F",
      "%00",
      "%zz",
      "%",
      "%E2%82",
      "*",
      ";",
      "@",
      "control",
      "outlets",
      "groups",
      "total",
      "__proto__",
      "constructor",
      "prototype",
      "",
    ),
    fc.constant(null).map(() => deviceId()),
    fc.string({ unit: fc.constantFrom(...SAFE), maxLength: 24 }),
    fc.string({ unit: "grapheme", maxLength: 12 }).map(encodeURIComponent),
    fc.integer({ min: 90, max: 140 }).map((n) => "d".repeat(n)),
    // Segments over 400 characters (fastify's maxParamLength) are 414.
    fc.integer({ min: 390, max: 420 }).map((n) => "d".repeat(n)),
  );

const KNOWN_API = [
  "/",
  "/api/v1/instances",
  "/api/v1/health",
  "/api/v1/snapshots",
  "/api/v1/readings",
  "/openapi/v1.json",
  "/docs/v1",
  "/docs/v1/",
  "/docs/v1/json",
  "/docs/v1/static/index.html",
  "/docs/v1/static/../../package.json",
  "/docs/v1/static/%2e%2e/%2e%2e/package.json",
  "/api/v1",
  "/api",
  "//api/v1/instances",
  "/api/v1/instances/",
  "/API/V1/INSTANCES",
];
const KNOWN_HEALTH = ["/healthz", "/readyz", "/health/integrations", "/", "/health", "/healthz/", "/HEALTHZ"];

const pathArb = (known: readonly string[], deviceId: () => string) => {
  const seg = segment(deviceId);
  // Control paths mostly name real things, so that the checks after the key are reached too.
  const instance = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("lab", "ro", "LAB") },
    { weight: 1, arbitrary: seg },
  );
  const device = fc.oneof(
    { weight: 3, arbitrary: fc.constant(null).map(() => deviceId()) },
    { weight: 1, arbitrary: seg },
  );
  const index = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 9 }).map(String) },
    { weight: 1, arbitrary: seg },
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...known) },
    {
      weight: 5,
      arbitrary: fc
        .tuple(instance, device, index)
        .map(([a, b, c]) => `/api/v1/instances/${a}/outlets/${b}/${c}/control`),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(instance, seg).map(([a, b]) => `/api/v1/instances/${a}/groups/${b}/control`),
    },
    { weight: 2, arbitrary: fc.array(seg, { maxLength: 8 }).map((s) => `/${s.join("/")}`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...known), fc.constantFrom("/", "//", "/x", "/..", "%00", "#frag", "/%2e"))
        .map(([p, s]) => p + s),
    },
  );
};

const queryValue = fc.oneof(
  fc.constantFrom("lab", "LAB", "ro", "", "nope", "%zz", "%", "__proto__"),
  fc.string({ unit: "grapheme", maxLength: 16 }).map(encodeURIComponent),
  fc.integer({ min: 200, max: 3000 }).map((n) => "q".repeat(n)),
);
const queryArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant("") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "?instance=lab",
      "?instance=LAB",
      "?instance=",
      "?instance=nope",
      "?",
      "?&&",
      "?instance=lab&instance=ro",
      "?__proto__[polluted]=1",
      "?constructor[prototype][polluted]=1",
      "?__proto__.polluted=1",
      "?a=%zz",
      "?instance",
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.oneof(
            fc.constantFrom("instance", "__proto__", "constructor", "x"),
            fc.string({ maxLength: 8 }).map(encodeURIComponent),
          ),
          queryValue,
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join("&")}`),
  },
);

/** Header names that would change the framing of the request itself (covered by the raw-socket test). */
const FRAMING = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "proxy-connection",
]);
const headerName = fc
  .oneof(
    fc.constantFrom(
      "origin",
      "access-control-request-method",
      "access-control-request-headers",
      "x-forwarded-for",
      "forwarded",
      "authorization",
      "cookie",
      "accept",
      "accept-encoding",
      "range",
      "if-none-match",
      "x-http-method-override",
      "x-original-url",
      "__proto__",
      "constructor",
    ),
    fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 24 }),
  )
  .filter(
    (n) =>
      !FRAMING.has(n.toLowerCase()) && n.toLowerCase() !== "x-api-key" && n.toLowerCase() !== "content-type",
  );
const headerValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(...VISIBLE), maxLength: 64 }).map((v) => v.trim()),
  fc.constantFrom("*", "null", "http://evil.example", "GET", "bytes=0-1,5-", "127.0.0.1", "DELETE"),
  fc.integer({ min: 1000, max: 6000 }).map((n) => "h".repeat(n)),
);

type KeyChoice = "none" | "right" | "wrong" | "empty" | "padded" | "prefix";
const keyArb = fc.constantFrom<KeyChoice>(
  "none",
  "right",
  "right",
  "right",
  "wrong",
  "empty",
  "padded",
  "prefix",
);
const keyValue = (choice: KeyChoice, wrong: string): string | undefined =>
  choice === "none"
    ? undefined
    : choice === "right"
      ? KEY
      : choice === "empty"
        ? ""
        : choice === "padded"
          ? ` ${KEY} ` // surrounding whitespace is not part of a header value (RFC 9110): the right key
          : choice === "prefix"
            ? KEY.slice(0, -1)
            : wrong;
/** Whether the server sees the configured key. */
const sendsRightKey = (choice: KeyChoice) => choice === "right" || choice === "padded";

const contentTypeArb = fc.oneof(
  fc.constantFrom(
    undefined,
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/problem+json",
    "application/json-patch+json",
    "application/json, text/plain",
    "",
  ),
  fc.string({ unit: fc.constantFrom(...VISIBLE), maxLength: 40 }).map((v) => v.trim()),
);

const bodyArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom('{"action":"on"}', '{"action":"off"}', '{"action":"reboot"}', "{}"),
  },
  { weight: 3, arbitrary: fc.json({ maxDepth: 3 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60_000, max: 70_000 }).map((n) => `{"action":"${"x".repeat(n)}"}`),
  },
  { weight: 1, arbitrary: fc.constant('{"__proto__":{"polluted":true},"action":"on"}') },
);

const METHODS = [
  "GET",
  "GET",
  "GET",
  "HEAD",
  "POST",
  "POST",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "TRACE",
];
const methodArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...METHODS) },
  { weight: 1, arbitrary: fc.constantFrom("PROPFIND", "MKCOL", "SEARCH", "PURGE", "LINK", "QUERY", "FOO") },
);

interface HostileRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly key: KeyChoice;
  readonly body: string | undefined;
  /** One of 1024 loopback addresses (127.0.1.1-127.0.5.x): a few wrong keys do not lock every later case out. */
  readonly from: string;
}

const requestArb = (known: readonly string[], deviceId: () => string): fc.Arbitrary<HostileRequest> =>
  fc
    .record({
      method: methodArb,
      post: fc.boolean(),
      path: pathArb(known, deviceId),
      query: queryArb,
      extra: fc.dictionary(headerName, headerValue, { maxKeys: 4 }),
      key: keyArb,
      wrong: fc.string({ unit: fc.constantFrom(...SAFE), minLength: 1, maxLength: 80 }),
      contentType: contentTypeArb,
      body: bodyArb,
      from: fc.integer({ min: 0, max: 1023 }),
    })
    .map((r) => {
      const headers: Record<string, string> = { ...r.extra };
      const key = keyValue(r.key, r.wrong);
      if (key !== undefined) headers["x-api-key"] = key;
      // Half of the requests to control paths are POSTs (the only method they serve).
      const method = r.post && CONTROL_PATH.test(r.path.split(/[?#]/, 1)[0] ?? "") ? "POST" : r.method;
      const hasBody = method !== "GET" && method !== "HEAD";
      if (hasBody && r.contentType !== undefined) headers["content-type"] = r.contentType;
      const request: HostileRequest = {
        method,
        path: r.path + r.query,
        headers,
        key: r.key,
        body: hasBody ? r.body : undefined,
        from: `127.0.${1 + Math.floor(r.from / 254)}.${1 + (r.from % 254)}`,
      };
      const shown = Object.fromEntries(
        Object.entries(headers).map(([k, v]) => [k, v.length > 40 ? `${v.slice(0, 40)}…` : v]),
      );
      return printedAs(
        request,
        `${request.method} ${request.path.slice(0, 160)} key=${request.key} from ${request.from} ` +
          `headers=${JSON.stringify(shown)} body=${JSON.stringify(request.body?.slice(0, 100))}`,
      );
    });

// ------------------------------------------------------------------ checks

const header = (a: Answer, name: string): string | undefined => {
  const v = a.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
};

/** Why `answer` breaks the contract for `request` on `listener`, or null. */
function violation(listener: "api" | "health", request: HostileRequest, answer: Answer): string | null {
  const { status } = answer;
  const allowed = listener === "api" ? API_STATUSES : HEALTH_STATUSES;
  if (!allowed.has(status)) return `status ${status} is not documented for the ${listener} listener`;
  const cors = Object.keys(answer.headers).filter((h) => h.toLowerCase().startsWith("access-control-"));
  if (cors.length > 0) return `CORS headers in the answer: ${cors.join(", ")}`;
  if (STACK.test(answer.body)) return "the body contains a stack trace";
  // The path as the server routes it: without the query and without a fragment (which it ignores).
  const bare = request.path.split(/[?#]/, 1)[0] ?? "";

  // The health listener's own documented non-problem answers (contract §5).
  const healthReport =
    listener === "health" && status === 503 && (bare === "/readyz" || bare === "/health/integrations");
  if (status >= 400 && !healthReport) {
    if (mediaType(answer.headers["content-type"]) !== "application/problem+json")
      return `error ${status} is ${String(answer.headers["content-type"])}, not application/problem+json`;
    if (request.method !== "HEAD") {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(answer.body) as Record<string, unknown>;
      } catch {
        return `error ${status} body is not JSON: ${answer.body.slice(0, 100)}`;
      }
      if (typeof body.type !== "string" || typeof body.title !== "string")
        return "problem without type/title";
      if (body.status !== status) return `problem status ${String(body.status)} differs from ${status}`;
      if (typeof body.detail !== "string" || body.detail === "") return "problem without a detail";
    }
  }
  if (status === 405 && !(header(answer, "allow") ?? "").length) return "405 without Allow";
  if (
    (status === 429 || (status === 503 && listener === "api")) &&
    !/^[1-9]\d*$/.test(header(answer, "retry-after") ?? "")
  )
    return `${status} without a valid Retry-After`;
  if (listener === "api") {
    const control = request.method === "POST" && CONTROL_PATH.test(bare);
    if (status >= 502 && !(control && sendsRightKey(request.key)))
      return `${status} outside a keyed control request (${request.method} ${bare})`;
    if (status === 200 && control && !sendsRightKey(request.key)) return "control done without the right key";
    if (status === 403 && !bare.startsWith("/docs/v1/")) return `403 outside the docs assets (${bare})`;
    if (status === 304) {
      if (!bare.startsWith("/docs/v1/")) return `304 outside the docs assets (${bare})`;
      if (request.method !== "GET" && request.method !== "HEAD") return `304 to a ${request.method}`;
      if (!Object.keys(request.headers).some((h) => CONDITIONAL.has(h.toLowerCase())))
        return `304 to an unconditional request (${bare})`;
    }
    if (status === 302) {
      if (bare !== "/" && bare !== "/docs/v1/static/index.html") return `302 on ${bare}`;
      const location = header(answer, "location") ?? "";
      if (location === "" || location === request.path) return `302 to itself or nowhere (${location})`;
    }
  }
  if (listener === "health" && status === 503 && !healthReport) return `503 on ${bare}`;
  return null;
}

async function send(pool: ClientPool, request: HostileRequest): Promise<Answer> {
  return pool.request(
    {
      method: request.method,
      path: request.path,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
    },
    request.from,
  );
}

function tally(statuses: Map<number, number>, status: number): void {
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
}

// ------------------------------------------------------------------ tests

test(`random requests to the API listener: ${API_RUNS} cases, only documented answers`, async (t) => {
  const statuses = new Map<number, number>();
  const deviceId = () => bridge.deviceId;
  await fc.assert(
    fc.asyncProperty(requestArb(KNOWN_API, deviceId), async (request) => {
      const answer = await send(api, request);
      tally(statuses, answer.status);
      const problem = violation("api", request, answer);
      assert.equal(
        problem,
        null,
        `${request.method} ${request.path}: ${problem}\n${answer.body.slice(0, 300)}`,
      );
    }),
    { numRuns: API_RUNS },
  );
  t.diagnostic(
    `API statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
  );
  // The generator reaches the interesting answers (a generator that only produced 404s proves nothing).
  for (const status of [200, 400, 401, 404, 405, 409, 413, 414, 415]) {
    assert.ok((statuses.get(status) ?? 0) > 0, `no case was answered ${status}`);
  }
});

test(`random requests to the health listener: ${HEALTH_RUNS} cases, only documented answers`, async (t) => {
  const statuses = new Map<number, number>();
  const deviceId = () => bridge.deviceId;
  await fc.assert(
    fc.asyncProperty(requestArb(KNOWN_HEALTH, deviceId), async (request) => {
      const answer = await send(health, request);
      tally(statuses, answer.status);
      const problem = violation("health", request, answer);
      assert.equal(
        problem,
        null,
        `${request.method} ${request.path}: ${problem}\n${answer.body.slice(0, 300)}`,
      );
    }),
    { numRuns: HEALTH_RUNS },
  );
  t.diagnostic(
    `health statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
  );
  for (const status of [200, 404, 405])
    assert.ok((statuses.get(status) ?? 0) > 0, `no case was answered ${status}`);
});

// ------------------------------------------------------------------ raw sockets

const CRLF = "\r\n";
const rawLine = fc.oneof(
  fc.constantFrom(
    "Host: x",
    "Content-Length: 5",
    "Content-Length: abc",
    "Content-Length: -1",
    "Content-Length: 5\r\nContent-Length: 6",
    "Transfer-Encoding: chunked",
    "Transfer-Encoding: gzip, chunked",
    "Transfer-Encoding: chunked\r\nContent-Length: 3",
    "Transfer-Encoding : chunked",
    " folded: continuation",
    "X-Api-Key: wrong",
    "Content-Type: application/json",
    "Connection: close",
    "Expect: 100-continue",
    "Upgrade: websocket\r\nConnection: Upgrade",
    ": no-name",
    "no-colon",
    "Bad\u0000Name: x",
    "X: a\u0000b",
    "X: a\rb",
  ),
  fc
    .tuple(
      fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 16 }),
      fc.string({ maxLength: 40 }),
    )
    .map(([n, v]) => `${n}: ${v}`),
  fc.integer({ min: 17_000, max: 20_000 }).map((n) => `X-Big: ${"b".repeat(n)}`),
);
const rawRequestArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({
        method: fc.oneof(
          fc.constantFrom(
            "GET",
            "POST",
            "HEAD",
            "PUT",
            "DELETE",
            "OPTIONS",
            "CONNECT",
            "PRI",
            "get",
            "G ET",
            "",
          ),
          fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 10 }),
        ),
        target: fc.oneof(
          fc.constantFrom(
            "/healthz",
            "/readyz",
            "/api/v1/instances",
            "*",
            "http://evil.example/healthz",
            "healthz",
            "/a b",
            "/\u00e9",
            "/%",
            "/api/v1/instances/lab/outlets/X/0/control",
            "",
          ),
          fc.string({ maxLength: 30 }).map((s) => `/${s}`),
        ),
        version: fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1x", "HTTP/0.9", "", "http/1.1"),
        eol: fc.constantFrom(CRLF, "\n", "\r"),
        lines: fc.array(rawLine, { maxLength: 5 }),
        body: fc.string({ maxLength: 64 }),
      })
      .map(
        (r) =>
          `${r.method} ${r.target} ${r.version}${r.eol}${r.lines.join(r.eol)}${r.lines.length > 0 ? r.eol : ""}${r.eol}${r.body}`,
      ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
          "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n",
        ),
        fc.string({ maxLength: 60 }),
      )
      .map(([ok, junk]) => ok + junk),
  },
);

/** Sends `text`, half-closes, and returns everything the server wrote before it closed. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `the server neither answered nor closed within 5 s for ${JSON.stringify(text.slice(0, 120))}`,
        ),
      );
    }, 5000);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => undefined); // a reset after the answer is fine; what was read counts
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("latin1"));
    });
    socket.end(text, "utf8");
  });
}

test(`random malformed HTTP on raw sockets: ${RAW_RUNS} cases, never a 500, errors are problems`, async (t) => {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(rawRequestArb, fc.constantFrom("api", "health"), async (text, listener) => {
      const port = listener === "api" ? bridge.apiPort : bridge.healthPort;
      const answer = await rawExchange(port, text);
      const allowed = listener === "api" ? API_STATUSES : HEALTH_STATUSES;
      assert.ok(!STACK.test(answer), `stack trace in ${JSON.stringify(answer.slice(0, 500))}`);
      // Each response of the (possibly pipelined) exchange starts with a status line.
      for (const match of answer.matchAll(/HTTP\/1\.[01] (\d{3}) [^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/g)) {
        const status = Number(match[1]);
        tally(statuses, status);
        // `Expect: 100-continue` is answered with Node's interim 100 Continue before the answer.
        if (status === 100 && /expect: 100-continue/i.test(text)) continue;
        assert.ok(allowed.has(status), `status ${status} from ${JSON.stringify(text.slice(0, 200))}`);
        const head = (match[2] ?? "").toLowerCase();
        assert.ok(!head.includes("access-control-"), "CORS header");
        if (
          status >= 400 &&
          !head.includes("content-type: text/plain") &&
          !head.includes("content-type: application/json")
        )
          assert.match(
            head,
            /content-type: application\/problem\+json/,
            `error ${status} is not a problem: ${head}`,
          );
      }
      if (answer !== "")
        assert.match(answer, /^HTTP\/1\.[01] \d{3} /, `not an HTTP answer: ${answer.slice(0, 100)}`);
    }),
    { numRuns: RAW_RUNS },
  );
  t.diagnostic(
    `raw statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
  );
  assert.ok(
    (statuses.get(400) ?? 0) > 0 && (statuses.get(200) ?? 0) > 0,
    "the generator reaches both 200 and 400",
  );
  assert.ok((statuses.get(431) ?? 0) > 0, "oversized headers are answered 431");
});

test("the service is still up and logged no internal error", async () => {
  const ok = await health.request({ method: "GET", path: "/healthz" });
  assert.equal(ok.status, 200);
  assert.equal(ok.body, "OK");
  const instances = await api.request({ method: "GET", path: "/api/v1/instances" });
  assert.equal(instances.status, 200);
  const errors = bridge.log.lines.filter((e) => e.level === "error" || e.level === "fatal");
  assert.deepEqual(errors, [], "error lines in the log (a 500 is logged as `request failed`)");
  assert.ok(!bridge.log.text().includes(KEY), "the API key appears in the log");
  assert.deepEqual(
    Object.getOwnPropertyNames(Object.prototype).sort(),
    prototypeNames,
    "Object.prototype changed",
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
