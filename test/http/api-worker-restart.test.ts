/**
 * `Api.Worker`: a worker thread that dies is started again. Against the real App polling the
 * simulator, the test ends the thread as a fault would (`terminate()`, exit code 1) and holds the
 * port meanwhile, so that restarts fail until it lets go: `/health/integrations` shows the api
 * unhealthy with what is going on (and /readyz NOT READY with it), a failed restart is tried again, the REST
 * API answers again once the port is free, a control write goes through, and the restarts are
 * counted. Stopping while a restart is pending finishes and frees the port.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import net from "node:net";
import { dirname } from "node:path";
import { after, before, test } from "node:test";
import { startApiWorkerHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { SOCKET_LINE } from "../../src/http/api/worker-host.js";

const KEY = "worker-restart-key-0123456789abcdef";

let h: AppHarness<"lab">;
let port: number;

before(async () => {
  h = await startApiWorkerHarness(KEY);
  port = h.app.endpoints.apiPort!;
});

after(async () => {
  await h?.close();
});

type Integrations = { status: string; integrations: Record<string, { status: string; detail: string }> };
const integrations = async () => (await h.health.get("/health/integrations")).json<Integrations>();

/** Listens on the API's port, or fails with EADDRINUSE while the worker holds it. */
function hold(): Promise<net.Server> {
  const blocker = net.createServer();
  return new Promise((resolve, reject) => {
    blocker.once("error", reject);
    blocker.listen(port, "127.0.0.1", () => resolve(blocker));
  });
}

const release = (blocker: net.Server) => new Promise<void>((resolve) => blocker.close(() => resolve()));

/**
 * Ends the worker thread as a fault would and takes its port before the first restart (1 s later)
 * can; should a busy machine let the restart win, the worker is ended again.
 */
async function killAndHold(): Promise<net.Server> {
  for (let tries = 0; ; tries++) {
    const thread = await waitFor(() => h.app.apiWorker?.thread(), "a listening worker thread");
    assert.equal(await thread.terminate(), 1);
    assert.match(h.app.apiWorker!.outage() ?? "", /^API worker restarting \(attempt \d+\) after exit code 1/);
    try {
      return await hold();
    } catch (error) {
      if ((error as { code?: string }).code !== "EADDRINUSE" || tries >= 3) throw error;
      await waitFor(() => h.app.apiWorker?.outage() === null, "the worker to listen again", 90_000);
    }
  }
}

const restarts = async () => {
  const text = (await h.health.get("/metrics")).text;
  const line = text.split("\n").find((l) => l.startsWith("pdu_bridge_api_worker_restarts_total "));
  return Number(line?.split(" ")[1]);
};

test("a dead worker is started again: reported while down, then the REST API and control work again", async () => {
  assert.equal((await integrations()).integrations.api?.status, "healthy");
  assert.equal(await restarts(), 0);
  const blocker = await killAndHold();
  let released = false;
  try {
    // The restart cannot listen while the port is held: it fails, is logged and tried again.
    const down = await waitFor(
      async () => {
        const report = await integrations();
        return /attempt \d+ failed: .*EADDRINUSE/.test(report.integrations.api?.detail ?? "") && report;
      },
      "a failed restart in /health/integrations",
      30_000,
    );
    assert.equal(down.integrations.api?.status, "unhealthy");
    assert.match(
      down.integrations.api?.detail ?? "",
      /^API worker restarting \(attempt \d+\) after exit code 1/,
    );
    assert.equal(down.status, "degraded", "the api alone does not make the service unhealthy");
    const ready = await h.health.get("/readyz");
    assert.equal(ready.status, 503, "not ready while the REST API does not answer");
    assert.match(ready.text, /^NOT READY: API worker restarting \(attempt \d+\) after exit code 1/);
    assert.ok(
      h
        .logs()
        .some((l) => l.level === "error" && l.code === 1 && String(l.msg).startsWith("API worker exited")),
      "the death is logged with its exit code",
    );
    assert.ok(
      h.logs().some((l) => l.level === "error" && String(l.msg).startsWith("API worker restart failed")),
      "the failed restart is logged",
    );
    await release(blocker);
    released = true;

    await waitFor(
      async () => (await h.api.get("/api/v1/health")).status === 200,
      "the REST API to answer again",
      90_000,
    );
    assert.ok(
      h.logs().some((l) => l.level === "info" && String(l.msg).startsWith("API worker listening again")),
    );
    assert.equal((await integrations()).integrations.api?.status, "healthy");
    assert.equal(h.app.apiWorker!.outage(), null);
    assert.equal((await h.health.get("/readyz")).status, 200, "ready again");
    assert.ok((await restarts()) >= 2, "the failed attempt and the one that listened are counted");

    // The new worker's mirror starts full: the readings come from it, and requests reach fastify.
    const readings = await waitFor(async () => {
      const r = (await h.api.get("/api/v1/readings?instance=lab")).json<unknown[]>();
      return r.length > 0 && r;
    }, "the restarted worker's readings");
    assert.ok(readings.length > 0);
    const dev = h.sims.lab.deviceIds()[0]!;
    h.sims.lab.setOutletState(dev, 1, "off");
    const write = await h.api.post(
      `/api/v1/instances/lab/outlets/${dev}/1/control`,
      { action: "on" },
      { "x-api-key": KEY },
    );
    assert.equal(write.status, 200, write.text);
    assert.equal(h.sims.lab.outlet(dev, 1).state, "on");
  } finally {
    if (!released) await release(blocker);
  }
});

test("stopping while the worker waits to be started again finishes and frees the port", async () => {
  const listening = h.logs().find((l) => String(l.msg).startsWith(`${SOCKET_LINE}/`));
  assert.ok(listening, "fastify listens on a unix socket");
  const socketDir = dirname(String(listening.msg).slice(SOCKET_LINE.length));
  const blocker = await killAndHold();
  try {
    assert.notEqual(h.app.apiWorker!.outage(), null, "the worker is down when the stop begins");
    await h.app.stop();
    assert.equal(h.app.apiWorker!.thread(), null, "no thread is left");
    assert.equal(existsSync(socketDir), false, "the socket directory is removed");
  } finally {
    await release(blocker);
  }
  // Nothing took the port after the stop: it can be listened on again.
  await release(await hold());
});
