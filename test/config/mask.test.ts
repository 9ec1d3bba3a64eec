/**
 * The effective configuration `check-config` prints: file-shaped, file-ordered, secrets masked, and
 * the real CLI printing it with exit 0.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { isMap, isScalar, parse, parseDocument } from "yaml";
import { runCheckConfig } from "../../src/config/cli.js";
import { parseConfigText } from "../../src/config/load.js";
import { effectiveConfigYaml, MASK } from "../../src/config/mask.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));

/** Every secret below; none may appear in any output. */
const SECRETS = ["file-mqtt-pw-1", "file-pdu-pw-2", "env-api-key-3-0123456", "env-pdu-pw-4", "file-var-pw-5"];

const TEXT = [
  "Mqtt:",
  "  Credentials: { Username: bridge, Password: file-mqtt-pw-1 }",
  "Pdus:",
  "  '2':",
  "    Connection: { Host: two }",
  "    Credentials: { Username: admin, Password: file-pdu-pw-2 }",
  "  '1':",
  "    Connection: { Host: one, Port: 443 }",
  "  lab:",
  "    Connection: { Host: lab }",
  "",
].join("\n");

let dir: string;
let file: string;
let env: Record<string, string>;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-mask-"));
  file = join(dir, "config.yaml");
  await writeFile(file, TEXT);
  const pwFile = join(dir, "lab-pw");
  await writeFile(pwFile, "file-var-pw-5\n");
  env = {
    SERVICE_API_KEY: "env-api-key-3-0123456",
    SERVICE_PDU_1_PASSWORD: "env-pdu-pw-4",
    SERVICE_PDU_LAB_PASSWORD_FILE: pwFile,
  };
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function assertNoSecret(text: string) {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `output contains the secret ${secret}`);
}

test("secrets are masked when set, empty when not; user names show", async () => {
  const config = await parseConfigText(TEXT, file, env);
  // The secrets did arrive...
  assert.equal(config.Api.ApiKey, "env-api-key-3-0123456");
  assert.equal(config.instances[2]?.Credentials.Password, "file-var-pw-5");
  // ...and none leaves.
  const yaml = effectiveConfigYaml(config);
  assertNoSecret(yaml);
  const shown = parse(yaml) as {
    Mqtt: { Credentials: unknown };
    Api: { ApiKey: string };
    Pdus: Record<string, { Credentials: unknown; Connection: { Scheme: string } }>;
  };
  assert.deepEqual(shown.Mqtt.Credentials, { Username: "bridge", Password: MASK });
  assert.equal(shown.Api.ApiKey, MASK);
  assert.deepEqual(shown.Pdus["2"]?.Credentials, { Username: "admin", Password: MASK });
  assert.deepEqual(shown.Pdus["1"]?.Credentials, { Username: null, Password: MASK });
  assert.equal(shown.Pdus["1"]?.Connection.Scheme, "https");

  const unset = parse(
    effectiveConfigYaml(await parseConfigText(TEXT.replace("file-mqtt-pw-1", "null"), file, {})),
  ) as {
    Mqtt: { Credentials: unknown };
    Api: { ApiKey: string };
    Pdus: Record<string, { Credentials: unknown }>;
  };
  assert.deepEqual(unset.Mqtt.Credentials, { Username: "bridge", Password: null });
  assert.equal(unset.Api.ApiKey, "");
  assert.deepEqual(unset.Pdus.lab?.Credentials, { Username: null, Password: null });
});

test("the output is the file's shape in file order and loads back to the same configuration", async () => {
  const config = await parseConfigText(TEXT, file, env);
  const yaml = effectiveConfigYaml(config);
  const pdus = parseDocument(yaml).get("Pdus");
  assert.ok(isMap(pdus));
  assert.deepEqual(
    pdus.items.map((pair) => (isScalar(pair.key) ? pair.key.value : null)),
    ["2", "1", "lab"],
  );
  // The masked key (`***`) is too short to load; the environment supplies a real one, as in use.
  const again = await parseConfigText(yaml, "again.yaml", { SERVICE_API_KEY: "env-api-key-3-0123456" });
  assert.deepEqual(
    again.instances.map((i) => [i.id, i.primary, i.Connection, i.PollInterval]),
    config.instances.map((i) => [i.id, i.primary, i.Connection, i.PollInterval]),
  );
  assert.deepEqual(again.Health, config.Health);
  assert.deepEqual(again.Mqtt.Connection, config.Mqtt.Connection);
});

test("runCheckConfig prints the masked configuration and returns 0", async () => {
  let out = "";
  let err = "";
  const code = await runCheckConfig(
    ["--config", file],
    env,
    (s) => (out += s),
    (s) => (err += s),
  );
  assert.equal(code, 0, err);
  assert.equal(err, "");
  assert.match(out, /^Pdus:$/m);
  assertNoSecret(out);
});

test("runCheckConfig refuses unknown options with 2", async () => {
  let err = "";
  const code = await runCheckConfig(
    ["--confg", file],
    env,
    () => undefined,
    (s) => (err += s),
  );
  assert.equal(code, 2);
  assert.match(err, /usage: pdu-bridge check-config/);
});

test("the real CLI: exit 0, masked output, no secret anywhere", async () => {
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, "check-config", "--config", file],
      { env, cwd: dir },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : null,
          stdout,
          stderr,
        });
      },
    );
  });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /ApiKey: "\*\*\*"/);
  assert.match(result.stdout, /^ {2}lab:$/m);
  assertNoSecret(result.stdout + result.stderr);
});

test("the real CLI finds ./config.yaml without --config", async () => {
  const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    execFile(process.execPath, [MAIN, "check-config"], { env: {}, cwd: dir }, (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout });
    });
  });
  assert.equal(result.code, 0);
  assert.ok(result.stdout.includes(`from ${join(dir, "config.yaml")}`), result.stdout);
});
