/** mqtts to a broker with a self-signed certificate: refused by default (not fatal), CaFile, ValidateCertificate. */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createServer, type Server } from "node:tls";
import { Aedes } from "aedes";
import { generate } from "selfsigned";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge, type MqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { mqttTestConfig, type MqttTestConfig } from "../../testkit/mqtt-config.js";

describe("mqtts", () => {
  let aedes: Aedes;
  let server: Server;
  let port: number;
  let dir: string;
  let caFile: string;
  const running: { bridge: MqttBridge; store: SnapshotStore }[] = [];

  before(async () => {
    const day = 86_400_000;
    const pems = await generate([{ name: "commonName", value: "localhost" }], {
      keyType: "ec",
      algorithm: "sha256",
      notBeforeDate: new Date(Date.now() - day),
      notAfterDate: new Date(Date.now() + 30 * day),
      extensions: [
        { name: "basicConstraints", cA: false },
        { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] },
      ],
    });
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-mqtts-"));
    caFile = join(dir, "broker.pem");
    await writeFile(caFile, pems.cert);
    aedes = await Aedes.createBroker();
    server = createServer({ key: pems.private, cert: pems.cert }, aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    for (const { bridge, store } of running) {
      await bridge.stop();
      store.close();
    }
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (options: Partial<MqttTestConfig>) => {
    const config = await mqttTestConfig({
      broker: { host: "127.0.0.1", port },
      scheme: "mqtts",
      instances: { default: false },
      ...options,
    });
    const bus = new EventBus();
    const store = new SnapshotStore(["default"], { bus: bus });
    const bridge = await startMqttBridge({ config, store, bus, logger: silentLogger() });
    running.push({ bridge, store });
    return bridge;
  };

  it("does not trust a self-signed broker by default, and says why without failing the start", async () => {
    const bridge = await start({});
    const status = bridge.status();
    assert.equal(status.connected, false);
    assert.equal(status.broker, `mqtts://127.0.0.1:${port}`);
    assert.match(String(status.lastError), /self[- ]signed/i);
  });

  it("trusts the broker's certificate given as CaFile", async () => {
    const bridge = await start({ caFile });
    assert.equal(bridge.status().connected, true);
  });

  it("connects without checking the certificate when ValidateCertificate is false", async () => {
    const bridge = await start({ validateCertificate: false });
    assert.equal(bridge.status().connected, true);
  });
});
