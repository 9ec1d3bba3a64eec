/**
 * The fast path of the hot read endpoints (src/http/api/cached-reads.ts): it answers plain monitoring
 * GETs of /api/v1/health and /api/v1/readings without fastify, so its answers must be exactly what
 * the routes answer, follow every change of the store, and leave every other request to fastify.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { createFastReads, createReadBodies, storeReadSource } from "../../src/http/api/cached-reads.js";
import { buildApiServer } from "../../src/http/api/server.js";
import type { HttpApp } from "../../src/http/types.js";
import { Client, configFrom, harness, type Harness } from "../../testkit/http-harness.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";

const CONFIG = `
Pdus:
  rack-a:
    Connection: { Host: 127.0.0.1, Port: 9 }
  Rack-B:
    Connection: { Host: 127.0.0.1, Port: 9 }
  idle:
    Connection: { Host: 127.0.0.1, Port: 9 }
Api: { Enabled: true, Port: 0 }
`;

/** Headers that depend on the moment or the connection, not on the answer. */
const VARYING = new Set(["date", "connection", "keep-alive", "transfer-encoding"]);
const stable = (headers: IncomingHttpHeaders | Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(headers)
      .filter(([name]) => !VARYING.has(name.toLowerCase()))
      .map(([name, value]): [string, string] => [name.toLowerCase(), String(value)])
      .sort((a, b) => (a[0] < b[0] ? -1 : 1)),
  );

describe("fast path of the hot read endpoints", () => {
  let h: Harness;
  let app: HttpApp;
  let client: Client;

  before(async () => {
    h = harness(await configFrom(CONFIG));
    h.store.recordSuccess("rack-a", singleUnit("rack-a", "DEV1", 4));
    h.store.recordSuccess("Rack-B", singleUnit("Rack-B", "DEV9", 2));
    app = await buildApiServer(h.deps);
    await app.listen({ host: "127.0.0.1", port: 0 });
    client = new Client((app.server.address() as AddressInfo).port);
  });

  after(() => app.close());

  for (const path of [
    "/api/v1/health",
    "/api/v1/readings",
    "/api/v1/readings?instance=rack-a",
    "/api/v1/readings?instance=Rack-B",
    "/api/v1/readings?instance=idle",
  ]) {
    it(`GET ${path} over the socket answers what the route answers`, async () => {
      const fast = await client.get(path);
      const routed = await app.inject({ method: "GET", url: path });
      assert.equal(fast.status, 200);
      assert.equal(fast.status, routed.statusCode);
      assert.equal(fast.text, routed.body);
      assert.deepEqual(stable(fast.headers), stable(routed.headers));
      assert.equal(fast.headers["content-length"], String(Buffer.byteLength(fast.text)));
    });
  }

  it("follows the store, the clock and the MQTT state", async () => {
    const before = (await client.get("/api/v1/health")).json<{
      uptimeSeconds: number;
      mqttConnected: boolean;
      instances: { id: string; consecutiveFailures: number }[];
    }>();
    h.clock.now += 5000;
    h.mqtt = { ...h.mqtt, connected: !before.mqttConnected };
    h.store.recordFailure("rack-a", new Error("connection refused"));
    const after = (await client.get("/api/v1/health")).json<typeof before>();
    assert.equal(after.uptimeSeconds, before.uptimeSeconds + 5);
    assert.equal(after.mqttConnected, !before.mqttConnected);
    assert.equal(after.instances.find((i) => i.id === "rack-a")?.consecutiveFailures, 1);

    const oldReadings = (await client.get("/api/v1/readings?instance=Rack-B")).json<unknown[]>();
    h.store.recordSuccess("Rack-B", singleUnit("Rack-B", "DEV9", 3));
    const newReadings = (await client.get("/api/v1/readings?instance=Rack-B")).json<unknown[]>();
    assert.ok(newReadings.length > oldReadings.length, "a third outlet's readings appear");
    const all = (await client.get("/api/v1/readings")).json<{ instanceId: string }[]>();
    assert.equal(all.filter((r) => r.instanceId === "Rack-B").length, newReadings.length);
  });

  describe("what it leaves to fastify", () => {
    let server: Server;
    let raw: Client;
    before(async () => {
      const source = storeReadSource(h.deps);
      const fast = createFastReads(source, createReadBodies(source));
      // 299: fastify would have answered this request.
      server = createServer((request, response) => {
        if (!fast(request, response)) response.writeHead(299).end();
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      raw = new Client((server.address() as AddressInfo).port);
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("answers the plain GETs itself", async () => {
      for (const path of ["/api/v1/health", "/api/v1/readings", "/api/v1/readings?instance=rack-a"]) {
        assert.equal((await raw.get(path)).status, 200, path);
      }
    });

    it("declines other methods, bodies, other queries, unknown or encoded ids", async () => {
      const declined: [string, Parameters<Client["send"]>[1]][] = [
        ["/api/v1/health", { method: "HEAD" }],
        ["/api/v1/health", { method: "POST", body: "{}" }],
        ["/api/v1/health", { method: "GET", body: "x" }],
        ["/api/v1/health?verbose=1", {}],
        ["/api/v1/health/", {}],
        ["/api/v1/readings?instance=RACK-A", {}],
        ["/api/v1/readings?instance=rack%2Da", {}],
        ["/api/v1/readings?instance=", {}],
        ["/api/v1/readings?instance=rack-a&instance=idle", {}],
        ["/api/v1/readings?instance=nope", {}],
        ["/api/v1/instances", {}],
      ];
      for (const [path, options] of declined) {
        assert.equal((await raw.send(path, options)).status, 299, `${options?.method ?? "GET"} ${path}`);
      }
    });

    it("declines a request without Host (HTTP/1.0 may omit it)", async () => {
      const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
      const answer = await new Promise<string>((resolve, reject) => {
        let text = "";
        socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
        socket.write("GET /api/v1/health HTTP/1.0\r\n\r\n");
      });
      assert.match(answer, /^HTTP\/1\.1 299 /);
    });
  });
});
