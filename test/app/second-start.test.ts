/**
 * The same configuration started twice against a real mosquitto, both through the real CLI: the
 * second process finds its port taken and exits 2 naming it before it connects to the broker, so
 * it neither takes the running bridge's MQTT session over (same client id) nor marks anything
 * `offline` as it stops; a subscriber sees no `offline` at all, and the first stays connected.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, hasStackTrace, tempDir } from "../../testkit/cli-process.js";
import { Mosquitto, MOSQUITTO } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { freePort } from "../../testkit/repo.js";

describe("the same configuration started twice", { skip: !existsSync(MOSQUITTO) }, () => {
  let sim: Simulator;
  let broker: Mosquitto;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let watcher: Recorder | null = null;
  const processes: CliProcess[] = [];

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
    broker = await Mosquitto.start();
    dir = await tempDir();
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    await watcher?.close();
    await broker?.close();
    await sim?.close();
    await dir?.remove();
  });

  const run = (config: string): CliProcess => {
    const cli = CliProcess.spawn(["--config", config], childEnv({}));
    processes.push(cli);
    return cli;
  };

  it("the second exits 2 naming the port, and no offline is seen from the first", async () => {
    const parent = "twice";
    const apiPort = await freePort();
    const config = await dir.write(
      "twice.yaml",
      appYaml({
        broker,
        parentTopic: parent,
        api: { key: "", port: apiPort },
        health: { port: await freePort() },
        pdus: [pduYaml("lab", sim, { pollInterval: 1 })],
      }),
    );
    watcher = await Recorder.connect(broker, [`${parent}/#`]);
    const first = run(config);
    await first.started();
    await watcher.waitFor(`${parent}/status`, (m) => m.payload === "online");
    await watcher.waitFor(`${parent}/lab/status`, (m) => m.payload === "online");
    const seen = watcher.messages.length;

    const second = run(config);
    const exit = await second.waitForExit(30_000);
    assert.deepEqual(exit, { code: 2, signal: null }, second.output);
    assert.match(second.stderr, /^config error: Api\.Port: /, second.output);
    assert.ok(second.stderr.includes(String(apiPort)), second.output);
    assert.ok(!hasStackTrace(second.output), second.output);
    assert.equal(
      second.logs().some((l) => l.msg === "connected to MQTT broker"),
      false,
      "the second never connected to the broker",
    );

    // Whatever the second made the broker send went out before it exited: a message sent through
    // the broker now arrives after it.
    await watcher.publish(`${parent}/marker`, "after the second exited");
    await watcher.waitFor(`${parent}/marker`);
    const since = watcher.messages.slice(seen);
    assert.deepEqual(
      since.filter((m) => m.payload === "offline").map((m) => m.topic),
      [],
      "no offline from the first",
    );
    assert.equal(
      first.logs().some((l) => String(l.msg).startsWith("MQTT connection lost")),
      false,
      first.output,
    );
    assert.equal(first.exit, null, "the first still runs");

    first.signal("SIGTERM");
    assert.deepEqual(await first.waitForExit(10_000), { code: 0, signal: null }, first.output);
  });
});
