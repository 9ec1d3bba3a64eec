/**
 * The real CLI process from start to stop (contract §1): it becomes READY, SIGTERM publishes a
 * retained `offline` on `P/status` (seen on an external mosquitto, since an embedded broker dies
 * with the process) and exits 0 within 5 s; a taken port or a bad configuration exits 2 with one
 * message naming the key, and no stack trace.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  CAPPED_HEAP_GROWING_PERCENT,
  DEFAULT_MAX_OLD_SPACE_MB,
  HEAP_GROWING_PERCENT,
} from "../../src/runtime.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, hasStackTrace, tempDir } from "../../testkit/cli-process.js";
import { Client } from "../../testkit/http-harness.js";
import { Mosquitto, MOSQUITTO } from "../../testkit/mosquitto.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";

/** Listens on a free 127.0.0.1 port and keeps it, so the service finds it taken. */
async function occupyPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  assert.ok(typeof address === "object" && address !== null);
  return { server, port: address.port };
}

describe("the CLI process", () => {
  let sim: Simulator;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const processes: CliProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
    dir = await tempDir();
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    for (const cleanup of cleanups.reverse()) await cleanup();
    await sim?.close();
    await dir?.remove();
  });

  const run = (args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): CliProcess => {
    const cli = CliProcess.spawn(args, childEnv(env), "pdu-bridge", nodeArgs);
    processes.push(cli);
    return cli;
  };

  it(
    "reaches READY, and on SIGTERM publishes a retained offline and exits 0 within 5 s",
    { skip: existsSync(MOSQUITTO) ? false : `mosquitto not installed at ${MOSQUITTO}` },
    async () => {
      const broker = await Mosquitto.start();
      cleanups.push(() => broker.close());
      const parent = "cli-e2e";
      const config = await dir.write(
        "lifecycle.yaml",
        appYaml({
          broker,
          parentTopic: parent,
          pdus: [pduYaml("lab", sim, { pollInterval: 1 })],
        }),
      );
      const watcher = await Recorder.connect(broker, [`${parent}/status`]);
      cleanups.push(() => watcher.close());

      // The plain command, as `npx pdu-bridge` or a systemd unit runs it: the service sets its GC
      // policy itself, in its own process, says so, and stops cleanly.
      const cli = run(["--config", config], { NODE_OPTIONS: "" });
      const { healthPort } = await cli.started();
      assert.ok(healthPort !== null);
      const flags = await cli.waitForLog((l) => /^runtime flags/.test(String(l.msg)), "the flags line");
      assert.deepEqual(flags.applied, [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
      assert.deepEqual(flags.kept, []);
      assert.match(String(flags.why), /four times the live heap/);
      assert.equal(flags.pid, cli.child.pid, "no second process");
      const health = new Client(healthPort);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const r = await health.get("/readyz");
        if (r.status === 200) {
          assert.equal(r.text, "READY");
          break;
        }
        assert.equal(r.status, 503);
        assert.match(r.text, /^NOT READY: /);
        assert.ok(Date.now() < deadline, `READY in time (last: ${r.text})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await watcher.waitFor(`${parent}/status`, (m) => m.payload === "online");

      const signalled = Date.now();
      cli.signal("SIGTERM");
      const exit = await cli.waitForExit(5000);
      assert.deepEqual(exit, { code: 0, signal: null }, cli.output);
      assert.match(cli.stderr, /SIGTERM, stopping/);
      assert.ok(!hasStackTrace(cli.output), cli.output);

      const offline = await watcher.waitFor(
        `${parent}/status`,
        (m) => m.payload === "offline" && m.at >= signalled,
      );
      assert.equal(offline.topic, `${parent}/status`);
      // Retained: a subscriber arriving after the process is gone still reads offline.
      const late = await Recorder.connect(broker, [`${parent}/status`]);
      cleanups.push(() => late.close());
      const retained = await late.waitFor(`${parent}/status`);
      assert.equal(retained.payload, "offline");
      assert.equal(retained.retain, true);
    },
  );

  for (const section of ["Api", "Health"] as const) {
    it(`a taken ${section}.Port exits 2 naming the key and the port, without a stack trace`, async () => {
      const taken = await occupyPort();
      cleanups.push(() => new Promise<void>((resolve) => taken.server.close(() => resolve())));
      const config = await dir.write(
        `taken-${section}.yaml`,
        appYaml({
          pdus: [pduYaml("lab", sim)],
          api: { key: "", ...(section === "Api" ? { port: taken.port } : {}) },
          health: section === "Health" ? { port: taken.port } : true,
        }),
      );
      const cli = run(["--config", config]);
      const exit = await cli.waitForExit();
      assert.deepEqual(exit, { code: 2, signal: null }, cli.output);
      assert.match(cli.stderr, new RegExp(`${section}\\.Port`), cli.output);
      assert.ok(cli.stderr.includes(String(taken.port)), cli.output);
      assert.match(cli.stderr, /in use/);
      assert.ok(!hasStackTrace(cli.output), cli.output);
    });
  }

  it("a bad configuration exits 2 with one message naming the key, file and line", async () => {
    const text = appYaml({ pdus: [pduYaml("lab", sim)] }).replace("PollInterval:", "PollIntervall:");
    const config = await dir.write("bad.yaml", text);
    const line = text.split("\n").findIndex((l) => l.includes("PollIntervall")) + 1;
    const cli = run(["--config", config]);
    assert.deepEqual(await cli.waitForExit(), { code: 2, signal: null }, cli.output);
    assert.match(cli.stderr, /Pdus\.lab\.PollIntervall/);
    assert.match(cli.stderr, /PollInterval\b/, "suggests the right spelling");
    assert.ok(cli.stderr.includes(`${config} line ${line}`), cli.output);
    assert.equal(cli.stderr.trim().split("\n").length, 1, "one message");
    assert.equal(cli.stdout, "", "nothing started");
    assert.ok(!hasStackTrace(cli.output), cli.output);
  });

  it("a missing configuration file exits 2", async () => {
    const cli = run(["--config", `${dir.path}/no-such.yaml`]);
    assert.deepEqual(await cli.waitForExit(), { code: 2, signal: null }, cli.output);
    assert.match(cli.stderr, /config error: .*no-such\.yaml/);
    assert.ok(!hasStackTrace(cli.output), cli.output);
  });

  it("SERVICE_CONFIG names the file when --config is absent", async () => {
    const config = await dir.write("from-env.yaml", appYaml({ pdus: [pduYaml("envpdu", sim)] }));
    const cli = run([], { SERVICE_CONFIG: config });
    await cli.started();
    const started = cli.logs().find((l) => l.msg === "pdu-bridge started");
    assert.deepEqual(started?.instances, ["envpdu"]);
    assert.equal(started?.origin, config);
    cli.signal("SIGINT");
    assert.deepEqual(await cli.waitForExit(5000), { code: 0, signal: null }, cli.output);
    await waitFor(() => cli.logs().some((l) => l.msg === "pdu-bridge stopped"), "the stopped line");
    assert.ok(!cli.logs().some((l) => /heap limit/.test(String(l.msg))), "no heap warning for one PDU");
  });

  it("keeps a heap size the user set and adds only the flag that is missing", async () => {
    const config = await dir.write("user-heap.yaml", appYaml({ pdus: [pduYaml("own", sim)], health: false }));
    const cli = run(["--config", config], { NODE_OPTIONS: "--max_old_space_size=200" });
    const flags = await cli.waitForLog((l) => /^runtime flags/.test(String(l.msg)), "the flags line");
    // A heap cap: memory is what is limited, so the heap grows less between full collections.
    assert.deepEqual(flags.applied, [`--heap-growing-percent=${CAPPED_HEAP_GROWING_PERCENT}`]);
    assert.match(String(flags.why), /under a heap cap/);
    assert.deepEqual(flags.kept, ["--max_old_space_size=200"]);
    assert.ok(Number(flags.heapLimitMb) < DEFAULT_MAX_OLD_SPACE_MB, String(flags.heapLimitMb));
    cli.signal("SIGINT");
    assert.deepEqual(await cli.waitForExit(5000), { code: 0, signal: null }, cli.output);
    assert.equal(cli.logs().filter((l) => l.msg === "pdu-bridge started").length, 1, "one service, one log");
  });

  it("adds no flag when the user set the growing factor on the command line", async () => {
    const config = await dir.write(
      "user-both.yaml",
      appYaml({ pdus: [pduYaml("both", sim)], health: false }),
    );
    const cli = run(["--config", config], { NODE_OPTIONS: "--max-semi-space-size=8" }, [
      "--heap-growing-percent=30",
    ]);
    const flags = await cli.waitForLog((l) => /^runtime flags/.test(String(l.msg)), "the flags line");
    assert.equal(flags.msg, "runtime flags");
    assert.deepEqual(flags.applied, []);
    assert.deepEqual(flags.kept, ["--heap-growing-percent=30", "--max-semi-space-size=8"]);
    assert.equal(flags.why, null);
    cli.signal("SIGTERM");
    assert.deepEqual(await cli.waitForExit(5000), { code: 0, signal: null }, cli.output);
  });

  it("runs as one bundle: its chunks, the REST API's worker, the console's files, the docs page, the embedded broker", async () => {
    // What `npm run build` makes of main.js (scripts/bundle.ts): the service in chunks beside it,
    // not tsc's module importing the others one by one.
    const main = readFileSync(fileURLToPath(new URL("../../src/main.js", import.meta.url)), "utf8");
    assert.match(
      main,
      /from"\.\/bundle-[A-Z0-9]+\.js"/,
      "dist/src/main.js is not the bundle: run npm run build",
    );
    assert.doesNotMatch(main, /"\.\/app\.js"/);

    const key = "bundle-test-key-0123456789abcdef0";
    const config = await dir.write(
      "bundle.yaml",
      appYaml({ pdus: [pduYaml("lab", sim, { pollInterval: 1 })], api: { key, worker: true } }),
    );
    const cli = run(["--config", config]);
    const { apiPort } = await cli.started();
    assert.ok(apiPort !== null);
    const api = new Client(apiPort);
    const auth = { "x-api-key": key };
    // The worker thread answers (its file is found beside the bundle), with the polled outlets.
    await waitFor(
      async () => (await api.get("/api/v1/readings?instance=lab", auth)).status === 200,
      "readings",
    );
    const readings = (await api.get("/api/v1/readings?instance=lab", auth)).json<{ deviceId: string }[]>();
    assert.ok(
      readings.length > 0 && readings.every((r) => sim.deviceIds().includes(r.deviceId)),
      JSON.stringify(readings),
    );
    // The console page and its hashed files (found under dist/src/ui/assets).
    const page = await api.get("/ui/");
    assert.equal(page.status, 200);
    const assets = [...page.text.matchAll(/\/ui\/assets\/(console-[A-Z0-9]+\.(?:js|css))/g)].map(
      (m) => m[1]!,
    );
    assert.ok(assets.length >= 2, page.text);
    for (const name of assets) assert.equal((await api.get(`/ui/assets/${name}`)).status, 200, name);
    // swagger-ui's own files (the package is not bundled: it serves them from its directory).
    const docs = await api.get("/docs/v1/");
    assert.equal(docs.status, 200);
    assert.equal((await api.get("/docs/v1/static/swagger-ui.css")).status, 200);
    // The embedded broker (a chunk loaded on demand) carries the outlets' states.
    const started = await cli.waitForLog((l) => l.msg === "pdu-bridge started", "started");
    const port = Number(/:(\d+)$/.exec(String(started.mqtt))?.[1]);
    assert.ok(port > 0, String(started.mqtt));
    const watcher = await Recorder.connect({ host: "127.0.0.1", port }, ["pdu-bridge/lab/#"]);
    cleanups.push(() => watcher.close());
    await waitFor(() => watcher.messages.some((m) => m.topic.endsWith("/state")), "an outlet state");
    cli.signal("SIGTERM");
    assert.deepEqual(await cli.waitForExit(10_000), { code: 0, signal: null }, cli.output);
  });

  it("warns at start when the heap limit looks too small for the fleet", async () => {
    // 240 instances need about (24 + 0.04 × 240) × 1.5 = 51 MB; a 40 MB old space and three 1 MB
    // semi-spaces give 43 (pinned: Node 24's default semi-space is larger than Node 20's). The
    // bridge lives about 28 MB then, enough for the seconds until the warning.
    const pdus = Array.from({ length: 240 }, (_, i) => pduYaml(`p${i}`, sim, { pollInterval: 60 }));
    const config = await dir.write("big-fleet.yaml", appYaml({ pdus, health: false }));
    const cli = run(["--config", config], {
      NODE_OPTIONS: "--max-old-space-size=40 --max-semi-space-size=1",
    });
    const warning = await cli.waitForLog(
      (l) => /heap limit looks too small/.test(String(l.msg)),
      "the heap warning",
    );
    assert.equal(warning.level, "warn");
    assert.equal(warning.instances, 240);
    assert.equal(warning.neededMb, 51);
    assert.ok(Number(warning.heapLimitMb) < 51, String(warning.heapLimitMb));
    cli.signal("SIGTERM");
    assert.deepEqual(await cli.waitForExit(10_000), { code: 0, signal: null }, cli.output);
  });
});
