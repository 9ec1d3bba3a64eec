/**
 * The table of REST paths (src/http/api/paths.ts) is the one the routes use: the OpenAPI document
 * lists exactly its paths, and the console's client fills its patterns one segment per value.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { API_PATHS, fillPath } from "../../src/http/api/paths.js";
import { buildApiServer } from "../../src/http/api/server.js";
import { configFrom, harness } from "../../testkit/http-harness.js";

const CONFIG = `
Pdus:
  lab:
    Connection: { Host: 192.0.2.1 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "paths-test-key-0123456789" }
`;

test("the OpenAPI document lists exactly the paths of the table", async (t) => {
  const h = harness(await configFrom(CONFIG));
  const app = await buildApiServer(h.deps);
  t.after(() => app.close());
  const documented = Object.keys((app.swagger() as { paths: Record<string, unknown> }).paths).sort();
  const table = Object.values(API_PATHS)
    .map((path) => path.replace(/:([A-Za-z]+)/g, "{$1}"))
    .sort();
  assert.deepEqual(documented, table);
});

test("fillPath encodes each value as one segment and refuses a missing one", () => {
  assert.equal(
    fillPath(API_PATHS.outletControl, { id: "lab", deviceId: "a/b c", index: 3 }),
    "/api/v1/instances/lab/outlets/a%2Fb%20c/3/control",
  );
  assert.equal(fillPath(API_PATHS.health, {}), "/api/v1/health");
  assert.throws(() => fillPath(API_PATHS.groupControl, { id: "lab" }), /:groupKey/);
});
