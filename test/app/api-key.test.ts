/**
 * Where the API key comes from, through the real CLI process: SERVICE_API_KEY_FILE over
 * SERVICE_API_KEY over Api.ApiKey in the file. Each time the winning key gets 200 from a control
 * call (and the outlet switches), the losing ones 401; no key ever shows in the process's output,
 * in a response body or in the OpenAPI document.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, tempDir } from "../../testkit/cli-process.js";
import { Client } from "../../testkit/http-harness.js";

const FILE_KEY = "key-from-config-file-0a1b";
const ENV_KEY = "key-from-env-var-2c3d";
const FILE_VAR_KEY = "key-from-key-file-4e5f";
const ALL_KEYS = [FILE_KEY, ENV_KEY, FILE_VAR_KEY];

describe("API key sources through the real CLI", () => {
  let sim: Simulator;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let configPath: string;
  let keyFile: string;
  const running: CliProcess[] = [];

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
    dir = await tempDir();
    configPath = await dir.write(
      "config.yaml",
      appYaml({
        api: { key: FILE_KEY },
        pdus: [pduYaml("lab", sim, { actionsEnabled: true, pollInterval: 2 })],
      }),
    );
    keyFile = await dir.write("api-key", `${FILE_VAR_KEY}\n`);
  });

  after(async () => {
    await Promise.all(running.map((p) => p.kill()));
    await sim?.close();
    await dir?.remove();
  });

  const cases = [
    { name: "Api.ApiKey in the file alone", env: {}, winner: FILE_KEY },
    { name: "SERVICE_API_KEY over the file", env: { SERVICE_API_KEY: ENV_KEY }, winner: ENV_KEY },
    {
      name: "SERVICE_API_KEY_FILE over SERVICE_API_KEY and the file",
      env: { SERVICE_API_KEY: ENV_KEY, SERVICE_API_KEY_FILE: "<key file>" },
      winner: FILE_VAR_KEY,
    },
  ];

  for (const c of cases) {
    it(`${c.name}: only ${c.winner} is accepted`, async () => {
      const env = Object.fromEntries(
        Object.entries(c.env).map(([k, v]) => [k, v === "<key file>" ? keyFile : v]),
      );
      const cli = CliProcess.spawn(["--config", configPath], childEnv(env));
      running.push(cli);
      const { apiPort } = await cli.started();
      assert.ok(apiPort !== null, "the API listens");
      const api = new Client(apiPort);
      // Wait for the first poll, through the API (no key needed to read).
      const deadline = Date.now() + 15_000;
      for (;;) {
        const snapshots = (await api.get("/api/v1/snapshots")).json<{ timestampUtc: string | null }[]>();
        if (snapshots[0]?.timestampUtc) break;
        assert.ok(Date.now() < deadline, "the instance was polled");
        await new Promise((r) => setTimeout(r, 50));
      }

      const dev = sim.deviceIds()[0]!;
      const path = `/api/v1/instances/lab/outlets/${dev}/0/control`;
      sim.setOutletState(dev, 0, "on");
      for (const loser of ALL_KEYS.filter((k) => k !== c.winner)) {
        const r = await api.post(path, { action: "off" }, { "x-api-key": loser });
        assert.equal(r.status, 401, `${loser}: ${r.text}`);
        assert.equal(sim.outlet(dev, 0).state, "on");
      }
      const ok = await api.post(path, { action: "off" }, { "x-api-key": c.winner });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(sim.outlet(dev, 0).state, "off", "the winning key's command reached the PDU");

      const doc = await api.get("/openapi/v1.json");
      assert.equal(doc.status, 200);
      await api.get("/api/v1/instances");
      await api.get("/api/v1/health");
      await api.get("/api/v1/readings");

      cli.signal("SIGTERM");
      assert.deepEqual(await cli.waitForExit(), { code: 0, signal: null }, cli.output);
      for (const key of ALL_KEYS) {
        assert.ok(!cli.stdout.includes(key), `${key} not in stdout`);
        assert.ok(!cli.stderr.includes(key), `${key} not in stderr`);
        for (const r of api.responses) assert.ok(!r.text.includes(key), `${key} not in ${r.path}`);
      }
      assert.ok(
        cli.logs().some((l) => l.msg === "pdu-bridge started"),
        "the log was captured",
      );
    });
  }
});
