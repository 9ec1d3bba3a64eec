/**
 * The effective configuration as YAML in the file's own shape, for `check-config`: every default
 * filled in, ports and schemes inferred, secrets merged and then masked.
 */
import { Document, isMap, isScalar, YAMLMap } from "yaml";
import { ConfigSchema, PduSchema, type Config, type InstanceConfig } from "./schema.js";
import { asSchemaNode, isPlainObject, SECRET_KEYS, type SchemaNode } from "./validate.js";

/** What a secret that is set shows as. Unset ones stay `null` / `""` so the operator sees which are set. */
export const MASK = "***";

/** A deep copy with every non-empty secret (passwords, the API key) replaced by {@link MASK}. */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      SECRET_KEYS.has(key) && typeof v === "string" && v !== "" ? MASK : maskSecrets(v),
    ]),
  );
}

/** A copy of `value` with the keys of every mapping in the order the schema lists them. */
function inSchemaOrder(schema: SchemaNode | undefined, value: unknown): unknown {
  if (!isPlainObject(value) || schema?.properties === undefined) return value;
  const ordered: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(schema.properties)) {
    if (value[key] !== undefined) ordered[key] = inSchemaOrder(child, value[key]);
  }
  return ordered;
}

/**
 * An instance's keys that its driver reads. An SNMP instance has no `Credentials` and no HTTP
 * `Connection.Scheme`, `ValidateCertificate` or `CaFile`; a Geist one no `Snmp`. Within `Snmp`,
 * Version 2c has no `Auth` and keys, Version 3 no communities (and no `PrivKey` without privacy).
 */
function applying(instance: InstanceConfig): Record<string, unknown> {
  const { id: _id, primary: _primary, Snmp, Credentials, Connection, ...rest } = instance;
  if (instance.Driver !== "snmp") return { ...rest, Connection, Credentials };
  const { Scheme: _scheme, ValidateCertificate: _validate, CaFile: _ca, ...connection } = Connection;
  if (Snmp.Version === "2c") {
    const { Auth: _auth, AuthKey: _authKey, PrivKey: _privKey, ...v2c } = Snmp;
    return { ...rest, Connection: connection, Snmp: v2c };
  }
  const { Community: _community, WriteCommunity: _write, ...v3 } = Snmp;
  if (Snmp.Auth.PrivProtocol !== "none") return { ...rest, Connection: connection, Snmp: v3 };
  const { PrivKey: _privKey, ...withoutPrivacy } = v3;
  return { ...rest, Connection: connection, Snmp: withoutPrivacy };
}

export function effectiveConfigYaml(config: Config): string {
  const { instances, origin: _origin, ...sections } = config;
  const doc = new Document(maskSecrets(inSchemaOrder(asSchemaNode(ConfigSchema), { ...sections, Pdus: {} })));

  // A map built pair by pair keeps the file's order even for ids like "1" and "2".
  const pdus = new YAMLMap();
  const pduSchema = asSchemaNode(PduSchema);
  for (const instance of instances) {
    pdus.items.push(doc.createPair(instance.id, maskSecrets(inSchemaOrder(pduSchema, applying(instance)))));
  }
  doc.set("Pdus", pdus);

  const host = doc.getIn(["Mqtt", "Connection", "Host"], true);
  if (config.Mqtt.Connection.Host === null && isScalar(host)) host.comment = " the embedded broker";

  // The etcd credentials have no key in the file (they come only from the environment): a comment
  // says what is set, the password masked like every other secret.
  const { Username, Password } = config.Cluster.Etcd.Credentials;
  const cluster = doc.get("Cluster", true);
  const etcdKey = isMap(cluster)
    ? cluster.items.find((pair) => isScalar(pair.key) && pair.key.value === "Etcd")?.key
    : undefined;
  if (isScalar(etcdKey)) {
    etcdKey.commentBefore =
      Username === null && Password === null
        ? " no etcd credentials (SERVICE_ETCD_USERNAME / SERVICE_ETCD_PASSWORD not set)"
        : ` etcd credentials from the environment: user ${JSON.stringify(Username)}, password ${Password === null ? "null" : `"${MASK}"`}`;
  }

  // The replicas' shared secret, likewise only from the environment.
  const enabledKey = isMap(cluster)
    ? cluster.items.find((pair) => isScalar(pair.key) && pair.key.value === "Enabled")?.key
    : undefined;
  if (isScalar(enabledKey)) {
    enabledKey.commentBefore =
      config.Cluster.Secret === ""
        ? " no replicas' secret (SERVICE_CLUSTER_SECRET not set)"
        : ` replicas' secret from the environment (SERVICE_CLUSTER_SECRET): "${MASK}"`;
  }

  const primary = instances.find((i) => i.primary)?.id ?? "(none)";
  doc.commentBefore = [
    ` pdu-bridge effective configuration from ${config.origin}`,
    ` secrets are masked: "${MASK}" means set, null or "" means not set`,
    ` primary instance: ${primary}`,
  ].join("\n");
  return doc.toString({ lineWidth: 0 });
}
