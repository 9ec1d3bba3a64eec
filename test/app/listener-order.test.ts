/**
 * The REST API listens before the health listener does: an orchestrator's readiness probe (on the
 * health listener) can never pass while the API port still refuses connections, so traffic routed to
 * a pod that reads READY finds the API there. Through the real CLI, the API in its worker thread.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, tempDir } from "../../testkit/cli-process.js";
import { canConnect, freePort } from "../../testkit/repo.js";

describe("listener start order", () => {
  let sim: Simulator;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let cli: CliProcess | null = null;

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
    dir = await tempDir();
  });

  after(async () => {
    await cli?.kill();
    await sim?.close();
    await dir?.remove();
  });

  it("the API (worker thread) accepts connections before the health listener does", async () => {
    const apiPort = await freePort();
    const healthPort = await freePort();
    const config = await dir.write(
      "order.yaml",
      appYaml({
        api: { key: "listener-order-key-0123456789abcdef", port: apiPort, worker: true },
        health: { port: healthPort },
        pdus: [pduYaml("lab", sim)],
      }),
    );
    cli = CliProcess.spawn(["--config", config], childEnv({}));
    // Watch the health port from the moment the process exists; the first accepted connection
    // is the earliest a readiness probe could pass.
    const deadline = Date.now() + 20_000;
    while (!(await canConnect(healthPort))) {
      assert.ok(Date.now() < deadline, `the health listener came up: ${cli.output}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    assert.equal(await canConnect(apiPort), true, "the API port accepts once the health port does");
    const { apiPort: logged, healthPort: loggedHealth } = await cli.started();
    assert.deepEqual([logged, loggedHealth], [apiPort, healthPort]);
  });
});
