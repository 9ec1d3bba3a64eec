/**
 * The control endpoints' status table on real listeners, with a stub control core answering canned
 * outcomes: the key checks (403, 401, 429 per address), 415, 400, every outcome mapping, the
 * audit line of every request, and every response against the OpenAPI document.
 */
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { OPENAPI_PATH, buildApiServer } from "../../src/http/api/server.js";
import type { HttpApp } from "../../src/http/common.js";
import { done, ControlStub } from "../../testkit/control-stub.js";
import { Client, configFrom, harness, type Harness, type HttpResponse } from "../../testkit/http-harness.js";
import { checkResponses } from "../../testkit/openapi-check.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "control-test-key-5f2c9a";
const START = Date.UTC(2025, 5, 1, 8, 0, 0);

const CONFIG = (apiKey: string) => `
Pdus:
  lab:
    Connection: { Host: 192.0.2.1 }
    ActionsEnabled: true
    Credentials: { Username: admin, Password: pdu-password }
  locked:
    Connection: { Host: 192.0.2.2 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "${apiKey}" }
`;

const OUTLET = "/api/v1/instances/lab/outlets/DEV1/3/control";
const GROUP = "/api/v1/instances/lab/groups/web/control";

const stub = new ControlStub();
let h: Harness;
let app: HttpApp;
let v6: http.Server;
/** Clients of the main listener, from 127.0.0.1 and from ::1. */
let c4: Client;
let c6: Client;
const others: { app: HttpApp; client: Client; h: Harness }[] = [];

async function listenOn(a: HttpApp): Promise<Client> {
  await a.listen({ host: "127.0.0.1", port: 0 });
  const address = a.server.address();
  assert.ok(typeof address === "object" && address !== null);
  return new Client(address.port);
}

before(async () => {
  stub
    .on("lab", { kind: "outlet", deviceId: "DEV1", index: 3 }, done)
    .on("lab", { kind: "group", groupKey: "web" }, (r) => ({
      ...done(r),
      outlets: [
        { deviceId: "DEV1", index: 0, ok: true },
        { deviceId: "DEV2", index: 5, ok: true },
      ],
    }))
    .on(
      "nope",
      { kind: "outlet", deviceId: "DEV1", index: 3 },
      {
        ok: false,
        status: 404,
        title: "Unknown instance",
        detail: 'no instance "nope"; configured: lab, locked',
      },
    )
    .on(
      "locked",
      { kind: "outlet", deviceId: "DEV1", index: 3 },
      {
        ok: false,
        status: 409,
        title: "Actions disabled",
        detail: "instance locked has ActionsEnabled: false; set it to true to allow control",
      },
    )
    .on(
      "lab",
      { kind: "outlet", deviceId: "DEV1", index: 7 },
      {
        ok: false,
        status: 503,
        title: "Not polled yet",
        detail: "instance lab has not been polled yet; try again shortly",
        retryAfter: 7,
      },
    )
    .on(
      "lab",
      { kind: "outlet", deviceId: "DEV9", index: 0 },
      {
        ok: false,
        status: 404,
        title: "Unknown outlet",
        detail: "device DEV9 is not in the latest snapshot of lab",
      },
    )
    .on(
      "lab",
      { kind: "outlet", deviceId: "DEV1", index: 4 },
      {
        ok: false,
        status: 502,
        title: "PDU refused",
        detail: "the PDU answered retCode 2003 (outlet control disabled on the unit)",
      },
    )
    .on(
      "lab",
      { kind: "outlet", deviceId: "DEV1", index: 5 },
      {
        ok: false,
        status: 504,
        title: "PDU timeout",
        detail: "the PDU did not answer within 15s",
      },
    )
    .on(
      "lab",
      { kind: "group", groupKey: "racks" },
      {
        ok: false,
        status: 502,
        title: "Group partly failed",
        detail: "1 of 2 outlets failed",
        outlets: [
          { deviceId: "DEV1", index: 0, ok: true },
          { deviceId: "DEV2", index: 1, ok: false, error: "retCode 1001 (not authorised)" },
        ],
      },
    )
    .on(
      "lab",
      { kind: "group", groupKey: "empty" },
      {
        ok: false,
        status: 404,
        title: "Empty group",
        detail: "group empty has no member outlets",
      },
    )
    .on(
      "lab",
      { kind: "outlet", deviceId: "DEV1", index: 6 },
      {
        ok: false,
        status: 400,
        title: "Bad action",
        detail: "action is not allowed here",
      },
    )
    .on("lab", { kind: "outlet", deviceId: "DEV1", index: 8 }, () => {
      throw new Error("core exploded: internal-detail-xyz");
    });

  h = harness(await configFrom(CONFIG(KEY)), { control: stub, now: START });
  app = await buildApiServer(h.deps);
  c4 = await listenOn(app);
  // The same app behind a second loopback listener on ::1, to be a second client address.
  v6 = http.createServer((req, res) => app.routing(req, res));
  await new Promise<void>((resolve) => v6.listen(0, "::1", resolve));
  const v6Address = v6.address();
  assert.ok(typeof v6Address === "object" && v6Address !== null);
  c6 = new Client(v6Address.port, "::1");

  for (const [apiKey, control] of [
    ["", stub],
    [KEY, undefined],
  ] as const) {
    const other = harness(await configFrom(CONFIG(apiKey)), control ? { control } : {});
    const otherApp = await buildApiServer(other.deps);
    others.push({ app: otherApp, client: await listenOn(otherApp), h: other });
  }
});

after(async () => {
  await new Promise<void>((resolve) => (v6 ? v6.close(() => resolve()) : resolve()));
  await app?.close();
  for (const o of others) await o.app.close();
});

const withKey = (key = KEY) => ({ "x-api-key": key });

function problemOf(r: HttpResponse, status: number, detail: string | RegExp): Record<string, unknown> {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/);
  const body = r.json<Record<string, unknown>>();
  assert.equal(body.status, status);
  assert.ok(typeof body.type === "string" && typeof body.title === "string");
  if (typeof detail === "string") assert.ok(String(body.detail).includes(detail), String(body.detail));
  else assert.match(String(body.detail), detail);
  return body;
}

/** Forget failed keys: move the clock past the one-minute window. */
const nextMinute = () => {
  h.clock.now += 61_000;
};

test("403 when no API key is configured, whatever the key and body", async () => {
  const noKey = others[0];
  assert.ok(noKey);
  problemOf(await noKey.client.post(OUTLET, { action: "on" }, withKey(KEY)), 403, "Api.ApiKey");
  problemOf(
    await noKey.client.post(OUTLET, "{bad json", { ...withKey(""), "content-type": "text/plain" }),
    403,
    "disabled",
  );
  problemOf(await noKey.client.post(GROUP, { action: "on" }), 403, "SERVICE_API_KEY");
  assert.equal(stub.requests.length, 0, "nothing reached the core");
});

test("401 for a missing or wrong key, checked before the body: wrong key + bad body is 401", async () => {
  nextMinute();
  const missing = await c4.post(OUTLET, { action: "on" });
  problemOf(missing, 401, "X-Api-Key header is missing");
  assert.match(missing.headers["www-authenticate"] ?? "", /X-Api-Key/);
  problemOf(await c4.post(OUTLET, { action: "on" }, withKey("wrong")), 401, "does not match");
  problemOf(await c4.post(OUTLET, { action: "on" }, withKey(`${KEY}x`)), 401, "does not match");
  problemOf(await c4.post(OUTLET, { action: "on" }, withKey(KEY.slice(0, -1))), 401, "does not match");
  problemOf(
    await c4.post(OUTLET, "{not json", { ...withKey("wrong"), "content-type": "application/json" }),
    401,
    "X-Api-Key",
  );
  problemOf(
    await c4.post(GROUP, "x", { ...withKey("wrong"), "content-type": "text/plain" }),
    401,
    "X-Api-Key",
  );
  problemOf(await c4.post(GROUP, { action: "resetStats", extra: 1 }, withKey("wrong")), 401, "X-Api-Key");
  assert.equal(stub.requests.length, 0);
});

test("the audit line of a request refused before its body names the action its small JSON body asks for", async () => {
  await waitFor(
    () => h.log.lines.filter((l) => l.audit === "control" && l.status === 401).length >= 7,
    "the audit lines of the refusals",
  );
  const refused = h.log.lines.filter((l) => l.audit === "control" && l.status === 401);
  assert.deepEqual(
    refused.map((l) => l.action),
    ["on", "on", "on", "on", null, null, "resetStats"],
    "not JSON, or not application/json: no action",
  );
  const noKey = (others[0]?.h as Harness).log.lines.filter((l) => l.audit === "control");
  assert.deepEqual(
    noKey.map((l) => l.action),
    ["on", null, "on"],
  );
});

test("429 with Retry-After after more than 10 wrong keys from one address, per address, until the minute passes", async () => {
  nextMinute();
  for (let i = 1; i <= 10; i++) {
    problemOf(await c4.post(OUTLET, { action: "on" }, withKey(`wrong-${i}`)), 401, "does not match");
  }
  const eleventh = await c4.post(OUTLET, { action: "on" }, withKey("wrong-11"));
  problemOf(eleventh, 429, "too many wrong API keys");
  assert.equal(eleventh.headers["retry-after"], "60");

  h.clock.now += 20_000;
  const rightKey = await c4.post(OUTLET, { action: "on" }, withKey());
  problemOf(rightKey, 429, "try again in 40 s");
  assert.equal(rightKey.headers["retry-after"], "40", "locked out even with the right key");
  assert.equal(stub.requests.length, 0);

  // Another address is not affected.
  problemOf(await c6.post(OUTLET, { action: "on" }, withKey("wrong")), 401, "does not match");
  const fromV6 = await c6.post(OUTLET, { action: "on" }, withKey());
  assert.equal(fromV6.status, 200, fromV6.text);
  assert.equal(stub.requests.at(-1)?.source.surface, "rest");
  assert.deepEqual(stub.requests.at(-1)?.source, { surface: "rest", client: "::1" });

  h.clock.now += 40_001;
  const after = await c4.post(OUTLET, { action: "on" }, withKey());
  assert.equal(after.status, 200, "the lock-out ends when the window has passed");
});

test("415 when the body is not application/json", async () => {
  nextMinute();
  problemOf(
    await c4.post(OUTLET, '{"action":"on"}', { ...withKey(), "content-type": "text/plain" }),
    415,
    "application/json",
  );
  problemOf(await c4.post(OUTLET, '{"action":"on"}', withKey()), 415, "Content-Type: application/json");
  problemOf(
    await c4.post(GROUP, "action=on", { ...withKey(), "content-type": "application/x-www-form-urlencoded" }),
    415,
    "application/json",
  );
  const charset = await c4.post(OUTLET, '{"action":"on"}', {
    ...withKey(),
    "content-type": "application/json; charset=utf-8",
  });
  assert.equal(charset.status, 200, "a charset parameter is fine");
});

test("400 for bad JSON, a missing or disallowed action, an extra property, a bad index", async () => {
  nextMinute();
  const before = stub.requests.length;
  const json = { ...withKey(), "content-type": "application/json" };
  problemOf(await c4.post(OUTLET, "{action: on}", json), 400, "not valid JSON");
  problemOf(await c4.post(OUTLET, "", json), 400, "empty");
  problemOf(await c4.post(OUTLET, {}, withKey()), 400, 'missing the required property "action"');
  problemOf(await c4.post(OUTLET, [], withKey()), 400, "JSON object");
  problemOf(
    await c4.post(OUTLET, { action: "explode" }, withKey()),
    400,
    "must be one of: on, off, reboot, resetStats",
  );
  problemOf(await c4.post(OUTLET, { action: "ON" }, withKey()), 400, "must be one of");
  problemOf(
    await c4.post(GROUP, { action: "resetStats" }, withKey()),
    400,
    '"action" in the body must be one of: on, off, reboot',
  );
  problemOf(
    await c4.post(OUTLET, { action: "on", delay: true }, withKey()),
    400,
    "unknown properties: delay",
  );
  problemOf(
    await c4.post("/api/v1/instances/lab/outlets/DEV1/abc/control", { action: "on" }, withKey()),
    400,
    'path parameter "index"',
  );
  problemOf(
    await c4.post("/api/v1/instances/lab/outlets/DEV1/-1/control", { action: "on" }, withKey()),
    400,
    'path parameter "index"',
  );
  assert.equal(stub.requests.length, before, "nothing invalid reached the core");
});

test("every outcome of the core maps to its status", async () => {
  nextMinute();
  const outlet = (id: string, device: string, index: number | string) =>
    `/api/v1/instances/${id}/outlets/${device}/${index}/control`;

  const ok = await c4.post(OUTLET, { action: "reboot" }, withKey());
  assert.equal(ok.status, 200);
  assert.match(ok.headers["content-type"] ?? "", /^application\/json/);
  assert.deepEqual(ok.json(), { ok: true, instanceId: "lab", deviceId: "DEV1", index: 3, action: "reboot" });
  assert.deepEqual(stub.requests.at(-1), {
    instanceId: "lab",
    target: { kind: "outlet", deviceId: "DEV1", index: 3 },
    action: "reboot",
    source: { surface: "rest", client: "127.0.0.1" },
  });

  const group = await c4.post(GROUP, { action: "off" }, withKey());
  assert.equal(group.status, 200);
  assert.deepEqual(group.json(), {
    ok: true,
    instanceId: "lab",
    groupKey: "web",
    action: "off",
    outlets: [
      { deviceId: "DEV1", index: 0 },
      { deviceId: "DEV2", index: 5 },
    ],
  });

  const reset = await c4.post(OUTLET, { action: "resetStats" }, withKey());
  assert.deepEqual(reset.json(), {
    ok: true,
    instanceId: "lab",
    deviceId: "DEV1",
    index: 3,
    action: "resetStats",
  });

  const unknown = problemOf(
    await c4.post(outlet("nope", "DEV1", 3), { action: "on" }, withKey()),
    404,
    'no instance "nope"',
  );
  assert.equal(unknown.title, "Unknown instance");
  problemOf(await c4.post(outlet("locked", "DEV1", 3), { action: "on" }, withKey()), 409, "ActionsEnabled");
  const notPolled = await c4.post(outlet("lab", "DEV1", 7), { action: "on" }, withKey());
  problemOf(notPolled, 503, "not been polled");
  assert.equal(notPolled.headers["retry-after"], "7");
  problemOf(await c4.post(outlet("lab", "DEV9", 0), { action: "on" }, withKey()), 404, "DEV9");
  problemOf(
    await c4.post("/api/v1/instances/lab/groups/empty/control", { action: "on" }, withKey()),
    404,
    "no member",
  );
  problemOf(await c4.post(outlet("lab", "DEV1", 4), { action: "off" }, withKey()), 502, "retCode 2003");
  problemOf(await c4.post(outlet("lab", "DEV1", 5), { action: "off" }, withKey()), 504, "15s");
  problemOf(await c4.post(outlet("lab", "DEV1", 6), { action: "off" }, withKey()), 400, "not allowed here");

  const partial = problemOf(
    await c4.post("/api/v1/instances/lab/groups/racks/control", { action: "reboot" }, withKey()),
    502,
    "1 of 2",
  );
  assert.deepEqual(partial.outlets, [
    { deviceId: "DEV1", index: 0, ok: true },
    { deviceId: "DEV2", index: 1, ok: false, error: "retCode 1001 (not authorised)" },
  ]);

  const thrown = await c4.post(outlet("lab", "DEV1", 8), { action: "on" }, withKey());
  problemOf(thrown, 500, "the error is logged");
  assert.ok(!thrown.text.includes("internal-detail-xyz"), "no internal message in the answer");

  const unavailable = others[1];
  assert.ok(unavailable);
  const absent = await unavailable.client.post(OUTLET, { action: "on" }, withKey());
  problemOf(absent, 503, "control is not available");
  assert.ok(absent.headers["retry-after"]);
  const noSettings = await unavailable.client.send("/api/v1/instances/lab/outlets/DEV1/3", {
    method: "PATCH",
    body: { label: "web-01" },
    headers: withKey(),
  });
  problemOf(noSettings, 503, "writing settings is not available");
  assert.ok(noSettings.headers["retry-after"]);
});

test("GET /api/v1/key: 204 for the configured key, 401 for a wrong one (counted towards the lock-out), 403 without one", async () => {
  nextMinute();
  const reached = stub.requests.length;
  const ok = await c4.get("/api/v1/key", withKey());
  assert.equal(ok.status, 204, ok.text);
  assert.equal(ok.text, "");
  problemOf(await c4.get("/api/v1/key"), 401, "X-Api-Key header is missing");
  for (let i = 1; i <= 9; i++)
    problemOf(await c4.get("/api/v1/key", withKey(`w-${i}`)), 401, "does not match");
  // The eleventh wrong key of the minute, sent to a control endpoint: locked out there too.
  problemOf(await c4.post(OUTLET, { action: "on" }, withKey("w-10")), 429, "too many wrong API keys");
  problemOf(await c4.get("/api/v1/key", withKey()), 429, "too many wrong API keys");
  problemOf(await others[0]!.client.get("/api/v1/key", withKey(KEY)), 403, "no API key is configured");
  nextMinute();
  assert.equal((await c4.get("/api/v1/key", withKey())).status, 204);
  assert.equal(stub.requests.length, reached, "a key check reaches no control core");
});

test("every control request is audited once, with client, target, action and outcome, never the key", () => {
  const audits = h.log.lines.filter((l) => l.audit === "control");
  const requests = [...c4.responses, ...c6.responses].filter(
    (r) => r.method === "POST" && r.path.endsWith("/control"),
  );
  assert.equal(audits.length, requests.length, "one audit line per control request");
  // Same statuses as the answers (as multisets: the two clients interleave).
  assert.deepEqual(audits.map((a) => Number(a.status)).sort(), requests.map((r) => r.status).sort());
  for (const line of audits) {
    assert.ok(line.client === "127.0.0.1" || line.client === "::1", JSON.stringify(line));
    assert.equal(line.source, "rest");
  }
  const done = audits.find((a) => a.status === 200 && a.action === "reboot" && a.target === "outlet DEV1/3");
  assert.ok(done && done.instance === "lab" && done.outcome === "done");
  const refused = audits.find((a) => a.status === 401);
  assert.ok(refused && refused.outcome === "refused" && refused.target === "outlet DEV1/3");
  const groupRefused = audits.find(
    (a) => a.status === 400 && a.target === "group web" && a.action === "resetStats",
  );
  assert.ok(groupRefused, "a refused group action names the group and the action");
  const failed = audits.find((a) => a.status === 502 && a.target === "group racks");
  assert.ok(failed && failed.outcome === "failed");
  for (const text of h.log.raw) {
    assert.ok(!text.includes(KEY), "the key is never logged");
    assert.ok(!text.includes("pdu-password"), "no PDU password in the log");
  }
  const noKeyAudits = (others[0]?.h as Harness).log.lines.filter((l) => l.audit === "control");
  assert.deepEqual(
    noKeyAudits.map((a) => a.status),
    [403, 403, 403],
  );
});

test("every control response matches the OpenAPI document", async () => {
  const document = (await c4.get(OPENAPI_PATH)).json();
  const all = [...c4.responses, ...c6.responses, ...others.flatMap((o) => o.client.responses)];
  const { problems, statuses } = checkResponses(document, all);
  assert.deepEqual(problems, []);
  const outletOp = "POST /api/v1/instances/{id}/outlets/{deviceId}/{index}/control";
  for (const status of [200, 400, 401, 403, 404, 409, 415, 429, 500, 502, 503, 504]) {
    assert.ok(statuses.has(`${outletOp} ${status}`), `${status} was checked`);
  }
  assert.ok(statuses.has("POST /api/v1/instances/{id}/groups/{groupKey}/control 502"));
});
