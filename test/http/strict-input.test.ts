/**
 * No request value is converted (issue 14, item 1): through the real App and a real simulator, every
 * malformed outlet index that used to mean outlet 0 or 1 (` `, `false`, `0.9999`, `-0`, `1e-7`,
 * `true`, `1.5`, `0x1`, `0b1`, `+1`, `01`, `1e0`) answers 400 problem+json, with the right key and
 * body, and not one write reaches the PDU. Ids the service cannot address and query values that are
 * not single strings are 400 too; the plain forms still work.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import type { HttpResponse } from "../../testkit/http-harness.js";

const KEY = "strict-input-key-5d2e8f17";
const headers = { "x-api-key": KEY };

const MALFORMED_INDEXES = [
  "%20",
  "false",
  "0.9999",
  "-0",
  "1e-7",
  "true",
  "1.5",
  "0x1",
  "0b1",
  "+1",
  "%2B1",
  "01",
  "1e0",
  "00",
  "1.0",
  "%201",
  "1%20",
  "0%00",
  "1234567",
  "Infinity",
  "NaN",
  "null",
  "%5B0%5D",
] as const;

function assertProblem400(r: HttpResponse, what: string): void {
  assert.equal(r.status, 400, `${what}: ${r.status} ${r.text}`);
  assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/, what);
  const body = r.json<{ status: number; detail: string }>();
  assert.equal(body.status, 400);
  assert.ok(body.detail.length > 0);
}

describe("strict REST input (no coercion)", () => {
  let h: AppHarness<"main" | "cluster">;
  let dev: string;

  before(async () => {
    h = await startAppHarness<"main" | "cluster">({
      sims: { main: { outlets: 4 }, cluster: { oneview: { members: 2 }, outlets: 2, seed: 5 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2 }),
            pduYaml("cluster", s.cluster, { actionsEnabled: true, pollInterval: 2 }),
          ],
        }),
    });
    await h.waitForPoll("lab");
    await h.waitForPoll("cluster");
    dev = h.sims.main.deviceIds()[0]!;
  });

  after(async () => {
    await h?.close();
  });

  it("answers 400 with zero writes for every malformed outlet index, for every action", async () => {
    const states = [0, 1].map((i) => h.sims.main.outlet(dev, i).state);
    h.sims.main.clearRequests();
    for (const index of MALFORMED_INDEXES) {
      for (const action of ["on", "off", "reboot", "resetStats"]) {
        const path = `/api/v1/instances/lab/outlets/${dev}/${index}/control`;
        const r = await h.api.post(path, { action }, headers);
        assertProblem400(r, `${index} ${action}`);
        if (index === "01") assert.match(r.text, /index.*plain decimal/);
      }
    }
    assert.deepEqual(h.sims.main.writes(), [], "no write reached the PDU");
    assert.deepEqual(
      [0, 1].map((i) => h.sims.main.outlet(dev, i).state),
      states,
    );
  });

  it("refuses ids the service cannot address with 400 and no write", async () => {
    h.sims.main.clearRequests();
    const long = "A".repeat(129);
    const bad = [
      `/api/v1/instances/lab/outlets/%2E/0/control`,
      `/api/v1/instances/lab/outlets/%2E%2E/0/control`,
      `/api/v1/instances/lab/outlets/a%2Fb/0/control`,
      `/api/v1/instances/lab/outlets/a%01b/0/control`,
      `/api/v1/instances/lab/outlets/a%7Fb/0/control`,
      `/api/v1/instances/lab/outlets/a%C2%85b/0/control`,
      `/api/v1/instances/lab/outlets/a%EF%BF%BFb/0/control`,
      `/api/v1/instances/lab/outlets/${long}/0/control`,
      `/api/v1/instances/lab%20/outlets/${dev}/0/control`,
      `/api/v1/instances/la.b/outlets/${dev}/0/control`,
      `/api/v1/instances/cluster/groups/%2E%2E/control`,
      `/api/v1/instances/cluster/groups/a%0Ab/control`,
    ];
    for (const path of bad) assertProblem400(await h.api.post(path, { action: "on" }, headers), path);
    assert.deepEqual(h.sims.main.writes(), []);
    assert.deepEqual(h.sims.cluster.writes(), []);
  });

  it("never converts body or query values", async () => {
    h.sims.main.clearRequests();
    const path = `/api/v1/instances/lab/outlets/${dev}/0/control`;
    for (const body of [
      { action: true },
      { action: ["on"] },
      { action: 1 },
      { action: "ON" },
      { action: " on" },
    ]) {
      assertProblem400(await h.api.post(path, body, headers), JSON.stringify(body));
    }
    assert.deepEqual(h.sims.main.writes(), []);
    // A repeated query parameter is a list, not its first or last element.
    assertProblem400(await h.api.get("/api/v1/readings?instance=lab&instance=lab"), "repeated query");
    assert.equal((await h.api.get("/api/v1/readings?instance=lab")).status, 200);
  });

  it("still accepts the plain forms: index 0 and the largest outlet", async () => {
    h.sims.main.clearRequests();
    const r = await h.api.post(`/api/v1/instances/lab/outlets/${dev}/3/control`, { action: "off" }, headers);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json<{ index: unknown }>().index, 3, "the answer carries the index as a number");
    assert.equal(h.sims.main.writes().length, 1);
    const missing = await h.api.post(
      `/api/v1/instances/lab/outlets/${dev}/999999/control`,
      { action: "off" },
      headers,
    );
    assert.equal(missing.status, 404, missing.text);
  });
});
