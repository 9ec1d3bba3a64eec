/**
 * The health listener on a real port: liveness, the readiness states in order, the integrations
 * report and its rules, the shared error model and headers, with the API off.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startHealthServer } from "../../src/http/health/server.js";
import { integrations, readiness } from "../../src/http/health/status.js";
import { API_CSP, type RunningListener } from "../../src/http/common.js";
import { ProblemSchema } from "../../src/http/problem.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { wireApi } from "../../testkit/fixtures/wire.js";
import { Client, configFrom, harness, type Harness, type HttpResponse } from "../../testkit/http-harness.js";
import { checkResponses } from "../../testkit/openapi-check.js";

const T0 = Date.UTC(2025, 5, 1, 6, 0, 0);

let h: Harness;
let health: RunningListener;
let client: Client;

before(async () => {
  const config = await configFrom(`
Pdus:
  fast:
    Connection: { Host: 192.0.2.1 }
    PollInterval: 5
  slow:
    Connection: { Host: 192.0.2.2 }
    PollInterval: 20
Api: { Enabled: false }
Health: { Bind: 127.0.0.1, Port: 0 }
`);
  h = harness(config, { now: T0 });
  h.mqtt = {
    connected: false,
    broker: "mqtt://broker.lan:1883",
    embedded: false,
    lastError: "connect ECONNREFUSED",
    since: T0,
  };
  health = await startHealthServer(h.deps);
  client = new Client(health.port);
});

after(async () => {
  await health?.close();
  h?.store.close();
});

// A clean answer (no malformed optional parts, so no parse warnings): see health-warnings.test.ts.
const succeed = (id: string) => h.store.recordSuccess(id, parseApiTree(wireApi(), id, h.clock.now));

function text(r: HttpResponse, status: number, body: string): void {
  assert.equal(r.status, status);
  assert.match(r.headers["content-type"] ?? "", /^text\/plain/);
  assert.equal(r.text, body);
}

test("/healthz answers OK while the process runs, even with MQTT and every PDU down", async () => {
  text(await client.get("/healthz"), 200, "OK");
  h.store.recordFailure("fast", new Error("timeout"));
  text(await client.get("/healthz"), 200, "OK");
  const head = await client.send("/healthz", { method: "HEAD" });
  assert.equal(head.status, 200);
});

test("/readyz walks through its states", async () => {
  text(await client.get("/readyz"), 503, "NOT READY: MQTT not connected");

  h.mqtt = { ...h.mqtt, connected: true, lastError: null };
  text(await client.get("/readyz"), 503, "NOT READY: no successful PDU poll yet");

  succeed("fast");
  text(await client.get("/readyz"), 200, "READY");

  h.clock.now += 30_000;
  text(await client.get("/readyz"), 200, "READY");
  h.clock.now += 17_000;
  text(await client.get("/readyz"), 503, "NOT READY: last PDU poll 47s ago (limit 30s)");

  // The slow instance's limit is 3 × 20 s = 60 s: one fresh instance is enough.
  succeed("slow");
  text(await client.get("/readyz"), 200, "READY");
  h.clock.now += 10_000;
  succeed("fast");
  h.clock.now += 55_000;
  // fast: 55 s (limit 30 s), slow: 65 s (limit 60 s); the reason names the most recent success.
  text(await client.get("/readyz"), 503, "NOT READY: last PDU poll 55s ago (limit 30s)");

  h.mqtt = { ...h.mqtt, connected: false };
  text(await client.get("/readyz"), 503, "NOT READY: MQTT not connected");
  h.mqtt = { ...h.mqtt, connected: true };
});

test("an outage of the REST API's worker makes /readyz NOT READY with its reason, while the API is on", () => {
  succeed("fast");
  const outage = "API worker not answering (no heartbeat for 10 s); it is being started again";
  const on = { ...h.deps, config: { ...h.deps.config, Api: { ...h.deps.config.Api, Enabled: true } } };
  assert.deepEqual(readiness({ ...on, apiOutage: () => null }, h.clock.now), { ready: true });
  assert.deepEqual(readiness({ ...on, apiOutage: () => outage }, h.clock.now), {
    ready: false,
    reason: outage,
  });
  assert.deepEqual(integrations({ ...on, apiOutage: () => outage }, h.clock.now).integrations.api, {
    status: "unhealthy",
    detail: outage,
  });
  // With the API off there is nothing to answer: an outage reported anyway is not a reason.
  assert.deepEqual(readiness({ ...h.deps, apiOutage: () => outage }, h.clock.now), { ready: true });
});

interface Report {
  status: string;
  integrations: Record<string, { status: string; detail: string }>;
}

test("/health/integrations reports every integration and never changes readiness", async () => {
  h.clock.now += 1000;
  succeed("fast");
  succeed("slow");
  h.homeAssistant = { enabled: true, discoveryTopic: "homeassistant", lastDiscoveryUtc: null };
  h.clock.now += 3000;

  const degraded = await client.get("/health/integrations");
  assert.equal(degraded.status, 200);
  assert.match(degraded.headers["content-type"] ?? "", /^application\/json/);
  assert.deepEqual(degraded.json(), {
    status: "degraded",
    integrations: {
      mqtt: { status: "healthy", detail: "connected to mqtt://broker.lan:1883" },
      "pdu:fast": { status: "healthy", detail: "last successful poll 3s ago" },
      "pdu:slow": { status: "healthy", detail: "last successful poll 3s ago" },
      api: { status: "healthy", detail: "disabled" },
      homeassistant: { status: "degraded", detail: "discovery not published yet" },
    },
  });
  text(await client.get("/readyz"), 200, "READY");

  h.homeAssistant = { ...h.homeAssistant, lastDiscoveryUtc: h.clock.now };
  const healthy = await client.get("/health/integrations");
  assert.equal(healthy.status, 200);
  assert.equal(healthy.json<Report>().status, "healthy");
  assert.match(
    healthy.json<Report>().integrations.homeassistant?.detail ?? "",
    /^discovery published under homeassistant at /,
  );

  h.store.recordFailure("slow", new Error("connect ETIMEDOUT 192.0.2.2:80"));
  const onePduFailing = (await client.get("/health/integrations")).json<Report>();
  assert.equal(onePduFailing.status, "degraded");
  assert.deepEqual(onePduFailing.integrations["pdu:slow"], {
    status: "degraded",
    detail: "1 failed poll(s) since the last success 3s ago, last: connect ETIMEDOUT 192.0.2.2:80",
  });

  h.clock.now += 100_000;
  const allStale = await client.get("/health/integrations");
  assert.equal(allStale.status, 503, "every PDU unhealthy: unhealthy");
  const stale = allStale.json<Report>();
  assert.equal(stale.status, "unhealthy");
  assert.deepEqual(stale.integrations["pdu:fast"], {
    status: "unhealthy",
    detail: "last successful poll 103s ago (limit 30s)",
  });

  succeed("fast");
  h.mqtt = { ...h.mqtt, connected: false, lastError: "connection refused" };
  const mqttDown = await client.get("/health/integrations");
  assert.equal(mqttDown.status, 503, "MQTT down: unhealthy");
  assert.deepEqual(mqttDown.json<Report>().integrations.mqtt, {
    status: "unhealthy",
    detail: "not connected to mqtt://broker.lan:1883: connection refused",
  });
  text(await client.get("/readyz"), 503, "NOT READY: MQTT not connected");
  h.mqtt = { ...h.mqtt, connected: true, lastError: null };
  text(await client.get("/readyz"), 200, "READY");
});

test("errors on the health listener are problem+json with the security headers", async () => {
  const problems: [HttpResponse, number][] = [
    [await client.get("/nope"), 404],
    [await client.post("/healthz", "x", { "content-type": "text/plain" }), 405],
    [await client.send("/readyz", { method: "DELETE" }), 405],
    [await client.post("/healthz", "x".repeat(70_000), { "content-type": "text/plain" }), 413],
    [await client.get("/health/%zz"), 400],
  ];
  for (const [r, status] of problems) {
    assert.equal(r.status, status, r.text);
    assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/);
    assert.equal(r.json<{ status: number }>().status, status);
    if (status === 405) assert.equal(r.headers.allow, "GET, HEAD");
  }
  assert.match(
    problems[0]?.[0].json<{ detail: string }>().detail ?? "",
    /\/healthz, \/readyz and \/health\/integrations/,
  );

  for (const r of client.responses) {
    assert.equal(r.headers["x-content-type-options"], "nosniff");
    assert.equal(r.headers["x-frame-options"], "DENY");
    assert.equal(r.headers["referrer-policy"], "no-referrer");
    assert.equal(r.headers["cache-control"], "no-store");
    assert.equal(r.headers["content-security-policy"], API_CSP);
  }
  // Each error body is a Problem (the health listener has no OpenAPI document of its own; the
  // 503s of /readyz and /health/integrations are the contract's text and report, not errors).
  const document = {
    openapi: "3.1.0",
    info: { title: "health", version: "1" },
    paths: {},
    components: { schemas: { Problem: ProblemSchema } },
  };
  const errors = problems.map(([r]) => r);
  const { problems: mismatches } = checkResponses(document, errors);
  assert.deepEqual(mismatches, []);
});
