/**
 * `Api.Worker`: the worker's own answer to `GET /api/v1/health` follows the MQTT connection. The
 * App polls the simulator and publishes to a real mosquitto, which is stopped and started again:
 * the worker's mirror hears the bus's `mqttLost` and `mqttConnected` and says so.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "worker-mqtt-key-0123456789abcdef";

let broker: Mosquitto;
let h: AppHarness<"lab">;

before(async () => {
  broker = await Mosquitto.start();
  h = await startAppHarness<"lab">({
    sims: { lab: { outlets: 2 } },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("lab", sims.lab, { pollInterval: 60 })],
        api: { key: KEY, worker: true },
        broker: { host: broker.host, port: broker.port },
      }),
  });
  await h.waitForPoll("lab");
});

after(async () => {
  await h?.close();
  await broker?.close();
});

/** What the worker itself answers (a plain GET is never passed to fastify). */
async function workerSaysConnected(): Promise<boolean> {
  const r = await h.api.get("/api/v1/health");
  assert.equal(r.status, 200);
  return r.json<{ mqttConnected: boolean }>().mqttConnected;
}

test("the worker's health answer follows the MQTT connection as it goes and comes back", async () => {
  await waitFor(async () => (await workerSaysConnected()) === true, "the worker to say MQTT is connected");
  await broker.stop();
  await waitFor(async () => (await workerSaysConnected()) === false, "the worker to say MQTT is lost");
  assert.equal(h.app.mqtt.status().connected, false);
  await broker.restart();
  await waitFor(async () => (await workerSaysConnected()) === true, "the worker to say MQTT is back");
  assert.equal(h.app.mqtt.status().connected, true);
});
