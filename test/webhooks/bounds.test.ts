/**
 * The bounds of webhook delivery (docs/events.md, Webhooks): a receiver's queue keeps at most
 * `MaxQueue` undelivered events, a new one dropping the oldest (counted, the rest delivered in
 * order); a `State.Dir/webhooks.json` the bridge cannot read refuses the start naming `State.Dir`
 * and is left as it was.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App } from "../../src/app.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";
import { silentLogger } from "../../src/log.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { WebhookReceiver } from "../../testkit/webhook-receiver.js";

const SECRET = "whsec-bounds-4c8e2a6f1b";
const env = { SERVICE_WEBHOOK_0_SECRET: SECRET };

describe("webhook bounds", { timeout: 120_000 }, () => {
  let receiver: WebhookReceiver;
  let sim: Simulator;
  let dir: string;

  before(async () => {
    receiver = await WebhookReceiver.start(SECRET);
    sim = await startSimulator({ outlets: 2 });
    dir = await mkdtemp(join(tmpdir(), "pdu-webhooks-bounds-"));
  });
  after(async () => {
    await receiver?.close();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("drops the oldest beyond MaxQueue, counted, and delivers the rest in order", async () => {
    const h = await startAppHarness({
      sims: { lab: { outlets: 2 } },
      env,
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml("lab", sims.lab)],
          extra: [
            "Metrics: { Enabled: true }",
            "Webhooks:",
            `  - { Url: ${JSON.stringify(receiver.url)}, AllowHttp: true, Events: [control], MaxQueue: 5, RetryMaxDelay: 0.2 }`,
          ].join("\n"),
        }),
    });
    try {
      await receiver.down();
      for (let i = 0; i < 8; i++)
        h.app.bus.emit("control", {
          source: { surface: "rest", client: "127.0.0.1" },
          instanceId: "lab",
          target: { kind: "outlet", deviceId: "E4A1", index: i },
          action: "on",
          status: 200,
          fromCore: true,
        });
      await receiver.listen();
      await waitFor(() => receiver.deliveries.length >= 5, "the five kept delivered");
      const metrics = (await h.health.get("/metrics")).text;
      assert.match(metrics, /pdu_webhook_deliveries_total\{receiver="0",outcome="dropped"\} 3\n/);
      await new Promise((resolve) => setTimeout(resolve, 500));
      // The head in flight when the queue overflowed may be the oldest kept; the rest follow in order.
      const targets = receiver.deliveries.map((d) => (d.json.target as { index: number }).index);
      assert.equal(targets.length, 5);
      assert.deepEqual(targets.slice(1), [4, 5, 6, 7]);
      assert.ok([0, 3].includes(targets[0]!), `first ${targets[0]}`);
    } finally {
      await h.close();
    }
  });

  it("refuses to start on a webhooks.json it cannot read, naming State.Dir, and keeps the file", async () => {
    await mkdir(join(dir, "state"), { recursive: true });
    const file = join(dir, "state", "webhooks.json");
    await writeFile(file, '{"format":"pdu-bridge-webhooks","v":1,"events":[{"id":"x"}');
    const config = await parseConfigText(
      appYaml({
        pdus: [pduYaml("lab", sim)],
        extra: [
          `State: { Dir: ${JSON.stringify(join(dir, "state"))} }`,
          "Webhooks:",
          `  - { Url: ${JSON.stringify(receiver.url)}, AllowHttp: true }`,
        ].join("\n"),
      }),
      "bounds.yaml",
      env,
    );
    await assert.rejects(
      App.start(config, { logger: silentLogger() }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /State\.Dir/.test(error.message) &&
        /webhooks\.json is not JSON/.test(error.message),
    );
    assert.equal(await readFile(file, "utf8"), '{"format":"pdu-bridge-webhooks","v":1,"events":[{"id":"x"}');
  });
});
