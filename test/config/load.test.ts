/**
 * Loading what is valid: config path resolution, defaults, inference, file order and the primary
 * instance, line numbers, and the exemptions of the cross-field rules.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfigFile, parseConfigText, resolveConfigPath } from "../../src/config/load.js";

const PDU = "Pdus:\n  rack-a:\n    Connection:\n      Host: 127.0.0.1\n";
const parse = (text: string, env: Record<string, string> = {}) => parseConfigText(text, "test.yaml", env);

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-load-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("resolveConfigPath", () => {
  test("--config wins over SERVICE_CONFIG, which wins over ./config.yaml", async () => {
    const cwd = join(dir, "resolve");
    await mkdir(cwd);
    await writeFile(join(cwd, "config.yaml"), PDU);
    assert.equal(resolveConfigPath("/a.yaml", { SERVICE_CONFIG: "/b.yaml" }, cwd), "/a.yaml");
    assert.equal(resolveConfigPath(undefined, { SERVICE_CONFIG: "/b.yaml" }, cwd), "/b.yaml");
    assert.equal(resolveConfigPath(undefined, { SERVICE_CONFIG: "" }, cwd), join(cwd, "config.yaml"));
  });

  test(
    "no file anywhere is a ConfigError naming the paths tried",
    { skip: existsSync("/config/config.yaml") },
    () => {
      const cwd = join(dir, "nothing-here");
      assert.throws(
        () => resolveConfigPath(undefined, {}, cwd),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.message.includes(join(cwd, "config.yaml")) &&
          e.message.includes("/config/config.yaml"),
      );
    },
  );
});

test("a file that cannot be read is a ConfigError naming it", async () => {
  const file = join(dir, "absent.yaml");
  await assert.rejects(loadConfigFile(file, {}), (e: unknown) => e instanceof ConfigError && e.file === file);
});

test("defaults fill every section left out, or left empty", async () => {
  const config = await parse(`${PDU}Api:\nHealth: ~\n`);
  assert.equal(config.Api.Enabled, false);
  assert.equal(config.Api.Port, 8082);
  assert.equal(config.Api.ApiKey, "");
  assert.equal(config.Health.Port, 8081);
  assert.equal(config.Logging.Level, "info");
  assert.equal(config.HomeAssistant.DiscoveryTopic, "homeassistant");
  assert.equal(config.Mqtt.ParentTopic, "pdu-bridge");
  assert.equal(config.Mqtt.Embedded.Port, 1883);
  const [instance] = config.instances;
  assert.equal(instance?.PollInterval, 5);
  assert.equal(instance?.ActionsEnabled, false);
  assert.equal(instance?.Connection.Timeout, 15);
  assert.deepEqual(instance?.Credentials, { Username: null, Password: null });
  assert.equal(config.origin, "test.yaml");
});

describe("inference", () => {
  const pduCases: [string, number, string][] = [
    ["{}", 80, "http"],
    ["{ Scheme: https }", 443, "https"],
    ["{ Port: 443 }", 443, "https"],
    ["{ Port: 8080 }", 8080, "http"],
    ["{ Port: 8443, Scheme: https }", 8443, "https"],
    ["{ Port: 443, Scheme: http }", 443, "http"],
  ];
  for (const [connection, port, scheme] of pduCases) {
    test(`PDU ${connection} → ${scheme}:${port}`, async () => {
      const extra = connection.slice(1, -1).trim();
      const text = `Pdus:\n  a:\n    Connection: { Host: x${extra === "" ? "" : `, ${extra}`} }\n`;
      const { instances } = await parse(text);
      assert.equal(instances[0]?.Connection.Port, port);
      assert.equal(instances[0]?.Connection.Scheme, scheme);
    });
  }

  const mqttCases: [string, number, string][] = [
    ["", 1883, "mqtt"],
    ["Scheme: mqtts", 8883, "mqtts"],
    ["Scheme: ws", 8000, "ws"],
    ["Scheme: wss", 8884, "wss"],
    ["Port: 8883", 8883, "mqtts"],
    ["Port: 8000", 8000, "ws"],
    ["Port: 8884", 8884, "wss"],
    ["Port: 1884", 1884, "mqtt"],
    ["Port: 1883, Scheme: ws", 1883, "ws"],
  ];
  for (const [connection, port, scheme] of mqttCases) {
    test(`MQTT { ${connection} } → ${scheme}:${port}`, async () => {
      const config = await parse(
        `Mqtt:\n  Connection: { Host: broker.lan${connection === "" ? "" : `, ${connection}`} }\n${PDU}`,
      );
      assert.equal(config.Mqtt.Connection.Port, port);
      assert.equal(config.Mqtt.Connection.Scheme, scheme);
      assert.equal(config.Mqtt.Connection.Host, "broker.lan");
    });
  }

  test("MQTT Host omitted or null → the embedded broker (Host null)", async () => {
    assert.equal((await parse(PDU)).Mqtt.Connection.Host, null);
    assert.equal((await parse(`Mqtt: { Connection: { Host: null } }\n${PDU}`)).Mqtt.Connection.Host, null);
  });
});

test("instances keep file order, integer-like ids too; the first is primary without `default`", async () => {
  const text = ["10", "2", "1", "b", "a", "01"]
    .map((id) => `  ${id}:\n    Connection: { Host: h${id} }\n`)
    .join("");
  const config = await parse(`Pdus:\n${text}`);
  assert.deepEqual(
    config.instances.map((i) => i.id),
    ["10", "2", "1", "b", "a", "01"],
  );
  assert.equal(config.instances.find((i) => i.id === "01")?.Connection.Host, "h01");
  assert.deepEqual(
    config.instances.map((i) => i.primary),
    [true, false, false, false, false, false],
  );
});

test("the instance named `default` is primary wherever it is", async () => {
  const config = await parse(
    "Pdus:\n  first:\n    Connection: { Host: a }\n  default:\n    Connection: { Host: b }\n",
  );
  assert.deepEqual(
    config.instances.filter((i) => i.primary).map((i) => i.id),
    ["default"],
  );
});

test("errors give the line of a nested key deep in the file", async () => {
  const text = [
    "# comment",
    "Mqtt:",
    "  Connection:",
    "    Host: broker.lan",
    "Pdus:",
    "  rack-a:",
    "    Connection: { Host: a }",
    "  rack-b:",
    "    Connection:",
    "      Host: b",
    "",
    "      Timeout: -1",
  ].join("\n");
  await assert.rejects(parse(text), { key: "Pdus.rack-b.Connection.Timeout", line: 12, file: "test.yaml" });
});

test("merge keys share settings between instances", async () => {
  const text = [
    "Pdus:",
    "  a: &common",
    "    Connection: { Host: a }",
    "    PollInterval: 30",
    "  b:",
    "    <<: *common",
    "    Connection: { Host: b }",
  ].join("\n");
  const config = await parse(text);
  assert.deepEqual(
    config.instances.map((i) => [i.id, i.Connection.Host, i.PollInterval]),
    [
      ["a", "a", 30],
      ["b", "b", 30],
    ],
  );
});

test("a relative CaFile is resolved against the configuration file's directory", async () => {
  const sub = join(dir, "ca");
  await mkdir(sub);
  await writeFile(join(sub, "ca.pem"), "-----BEGIN CERTIFICATE-----\n");
  const file = join(sub, "config.yaml");
  await writeFile(file, "Pdus:\n  a:\n    Connection: { Host: a, Scheme: https, CaFile: ca.pem }\n");
  const config = await loadConfigFile(file, {});
  assert.equal(config.instances[0]?.Connection.CaFile, join(sub, "ca.pem"));
  assert.equal(config.origin, file);
});

describe("port rules have exemptions", () => {
  test("port 0 (ephemeral) may repeat", async () => {
    const config = await parse(
      `${PDU}Api: { Enabled: true, Port: 0 }\nHealth: { Port: 0 }\nMqtt: { Embedded: { Port: 0 } }\n`,
    );
    assert.equal(config.Api.Port, 0);
  });
  test("a disabled listener does not count", async () => {
    const config = await parse(`${PDU}Api: { Enabled: false, Port: 8081 }\n`);
    assert.equal(config.Api.Port, config.Health.Port);
  });
  test("the embedded broker's port is free when an external broker is used", async () => {
    const config = await parse(`Mqtt: { Connection: { Host: b }, Embedded: { Port: 8081 } }\n${PDU}`);
    assert.equal(config.Mqtt.Embedded.Port, 8081);
  });
  test("MQTT 5 is fine with an external broker", async () => {
    const config = await parse(`Mqtt: { Connection: { Host: b, ProtocolVersion: 5 } }\n${PDU}`);
    assert.equal(config.Mqtt.Connection.ProtocolVersion, 5);
  });
});

test("type errors on secret keys do not repeat the value", async () => {
  await assert.rejects(parse(`${PDU}Api: { ApiKey: 123456789 }\n`), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.key, "Api.ApiKey");
    assert.doesNotMatch(e.message, /123456789/);
    return true;
  });
});

test("a ConfigError's message is one complete line", async () => {
  await assert.rejects(parse(`${PDU}    PollInterval: 0\n`), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.name, "ConfigError");
    assert.equal(e.problem, "must be >= 1 (got 0)");
    assert.doesNotMatch(e.message, /\n/);
    return true;
  });
});
