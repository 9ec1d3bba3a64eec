/**
 * The one configuration writer of testkit and bench (testkit/config-yaml.ts): what it writes is
 * read by the real loader as the document says, quoting included, and the writers built on it
 * (app-harness's appYaml and pduYaml, bench's writeBridgeConfig) write files the loader takes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { writeBridgeConfig } from "../../bench/lib/bridge.js";
import { loadConfigFile, parseConfigText } from "../../src/config/load.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { configYaml } from "../../testkit/config-yaml.js";

const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-config-yaml-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("configYaml", () => {
  it("writes a document the loader reads back as written, strings that look like other values included", async () => {
    const text = configYaml({
      Mqtt: {
        Connection: { Host: "127.0.0.1", Port: 1884, Scheme: "mqtt" },
        ClientId: "007",
        ParentTopic: "true",
      },
      Pdus: {
        "rack-a": {
          Connection: { Host: "192.0.2.1", Port: 8080, Scheme: "http", Timeout: 7 },
          Credentials: { Username: "admin", Password: "#not: a comment" },
          PollInterval: 3,
          ActionsEnabled: true,
          Overrides: { Outlets: { dev1: { "0": { Name: "web 01", Protected: true } } } },
        },
      },
      Api: {
        Enabled: true,
        Bind: "127.0.0.1",
        Port: 0,
        ApiKey: "0123456789abcdef0123",
        TrustedProxies: ["::1"],
      },
      Health: { Enabled: false },
    });
    const config = await parseConfigText(text, "written.yaml", {});
    assert.equal(config.Mqtt.ClientId, "007");
    assert.equal(config.Mqtt.ParentTopic, "true");
    assert.equal(config.Mqtt.Connection.Port, 1884);
    const [rack] = config.instances;
    assert.equal(rack?.id, "rack-a");
    assert.equal(rack?.Credentials.Password, "#not: a comment");
    assert.equal(rack?.Connection.Timeout, 7);
    assert.deepEqual(rack?.Overrides.Outlets, { dev1: { "0": { Name: "web 01", Protected: true } } });
    assert.deepEqual(config.Api.TrustedProxies, ["::1"]);
  });
});

describe("the writers built on it", () => {
  const sim = { host: "127.0.0.1", port: 18080, scheme: "http" } as Simulator;

  it("appYaml with pduYaml entries, lines a test appends to one, Api.more and extra", async () => {
    const text = appYaml({
      pdus: [
        pduYaml("lab", sim, { pollInterval: 2, actionsEnabled: true }) +
          '\n    Overrides: { Outlets: { dev: { "1": { Hidden: true } } } }',
        pduYaml("spare", sim, { credentials: null }),
      ],
      api: { key: "a-key-of-twenty-chars", more: "PublicUrl: https://pdu.example.test" },
      extra: "Logging: { Level: debug }",
    });
    const config = await parseConfigText(text, "app.yaml", {});
    assert.deepEqual(
      config.instances.map((i) => [i.id, i.PollInterval, i.ActionsEnabled]),
      [
        ["lab", 2, true],
        ["spare", 5, false],
      ],
    );
    assert.deepEqual(config.instances[0]?.Overrides.Outlets, { dev: { "1": { Hidden: true } } });
    assert.equal(config.Api.PublicUrl, "https://pdu.example.test");
    assert.equal(config.Logging.Level, "debug");
  });

  it("bench's writeBridgeConfig", async () => {
    const file = writeBridgeConfig({
      dir,
      name: "bench",
      ports: [18081, 18082],
      broker: { host: "127.0.0.1", port: 1883 },
      pollIntervalS: 10,
      actions: true,
      api: { port: 0, apiKey: "0123456789abcdef0123" },
    });
    const config = await loadConfigFile(file, {});
    assert.deepEqual(
      config.instances.map((i) => [i.id, i.Connection.Port, i.Credentials.Username]),
      [
        ["pdu-0000", 18081, "admin"],
        ["pdu-0001", 18082, "admin"],
      ],
    );
    assert.equal(config.Api.Enabled, true);
  });
});
