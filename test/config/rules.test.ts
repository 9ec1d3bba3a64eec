/**
 * One case per configuration rule, each checked twice: through `loadConfigFile` (the key, line and
 * message of the ConfigError) and through the real CLI (`pdu-bridge check-config`: exit 2, the same
 * one-line message on stderr, no stack trace).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfigFile } from "../../src/config/load.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));

interface Case {
  readonly name: string;
  readonly yaml: string;
  /** The key the message must name ("" for the file as a whole). */
  readonly key: string;
  /** The line the message must give, where the rule has one. */
  readonly line?: number;
  /** Text the message must contain besides the key. */
  readonly says?: string;
  readonly env?: Record<string, string>;
}

const PDU = "Pdus:\n  rack-a:\n    Connection:\n      Host: 127.0.0.1\n";

const CASES: readonly Case[] = [
  { name: "YAML syntax error", yaml: "Pdus:\n  a: [1,\n", key: "", line: 3, says: "invalid YAML" },
  { name: "duplicate key", yaml: `${PDU}Api: {}\nApi: {}\n`, key: "", line: 6, says: "unique" },
  { name: "empty file", yaml: "# nothing here\n", key: "", says: "the file is empty" },
  { name: "top level is a list", yaml: "- Pdus\n", key: "", line: 1, says: "top level must be a mapping" },
  { name: "unknown section", yaml: `${PDU}mqtt: {}\n`, key: "mqtt", line: 5, says: "did you mean `Mqtt`?" },
  {
    name: "unknown instance key (typo)",
    yaml: `${PDU}    PolInterval: 3\n`,
    key: "Pdus.rack-a.PolInterval",
    line: 5,
    says: "unknown key, did you mean `PollInterval`?",
  },
  {
    name: "unknown nested key (nothing close)",
    yaml: `${PDU}      Colour: blue\n`,
    key: "Pdus.rack-a.Connection.Colour",
    line: 5,
    says: "expected one of Host, Port, Scheme",
  },
  {
    name: "wrong type",
    yaml: `${PDU}    PollInterval: fast\n`,
    key: "Pdus.rack-a.PollInterval",
    says: 'must be a number (got "fast")',
  },
  {
    name: "below minimum",
    yaml: `${PDU}    PollInterval: 0\n`,
    key: "Pdus.rack-a.PollInterval",
    line: 5,
    says: "must be >= 1 (got 0)",
  },
  {
    name: "port out of range",
    yaml: `Api:\n  Port: 70000\n${PDU}`,
    key: "Api.Port",
    line: 2,
    says: "must be <= 65535 (got 70000)",
  },
  {
    name: "not an integer",
    yaml: `Mqtt:\n  KeepAlive: 1.5\n${PDU}`,
    key: "Mqtt.KeepAlive",
    line: 2,
    says: "must be an integer",
  },
  {
    name: "enum value",
    yaml: `${PDU}      Scheme: ftp\n`,
    key: "Pdus.rack-a.Connection.Scheme",
    line: 5,
    says: 'must be one of http, https (got "ftp")',
  },
  {
    name: "union of literals",
    yaml: `Mqtt:\n  Connection:\n    Host: broker.lan\n    ProtocolVersion: 3\n${PDU}`,
    key: "Mqtt.Connection.ProtocolVersion",
    line: 4,
    says: "must be one of 4, 5",
  },
  {
    name: "section of the wrong type",
    yaml: `Logging: loud\n${PDU}`,
    key: "Logging",
    line: 1,
    says: "must be a mapping",
  },
  {
    name: "required key missing",
    yaml: "Pdus:\n  rack-a:\n    Connection:\n      Port: 80\n",
    key: "Pdus.rack-a.Connection.Host",
    line: 3,
    says: "is required",
  },
  {
    name: "wildcard in a topic",
    yaml: `Mqtt:\n  ParentTopic: pdu/#\n${PDU}`,
    key: "Mqtt.ParentTopic",
    line: 2,
    says: "must not contain the MQTT wildcards",
  },
  {
    name: "invalid instance id",
    yaml: "Pdus:\n  rack a:\n    Connection: { Host: x }\n",
    key: "Pdus.rack a",
    line: 2,
    says: "1-64 characters of A-Za-z0-9_-",
  },
  {
    name: "instance id too long",
    yaml: `Pdus:\n  ${"x".repeat(65)}:\n    Connection: { Host: x }\n`,
    key: `Pdus.${"x".repeat(65)}`,
    line: 2,
  },
  {
    name: "no instance (empty map)",
    yaml: "Pdus: {}\n",
    key: "Pdus",
    line: 1,
    says: "at least one PDU instance",
  },
  {
    name: "no instance (no Pdus)",
    yaml: "Logging: { Level: info }\n",
    key: "Pdus",
    says: "at least one PDU instance",
  },
  {
    name: "ids that collide after the variable mapping",
    yaml: `${PDU}  RACK_A:\n    Connection: { Host: y }\n`,
    key: "Pdus.RACK_A",
    line: 5,
    says: "collides with `rack-a`",
  },
  {
    name: "ids that differ only in case",
    yaml: `${PDU}  Rack-A:\n    Connection: { Host: y }\n`,
    key: "Pdus.Rack-A",
    line: 5,
    says: "collides with `rack-a`",
  },
  {
    name: "Api.Port equals Health.Port",
    yaml: `${PDU}Api:\n  Enabled: true\n  Port: 8081\n`,
    key: "Api.Port",
    line: 7,
    says: "also used by Health.Port",
  },
  {
    name: "Health.Port equals the embedded broker's port",
    yaml: `${PDU}Health:\n  Port: 1883\n`,
    key: "Health.Port",
    line: 6,
    says: "also used by Mqtt.Embedded.Port",
  },
  {
    name: "ActionsEnabled without credentials",
    yaml: `${PDU}    ActionsEnabled: true\n`,
    key: "Pdus.rack-a.Credentials",
    line: 5,
    says: "SERVICE_PDU_RACK_A_USERNAME",
  },
  {
    name: "ActionsEnabled with a user name only",
    yaml: `${PDU}    Credentials: { Username: admin }\n    ActionsEnabled: true\n`,
    key: "Pdus.rack-a.Credentials",
    line: 5,
  },
  {
    name: "MQTT 5 with the embedded broker",
    yaml: `Mqtt:\n  Connection:\n    ProtocolVersion: 5\n${PDU}`,
    key: "Mqtt.Connection.ProtocolVersion",
    line: 3,
    says: "3.1.1",
  },
  {
    name: "PDU CaFile missing",
    yaml: `${PDU}      CaFile: missing-ca.pem\n`,
    key: "Pdus.rack-a.Connection.CaFile",
    line: 5,
    says: "missing-ca.pem (no such file)",
  },
  {
    name: "MQTT CaFile is a directory",
    yaml: `Mqtt:\n  Connection:\n    Host: broker.lan\n    CaFile: /\n${PDU}`,
    key: "Mqtt.Connection.CaFile",
    line: 4,
    says: "cannot read /",
  },
  {
    name: "secret _FILE missing",
    yaml: PDU,
    env: { SERVICE_API_KEY_FILE: "/nonexistent/api-key" },
    key: "SERVICE_API_KEY_FILE",
    says: "cannot read /nonexistent/api-key",
  },
  {
    name: "API key of one character",
    yaml: `${PDU}Api: { ApiKey: k }\n`,
    key: "Api.ApiKey",
    line: 5,
    says: "at least 16 characters without whitespace (got 1 characters)",
  },
  {
    name: "API key of 15 characters",
    yaml: `${PDU}Api:\n  ApiKey: "abcdefghijklmno"\n`,
    key: "Api.ApiKey",
    line: 6,
    says: "at least 16 characters",
  },
  {
    name: "API key that is a space (can never be sent)",
    yaml: `${PDU}Api: { ApiKey: " " }\n`,
    key: "Api.ApiKey",
    says: "with whitespace",
  },
  {
    name: "API key with whitespace inside",
    yaml: `${PDU}Api: { ApiKey: "0123456789 abcdefgh" }\n`,
    key: "Api.ApiKey",
    says: "with whitespace",
  },
  {
    name: "SERVICE_API_KEY too short",
    yaml: PDU,
    env: { SERVICE_API_KEY: "short" },
    key: "SERVICE_API_KEY",
    says: "at least 16 characters",
  },
  {
    name: "SERVICE_API_KEY with a tab",
    yaml: PDU,
    env: { SERVICE_API_KEY: "0123456789abcdef\tg" },
    key: "SERVICE_API_KEY",
    says: "with whitespace",
  },
  {
    name: "MQTT password without a user name (file)",
    yaml: `Mqtt:\n  Credentials:\n    Password: p\n${PDU}`,
    key: "Mqtt.Credentials.Username",
    line: 2,
    says: "is required when an MQTT password is set",
  },
  {
    name: "MQTT password without a user name (environment)",
    yaml: PDU,
    env: { SERVICE_MQTT_PASSWORD: "p" },
    key: "Mqtt.Credentials.Username",
    says: "SERVICE_MQTT_USERNAME",
  },
  {
    name: "HTTP headers timeout longer than the request timeout",
    yaml: `${PDU}Http:\n  RequestTimeout: 5\n  HeadersTimeout: 6\n`,
    key: "Http.HeadersTimeout",
    line: 7,
    says: "must not be longer than Http.RequestTimeout (5)",
  },
  {
    name: "HTTP connection cap of 0",
    yaml: `${PDU}Http: { MaxConnections: 0 }\n`,
    key: "Http.MaxConnections",
    says: "must be >= 1",
  },
  {
    name: "a trusted proxy that is not an IP address",
    yaml: `${PDU}Api:\n  TrustedProxies: [10.0.0.5, ingress.lan]\n`,
    key: "Api.TrustedProxies.1",
    says: 'must be an IP address written out, like 10.0.0.5 or fd00::5 (got "ingress.lan")',
  },
  {
    name: "a trusted proxy range",
    yaml: `${PDU}Api: { TrustedProxies: [10.0.0.0/8] }\n`,
    key: "Api.TrustedProxies.0",
    says: "names and ranges are not accepted",
  },
  {
    name: "sign-in without an issuer",
    yaml: `${PDU}Api:\n  Oidc:\n    Enabled: true\n`,
    key: "Api.Oidc.Issuer",
    line: 6,
    says: "is required when Api.Oidc.Enabled is true",
  },
  {
    name: "a client secret in the file",
    yaml: `${PDU}Api:\n  Oidc: { Enabled: true, Issuer: https://id.example.com, ClientSecret: s3cret-value }\n`,
    key: "Api.Oidc.ClientSecret",
    says: "set SERVICE_OIDC_CLIENT_SECRET or SERVICE_OIDC_CLIENT_SECRET_FILE",
  },
  {
    name: "an issuer over plain HTTP off loopback",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "http://id.example.com/realms/ops" } }\n`,
    key: "Api.Oidc.Issuer",
    says: "must be an https URL",
  },
  {
    name: "scopes without openid",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "https://id.example.com", Scopes: [profile] } }\n`,
    key: "Api.Oidc.Scopes",
    says: "must include openid",
  },
  {
    name: "no role lists any group",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "https://id.example.com", Roles: { Viewer: [], Operator: [] } } }\n`,
    key: "Api.Oidc.Roles",
    says: "nobody could use the console",
  },
  {
    name: "ProtectReads without sign-in",
    yaml: `${PDU}Api: { Oidc: { ProtectReads: true } }\n`,
    key: "Api.Oidc.ProtectReads",
    says: "needs Api.Oidc.Enabled: true",
  },
  {
    name: "a client secret file that cannot be read",
    yaml: PDU,
    env: { SERVICE_OIDC_CLIENT_SECRET_FILE: "/nonexistent/oidc-secret" },
    key: "SERVICE_OIDC_CLIENT_SECRET_FILE",
  },
  {
    name: "a certificate without its key",
    yaml: `${PDU}Api: { Tls: { CertFile: /etc/ssl/api.pem } }\n`,
    key: "Api.Tls.KeyFile",
    says: "HTTPS needs both",
  },
  {
    name: "a certificate file that cannot be read",
    yaml: `${PDU}Api: { Tls: { CertFile: /nonexistent/api.pem, KeyFile: /nonexistent/api.key } }\n`,
    key: "Api.Tls.CertFile",
    says: "cannot read /nonexistent/api.pem",
  },
  {
    name: "a public URL with a path",
    yaml: `${PDU}Api: { PublicUrl: "https://pdu.example.com/console" }\n`,
    key: "Api.PublicUrl",
    says: "must be an origin only",
  },
  {
    name: "per-instance secret _FILE missing",
    yaml: PDU,
    env: { SERVICE_PDU_RACK_A_PASSWORD_FILE: "/nonexistent/pw" },
    key: "SERVICE_PDU_RACK_A_PASSWORD_FILE",
  },
  {
    name: "override with an unknown key (typo)",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "0": { Nmae: x }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.0.Nmae",
    says: "did you mean `Name`?",
  },
  {
    name: "override Hidden not a boolean",
    yaml: `${PDU}    Overrides:\n      Entities:\n        DEV1:\n          phase0: { Hidden: "yes" }\n`,
    key: "Pdus.rack-a.Overrides.Entities.DEV1.phase0.Hidden",
    says: "must be true or false",
  },
  {
    name: "override outlet index not a 0-based integer",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "01": { Hidden: true }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.01",
  },
  {
    name: "override Name too long",
    yaml: `${PDU}    Overrides:\n      Groups:\n        "2": { Name: ${"x".repeat(65)} }\n`,
    key: "Pdus.rack-a.Overrides.Groups.2.Name",
    says: "64",
  },
  {
    name: "override Name not a safe name",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "3": { Name: "rack/left" }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.3.Name",
    line: 8,
    says: "contains '/', '+' or '#'",
  },
  {
    name: "override device id not a safe name",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        "a#b":\n          "0": { Hidden: true }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.a#b",
    says: "device id",
  },
  {
    name: "Measurements with an empty list",
    yaml: `${PDU}    Measurements: []\n`,
    key: "Pdus.rack-a.Measurements",
  },
  {
    name: "Measurements with a type that is not a word",
    yaml: `${PDU}    Measurements: [real power]\n`,
    key: "Pdus.rack-a.Measurements.0",
  },
  {
    name: "a rating of zero amps",
    yaml: `${PDU}    Ratings: { Breakers: 0 }\n`,
    key: "Pdus.rack-a.Ratings.Breakers",
    line: 5,
    says: "must be > 0 (got 0)",
  },
  {
    name: "a rating by an unknown kind",
    yaml: `${PDU}    Ratings: { Breaker: 16 }\n`,
    key: "Pdus.rack-a.Ratings.Breaker",
    line: 5,
    says: "did you mean `Breakers`?",
  },
  {
    name: "a rating's entity key with two slashes",
    yaml: `${PDU}    Ratings:\n      Entities: { "a/b/breaker0": 16 }\n`,
    key: "Pdus.rack-a.Ratings.Entities.a/b/breaker0",
    says: "one '/'",
  },
  {
    name: "a rating's entity key that is no safe name",
    yaml: `${PDU}    Ratings:\n      Entities: { "breaker+0": 16 }\n`,
    key: "Pdus.rack-a.Ratings.Entities.breaker+0",
  },
  {
    name: "critical load at or below the warning line",
    yaml: `Alarms:\n  WarnPercent: 90\n  CriticalPercent: 85\n${PDU}`,
    key: "Alarms.CriticalPercent",
    line: 3,
    says: "must be above Alarms.WarnPercent (90)",
  },
  {
    name: "a warning line above the default critical one",
    yaml: `Alarms:\n  WarnPercent: 96\n${PDU}`,
    key: "Alarms.WarnPercent",
    line: 2,
    says: "must be below Alarms.CriticalPercent (95)",
  },
];

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-rules-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runCli(args: string[], env: Record<string, string>, cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, cwd }, (error, stdout, stderr) => {
      resolve({
        code: error === null ? 0 : typeof error.code === "number" ? error.code : null,
        stdout,
        stderr,
      });
    });
  });
}

describe("configuration rules", { concurrency: 4 }, () => {
  for (const [index, c] of CASES.entries()) {
    test(c.name, async () => {
      const caseDir = join(dir, String(index));
      await mkdir(caseDir);
      const file = join(caseDir, "config.yaml");
      await writeFile(file, c.yaml);
      const env = c.env ?? {};

      const error = await loadConfigFile(file, env).then(
        () => assert.fail("expected a ConfigError"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.key, c.key);
      if (c.key !== "") assert.ok(error.message.startsWith(`config error: ${c.key}: `), error.message);
      if (c.line !== undefined) {
        assert.equal(error.line, c.line);
        assert.ok(error.message.endsWith(` at ${file} line ${c.line}`), error.message);
      }
      if (c.says !== undefined) assert.ok(error.message.includes(c.says), error.message);

      const cli = await runCli(["check-config", "--config", file], env, caseDir);
      assert.equal(cli.code, 2, cli.stderr);
      assert.equal(cli.stderr, `${error.message}\n`);
      assert.doesNotMatch(cli.stderr, /^\s+at /m);
      assert.equal(cli.stdout, "");
    });
  }
});

test("the message format is key, problem, file and line", async () => {
  const file = join(dir, "format.yaml");
  await writeFile(file, `${PDU}    PollInterval: 0\n`);
  await assert.rejects(loadConfigFile(file, {}), {
    message: `config error: Pdus.rack-a.PollInterval: must be >= 1 (got 0) at ${file} line 5`,
  });
});

test("check-config warns (exit 0) about overrides without effect and says ids are checked after a poll", async () => {
  const file = join(dir, "overrides.yaml");
  const yaml = [
    PDU.trimEnd(),
    "    Overrides:",
    "      Outlets:",
    "        DEV1:",
    '          "0": { Protected: true }',
    '          "1": { Name: x, Hidden: true }',
    '          "2": {}',
    "",
  ].join("\n");
  await writeFile(file, yaml);
  const cli = await runCli(["check-config", "--config", file], {}, dir);
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, /Protected: true/);
  const warnings = cli.stderr.trimEnd().split("\n");
  assert.deepEqual(
    warnings.map((w) => w.split(":")[1]?.trim()),
    [
      "Pdus.rack-a.Overrides.Outlets.DEV1.0.Protected",
      "Pdus.rack-a.Overrides.Outlets.DEV1.1.Name",
      "Pdus.rack-a.Overrides.Outlets.DEV1.2",
      "overrides of rack-a",
    ],
    cli.stderr,
  );
  assert.match(cli.stderr, /not checked here \(check-config does not contact PDUs\)/);
});
