/**
 * `GET /api/v1/energy`'s refusals, without a Prometheus: 409 naming `Energy.ReportSource` when it
 * is not set; 400 for a period that is not one; 502 saying why when the source cannot be asked or
 * answers something that is not a report's data (a stand-in HTTP server on loopback answering
 * garbage). The reports themselves: test/energy/report.test.ts, on a real Prometheus.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { buildApiServer } from "../../src/http/api/server.js";
import { configFrom, harness } from "../../testkit/http-harness.js";
import { freePort } from "../../testkit/repo.js";

const config = (extra: string) =>
  configFrom(`
Pdus:
  lab:
    Connection: { Host: 192.0.2.1 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "energy-report-key-0123456789abcdef" }
${extra}
`);

const PERIOD = "from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z";

describe("GET /api/v1/energy refuses what it cannot answer", () => {
  let garbage: Server;
  let garbagePort: number;

  before(async () => {
    garbage = createServer((_request, response) => {
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          status: "success",
          data: { resultType: "vector", result: [{ metric: { instance: "a\u0000b" }, value: [1, "5"] }] },
        }),
      );
    });
    await new Promise<void>((resolve) => garbage.listen(0, "127.0.0.1", resolve));
    garbagePort = (garbage.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise((resolve) => garbage.close(resolve));
  });

  const ask = async (extra: string, query: string) => {
    const h = harness(await config(extra));
    const app = await buildApiServer(h.deps);
    try {
      return await app.inject({ method: "GET", url: `/api/v1/energy?${query}` });
    } finally {
      await app.close();
    }
  };

  it("409 naming Energy.ReportSource when it is not set", async () => {
    const res = await ask("", PERIOD);
    assert.equal(res.statusCode, 409, res.body);
    assert.match(res.headers["content-type"] as string, /application\/problem\+json/);
    assert.match(res.body, /Energy\.ReportSource is not set/);
  });

  it("400 for a period that ends before it starts, a time that is not one, an unknown grouping", async () => {
    const source = `Energy: { ReportSource: "http://127.0.0.1:${garbagePort}" }`;
    for (const query of [
      "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
      "from=2026-13-01T00:00:00Z&to=2026-11-01T00:00:00Z",
      `${PERIOD}&groupBy=rack`,
      `${PERIOD}&format=xml`,
      "from=yesterday&to=2026-11-01T00:00:00Z",
    ]) {
      const res = await ask(source, query);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
    }
  });

  it("502 saying why when the source answers a label that is no safe name, or cannot be reached", async () => {
    const bad = await ask(`Energy: { ReportSource: "http://127.0.0.1:${garbagePort}" }`, PERIOD);
    assert.equal(bad.statusCode, 502, bad.body);
    assert.match(bad.body, /unusable instance label/);
    const closed = await freePort();
    const down = await ask(`Energy: { ReportSource: "http://127.0.0.1:${closed}" }`, PERIOD);
    assert.equal(down.statusCode, 502, down.body);
    assert.match(down.body, /could not be asked/);
  });
});
