/**
 * `Api.Worker`: readiness is honest about the REST API (docs/http.md, "Health rules"). The real CLI
 * with testkit/inject.ts preloaded, whose `stall-worker` trigger blocks the API worker thread for
 * good, as a worker stuck in a loop would: it answers no request and no heartbeat. Within the
 * heartbeat's limit `/readyz` is NOT READY naming the API worker, `/health/integrations` shows the
 * api unhealthy with the same reason, the hang is logged, and the worker is ended and started
 * again: READY, and the REST API answers. A hung worker that went unnoticed (READY throughout) fails it.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { BridgeProcess, until } from "../../testkit/faults-harness.js";
import { INJECT_DIR_VARIABLE } from "../../testkit/inject.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { DIST, freePort } from "../../testkit/repo.js";

failOnUnhandled();

const PRELOAD = pathToFileURL(join(DIST, "testkit", "inject.js")).href;

let sim: Simulator;
let dir: string;
let bridge: BridgeProcess;

before(async () => {
  sim = await startSimulator({ outlets: 2, seed: 71 });
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-inject-"));
  bridge = await BridgeProcess.start(
    {
      broker: { host: "127.0.0.1", port: await freePort() },
      embedded: true,
      pdus: [{ id: "lab", sim, pollInterval: 1 }],
    },
    "heartbeat",
    { nodeArgs: ["--import", PRELOAD], env: { [INJECT_DIR_VARIABLE]: dir } },
  );
  await bridge.waitPolled(["lab"]);
  await until(async () => (await bridge.readyz()).status === 200, "READY", 15_000);
});

after(async () => {
  await bridge?.close();
  await sim?.close();
  await rm(dir, { recursive: true, force: true });
});

type Integrations = { integrations: Record<string, { status: string; detail: string }> };

test("a hung API worker: NOT READY naming it, unhealthy, logged, then ended and started again", async () => {
  assert.equal((await bridge.api("/api/v1/health")).status, 200);
  await writeFile(join(dir, "stall-worker"), "");
  const stalled = Date.now();
  const notReady = await until(
    async () => {
      const r = await bridge.readyz();
      return r.status === 503 && r;
    },
    "NOT READY",
    30_000,
  );
  assert.match(notReady.text, /^NOT READY: API worker/);
  const report = JSON.parse((await bridge.health("/health/integrations")).text) as Integrations;
  assert.equal(report.integrations.api?.status, "unhealthy");
  assert.match(report.integrations.api?.detail ?? "", /^API worker/);
  // MQTT and the PDU are fine: only the api is named.
  assert.equal(report.integrations.mqtt?.status, "healthy");
  assert.equal(report.integrations["pdu:lab"]?.status, "healthy");
  await bridge.cli.waitForLog(
    (l) => l.level === "error" && String(l.msg).startsWith("API worker not answering"),
    "the hang logged",
  );
  // Ended and started again.
  await until(async () => (await bridge.readyz()).status === 200, "READY again", 60_000);
  const back = await bridge.api("/api/v1/readings?instance=lab");
  assert.equal(back.status, 200);
  assert.ok((JSON.parse(back.text) as unknown[]).length > 0);
  await bridge.cli.waitForLog(
    (l) => String(l.msg).startsWith("API worker listening again"),
    "the restart logged",
  );
  assert.ok(Date.now() - stalled < 60_000);
});
