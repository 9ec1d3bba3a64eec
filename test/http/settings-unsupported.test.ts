/**
 * A PDU family whose driver cannot change settings (it has no `setOutletSettings` and no `setLabel`,
 * src/pdu/driver.ts) behind the real REST listener: a settings PATCH answers 502 "Not supported"
 * and nothing is written to the PDU, while the same driver still switches outlets. The driver is
 * the real Geist driver of a real simulator with those two capabilities left out.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { buildApiServer } from "../../src/http/api/server.js";
import type { HttpApp } from "../../src/http/types.js";
import { createControlService } from "../../src/control/service.js";
import { silentLogger } from "../../src/log.js";
import type { PduDriver } from "../../src/pdu/driver.js";
import { startControlHarness, type ControlHarness } from "../../testkit/control-harness.js";
import { Client, configFrom, harness } from "../../testkit/http-harness.js";

const KEY = "no-settings-key-7d41b2";
const withKey = { "x-api-key": KEY };

/** `driver` as a family that can switch and reset but not change settings or labels. */
function withoutSettings(driver: PduDriver): PduDriver {
  return {
    instanceId: driver.instanceId,
    vendor: driver.vendor,
    poll: (signal) => driver.poll(signal),
    controlOutlet: (target, action, signal) => driver.controlOutlet(target, action, signal),
    resetOutletEnergy: (target, signal) => driver.resetOutletEnergy(target, signal),
    close: () => driver.close(),
  };
}

let core: ControlHarness;
let app: HttpApp;
let api: Client;
let dev: string;

before(async () => {
  core = await startControlHarness({ sim: { outlets: 2 }, instances: [{ id: "lab" }], poll: ["lab"] });
  const geist = core.clients.get("lab");
  assert.ok(geist);
  const control = createControlService({
    config: core.config,
    store: core.store,
    clients: new Map([["lab", withoutSettings(geist)]]),
    pollSoon: () => undefined,
    logger: silentLogger(),
  });
  const config = await configFrom(
    "Pdus:\n  lab:\n    Connection: { Host: 127.0.0.1 }\n" +
      `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "${KEY}" }\n`,
  );
  app = await buildApiServer(harness(config, { control }).deps);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  assert.ok(typeof address === "object" && address !== null);
  api = new Client(address.port);
  dev = core.sim.deviceIds()[0]!;
});

after(async () => {
  await app?.close();
  await core?.close();
});

const patch = (path: string, body: unknown) => api.send(path, { method: "PATCH", body, headers: withKey });

test("an outlet settings PATCH answers 502 Not supported and writes nothing", async () => {
  const label = core.sim.outlet(dev, 1).label;
  const writes = core.sim.writes().length;
  const res = await patch(`/api/v1/instances/lab/outlets/${dev}/1`, { label: "web-01", onDelay: 10 });
  assert.equal(res.status, 502, res.text);
  const body = res.json<{ title: string; detail: string }>();
  assert.equal(body.title, "Not supported");
  assert.match(body.detail, /cannot change settings of outlet .*; nothing was sent/);
  assert.equal(core.sim.writes().length, writes, "nothing reached the PDU");
  assert.equal(core.sim.outlet(dev, 1).label, label);
});

test("a device label PATCH answers 502 too (no setLabel either)", async () => {
  const writes = core.sim.writes().length;
  const res = await patch(`/api/v1/instances/lab/devices/${dev}`, { label: "rack 4 left" });
  assert.equal(res.status, 502, res.text);
  assert.match(res.json<{ detail: string }>().detail, /cannot change settings of device/);
  assert.equal(core.sim.writes().length, writes, "nothing reached the PDU");
});

test("the same driver still switches outlets (only settings are missing)", async () => {
  core.sim.setOutletState(dev, 0, "off");
  const res = await api.post(`/api/v1/instances/lab/outlets/${dev}/0/control`, { action: "on" }, withKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(core.sim.outlet(dev, 0).state, "on");
});
