/**
 * The table of REST routes (src/http/api/paths.ts) is the one the routes use: the OpenAPI document
 * lists exactly its paths with their methods, and the console's client fills its patterns one
 * segment per value.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { API_PATHS, API_ROUTES, fillPath } from "../../src/http/api/paths.js";
import { buildApiServer } from "../../src/http/api/server.js";
import { configFrom, harness } from "../../testkit/http-harness.js";

const CONFIG = `
Pdus:
  lab:
    Connection: { Host: 192.0.2.1 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "paths-test-key-0123456789" }
`;

test("the OpenAPI document lists exactly the routes of the table: each path with its method", async (t) => {
  const h = harness(await configFrom(CONFIG));
  const app = await buildApiServer(h.deps);
  t.after(() => app.close());
  const paths = (app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths;
  const documented = Object.entries(paths)
    .flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    )
    .sort();
  const table = Object.values(API_ROUTES)
    .map(({ method, url }) => `${method} ${url.replace(/:([A-Za-z]+)/g, "{$1}")}`)
    .sort();
  assert.deepEqual(documented, table);
  assert.deepEqual(
    Object.entries(API_PATHS),
    Object.entries(API_ROUTES).map(([name, route]) => [name, route.url]),
  );
});

test("fillPath encodes each value as one segment and refuses a missing one", () => {
  assert.equal(
    fillPath(API_PATHS.outletControl, { id: "lab", deviceId: "a/b c", index: 3 }),
    "/api/v1/instances/lab/outlets/a%2Fb%20c/3/control",
  );
  assert.equal(fillPath(API_PATHS.health, {}), "/api/v1/health");
  assert.throws(() => fillPath(API_PATHS.groupControl, { id: "lab" }), /:groupKey/);
});
