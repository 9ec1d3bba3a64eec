/**
 * The tables of REST routes (src/http/api/paths.ts: method and path; src/http/api/route-schemas.ts:
 * schema) are the ones the routes use: the server registers exactly their routes, each with its
 * method and the table's schema, the OpenAPI document lists exactly their paths with their methods
 * and operation ids, and the console's client fills the patterns one segment per value.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RouteOptions } from "fastify";
import { API_PATHS, API_ROUTES, fillPath, type ApiRouteName } from "../../src/http/api/paths.js";
import { API_ROUTE_SCHEMAS } from "../../src/http/api/route-schemas.js";
import { buildApiServer } from "../../src/http/api/server.js";
import type { HttpMetrics } from "../../src/http/types.js";
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

const ROUTE_NAMES = Object.keys(API_ROUTES) as ApiRouteName[];

/** The API's routes as fastify registers them: the listener's metrics seam adds a hook before any route. */
async function registeredRoutes(): Promise<{ routes: RouteOptions[]; close: () => Promise<void> }> {
  const routes: RouteOptions[] = [];
  const observer: HttpMetrics = {
    instrument: (app) => app.addHook("onRoute", (route) => void routes.push(route)),
    wrapFastPath: (_listener, fastPath) => fastPath,
    observeHttp: () => undefined,
    observeApiWorkerRestart: () => undefined,
  };
  const h = harness(await configFrom(CONFIG));
  const app = await buildApiServer({ ...h.deps, metrics: observer });
  return { routes, close: () => app.close() };
}

test("the server registers exactly the routes of the table, each with its method and the table's schema", async (t) => {
  const { routes, close } = await registeredRoutes();
  t.after(close);
  const visible = routes.filter((r) => r.schema?.hide !== true);
  const methods = (r: RouteOptions) => (Array.isArray(r.method) ? r.method : [r.method]);
  // fastify adds a HEAD route beside every GET route; the table names the GET.
  const heads = new Set(visible.filter((r) => methods(r).includes("GET")).map((r) => r.url));
  const registered = visible
    .flatMap((r) => methods(r).map((method) => ({ method, url: r.url, schema: r.schema })))
    .filter((r) => !(r.method === "HEAD" && heads.has(r.url)));
  assert.deepEqual(
    registered.map((r) => `${r.method} ${r.url}`).sort(),
    ROUTE_NAMES.map((name) => `${API_ROUTES[name].method} ${API_ROUTES[name].url}`).sort(),
  );
  for (const name of ROUTE_NAMES) {
    const { method, url } = API_ROUTES[name];
    const route = registered.find((r) => r.method === method && r.url === url);
    assert.equal(route?.schema, API_ROUTE_SCHEMAS[name], `${name}: the schema of the table`);
  }
  // Hidden routes exist (the docs UI, the console's page): the filter above is what leaves them out.
  assert.ok(routes.some((r) => r.schema?.hide === true));
});

test("the OpenAPI document lists each route of the table with its operation id and summary", async (t) => {
  const h = harness(await configFrom(CONFIG));
  const app = await buildApiServer(h.deps);
  t.after(() => app.close());
  const response = await app.inject({ method: "GET", url: API_PATHS.openApi });
  assert.equal(response.statusCode, 200);
  type Document = { paths: Record<string, Record<string, Record<string, unknown>>> };
  const paths = response.json<Document>().paths;
  const operationIds = new Set<string>();
  for (const name of ROUTE_NAMES) {
    const { method, url } = API_ROUTES[name];
    const operation = paths[url.replace(/:([A-Za-z]+)/g, "{$1}")]?.[method.toLowerCase()];
    const schema = API_ROUTE_SCHEMAS[name];
    assert.equal(operation?.operationId, schema.operationId, `${name}: operationId`);
    assert.equal(operation?.summary, schema.summary, `${name}: summary`);
    operationIds.add(schema.operationId);
  }
  assert.equal(operationIds.size, ROUTE_NAMES.length, "every operation id is its route's own");
});

test("fillPath encodes each value as one segment and refuses a missing one", () => {
  assert.equal(
    fillPath(API_PATHS.outletControl, { id: "lab", deviceId: "a/b c", index: 3 }),
    "/api/v1/instances/lab/outlets/a%2Fb%20c/3/control",
  );
  assert.equal(fillPath(API_PATHS.health, {}), "/api/v1/health");
  assert.throws(() => fillPath(API_PATHS.groupControl, { id: "lab" }), /:groupKey/);
});
