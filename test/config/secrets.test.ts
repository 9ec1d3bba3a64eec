/**
 * Secrets from the environment: `<NAME>_FILE` beats `<NAME>`, which beats the file; per-instance PDU
 * variables beat the file, which beats the global pair; ConfigMaps may not hold secrets.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";
import { instanceVariablePrefix } from "../../src/config/secrets.js";

let dir: string;
/** A file holding `value` plus a trailing newline, as secret mounts usually have. */
let secretFile: (name: string, value: string) => Promise<string>;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-secrets-"));
  secretFile = async (name, value) => {
    const path = join(dir, name);
    await writeFile(path, `${value}\n`);
    return path;
  };
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const FILE_TEXT = [
  "Mqtt:",
  "  Connection: { Host: broker.lan }",
  "  Credentials: { Username: file-mqtt-user, Password: file-mqtt-pw }",
  "Api:",
  "  ApiKey: file-key-0123456789",
  "Pdus:",
  "  rack-a:",
  "    Connection: { Host: a }",
  "    Credentials: { Username: file-a-user, Password: file-a-pw }",
  "  rack-b:",
  "    Connection: { Host: b }",
  "",
].join("\n");

const load = (env: Record<string, string>, text = FILE_TEXT) => parseConfigText(text, "test.yaml", env);

describe("precedence: _FILE, then the variable, then the file", () => {
  test("API key", async () => {
    assert.equal((await load({})).Api.ApiKey, "file-key-0123456789");
    assert.equal(
      (await load({ SERVICE_API_KEY: "env-key-0123456789ab" })).Api.ApiKey,
      "env-key-0123456789ab",
    );
    const path = await secretFile("api-key", "file-var-key-0123456");
    assert.equal(
      (await load({ SERVICE_API_KEY: "env-key-0123456789ab", SERVICE_API_KEY_FILE: path })).Api.ApiKey,
      "file-var-key-0123456",
    );
  });

  test("MQTT credentials, each field on its own", async () => {
    assert.deepEqual((await load({})).Mqtt.Credentials, {
      Username: "file-mqtt-user",
      Password: "file-mqtt-pw",
    });
    const env = { SERVICE_MQTT_USERNAME: "env-user", SERVICE_MQTT_PASSWORD: "env-pw" };
    assert.deepEqual((await load(env)).Mqtt.Credentials, { Username: "env-user", Password: "env-pw" });
    const path = await secretFile("mqtt-pw", "file-var-pw");
    assert.deepEqual((await load({ ...env, SERVICE_MQTT_PASSWORD_FILE: path })).Mqtt.Credentials, {
      Username: "env-user",
      Password: "file-var-pw",
    });
  });

  test("per-instance PDU variables beat the file; their _FILE beats them", async () => {
    const path = await secretFile("rack-a-pw", "file-var-a-pw");
    const config = await load({
      SERVICE_PDU_RACK_A_USERNAME: "env-a-user",
      SERVICE_PDU_RACK_A_PASSWORD: "env-a-pw",
      SERVICE_PDU_RACK_A_PASSWORD_FILE: path,
    });
    assert.deepEqual(config.instances[0]?.Credentials, { Username: "env-a-user", Password: "file-var-a-pw" });
  });

  test("the global PDU pair fills instances that set none, and never beats the file", async () => {
    const path = await secretFile("pdu-pw", "global-file-pw");
    const config = await load({
      SERVICE_PDU_USERNAME: "global-user",
      SERVICE_PDU_PASSWORD: "global-pw",
      SERVICE_PDU_PASSWORD_FILE: path,
    });
    assert.deepEqual(config.instances[0]?.Credentials, { Username: "file-a-user", Password: "file-a-pw" });
    assert.deepEqual(config.instances[1]?.Credentials, {
      Username: "global-user",
      Password: "global-file-pw",
    });
  });

  test("a per-instance variable beats the global one", async () => {
    const config = await load({ SERVICE_PDU_PASSWORD: "global-pw", SERVICE_PDU_RACK_B_PASSWORD: "b-pw" });
    assert.equal(config.instances[1]?.Credentials.Password, "b-pw");
  });

  test("an empty variable counts as unset", async () => {
    const config = await load({
      SERVICE_API_KEY: "",
      SERVICE_API_KEY_FILE: "",
      SERVICE_PDU_RACK_A_PASSWORD: "",
    });
    assert.equal(config.Api.ApiKey, "file-key-0123456789");
    assert.equal(config.instances[0]?.Credentials.Password, "file-a-pw");
  });

  test("only trailing newlines are trimmed from a _FILE", async () => {
    const path = join(dir, "spaces");
    await writeFile(path, "key-from-a-file-0123\r\n\n");
    assert.equal((await load({ SERVICE_API_KEY_FILE: path })).Api.ApiKey, "key-from-a-file-0123");
    // Spaces are kept, so such a key is refused (it could not be sent in a header as it is).
    await writeFile(path, " spaced key-0123456789 \n");
    await assert.rejects(load({ SERVICE_API_KEY_FILE: path }), /SERVICE_API_KEY_FILE: .*whitespace/);
  });
});

test("variable names map the id: upper case, - as _", () => {
  assert.equal(instanceVariablePrefix("rack-a"), "SERVICE_PDU_RACK_A");
  assert.equal(instanceVariablePrefix("Lab_1"), "SERVICE_PDU_LAB_1");
});

test("credentials from the environment satisfy ActionsEnabled", async () => {
  const text = "Pdus:\n  rack-a:\n    Connection: { Host: a }\n    ActionsEnabled: true\n";
  const config = await load({ SERVICE_PDU_USERNAME: "u", SERVICE_PDU_RACK_A_PASSWORD: "p" }, text);
  assert.deepEqual(config.instances[0]?.Credentials, { Username: "u", Password: "p" });
});

describe("a _FILE that cannot be read is an error naming the variable", () => {
  for (const variable of [
    "SERVICE_API_KEY_FILE",
    "SERVICE_MQTT_USERNAME_FILE",
    "SERVICE_MQTT_PASSWORD_FILE",
    // Not needed by any instance here (both would use their own), still an error: never ignored.
    "SERVICE_PDU_PASSWORD_FILE",
    "SERVICE_PDU_RACK_B_USERNAME_FILE",
  ]) {
    test(variable, async () => {
      const missing = join(dir, "does-not-exist");
      await assert.rejects(load({ [variable]: missing }), (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, variable);
        assert.equal(e.message, `config error: ${variable}: cannot read ${missing} (no such file)`);
        return true;
      });
    });
  }
});

describe("kubernetes source: secrets do not belong in ConfigMaps", () => {
  const fromConfigMap = (text: string, env: Record<string, string> = {}) =>
    parseConfigText(text, "configmap ns/pdu-bridge", env, { source: "kubernetes" });
  const PDU = "Pdus:\n  rack-a:\n    Connection: { Host: a }\n";

  const cases: [string, string, string][] = [
    [
      `Api: { ApiKey: k-0123456789abcdef }\n${PDU}`,
      "Api.ApiKey",
      "set SERVICE_API_KEY or SERVICE_API_KEY_FILE",
    ],
    [
      `Mqtt: { Credentials: { Username: u, Password: p } }\n${PDU}`,
      "Mqtt.Credentials.Password",
      "set SERVICE_MQTT_PASSWORD",
    ],
    [
      `${PDU}    Credentials: { Password: p }\n`,
      "Pdus.rack-a.Credentials.Password",
      "set SERVICE_PDU_RACK_A_PASSWORD",
    ],
    [
      `Api: { PublicUrl: "https://pdu.example.com", Oidc: { Enabled: true, Issuer: "https://id.example.com", ClientSecret: c } }\n${PDU}`,
      "Api.Oidc.ClientSecret",
      "set SERVICE_OIDC_CLIENT_SECRET or SERVICE_OIDC_CLIENT_SECRET_FILE",
    ],
    [
      `${PDU}    Driver: snmp\n    Snmp: { Community: public-c }\n`,
      "Pdus.rack-a.Snmp.Community",
      "set SERVICE_PDU_RACK_A_COMMUNITY or SERVICE_PDU_RACK_A_COMMUNITY_FILE",
    ],
    [
      `${PDU}    Driver: snmp\n    Snmp: { Version: 3, Auth: { Username: ops }, AuthKey: auth-key-1, PrivKey: priv-key-1 }\n`,
      "Pdus.rack-a.Snmp.AuthKey",
      "set SERVICE_PDU_RACK_A_AUTH_KEY",
    ],
  ];
  for (const [text, key, says] of cases) {
    test(`refuses ${key}`, async () => {
      await assert.rejects(fromConfigMap(text), (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, key);
        assert.ok(e.message.includes(`secrets do not belong in ConfigMaps; ${says}`), e.message);
        assert.equal(e.file, "configmap ns/pdu-bridge");
        return true;
      });
      // The same text from a file is allowed: a file may hold any secret, a ConfigMap none.
      await parseConfigText(text, "test.yaml", {});
    });
  }

  test("takes the secrets from the environment and allows user names", async () => {
    const text = `Mqtt: { Credentials: { Username: bridge } }\n${PDU}`;
    const config = await fromConfigMap(text, {
      SERVICE_API_KEY: "k-0123456789abcdef",
      SERVICE_MQTT_PASSWORD: "p",
    });
    assert.equal(config.Api.ApiKey, "k-0123456789abcdef");
    assert.deepEqual(config.Mqtt.Credentials, { Username: "bridge", Password: "p" });
  });
});

const PDUS = "Pdus:\n  a:\n    Connection:\n      Host: 127.0.0.1\n";

// A mapping written as a folded scalar (`Credentials: >` over its indented keys) turns its children,
// secrets included, into one string: the error says text was found and never echoes it (found by the
// hostile-config property, seed 2144754888).
test("text where a mapping holding secrets belongs is not echoed in the error", async () => {
  const SECRET = "s3cret-Value-9f8e7d";
  const cases: readonly (readonly [string, string])[] = [
    [`Mqtt:\n  Credentials:\n    >\n    Password: ${SECRET}\n${PDUS}`, "Mqtt.Credentials"],
    [`Api:\n  >\n  ApiKey: ${SECRET}\n${PDUS}`, "Api"],
    [`Pdus:\n  a:\n    >\n    Credentials: { Password: ${SECRET} }\n`, "Pdus.a"],
    [`>\n  Api: { ApiKey: ${SECRET} }\n`, ""],
  ];
  for (const [text, key] of cases) {
    await assert.rejects(parseConfigText(text, "hostile.yaml", {}), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.key, key, error.message);
      assert.ok(error.message.includes("got text"), error.message);
      assert.ok(!error.message.includes(SECRET), error.message);
      return true;
    });
  }
  // Elsewhere the value is still shown, which is what makes the message useful.
  await assert.rejects(parseConfigText(`Mqtt:\n  ClientId: [a]\n${PDUS}`, "x.yaml", {}), /got a list/);
  await assert.rejects(
    parseConfigText(`Logging:\n  >\n  Level: info\n${PDUS}`, "x.yaml", {}),
    /got "Level: info/,
  );
});
