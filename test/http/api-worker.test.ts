/**
 * `Api.Worker`: the REST API's listener in a worker thread. Against the real App polling the
 * simulator: the plain reads are answered from the worker's mirror with the bytes fastify's routes
 * answer, the mirror follows the store, every other request reaches fastify with the client's
 * address (a client cannot name another), the worker's answers are counted in the metrics, a taken
 * port is a ConfigError, and stopping releases the port and removes the private socket directory.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import net from "node:net";
import { dirname } from "node:path";
import { after, before, test } from "node:test";
import { App } from "../../src/app.js";
import { ConfigError } from "../../src/config/errors.js";
import { PEER_HEADER } from "../../src/http/api-worker/store-mirror.js";
import { startApiWorkerHarness, type AppHarness } from "../../testkit/app-harness.js";
import { configFrom } from "../../testkit/http-harness.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { waitFor } from "../../testkit/wait.js";
import { SOCKET_LINE } from "../../src/http/api-worker/host.js";

const KEY = "worker-test-key-0123456789abcdef";
/** Sent by the client: the request then is not plain, so the worker passes it to fastify's route. */
const TO_FASTIFY = { "content-length": "0" };

let h: AppHarness<"lab">;
let socketDir: string;

before(async () => {
  h = await startApiWorkerHarness(KEY);
  const listening = h.logs().find((l) => String(l.msg).startsWith(`${SOCKET_LINE}/`));
  assert.ok(listening, "fastify listens on a unix socket");
  socketDir = dirname(String(listening.msg).slice(SOCKET_LINE.length));
});

after(async () => {
  await h?.close();
});

test("fastify listens in a directory only this user may enter", async () => {
  const { stat } = await import("node:fs/promises");
  assert.equal((await stat(socketDir)).mode & 0o777, 0o700);
});

test("the plain reads come from the mirror, byte for byte what fastify's routes answer", async () => {
  const path = "/api/v1/readings?instance=lab";
  const fast = await waitFor(async () => {
    const r = await h.api.get(path);
    return r.text !== "[]" && r;
  }, "the mirror to hold the first snapshot's readings");
  const routed = await h.api.get(path, TO_FASTIFY);
  assert.equal(fast.status, 200);
  assert.equal(fast.text, routed.text);
  assert.equal(fast.headers["content-type"], routed.headers["content-type"]);
  assert.equal(fast.headers["content-security-policy"], routed.headers["content-security-policy"]);
  assert.equal(
    (await h.api.get("/api/v1/readings")).text,
    (await h.api.get("/api/v1/readings", TO_FASTIFY)).text,
  );

  const withoutUptime = (text: string) => ({ ...(JSON.parse(text) as object), uptimeSeconds: 0 });
  const health = await h.api.get("/api/v1/health");
  assert.deepEqual(
    withoutUptime(health.text),
    withoutUptime((await h.api.get("/api/v1/health", TO_FASTIFY)).text),
  );
});

test("the mirror follows the store", async () => {
  h.app.store.recordFailure("lab", new Error("mirror test failure"));
  const entry = await waitFor(async () => {
    const body = (await h.api.get("/api/v1/health")).json<{
      instances: { id: string; lastError: string | null; consecutiveFailures: number }[];
    }>();
    const lab = body.instances.find((i) => i.id === "lab");
    return lab?.lastError?.includes("mirror test failure") === true && lab;
  }, "the failure in the worker's health answer");
  assert.equal(entry.consecutiveFailures, 1);

  // A new snapshot: its readings are asked of the main thread by the first request that needs them.
  h.app.store.recordSuccess("lab", singleUnit("lab", "MIRROR1", 2));
  const readings = await waitFor(async () => {
    const r = (await h.api.get("/api/v1/readings?instance=lab")).json<{ deviceId: string }[]>();
    return r.length > 0 && r.every((x) => x.deviceId === "MIRROR1") && r;
  }, "the new snapshot's readings from the worker");
  assert.equal((await h.api.get("/api/v1/readings?instance=lab", TO_FASTIFY)).text, JSON.stringify(readings));
});

test("every other request reaches fastify, with the client's address", async () => {
  const instances = await h.api.get("/api/v1/instances");
  assert.equal(instances.status, 200);
  assert.deepEqual(
    instances.json<{ id: string }[]>().map((i) => i.id),
    ["lab"],
  );
  const missing = await h.api.get("/api/v1/nothing-here");
  assert.equal(missing.status, 404);
  assert.match(String(missing.headers["content-type"]), /^application\/problem\+json/);

  const dev = h.sims.lab.deviceIds()[0]!;
  const before = h.audits().length;
  // A client's own peer header is dropped: it cannot choose the address it is audited (and locked out) as.
  const refused = await h.api.post(
    `/api/v1/instances/lab/outlets/${dev}/0/control`,
    { action: "on" },
    { "x-api-key": "not-the-key-0123456789", [PEER_HEADER]: "1.1 203.0.113.9" },
  );
  assert.equal(refused.status, 401, refused.text);
  const audit = await waitFor(() => h.audits()[before], "the audit line");
  assert.equal(audit.client, "127.0.0.1");
  assert.equal(audit.status, 401);
});

test("the worker's answers are counted in the metrics", async () => {
  const counted = async () => {
    const text = (await h.health.get("/metrics")).text;
    const line = text
      .split("\n")
      .find((l) => l.startsWith("pdu_bridge_http_requests_total{") && l.includes('route="/api/v1/health"'));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  };
  const start = await counted();
  for (let i = 0; i < 5; i++) assert.equal((await h.api.get("/api/v1/health")).status, 200);
  await waitFor(async () => (await counted()) >= start + 5, "five more health requests counted");
});

test("a taken Api.Port is a ConfigError naming the key", async () => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const taken = (blocker.address() as net.AddressInfo).port;
  try {
    const config = await configFrom(`
Mqtt: { Embedded: { Bind: 127.0.0.1, Port: 0 } }
Pdus: { a: { Connection: { Host: 127.0.0.1 } } }
Api: { Enabled: true, Bind: 127.0.0.1, Port: ${taken}, Worker: true }
Health: { Enabled: false }
`);
    await assert.rejects(App.start(config, { logger: h.log.logger }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.key, "Api.Port");
      return true;
    });
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

test("without a writable temporary directory the REST API runs on the main thread, with a warning", async () => {
  const config = await configFrom(`
Mqtt: { Embedded: { Bind: 127.0.0.1, Port: 0 } }
Pdus: { a: { Connection: { Host: 127.0.0.1 } } }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, Worker: true }
Health: { Enabled: false }
`);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = "/nonexistent/pdu-bridge-test";
  let app: App | undefined;
  try {
    app = await App.start(config, { logger: h.log.logger });
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  try {
    const answer = await fetch(`http://127.0.0.1:${app.endpoints.apiPort!}/api/v1/health`);
    assert.equal(answer.status, 200);
    assert.ok(
      h.logs().some((line) => line.level === "warn" && String(line.msg).includes("runs on the main thread")),
      "the fallback is logged",
    );
  } finally {
    await app.stop();
  }
});

test("stopping releases the port and removes the socket directory", async () => {
  const port = h.app.endpoints.apiPort!;
  await h.close();
  assert.equal(existsSync(socketDir), false);
  await assert.rejects(
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve();
      });
      socket.on("error", reject);
    }),
    /ECONNREFUSED/,
  );
});
