/**
 * The driver seam: the factory picks a driver from `Pdus.<id>.Driver` (default geist), the driver
 * polls the real simulator into a snapshot carrying its vendor, and an unknown driver is a config
 * error naming the key.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";
import type { PduDriver } from "../../src/pdu/driver.js";
import { createDriver } from "../../src/pdu/drivers.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";

const config = (port: number, driver = "") =>
  parseConfigText(
    `Pdus:\n  rack:\n    Connection:\n      Host: 127.0.0.1\n      Port: ${port}\n${driver}`,
    "drivers.yaml",
    {},
  );

describe("PDU drivers", () => {
  let sim: Simulator;
  let driver: PduDriver | null = null;

  before(async () => {
    sim = await startSimulator({ host: "127.0.0.1", devices: 1, outlets: 2 });
  });
  after(async () => {
    await driver?.close();
    await sim.close();
  });

  it("defaults Pdus.<id>.Driver to geist, whose driver polls a snapshot naming its vendor", async () => {
    const loaded = await config(sim.port);
    const instance = loaded.instances[0]!;
    assert.equal(instance.Driver, "geist");
    driver = createDriver(instance);
    assert.ok(driver instanceof GeistClient);
    assert.deepEqual(driver.vendor, { manufacturer: "Vertiv", groupModel: "OneView group" });
    const snapshot = await driver.poll();
    assert.equal(snapshot.instanceId, "rack");
    assert.deepEqual(snapshot.vendor, driver.vendor);
    assert.ok(snapshot.devices.length > 0);
  });

  it("accepts Driver: geist and refuses a family without a driver, naming the key", async () => {
    assert.equal((await config(1, "    Driver: geist\n")).instances[0]?.Driver, "geist");
    await assert.rejects(config(1, "    Driver: raritan\n"), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.key, "Pdus.rack.Driver");
      return true;
    });
  });
});
