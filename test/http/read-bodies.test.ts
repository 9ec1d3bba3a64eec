/**
 * The cached bodies of `GET /api/v1/readings` and `GET /api/v1/health` (src/http/api/cached-reads.ts)
 * against the whole service polling real simulators: a value changed at a PDU is in the very next
 * answer after the poll that carried it, the health body follows a PDU that fails and recovers, and
 * the cached bytes are exactly what fastify's serialisation of the routes' documented schemas makes
 * of the same data.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { SHARED_SCHEMAS } from "../../src/http/api/schemas.js";
import { HEALTH_RESPONSE, READINGS_RESPONSE } from "../../src/http/api/read-schemas.js";
import { buildApiServer } from "../../src/http/api/server.js";
import { readingsJson } from "../../src/pdu/readings.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { configFrom, harness } from "../../testkit/http-harness.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { waitFor } from "../../testkit/wait.js";

const POLL_S = 1;

interface Reading {
  readonly instanceId: string;
  readonly deviceId: string;
  readonly outletIndex: number | null;
  readonly type: string;
  readonly value: number;
}

interface Health {
  readonly instances: readonly {
    readonly id: string;
    readonly lastError: string | null;
    readonly consecutiveFailures: number;
  }[];
}

let h: AppHarness<"rack" | "cluster">;
/** fastify serialising parsed bodies through the routes' 200 schemas, nothing else. */
let reference: FastifyInstance;

before(async () => {
  h = await startAppHarness<"rack" | "cluster">({
    sims: { rack: { outlets: 4, seed: 3 }, cluster: { oneview: true, outlets: 3, seed: 5 } },
    yaml: (sims) =>
      appYaml({
        pdus: [
          pduYaml("rack", sims.rack, { pollInterval: POLL_S }),
          pduYaml("cluster", sims.cluster, { pollInterval: POLL_S }),
        ],
        api: { key: "" },
      }),
    waitForFirstPolls: true,
  });
  reference = Fastify();
  for (const schema of SHARED_SCHEMAS) reference.addSchema(schema);
  reference.post("/health", { schema: { response: { 200: HEALTH_RESPONSE } } }, (request) => request.body);
  reference.post(
    "/readings",
    { schema: { response: { 200: READINGS_RESPONSE } } },
    (request) => request.body,
  );
  await reference.ready();
});

after(async () => {
  await reference?.close();
  await h?.close();
});

const power = (readings: readonly Reading[], deviceId: string, index: number) =>
  readings.find((r) => r.deviceId === deviceId && r.outletIndex === index && r.type === "realPower")?.value;

test("a value changed at the PDU is in the first answer after the poll that carried it", async () => {
  const deviceId = h.sims.rack.deviceIds()[0]!;
  const path = "/api/v1/readings?instance=rack";
  // Served once before the change, so that a stale cached body would show.
  const first = await h.api.get(path);
  assert.equal(first.status, 200);
  assert.notEqual(power(first.json<Reading[]>(), deviceId, 2), 777.7);
  await h.api.get("/api/v1/readings");

  h.sims.rack.setMeasurementRaw(deviceId, 2, "realPower", "777.7");
  const snapshot = await waitFor(
    () => {
      const s = h.app.store.get("rack")?.snapshot;
      const outlet = s?.devices.find((d) => d.id === deviceId)?.outlets.find((o) => o.index === 2);
      return outlet?.measurements.some((m) => m.type === "realPower" && m.value === 777.7) ? s : null;
    },
    "a poll carrying the changed value",
    POLL_S * 1000 * 2 + 8000,
  );

  const one = await h.api.get(path);
  const all = await h.api.get("/api/v1/readings");
  assert.equal(power(one.json<Reading[]>(), deviceId, 2), 777.7, "the instance's readings");
  assert.equal(
    power(
      all.json<Reading[]>().filter((r) => r.instanceId === "rack"),
      deviceId,
      2,
    ),
    777.7,
    "every instance's readings",
  );
  // The answer is the snapshot in the store (or a later one), not the body cached before.
  const current = h.app.store.get("rack")!.snapshot!;
  assert.ok(current.timestamp >= snapshot.timestamp);
  if (current === snapshot) assert.equal(one.text, `[${readingsJson(snapshot)}]`);
});

test("the health body follows a PDU that fails and recovers", async () => {
  const entry = async () =>
    (await h.api.get("/api/v1/health")).json<Health>().instances.find((i) => i.id === "rack")!;
  assert.equal((await entry()).lastError, null);

  await h.sims.rack.setFault("http500");
  await waitFor(() => (h.app.store.get("rack")?.consecutiveFailures ?? 0) > 0, "a failed poll", 15_000);
  const failing = await entry();
  assert.ok(failing.consecutiveFailures > 0, "the failure is counted");
  assert.equal(typeof failing.lastError, "string", "and described");

  await h.sims.rack.setFault(null);
  await waitFor(() => h.app.store.get("rack")?.consecutiveFailures === 0, "a good poll again", 15_000);
  const recovered = await entry();
  assert.equal(recovered.consecutiveFailures, 0);
  assert.equal(recovered.lastError, null);
});

test("the cached bodies are byte for byte what the documented schemas serialise", async () => {
  // The cluster's snapshot has entities and several devices; a failing PDU puts strings and counts
  // in the health body, and an instance's readings come from its own cache.
  await h.sims.cluster.setFault("http500");
  await waitFor(() => (h.app.store.get("cluster")?.consecutiveFailures ?? 0) > 0, "a failed poll", 15_000);
  const bodies: [string, string][] = [
    ["/health", "/api/v1/health"],
    ["/readings", "/api/v1/readings"],
    ["/readings", "/api/v1/readings?instance=rack"],
    ["/readings", "/api/v1/readings?instance=cluster"],
    ["/readings", "/api/v1/readings?instance=RACK"], // through fastify's route
  ];
  for (const [route, path] of bodies) {
    const cached = await h.api.get(path);
    assert.equal(cached.status, 200, path);
    assert.ok(cached.text.length > 100, `${path} has a body worth comparing`);
    const serialised = await reference.inject({
      method: "POST",
      url: route,
      headers: { "content-type": "application/json" },
      payload: cached.text,
    });
    assert.equal(serialised.statusCode, 200, path);
    assert.equal(cached.text, serialised.body, `${path}: the cached bytes are the schema's serialisation`);
  }
  await h.sims.cluster.setFault(null);

  // Not vacuous: a field the schema does not declare is dropped by the serialisation.
  const withExtra = JSON.stringify([
    { ...(await h.api.get("/api/v1/readings?instance=rack")).json<Reading[]>()[0], extra: 1 },
  ]);
  const dropped = await reference.inject({
    method: "POST",
    url: "/readings",
    headers: { "content-type": "application/json" },
    payload: withExtra,
  });
  assert.notEqual(dropped.body, withExtra);
});

test("a health body of many instances follows each one's status, whichever block it is in", async () => {
  const ids = Array.from({ length: 70 }, (_, i) => `pdu-${String(i).padStart(2, "0")}`);
  const yaml = `Pdus:\n${ids.map((id) => `  ${id}:\n    Connection: { Host: 127.0.0.1, Port: 9 }`).join("\n")}\nApi: { Enabled: true, Port: 0 }\n`;
  const store = harness(await configFrom(yaml));
  const app = await buildApiServer(store.deps);
  try {
    const get = async () => (await app.inject({ method: "GET", url: "/api/v1/health" })).body;
    /** What the body must say of every instance: the store's statuses, in configuration order. */
    const expected = () =>
      store.store.list().map((s) => ({
        id: s.id,
        lastPollUtc: s.lastPollUtc === null ? null : new Date(s.lastPollUtc).toISOString(),
        lastError: s.lastError,
        consecutiveFailures: s.consecutiveFailures,
      }));
    const check = async (what: string) => {
      const body = await get();
      assert.deepEqual((JSON.parse(body) as Health).instances, expected(), what);
      const serialised = await reference.inject({
        method: "POST",
        url: "/health",
        headers: { "content-type": "application/json" },
        payload: body,
      });
      assert.equal(body, serialised.body, `${what}: the schema's serialisation`);
    };

    await check("nothing polled");
    for (const id of ids) store.store.recordSuccess(id, singleUnit(id, "DEV1", 1));
    await check("every instance polled");
    // One instance in the first, the middle and the last (partial) block, one at a time.
    for (const id of ["pdu-00", "pdu-40", "pdu-69"]) {
      store.clock.now += 1000;
      store.store.recordFailure(id, new Error(`${id} refused the connection`));
      await check(`${id} failed`);
    }
    store.store.recordSuccess("pdu-40", singleUnit("pdu-40", "DEV1", 1));
    await check("pdu-40 recovered");
  } finally {
    await app.close();
  }
});
