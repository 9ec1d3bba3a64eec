/**
 * `Driver: snmp` in the configuration: defaults (port 161, v2c, Profile auto), the secrets from the
 * environment (and their _FILE forms), else the file, as every other secret; exit-2 problems naming
 * the key and the variable, never the secret, also for a secret that would be ignored; and
 * check-config masking them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { runCheckConfig } from "../../src/config/cli.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";

const yaml = (snmp: string, extra = "") =>
  [
    "Pdus:",
    "  rack-c:",
    "    Driver: snmp",
    "    Connection: { Host: 10.0.0.12 }",
    ...(snmp === "" ? [] : [`    Snmp: ${snmp}`]),
    ...(extra === "" ? [] : [`    ${extra}`]),
  ].join("\n");

async function problem(text: string, env: Record<string, string> = {}): Promise<ConfigError> {
  try {
    await parseConfigText(text, "snmp.yaml", env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e;
  }
  throw new Error("the configuration was accepted");
}

describe("Driver: snmp configuration", () => {
  it("defaults: port 161, version 2c, profile auto, the community from the environment", async () => {
    const c = await parseConfigText(yaml(""), "snmp.yaml", { SERVICE_PDU_RACK_C_COMMUNITY: "s3cret-read" });
    const i = c.instances[0];
    assert.equal(i?.Connection.Port, 161);
    assert.equal(i?.Snmp.Version, "2c");
    assert.equal(i?.Snmp.Profile, "auto");
    assert.equal(i?.Snmp.Community, "s3cret-read");
    assert.equal(i?.Snmp.WriteCommunity, null);
  });

  it("a missing read community names the key and the variable", async () => {
    const e = await problem(yaml(""));
    assert.equal(e.key, "Pdus.rack-c.Snmp.Community");
    assert.match(e.message, /SERVICE_PDU_RACK_C_COMMUNITY/);
  });

  it("control without a write community names the variable", async () => {
    const e = await problem(yaml("", "ActionsEnabled: true"), { SERVICE_PDU_RACK_C_COMMUNITY: "r" });
    assert.equal(e.key, "Pdus.rack-c.Snmp.WriteCommunity");
    assert.match(e.message, /SERVICE_PDU_RACK_C_WRITE_COMMUNITY/);
  });

  it("a community written in the file is taken as every secret is: the variable wins over it", async () => {
    const inFile = await parseConfigText(yaml("{ Community: public-in-file }"), "snmp.yaml", {});
    assert.equal(inFile.instances[0]?.Snmp.Community, "public-in-file");
    const both = await parseConfigText(yaml("{ Community: public-in-file }"), "snmp.yaml", {
      SERVICE_PDU_RACK_C_COMMUNITY: "from-env",
    });
    assert.equal(both.instances[0]?.Snmp.Community, "from-env");
  });

  it("a secret that would be ignored is refused, naming the key and where it came from, never the value", async () => {
    const geist = [
      "Pdus:",
      "  rack-g:",
      "    Connection: { Host: 10.0.0.13 }",
      "    Snmp: { WriteCommunity: w-s3cret }",
    ].join("\n");
    const fromFile = await problem(geist);
    assert.equal(fromFile.key, "Pdus.rack-g.Snmp.WriteCommunity");
    assert.equal(fromFile.line, 4);
    assert.match(fromFile.message, /in the file\) but Driver is geist, which uses no SNMP secret/);
    const env = await problem(geist.split("\n").slice(0, 3).join("\n"), {
      SERVICE_PDU_RACK_G_COMMUNITY: "c-s3cret",
    });
    assert.equal(env.key, "Pdus.rack-g.Snmp.Community");
    assert.match(env.message, /is set \(SERVICE_PDU_RACK_G_COMMUNITY\) but Driver is geist/);

    const v3 = yaml("{ Version: 3, Auth: { Username: ops } }");
    const keys = { SERVICE_PDU_RACK_C_AUTH_KEY: "auth-s3cret", SERVICE_PDU_RACK_C_PRIV_KEY: "priv-s3cret" };
    const community = await problem(v3, { ...keys, SERVICE_PDU_RACK_C_COMMUNITY: "c-s3cret" });
    assert.equal(community.key, "Pdus.rack-c.Snmp.Community");
    assert.match(community.message, /but Version is 3/);
    const noPriv = yaml("{ Version: 3, Auth: { Username: ops, PrivProtocol: none } }");
    const priv = await problem(noPriv, keys);
    assert.equal(priv.key, "Pdus.rack-c.Snmp.PrivKey");
    assert.match(priv.message, /but Auth.PrivProtocol is none/);
    const v2 = await problem(yaml("{ AuthKey: auth-s3cret }"), { SERVICE_PDU_RACK_C_COMMUNITY: "r" });
    assert.equal(v2.key, "Pdus.rack-c.Snmp.AuthKey");
    assert.match(v2.message, /but Version is 2c/);
    for (const e of [fromFile, env, community, priv, v2]) assert.doesNotMatch(e.message, /s3cret/);
  });

  it("v3 without a user name, without keys, or with a short key", async () => {
    const noUser = await problem(yaml("{ Version: 3 }"));
    assert.equal(noUser.key, "Pdus.rack-c.Snmp.Auth.Username");
    const noKey = await problem(yaml("{ Version: 3, Auth: { Username: ops } }"));
    assert.equal(noKey.key, "Pdus.rack-c.Snmp.AuthKey");
    assert.match(noKey.message, /SERVICE_PDU_RACK_C_AUTH_KEY/);
    const noPriv = await problem(yaml("{ Version: 3, Auth: { Username: ops } }"), {
      SERVICE_PDU_RACK_C_AUTH_KEY: "long-enough-key",
    });
    assert.equal(noPriv.key, "Pdus.rack-c.Snmp.PrivKey");
    const short = await problem(yaml("{ Version: 3, Auth: { Username: ops, PrivProtocol: none } }"), {
      SERVICE_PDU_RACK_C_AUTH_KEY: "short",
    });
    assert.equal(short.key, "Pdus.rack-c.Snmp.AuthKey");
    assert.doesNotMatch(short.message, /short"/);
  });

  it("v3 authNoPriv needs no privacy key; keys come from _FILE variables too", async () => {
    const dir = await mkdtemp(join(tmpdir(), "snmp-secret-"));
    try {
      await writeFile(join(dir, "auth"), "auth-key-from-file\n");
      const c = await parseConfigText(
        yaml(
          '{ Version: "3", Profile: apc-rpdu2, Auth: { Username: ops, Protocol: sha256, PrivProtocol: none } }',
        ),
        "snmp.yaml",
        { SERVICE_PDU_RACK_C_AUTH_KEY_FILE: join(dir, "auth") },
      );
      const s = c.instances[0]?.Snmp;
      assert.equal(s?.Version, "3");
      assert.equal(s?.AuthKey, "auth-key-from-file");
      assert.equal(s?.Auth.Protocol, "sha256");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("an unknown profile or version is refused naming the key", async () => {
    const e = await problem(yaml("{ Profile: cyberpower }"), { SERVICE_PDU_RACK_C_COMMUNITY: "r" });
    assert.equal(e.key, "Pdus.rack-c.Snmp.Profile");
    const v = await problem(yaml("{ Version: 1 }"), { SERVICE_PDU_RACK_C_COMMUNITY: "r" });
    assert.equal(v.key, "Pdus.rack-c.Snmp.Version");
  });

  it("check-config masks the communities and keys", async () => {
    const dir = await mkdtemp(join(tmpdir(), "snmp-check-"));
    try {
      const file = join(dir, "config.yaml");
      await writeFile(file, yaml("", "ActionsEnabled: true"));
      let out = "";
      let err = "";
      const code = await runCheckConfig(
        ["--config", file],
        { SERVICE_PDU_RACK_C_COMMUNITY: "read-s3cret", SERVICE_PDU_RACK_C_WRITE_COMMUNITY: "write-s3cret" },
        (s) => (out += s),
        (s) => (err += s),
      );
      assert.equal(code, 0, err);
      assert.doesNotMatch(out, /s3cret/);
      assert.match(out, /Community: "\*\*\*"/);
      assert.match(out, /WriteCommunity: "\*\*\*"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("check-config shows each instance the keys its driver reads, and only those", async () => {
    const dir = await mkdtemp(join(tmpdir(), "snmp-keys-"));
    try {
      const file = join(dir, "config.yaml");
      await writeFile(
        file,
        [
          "Pdus:",
          "  geist:",
          "    Connection: { Host: 10.0.0.11, Port: 443 }",
          "  v2c:",
          "    Driver: snmp",
          "    Connection: { Host: 10.0.0.12 }",
          "  v3:",
          "    Driver: snmp",
          "    Connection: { Host: 10.0.0.13 }",
          "    Snmp: { Version: 3, Auth: { Username: ops } }",
          "  v3-no-privacy:",
          "    Driver: snmp",
          "    Connection: { Host: 10.0.0.14 }",
          "    Snmp: { Version: 3, Auth: { Username: ops, PrivProtocol: none } }",
          "",
        ].join("\n"),
      );
      let out = "";
      let err = "";
      const code = await runCheckConfig(
        ["--config", file],
        {
          SERVICE_PDU_V2C_COMMUNITY: "read-s3cret",
          SERVICE_PDU_V3_AUTH_KEY: "auth-s3cret",
          SERVICE_PDU_V3_PRIV_KEY: "priv-s3cret",
          SERVICE_PDU_V3_NO_PRIVACY_AUTH_KEY: "auth-s3cret",
          // The global PDU credentials reach every instance; an SNMP one does not use them.
          SERVICE_PDU_USERNAME: "admin",
        },
        (s) => (out += s),
        (s) => (err += s),
      );
      assert.equal(code, 0, err);
      type Shown = Record<string, unknown> & {
        Connection: Record<string, unknown>;
        Snmp?: Record<string, unknown> & { Auth?: Record<string, unknown> };
      };
      const pdus = (parse(out) as { Pdus: Record<string, Shown> }).Pdus;
      const keys = (o: object | undefined) => Object.keys(o ?? {}).sort();

      assert.equal(pdus.geist?.Snmp, undefined, "a Geist instance has no Snmp");
      assert.deepEqual(pdus.geist?.Credentials, { Username: "admin", Password: null });
      assert.deepEqual(keys(pdus.geist?.Connection), [
        "CaFile",
        "Host",
        "Port",
        "Scheme",
        "Timeout",
        "ValidateCertificate",
      ]);
      assert.equal(pdus.geist?.Connection.Scheme, "https");

      for (const id of ["v2c", "v3", "v3-no-privacy"]) {
        assert.equal(pdus[id]?.Credentials, undefined, `${id}: no Credentials`);
        assert.deepEqual(keys(pdus[id]?.Connection), ["Host", "Port", "Timeout"], id);
        assert.equal(pdus[id]?.Connection.Port, 161);
      }
      assert.deepEqual(keys(pdus.v2c?.Snmp), [
        "Community",
        "MaxRepetitions",
        "Profile",
        "Version",
        "WriteCommunity",
      ]);
      assert.equal(pdus.v2c?.Snmp?.Community, "***");
      assert.deepEqual(keys(pdus.v3?.Snmp), [
        "Auth",
        "AuthKey",
        "MaxRepetitions",
        "PrivKey",
        "Profile",
        "Version",
      ]);
      assert.deepEqual(keys(pdus.v3?.Snmp?.Auth), ["PrivProtocol", "Protocol", "Username"]);
      assert.deepEqual(keys(pdus["v3-no-privacy"]?.Snmp), [
        "Auth",
        "AuthKey",
        "MaxRepetitions",
        "Profile",
        "Version",
      ]);
      assert.doesNotMatch(out, /s3cret/);
      // What is shown loads back to the same instances.
      const again = await parseConfigText(out, "again.yaml", {
        SERVICE_PDU_V2C_COMMUNITY: "read-s3cret",
        SERVICE_PDU_V3_AUTH_KEY: "auth-s3cret",
        SERVICE_PDU_V3_PRIV_KEY: "priv-s3cret",
        SERVICE_PDU_V3_NO_PRIVACY_AUTH_KEY: "auth-s3cret",
      });
      assert.deepEqual(
        again.instances.map((i) => [i.id, i.Driver, i.Connection.Port, i.Snmp.Version]),
        [
          ["geist", "geist", 443, "2c"],
          ["v2c", "snmp", 161, "2c"],
          ["v3", "snmp", 161, "3"],
          ["v3-no-privacy", "snmp", 161, "3"],
        ],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
