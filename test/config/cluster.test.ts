/**
 * The `Cluster` section: its defaults (off, and nothing else changes), the member name's default,
 * the etcd credentials and the replicas' secret from the environment only, and check-config showing
 * them masked; where advertised URLs may point; messages that say what a pattern expects. The rules
 * across its keys are cases of rules.test.ts.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { runCheckConfig } from "../../src/config/cli.js";
import { loadConfigFile, parseConfigText } from "../../src/config/load.js";
import { effectiveConfigYaml } from "../../src/config/mask.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));
const PDU = "Pdus:\n  rack-a:\n    Connection: { Host: 127.0.0.1 }\n";
/** Replicas share an external broker (the rules refuse `Cluster.Enabled` with the embedded one). */
const BROKER = "Mqtt:\n  Connection: { Host: 127.0.0.1 }\n";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-cluster-config-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("without a Cluster section the cluster is off, with the contract's defaults", async () => {
  const config = await parseConfigText(PDU, "test.yaml", { HOSTNAME: "pdu-bridge-0" });
  assert.deepEqual(config.Cluster, {
    Enabled: false,
    Backend: "kubernetes",
    MemberName: "pdu-bridge-0",
    Secret: "",
    AdvertiseUrl: null,
    PeerNetworks: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "fc00::/7", "::1/128"],
    Buckets: 64,
    LeaseDurationSeconds: 15,
    RenewDeadlineSeconds: 10,
    RetryPeriodSeconds: 2,
    Kubernetes: { Namespace: null, LeasePrefix: "pdu-bridge" },
    Etcd: {
      Endpoints: ["http://127.0.0.1:2379"],
      Prefix: "/pdu-bridge/",
      CaFile: null,
      CertFile: null,
      KeyFile: null,
      Credentials: { Username: null, Password: null },
    },
  });
});

test("the member name: the key, else HOSTNAME lower-cased, else the host name", async () => {
  const on = `${BROKER}${PDU}Cluster:\n  Backend: etcd\n  Enabled: true\n`;
  const named = await parseConfigText(`${on}  MemberName: replica-a\n`, "t.yaml", { HOSTNAME: "pod-1" });
  assert.equal(named.Cluster.MemberName, "replica-a");
  const fromEnv = await parseConfigText(on, "t.yaml", { HOSTNAME: "Pdu-Bridge-7F9C" });
  assert.equal(fromEnv.Cluster.MemberName, "pdu-bridge-7f9c");
  const fromHost = await parseConfigText(on.replace("true", "false"), "t.yaml", {});
  assert.equal(fromHost.Cluster.MemberName, hostname().toLowerCase());
  // Off, a host name that could not be a member name is no error: nothing uses it.
  const off = await parseConfigText(PDU, "t.yaml", { HOSTNAME: "bridge_01" });
  assert.equal(off.Cluster.Enabled, false);
});

test("timings may be fractions (short leases for tests) within the rules", async () => {
  const config = await parseConfigText(
    `${PDU}Cluster:\n  LeaseDurationSeconds: 3\n  RenewDeadlineSeconds: 2\n  RetryPeriodSeconds: 0.5\n`,
    "t.yaml",
    {},
  );
  assert.equal(config.Cluster.RetryPeriodSeconds, 0.5);
});

test("etcd credentials come from SERVICE_ETCD_* (and _FILE), a relative CaFile from the file's directory", async () => {
  const ca = join(dir, "etcd-ca.pem");
  await writeFile(ca, "not checked for content here\n");
  const passwordFile = join(dir, "etcd-password");
  await writeFile(passwordFile, "etcd-pw-from-file\n");
  const file = join(dir, "etcd.yaml");
  await writeFile(
    file,
    `${BROKER}${PDU}Cluster:\n  Enabled: true\n  MemberName: a\n  Backend: etcd\n  Etcd:\n    Endpoints: ["https://127.0.0.1:2379", "https://[::1]:2379"]\n    CaFile: etcd-ca.pem\n`,
  );
  const config = await loadConfigFile(file, {
    SERVICE_ETCD_USERNAME: "bridge",
    SERVICE_ETCD_PASSWORD: "etcd-pw-plain",
    SERVICE_ETCD_PASSWORD_FILE: passwordFile,
  });
  assert.deepEqual(config.Cluster.Etcd.Credentials, { Username: "bridge", Password: "etcd-pw-from-file" });
  assert.equal(config.Cluster.Etcd.CaFile, ca);
  assert.deepEqual(config.Cluster.Etcd.Endpoints, ["https://127.0.0.1:2379", "https://[::1]:2379"]);

  await assert.rejects(
    loadConfigFile(file, { SERVICE_ETCD_USERNAME_FILE: join(dir, "missing") }),
    /SERVICE_ETCD_USERNAME_FILE: cannot read .* \(no such file\)/,
  );
});

test("the advertised API URL is an http(s) origin: no path, no credentials", async () => {
  const at = (url: string) => parseConfigText(`${PDU}Cluster:\n  AdvertiseUrl: ${url}\n`, "t.yaml", {});
  assert.equal((await at("http://10.0.3.7:8082")).Cluster.AdvertiseUrl, "http://10.0.3.7:8082");
  for (const bad of ["http://10.0.3.7:8082/api", "http://user:pw@10.0.3.7:8082", "ftp://10.0.3.7"]) {
    await assert.rejects(at(bad), /Cluster\.AdvertiseUrl/, bad);
  }
});

test("the file has no key for etcd credentials", async () => {
  await assert.rejects(
    parseConfigText(`${PDU}Cluster:\n  Etcd:\n    Password: x\n`, "t.yaml", {}),
    /Cluster\.Etcd\.Password: unknown key/,
  );
});

test("check-config shows the etcd user and masks the password, and its output loads back", async () => {
  const file = join(dir, "check.yaml");
  await writeFile(file, `${BROKER}${PDU}Cluster:\n  Enabled: true\n  MemberName: a\n  Backend: etcd\n`);
  const env = { SERVICE_ETCD_USERNAME: "bridge", SERVICE_ETCD_PASSWORD: "etcd-secret-42" };
  let out = "";
  let err = "";
  const code = await runCheckConfig(
    ["--config", file],
    env,
    (s) => (out += s),
    (s) => (err += s),
  );
  assert.equal(code, 0, err);
  assert.ok(!out.includes("etcd-secret-42"), out);
  assert.match(out, /# etcd credentials from the environment: user "bridge", password "\*\*\*"\n {2}Etcd:/);
  const shown = parse(out) as { Cluster: { Enabled: boolean; MemberName: string; Etcd: object } };
  assert.equal(shown.Cluster.Enabled, true);
  assert.equal(shown.Cluster.MemberName, "a");
  assert.equal("Credentials" in shown.Cluster.Etcd, false);
  const again = await parseConfigText(out, "again.yaml", env);
  assert.deepEqual(again.Cluster, (await loadConfigFile(file, env)).Cluster);

  const none = effectiveConfigYaml(await parseConfigText(PDU, "t.yaml", {}));
  assert.match(none, /# no etcd credentials \(SERVICE_ETCD_USERNAME \/ SERVICE_ETCD_PASSWORD not set\)/);
});

test("the service refuses Cluster.Enabled with the embedded broker (exit 2 naming the key): replicas share one broker", async () => {
  const file = join(dir, "refused.yaml");
  await writeFile(
    file,
    `${PDU}Health: { Enabled: false }\nCluster:\n  Enabled: true\n  MemberName: a\n  Backend: etcd\n`,
  );
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, "--config", file],
      { env: {}, timeout: 30_000 },
      (error, _stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr });
      },
    );
  });
  assert.equal(result.code, 2, result.stderr);
  assert.match(
    result.stderr,
    /^config error: Cluster\.Enabled: is true, which needs an external MQTT broker shared by the replicas: set Mqtt\.Connection\.Host/,
  );
});

test("an etcd endpoint with credentials in it is refused without repeating them", async () => {
  await assert.rejects(
    parseConfigText(
      `${PDU}Cluster:\n  Etcd:\n    Endpoints: ["https://root:etcd-pw-9@10.0.0.5:2379"]\n`,
      "t.yaml",
      {},
    ),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.match(error.message, /Cluster\.Etcd\.Endpoints\.0: must not hold credentials/);
      assert.ok(!error.message.includes("etcd-pw-9"), error.message);
      return true;
    },
  );
});

const SECRET = "cluster-config-secret-0123456789abcdef";

test("the replicas' secret: required with the cluster and the API on (naming SERVICE_CLUSTER_SECRET), long enough, never shown", async () => {
  // The API on the loopback address: the address advertised to the others is within the default
  // Cluster.PeerNetworks whatever this host's own addresses are.
  const on = `${BROKER}${PDU}Api: { Enabled: true, Bind: 127.0.0.1 }\nCluster:\n  Enabled: true\n  MemberName: a\n  Backend: etcd\n`;
  await assert.rejects(
    parseConfigText(on, "t.yaml", {}),
    /SERVICE_CLUSTER_SECRET: is required with Cluster\.Enabled and Api\.Enabled/,
  );
  await assert.rejects(
    parseConfigText(on, "t.yaml", { SERVICE_CLUSTER_SECRET: "short-secret" }),
    /SERVICE_CLUSTER_SECRET: must be at least 32 characters/,
  );
  assert.equal(
    (await parseConfigText(on, "t.yaml", { SERVICE_CLUSTER_SECRET: SECRET })).Cluster.Secret,
    SECRET,
  );
  // Without the API nothing is handed between replicas: no secret needed.
  const mqttOnly = `${BROKER}${PDU}Cluster:\n  Enabled: true\n  MemberName: a\n  Backend: etcd\n`;
  assert.equal((await parseConfigText(mqttOnly, "t.yaml", {})).Cluster.Secret, "");
  // check-config says it at once, naming the variable, and masks it when set.
  const file = join(dir, "secret.yaml");
  await writeFile(file, on);
  let out = "";
  let err = "";
  const code = await runCheckConfig(
    ["--config", file],
    {},
    (t) => (out += t),
    (t) => (err += t),
  );
  assert.equal(code, 2);
  assert.match(err, /SERVICE_CLUSTER_SECRET/);
  out = "";
  const ok = await runCheckConfig(
    ["--config", file],
    { SERVICE_CLUSTER_SECRET: SECRET },
    (t) => (out += t),
    (t) => (err += t),
  );
  assert.equal(ok, 0, err);
  assert.ok(!out.includes(SECRET), out);
  assert.match(out, /# replicas' secret from the environment \(SERVICE_CLUSTER_SECRET\): "\*\*\*"/);
});

test("advertised URLs: Cluster.PeerNetworks entries are networks, names or suffixes; an AdvertiseUrl outside them is refused", async () => {
  const at = (lines: string) => parseConfigText(`${PDU}Cluster:\n${lines}`, "t.yaml", {});
  const networks = await at(
    "  PeerNetworks: [10.244.0.0/16, fd00::/8, pdu-0.racks.svc, .racks.svc.cluster.local]\n",
  );
  assert.equal(networks.Cluster.PeerNetworks.length, 4);
  for (const bad of ["10.244.0.0/33", "10.244.0.999/16", "fd00::/129", "http://10.0.0.1"]) {
    await assert.rejects(at(`  PeerNetworks: [${JSON.stringify(bad)}]\n`), /Cluster\.PeerNetworks/, bad);
  }
  await assert.rejects(
    at("  AdvertiseUrl: http://203.0.113.7:8082\n"),
    /Cluster\.AdvertiseUrl: points outside Cluster\.PeerNetworks/,
  );
  const named = await at(
    "  AdvertiseUrl: http://pdu-0.racks.svc.cluster.local:8082\n  PeerNetworks: [.racks.svc.cluster.local]\n",
  );
  assert.equal(named.Cluster.AdvertiseUrl, "http://pdu-0.racks.svc.cluster.local:8082");
});

test("a member name or advertised URL that fails its pattern says what is expected", async () => {
  await assert.rejects(
    parseConfigText(`${PDU}Cluster:\n  MemberName: Replica_A\n`, "t.yaml", {}),
    /Cluster\.MemberName: must be a member name \(lower-case letters, digits, - and \., at most 63/,
  );
  await assert.rejects(
    parseConfigText(`${PDU}Cluster:\n  AdvertiseUrl: http://10.0.3.7:8082/api\n`, "t.yaml", {}),
    /Cluster\.AdvertiseUrl: must be an http:\/\/ or https:\/\/ origin: scheme, host and port, no path/,
  );
});

test("an etcd client certificate: CertFile and KeyFile together, relative to the file, readable", async () => {
  const at = (lines: string) =>
    parseConfigText(`${PDU}Cluster:\n  Etcd:\n${lines}`, join(dir, "c.yaml"), {}, { baseDir: dir });
  await assert.rejects(
    at("    CertFile: client.pem\n"),
    /Cluster\.Etcd\.KeyFile: is required with Cluster\.Etcd\.CertFile/,
  );
  await assert.rejects(
    at("    KeyFile: client-key.pem\n"),
    /Cluster\.Etcd\.CertFile: is required with Cluster\.Etcd\.KeyFile/,
  );
  await assert.rejects(
    at("    CertFile: missing.pem\n    KeyFile: missing-key.pem\n"),
    /Cluster\.Etcd\.CertFile: cannot read/,
  );
  await writeFile(join(dir, "client.pem"), "cert");
  await writeFile(join(dir, "client-key.pem"), "key");
  const config = await at("    CertFile: client.pem\n    KeyFile: client-key.pem\n");
  assert.equal(config.Cluster.Etcd.CertFile, join(dir, "client.pem"));
  assert.equal(config.Cluster.Etcd.KeyFile, join(dir, "client-key.pem"));
});
