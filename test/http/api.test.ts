/**
 * The REST API's read endpoints, error model, headers, docs routes and OpenAPI document, on a real
 * listener. Snapshots come from two built-in simulators (a single unit and a OneView cluster)
 * polled by the real GeistClient; a third instance is never polled.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Config } from "../../src/config/schema.js";
import { OPENAPI_PATH, startApiServer } from "../../src/http/api/server.js";
import { API_CSP, DOCS_CSP, type RunningListener } from "../../src/http/listener.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { readingsOf, type Reading } from "../../src/pdu/readings.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { Client, configFrom, harness, type Harness, type HttpResponse } from "../../testkit/http-harness.js";
import { checkResponses, validateOpenApiDocument } from "../../testkit/openapi-check.js";

const API_KEY = "read-test-key-0123456789";
const STARTED = Date.UTC(2025, 5, 1, 12, 0, 0);

let single: Simulator;
let cluster: Simulator;
let config: Config;
let h: Harness;
let api: RunningListener;
let client: Client;
const snapshots = new Map<string, Snapshot>();

const iso = (ms: number) => new Date(ms).toISOString();

async function pollInto(id: string): Promise<Snapshot> {
  const instance = config.instances.find((i) => i.id === id);
  assert.ok(instance);
  const pdu = new GeistClient(instance);
  try {
    const snapshot = await pdu.poll();
    h.store.recordSuccess(id, snapshot);
    snapshots.set(id, snapshot);
    return snapshot;
  } finally {
    await pdu.close();
  }
}

before(async () => {
  single = await startSimulator({ seed: 11, devices: 2, outlets: 3 });
  cluster = await startSimulator({ seed: 12, oneview: { members: 1 }, outlets: 2 });
  config = await configFrom(`
Pdus:
  rack-a:
    Connection: { Host: 127.0.0.1, Port: ${single.port} }
    PollInterval: 10
  cluster:
    Connection: { Host: 127.0.0.1, Port: ${cluster.port} }
    ActionsEnabled: true
    Credentials: { Username: admin, Password: admin }
  spare:
    Connection: { Host: 192.0.2.99, Port: 443 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "${API_KEY}" }
`);
  h = harness(config, { now: STARTED, startedAt: STARTED });
  // One measurement the PDU reports as "n/a": not a reading.
  const firstDevice = single.deviceIds()[0];
  assert.ok(firstDevice);
  single.setMeasurementRaw(firstDevice, 0, "realPower", "n/a");
  await pollInto("rack-a");
  await pollInto("cluster");
  h.clock.now = Math.max(...[...snapshots.values()].map((s) => s.timestamp)) + 2500;
  h.store.recordFailure("spare", new Error("connect ECONNREFUSED 192.0.2.99:443"));
  api = await startApiServer(h.deps);
  client = new Client(api.port);
});

after(async () => {
  await api?.close();
  h?.store.close();
  await single?.close();
  await cluster?.close();
});

function assertProblem(
  response: HttpResponse,
  status: number,
  detailIncludes: string | RegExp,
): Record<string, unknown> {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers["content-type"] ?? "", /^application\/problem\+json/);
  const body = response.json<Record<string, unknown>>();
  assert.equal(body.status, status);
  assert.equal(typeof body.type, "string");
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  if (typeof detailIncludes === "string")
    assert.ok(String(body.detail).includes(detailIncludes), String(body.detail));
  else assert.match(String(body.detail), detailIncludes);
  assert.doesNotMatch(response.text, /\bat .+:\d+:\d+|node:internal|Error:/, "no stack trace");
  return body;
}

test("GET /api/v1/instances lists every instance in file order with the contract's fields", async () => {
  const response = await client.get("/api/v1/instances");
  assert.equal(response.status, 200);
  assert.match(response.headers["content-type"] ?? "", /^application\/json/);
  assert.deepEqual(response.json(), [
    {
      id: "rack-a",
      primary: true,
      host: "127.0.0.1",
      port: single.port,
      scheme: "http",
      pollInterval: 10,
      actionsEnabled: false,
    },
    {
      id: "cluster",
      primary: false,
      host: "127.0.0.1",
      port: cluster.port,
      scheme: "http",
      pollInterval: 5,
      actionsEnabled: true,
    },
    {
      id: "spare",
      primary: false,
      host: "192.0.2.99",
      port: 443,
      scheme: "https",
      pollInterval: 5,
      actionsEnabled: false,
    },
  ]);
});

test("GET /api/v1/health reports start, uptime, MQTT and the polls of every instance", async () => {
  const rackA = snapshots.get("rack-a");
  const clusterSnap = snapshots.get("cluster");
  assert.ok(rackA && clusterSnap);
  const expected = (mqttConnected: boolean) => ({
    startedUtc: iso(STARTED),
    uptimeSeconds: Math.floor((h.clock.now - STARTED) / 1000),
    mqttConnected,
    // The spare's failure was recorded last, at the clock's time.
    lastPollUtc: iso(h.clock.now),
    instances: [
      { id: "rack-a", lastPollUtc: iso(rackA.timestamp), lastError: null, consecutiveFailures: 0 },
      { id: "cluster", lastPollUtc: iso(clusterSnap.timestamp), lastError: null, consecutiveFailures: 0 },
      {
        id: "spare",
        lastPollUtc: iso(h.clock.now),
        lastError: "connect ECONNREFUSED 192.0.2.99:443",
        consecutiveFailures: 1,
      },
    ],
  });
  const up = await client.get("/api/v1/health");
  assert.equal(up.status, 200);
  assert.deepEqual(up.json(), expected(true));
  assert.ok(up.json<{ uptimeSeconds: number }>().uptimeSeconds > 1000, "uptime counts from startedAt");

  h.mqtt = { ...h.mqtt, connected: false };
  try {
    const down = await client.get("/api/v1/health");
    assert.deepEqual(down.json(), expected(false));
  } finally {
    h.mqtt = { ...h.mqtt, connected: true };
  }
});

test("GET /api/v1/snapshots: one entry per instance, nulls before the first poll", async () => {
  const rackA = snapshots.get("rack-a");
  const clusterSnap = snapshots.get("cluster");
  assert.ok(rackA && clusterSnap);
  const response = await client.get("/api/v1/snapshots");
  assert.equal(response.status, 200);
  assert.deepEqual(response.json(), [
    {
      instanceId: "rack-a",
      timestampUtc: iso(rackA.timestamp),
      ageSeconds: (h.clock.now - rackA.timestamp) / 1000,
    },
    {
      instanceId: "cluster",
      timestampUtc: iso(clusterSnap.timestamp),
      ageSeconds: (h.clock.now - clusterSnap.timestamp) / 1000,
    },
    { instanceId: "spare", timestampUtc: null, ageSeconds: null },
  ]);
  assert.equal(
    response.json<{ ageSeconds: number }[]>()[1]?.ageSeconds,
    2.5,
    "the newest snapshot is 2.5 s old",
  );
});

const READING_FIELDS = [
  "instanceId",
  "deviceId",
  "device",
  "source",
  "sourceType",
  "outletIndex",
  "entityKey",
  "type",
  "value",
  "units",
  "state",
  "timestampUtc",
];

/** The contract's order, written out independently of the implementation. */
function orderKey(r: Reading): string[] {
  return [
    r.instanceId,
    r.deviceId,
    r.sourceType === "outlet" ? "0" : "1",
    String(r.outletIndex ?? 0).padStart(6, "0"),
    r.entityKey ?? "",
    r.type.toLowerCase(),
  ];
}

test("GET /api/v1/readings: every numeric measurement of both instances, sorted, no group rollups", async () => {
  const response = await client.get("/api/v1/readings");
  assert.equal(response.status, 200);
  const readings = response.json<Reading[]>();

  for (const r of readings) {
    assert.deepEqual(Object.keys(r), READING_FIELDS, "exactly the contract's fields (plus state), in order");
    assert.equal(typeof r.value, "number");
    if (r.sourceType === "outlet") {
      assert.ok(Number.isInteger(r.outletIndex) && r.entityKey === null);
      assert.ok(r.state === "on" || r.state === "off");
    } else {
      assert.equal(r.sourceType, "entity");
      assert.ok(r.outletIndex === null && typeof r.entityKey === "string" && r.state === null);
    }
  }
  for (let i = 1; i < readings.length; i++) {
    const a = orderKey(readings[i - 1] as Reading);
    const b = orderKey(readings[i] as Reading);
    assert.ok(a.join("\u0000") <= b.join("\u0000"), `sorted: ${a.join("/")} before ${b.join("/")}`);
  }
  // Sorted by instance id, not by file order: the cluster comes first.
  assert.deepEqual([...new Set(readings.map((r) => r.instanceId))], ["cluster", "rack-a"]);

  // Exactly one reading per numeric measurement of outlets and entities, and nothing else.
  for (const [id, snapshot] of snapshots) {
    const expected = snapshot.devices.flatMap((d) => [
      ...d.outlets.flatMap((o) =>
        o.measurements
          .filter((m) => m.value !== null)
          .map((m) => `${d.id}/outlet/${o.index}/${m.type}=${m.value}`),
      ),
      ...d.entities.flatMap((e) =>
        e.measurements
          .filter((m) => m.value !== null)
          .map((m) => `${d.id}/entity/${e.key}/${m.type}=${m.value}`),
      ),
    ]);
    const got = readings
      .filter((r) => r.instanceId === id)
      .map((r) => `${r.deviceId}/${r.sourceType}/${r.outletIndex ?? r.entityKey}/${r.type}=${r.value}`);
    assert.deepEqual([...got].sort(), [...expected].sort(), `readings of ${id}`);
  }
  const clusterSnap = snapshots.get("cluster");
  assert.ok(
    clusterSnap && clusterSnap.groups.some((g) => g.measurements.length > 0),
    "the cluster has rollups",
  );
  const rollupKeys = new Set(clusterSnap.groups.flatMap((g) => g.measurements.map((m) => m.key)));
  assert.ok(
    !readings.some((r) => r.type.startsWith("pduTotal") && rollupKeys.has(r.type)),
    "no group rollups",
  );

  // The "n/a" realPower of the first outlet is skipped; its other measurements are there.
  const firstDevice = single.deviceIds()[0];
  const outlet0 = readings.filter(
    (r) => r.instanceId === "rack-a" && r.deviceId === firstDevice && r.outletIndex === 0,
  );
  assert.ok(outlet0.length > 0 && !outlet0.some((r) => r.type === "realPower"));
});

test("GET /api/v1/readings?instance= matches case-insensitively; unknown is 404; not polled is []", async () => {
  const rackA = snapshots.get("rack-a");
  assert.ok(rackA);
  const upper = await client.get("/api/v1/readings?instance=RACK-A");
  assert.equal(upper.status, 200);
  const readings = upper.json<Reading[]>();
  assert.ok(readings.length > 0);
  assert.deepEqual(readings, JSON.parse(JSON.stringify(readingsOf(rackA))) as unknown);
  const first = readings[0];
  assert.ok(first);
  const device = rackA.devices.find((d) => d.id === first.deviceId);
  const outlet = device?.outlets.find((o) => o.index === first.outletIndex);
  assert.ok(device && outlet);
  assert.equal(first.device, device.displayName);
  assert.equal(first.source, outlet.displayName);
  assert.equal(first.state, outlet.state);
  assert.equal(first.timestampUtc, iso(rackA.timestamp));
  assert.equal(first.units, outlet.measurements.find((m) => m.type === first.type)?.units);

  const unknown = await client.get("/api/v1/readings?instance=nope");
  const body = assertProblem(unknown, 404, '"nope"');
  assert.match(String(body.detail), /rack-a, cluster, spare/);

  const spare = await client.get("/api/v1/readings?instance=Spare");
  assert.equal(spare.status, 200);
  assert.deepEqual(spare.json(), []);

  assertProblem(
    await client.get("/api/v1/readings?instances=rack-a"),
    400,
    'unknown query parameter "instances"',
  );
  assertProblem(await client.get("/api/v1/readings?instance="), 400, 'query parameter "instance"');
});

test("a switch latched by the control core shows as the reading's state", async () => {
  const rackA = snapshots.get("rack-a");
  const device = rackA?.devices[0];
  const outlet = device?.outlets.find((o) => o.state === "on") ?? device?.outlets[0];
  assert.ok(device && outlet);
  const other = outlet.state === "on" ? "off" : "on";
  h.store.latch("rack-a", device.id, outlet.index, other);
  try {
    const readings = (await client.get("/api/v1/readings?instance=rack-a")).json<Reading[]>();
    const states = readings
      .filter((r) => r.deviceId === device.id && r.outletIndex === outlet.index)
      .map((r) => r.state);
    assert.ok(states.length > 0 && states.every((s) => s === other));
  } finally {
    h.store.unlatch("rack-a");
  }
});

test("errors are problem+json: 404, 405 with Allow, 413, 415, 400", async () => {
  assertProblem(await client.get("/api/v2/instances"), 404, "/openapi/v1.json");

  const post = await client.post("/api/v1/readings", { x: 1 });
  assertProblem(post, 405, "use GET, HEAD");
  assert.equal(post.headers.allow, "GET, HEAD");
  // A wrong method is answered before the body is looked at (no 415 for a body nobody reads).
  const xml = await client.send("/api/v1/instances", {
    method: "PUT",
    body: "<x/>",
    headers: { "content-type": "text/xml" },
  });
  assertProblem(xml, 405, "PUT is not supported");
  const control = "/api/v1/instances/cluster/outlets/X/0/control";
  const get = await client.get(control);
  assertProblem(get, 405, "use POST");
  assert.equal(get.headers.allow, "POST");

  const big = JSON.stringify({ action: "on", pad: "x".repeat(70_000) });
  assertProblem(
    await client.post(control, big, { "content-type": "application/json", "x-api-key": API_KEY }),
    413,
    "65536",
  );
  assertProblem(await client.post("/nowhere", big, { "content-type": "application/json" }), 413, "64 KiB");

  const text = await client.post(control, "action=on", {
    "content-type": "text/plain",
    "x-api-key": API_KEY,
  });
  assertProblem(text, 415, "application/json");
  const badJson = await client.post(control, "{action:", {
    "content-type": "application/json",
    "x-api-key": API_KEY,
  });
  assertProblem(badJson, 400, "not valid JSON");
  assertProblem(await client.get("/api/%E0%A4%A/instances"), 400, "percent-encoding");
});

test("an internal failure is a generic 500 problem, logged, without its message or stack", async () => {
  const secretMessage = "kaboom-internal-detail";
  Object.defineProperty(h, "mqtt", {
    configurable: true,
    get() {
      throw new Error(secretMessage);
    },
  });
  try {
    const response = await client.get("/api/v1/health");
    assertProblem(response, 500, "the error is logged");
    assert.ok(!response.text.includes(secretMessage));
  } finally {
    Object.defineProperty(h, "mqtt", {
      configurable: true,
      writable: true,
      value: {
        connected: true,
        broker: "mqtt://127.0.0.1:1883",
        embedded: true,
        lastError: null,
        since: STARTED,
      },
    });
  }
  const logged = h.log.lines.find((l) => l.msg === "request failed");
  assert.ok(logged && JSON.stringify(logged).includes(secretMessage), "the failure is in the log");
});

test("security headers on every response, Cache-Control no-store on API JSON, and no CORS", async () => {
  const responses = [
    await client.get("/api/v1/instances", { origin: "http://evil.example" }),
    await client.get("/missing"),
    await client.send("/api/v1/instances", { method: "OPTIONS", headers: { origin: "http://evil.example" } }),
    await client.get("/"),
    await client.get("/docs/v1"),
  ];
  for (const r of responses) {
    assert.equal(r.headers["x-content-type-options"], "nosniff", r.path);
    assert.equal(r.headers["referrer-policy"], "no-referrer", r.path);
    assert.equal(r.headers["x-frame-options"], "DENY", r.path);
    assert.ok(r.headers["content-security-policy"], r.path);
    assert.ok(!Object.keys(r.headers).some((k) => k.startsWith("access-control-")), `no CORS on ${r.path}`);
  }
  assert.equal(responses[0]?.headers["cache-control"], "no-store");
  assert.equal(responses[0]?.headers["content-security-policy"], API_CSP);
  assert.equal(responses[2]?.status, 405, "no CORS preflight: OPTIONS is not served");
});

test("GET / redirects to the console at /ui/; the docs page and its assets come from the service", async () => {
  const root = await client.get("/");
  assert.equal(root.status, 302);
  assert.equal(root.headers.location, "/ui/");

  for (const path of ["/docs/v1", "/docs/v1/"]) {
    const page = await client.get(path);
    assert.equal(page.status, 200, path);
    assert.match(page.headers["content-type"] ?? "", /^text\/html/);
    assert.equal(page.headers["content-security-policy"], DOCS_CSP);
    assert.doesNotMatch(page.text, /https?:\/\//, "the page references nothing outside the service");
  }
  assert.doesNotMatch(DOCS_CSP, /https?:|\*/, "the docs CSP allows no other origin");
  const initializer = await client.get("/docs/v1/static/swagger-initializer.js");
  assert.equal(initializer.status, 200);
  assert.match(initializer.text, /validatorUrl: null/, "no validator badge calling swagger.io");
  const css = await client.get("/docs/v1/static/swagger-ui.css");
  assert.equal(css.status, 200);
  assert.doesNotMatch(css.text, /url\(\s*["']?https?:/, "no external fonts or images in the stylesheet");
});

test("GET /api/v1/alarms: what the PDU reports raised, worst first; ?instance= filters; unknown is 404", async () => {
  assert.deepEqual((await client.get("/api/v1/alarms")).json(), []);
  const [first] = single.deviceIds();
  assert.ok(first !== undefined);
  single.setAlarm(first, "breaker1", { state: "alarm", severity: "warning" });
  single.setAlarm(first, null, { state: "active", severity: "alarm" });
  try {
    await pollInto("rack-a");
    const response = await client.get("/api/v1/alarms");
    assert.equal(response.status, 200);
    const alarms = response.json<Record<string, unknown>[]>();
    assert.deepEqual(
      alarms.map((a) => [a.instanceId, a.id, a.severity, a.source, a.reported, a.percent, a.stale]),
      [
        ["rack-a", `${first}/device/pdu`, "critical", "pdu", "active", null, false],
        ["rack-a", `${first}/entity/breaker1/pdu`, "warning", "pdu", "alarm", null, false],
      ],
    );
    assert.deepEqual(alarms[1]?.target, { kind: "entity", key: "breaker1" });
    assert.equal(typeof alarms[0]?.sinceUtc, "string");
    assert.equal((await client.get("/api/v1/alarms?instance=RACK-A")).json<unknown[]>().length, 2);
    assert.deepEqual((await client.get("/api/v1/alarms?instance=cluster")).json(), []);
    const unknown = await client.get("/api/v1/alarms?instance=nope");
    assert.equal(unknown.status, 404);
    assert.match(unknown.json<{ detail: string }>().detail, /configured instances: rack-a, cluster, spare/);
    assert.equal((await client.get("/api/v1/alarms?severity=critical")).status, 400);
  } finally {
    single.setAlarm(first, "breaker1", null);
    single.setAlarm(first, null, null);
    await pollInto("rack-a");
  }
  assert.deepEqual((await client.get("/api/v1/alarms")).json(), []);
});

test("the OpenAPI 3.1 document is valid, complete and keeps the key secret", async () => {
  const response = await client.get(OPENAPI_PATH);
  assert.equal(response.status, 200);
  assert.ok(!response.text.includes(API_KEY), "the API key is not in the document");
  assert.doesNotMatch(response.text, /def-\d/, "named component schemas, no def-N");
  const document = response.json<{
    openapi: string;
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
  }>();
  const validation = await validateOpenApiDocument(document);
  assert.ok(validation.valid, JSON.stringify(validation.errors));
  assert.equal(document.openapi, "3.1.0");
  assert.deepEqual(document.components.securitySchemes, {
    ApiKey: { type: "apiKey", in: "header", name: "X-Api-Key" },
  });
  for (const name of [
    "Problem",
    "Instance",
    "Health",
    "SnapshotInfo",
    "Reading",
    "OutletControlResult",
    "GroupControlResult",
    "Settings",
    "SettingsResult",
    "Alarm",
  ]) {
    assert.ok(name in document.components.schemas, `component ${name}`);
  }
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, op })),
  );
  assert.deepEqual(operations.map((o) => o.id).sort(), [
    "DELETE /api/v1/sequences/{id}",
    "GET /api/v1/alarms",
    "GET /api/v1/assets",
    "GET /api/v1/assets/{assetId}",
    "GET /api/v1/energy",
    "GET /api/v1/events",
    "GET /api/v1/feeds",
    "GET /api/v1/health",
    "GET /api/v1/instances",
    "GET /api/v1/instances/{id}/outlets/{deviceId}/{index}/history",
    "GET /api/v1/key",
    "GET /api/v1/readings",
    "GET /api/v1/sequences/{id}",
    "GET /api/v1/snapshots",
    "GET /openapi/v1.json",
    "PATCH /api/v1/instances/{id}/devices/{deviceId}",
    "PATCH /api/v1/instances/{id}/entities/{deviceId}/{entityKey}",
    "PATCH /api/v1/instances/{id}/groups/{groupKey}",
    "PATCH /api/v1/instances/{id}/outlets/{deviceId}/{index}",
    "POST /api/v1/assets/{id}/control",
    "POST /api/v1/instances/{id}/groups/{groupKey}/control",
    "POST /api/v1/instances/{id}/outlets/{deviceId}/{index}/control",
    "POST /api/v1/sequences",
  ]);
  for (const { id, op } of operations) {
    assert.ok(
      typeof op.summary === "string" && typeof op.operationId === "string",
      `${id} has summary and operationId`,
    );
    assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${id} has tags`);
    const isControl =
      id.startsWith("POST") || id.startsWith("PATCH") || id.startsWith("DELETE") || id === "GET /api/v1/key";
    assert.deepEqual(op.security, isControl ? [{ ApiKey: [] }] : undefined, `${id} security`);
    if (id === "GET /openapi/v1.json") continue;
    const responses = op.responses as Record<
      string,
      { content?: Record<string, { schema?: { $ref?: string } }> }
    >;
    assert.equal(
      responses["500"]?.content?.["application/problem+json"]?.schema?.$ref,
      "#/components/schemas/Problem",
      `${id} declares its errors as problems`,
    );
  }
  const control = document.paths["/api/v1/instances/{id}/outlets/{deviceId}/{index}/control"]?.post;
  assert.deepEqual(Object.keys(control?.responses ?? {}).sort(), [
    "200",
    "400",
    "401",
    "403",
    "404",
    "409",
    "413",
    "415",
    "429",
    "500",
    "502",
    "503",
    "504",
  ]);
});

test("every response of this file matches what the OpenAPI document declares", async () => {
  const document = (await client.get(OPENAPI_PATH)).json();
  const { problems, operations, statuses } = checkResponses(document, client.responses);
  assert.deepEqual(problems, []);
  for (const op of [
    "GET /api/v1/instances",
    "GET /api/v1/health",
    "GET /api/v1/snapshots",
    "GET /api/v1/readings",
    "GET /api/v1/alarms",
  ]) {
    assert.ok(operations.has(op), `${op} was checked`);
  }
  for (const s of [
    "GET /api/v1/readings 404",
    "GET /api/v1/readings 400",
    "GET /api/v1/health 500",
    "GET /api/v1/alarms 404",
  ]) {
    assert.ok(statuses.has(s), `${s} was checked`);
  }
  assert.ok(!client.responses.some((r) => r.text.includes(API_KEY)), "no response contains the API key");

  // The check is not vacuous: a body that breaks the schema, or an undeclared status, is caught.
  const good = client.responses.find((r) => r.path === "/api/v1/instances" && r.status === 200);
  assert.ok(good);
  const broken = good.json<Record<string, unknown>[]>().map(({ primary: _primary, ...rest }) => rest);
  const forged = (status: number, text: string): HttpResponse => ({
    ...good,
    status,
    text,
    json: <T>() => JSON.parse(text) as T,
  });
  assert.equal(checkResponses(document, [forged(200, JSON.stringify(broken))]).problems.length, 1);
  assert.equal(checkResponses(document, [forged(418, "[]")]).problems.length, 1);
});
