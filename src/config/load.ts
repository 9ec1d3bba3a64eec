/**
 * Loading the configuration: find the file, parse the YAML, reject unknown keys, apply defaults,
 * validate with the schema, merge secrets from the environment, infer ports and schemes, and check
 * the rules that span keys. Every problem is a {@link ConfigError} naming the key, file and line,
 * and a file with several problems gets them all in one error (one line each), in two rounds: the
 * file's shape (unknown keys, instance ids, every key's type and range), then, once the shape is
 * right, every rule that reads the values (hosts, ports, secrets, overrides, CA files).
 */
import { readWebhookSecrets, webhookProblems } from "./webhooks.js";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { dirname, resolve } from "node:path";
import { Value } from "typebox/value";
import { overrideProblems } from "./overrides.js";
import { assetProblems } from "./asset-model.js";
import { ratingKeyProblem } from "./ratings.js";
import { checkApiAuthRules, OIDC_SECRET_VARIABLE, readApiTls, resolveApiSection } from "./oidc.js";
import { parseYaml, type KeyPath, type ParsedYaml } from "./document.js";
import { peerNetworkProblem, peerNetworks } from "./peer-networks.js";
import { environmentProblems, type Interfaces } from "./environment.js";
import { ConfigError } from "./errors.js";
import { parseTrapCommunities, resolveTraps, TRAP_COMMUNITIES_VARIABLE, trapProblems } from "./traps.js";
import {
  ConfigSchema,
  InstanceIdPattern,
  MemberNamePattern,
  PduSchema,
  type ClusterConfig,
  type Config,
  type FileConfig,
  type InstanceConfig,
  type MqttConfig,
  type MqttScheme,
  type PduScheme,
} from "./schema.js";
import {
  API_KEY_VARIABLE,
  CLUSTER_SECRET_VARIABLE,
  ETCD_VARIABLE_PREFIX,
  instanceVariableId,
  instanceVariablePrefix,
  ioReason,
  mergeSecrets,
  MQTT_VARIABLE_PREFIX,
  readSecret,
  PDU_VARIABLE_PREFIX,
  secretsInConfigMap,
  snmpSecretSource,
  SNMP_SECRET_VARIABLES,
  type Env,
  type MergedSecrets,
} from "./secrets.js";
import {
  asSchemaNode,
  describeErrors,
  findUnknownKeys,
  isPlainObject,
  orderedKeys,
  showKind,
  showValue,
  type SchemaNode,
} from "./validate.js";

export type { Env } from "./secrets.js";

export interface ParseOptions {
  /** "kubernetes": the text is a ConfigMap's, so secrets written in it are refused. Default "file". */
  readonly source?: "file" | "kubernetes";
  /** Directory relative `CaFile` paths are resolved against (default: the working directory). */
  readonly baseDir?: string;
  /**
   * The network interfaces of the host the service runs on (the advertised URL's rule reads them);
   * default this machine's. Tests describe a pod's.
   */
  readonly interfaces?: Interfaces;
}

/** Where the configuration is looked for when neither `--config` nor `SERVICE_CONFIG` is given. */
export const DEFAULT_CONFIG_PATHS = ["./config.yaml", "/config/config.yaml"] as const;

/** `--config`, else `SERVICE_CONFIG`, else the first existing of {@link DEFAULT_CONFIG_PATHS}. */
export function resolveConfigPath(
  argvPath: string | undefined,
  env: Env = process.env,
  cwd: string = process.cwd(),
): string {
  if (argvPath !== undefined && argvPath !== "") return argvPath;
  const fromEnv = env.SERVICE_CONFIG;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  const candidates = DEFAULT_CONFIG_PATHS.map((p) => resolve(cwd, p));
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) {
    throw new ConfigError(
      "",
      `no configuration file: tried ${candidates.join(" and ")} (use --config FILE or SERVICE_CONFIG)`,
    );
  }
  return found;
}

export async function loadConfigFile(path: string, env: Env = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    throw new ConfigError("", `cannot read the configuration file (${ioReason(cause)})`, { file: path });
  }
  return parseConfigText(text, path, env, { source: "file", baseDir: dirname(resolve(path)) });
}

const MQTT_DEFAULT_PORTS: Readonly<Record<MqttScheme, number>> = {
  mqtt: 1883,
  mqtts: 8883,
  ws: 8000,
  wss: 8884,
};

/** Parses and validates configuration text; `origin` names it in messages (a path, `configmap ns/name`). */
export async function parseConfigText(
  text: string,
  origin: string,
  env: Env = process.env,
  options: ParseOptions = {},
): Promise<Config> {
  const yaml = parseYaml(text, origin);
  // An empty key is written `""`, so that it is named (a bare "" would read as the whole file).
  const fail = (path: KeyPath, problem: string, linePath: KeyPath = path): ConfigError =>
    new ConfigError(path.map((k) => (k === "" ? '""' : k)).join("."), problem, {
      file: origin,
      line: yaml.lineOf(linePath),
    });

  // toJS built this data for us alone, so it is filled in place.
  const data = yaml.value;
  if (!isPlainObject(data)) {
    throw new ConfigError("", `the top level must be a mapping of sections (got ${showKind(data)})`, {
      file: origin,
      line: 1,
    });
  }
  const ids = checkShape(data, yaml, fail);
  if (!Value.Check(ConfigSchema, data)) throw new ConfigError("", "invalid configuration", { file: origin });

  // A file may hold any secret (the environment wins); a ConfigMap none. These problems, and the
  // secret files that cannot be read, are reported with those of the rules.
  const found =
    options.source === "kubernetes"
      ? secretsInConfigMap(data, ids).map((secret) => fail(secret.path, secret.problem))
      : [];
  const secrets = await mergeSecrets(data, ids, env);
  found.push(...secrets.problems);
  const fileSecret = data.Api.Oidc.ClientSecret;
  const clientSecret =
    (await readSecret(env, OIDC_SECRET_VARIABLE, found)) ?? (fileSecret === "" ? null : fileSecret);
  const trapList = parseTrapCommunities(await readSecret(env, TRAP_COMMUNITIES_VARIABLE, found));
  for (const problem of trapList.problems) found.push(new ConfigError(TRAP_COMMUNITIES_VARIABLE, problem));
  const baseDir = options.baseDir ?? process.cwd();
  const caFile = (file: string | null) => (file === null ? null : resolve(baseDir, file));

  const instances = resolveInstances(data, ids, secrets, caFile);

  const connection = data.Mqtt.Connection;
  const mqttScheme: MqttScheme = connection.Scheme ?? mqttSchemeForPort(connection.Port);
  const mqtt: MqttConfig = {
    ...data.Mqtt,
    Connection: {
      ...connection,
      Host: connection.Host ?? null,
      Port: connection.Port ?? MQTT_DEFAULT_PORTS[mqttScheme],
      Scheme: mqttScheme,
      CaFile: caFile(connection.CaFile),
    },
    Credentials: secrets.mqtt,
  };

  const cluster = resolveCluster(data.Cluster, env, secrets, caFile);
  const webhookSecrets = await readWebhookSecrets(data, env, found);

  const { Pdus: _pdus, Mqtt: _mqtt, Cluster: _cluster, Traps: traps, ...sections } = data;
  const config: Config = {
    ...sections,
    Traps: resolveTraps(traps, trapList.communities),
    Mqtt: mqtt,
    Cluster: cluster,
    Api: resolveApiSection({ ...data.Api, ApiKey: secrets.apiKey }, baseDir, clientSecret),
    instances,
    origin,
    Webhooks: data.Webhooks.map((hook) => ({ ...hook, CaFile: caFile(hook.CaFile) })),
    webhookSecrets,
  };
  await checkRules(config, yaml, env, fail, { found, interfaces: options.interfaces });
  return config;
}

/**
 * The second pass: the rules that read the values, every one of them; their problems and those
 * `found` before (secrets) in file order, as one error.
 */
async function checkRules(
  config: Config,
  yaml: ParsedYaml,
  env: Env,
  fail: Fail,
  {
    found,
    interfaces,
  }: { readonly found: readonly ConfigError[]; readonly interfaces?: Interfaces | undefined },
): Promise<void> {
  const rules: ConfigError[] = [...found];
  for (const instance of config.instances) {
    for (const bad of overrideProblems(instance)) rules.push(fail([...bad.path], bad.problem));
    for (const key of Object.keys(instance.Ratings.Entities ?? {})) {
      const problem = ratingKeyProblem(key);
      if (problem !== null) rules.push(fail(["Pdus", instance.id, "Ratings", "Entities", key], problem));
    }
  }
  // Assets, feeds and sequences (docs/assets.md).
  for (const p of assetProblems(config)) rules.push(fail(p.path, p.problem));
  // Webhook receivers (docs/events.md).
  for (const p of webhookProblems(config.Webhooks, config.webhookSecrets ?? []))
    rules.push(fail(p.path.map(String), p.problem));
  checkHosts(config, fail, rules);
  for (const p of trapProblems(config)) rules.push(fail([...p.path], p.problem));
  checkCrossFieldRules(config, yaml, fail, rules);
  checkApiAuthRules(config, fail, rules);
  checkSecretRules(config, env, fail, rules);
  checkSnmpSecretsApply(config, env, yaml, fail, rules);
  await checkCaFiles(config, fail, rules);
  await collect(rules, () => readApiTls(config, fail));
  for (const p of await environmentProblems(config, env, interfaces)) {
    rules.push(fail(p.path, p.problem, yaml.has(p.path) ? p.path : (p.linePath ?? p.path)));
  }
  if (rules.length > 0) throw ConfigError.all(inFileOrder(rules.flatMap((rule) => rule.problems)));
}

/**
 * The first pass: the shape of the file. Every unknown key, bad instance id and bad value is listed
 * in one error; fills in the defaults and returns the instance ids.
 */
function checkShape(data: Record<string, unknown>, yaml: ParsedYaml, fail: Fail): string[] {
  const schema = asSchemaNode(ConfigSchema);
  nullSectionsToEmpty(schema, data);

  const shape: ConfigError[] = [];
  const unknown = findUnknownKeys(schema, data, (path) => yaml.keysOf(path));
  for (const u of unknown) shape.push(fail(u.path, u.problem));
  // A misspelt required key would also be reported missing: its unknown-key line says it all.
  const misspelt = new Set(
    unknown.flatMap((u) =>
      u.suggestion === undefined ? [] : [[...u.path.slice(0, -1), u.suggestion].join(".")],
    ),
  );

  const ids = checkInstanceIds(data, yaml, fail, shape);

  Value.Default(ConfigSchema, data);
  // typebox leaves the values of a record alone, so each instance gets its defaults here (those
  // with a bad id too, so that their values are checked as well).
  if (isPlainObject(data.Pdus)) for (const pdu of Object.values(data.Pdus)) Value.Default(PduSchema, pdu);

  for (const problem of describeErrors(schema, data, Value.Errors(ConfigSchema, data))) {
    if (problem.problem === "is required" && misspelt.has(problem.path.join("."))) continue;
    shape.push(fail(problem.path, problem.problem));
  }
  if (shape.length > 0) throw ConfigError.all(inFileOrder(shape));
  return ids;
}

/** Each instance's configuration with its defaults, secrets and resolved CA file. */
function resolveInstances(
  data: FileConfig,
  ids: readonly string[],
  secrets: MergedSecrets,
  caFile: (file: string | null) => string | null,
): InstanceConfig[] {
  const primaryId = ids.includes("default") ? "default" : ids[0];
  return ids.map((id): InstanceConfig => {
    const pdu = data.Pdus[id]!;
    const scheme: PduScheme = pdu.Connection.Scheme ?? (pdu.Connection.Port === 443 ? "https" : "http");
    const snmp = pdu.Driver === "snmp";
    return {
      id,
      primary: id === primaryId,
      ...pdu,
      Snmp: {
        ...pdu.Snmp,
        Version: pdu.Snmp.Version === 3 ? "3" : pdu.Snmp.Version,
        ...(secrets.snmp.get(id) ?? {}),
      },
      Connection: {
        ...pdu.Connection,
        Port: pdu.Connection.Port ?? (snmp ? 161 : scheme === "https" ? 443 : 80),
        Scheme: scheme,
        CaFile: caFile(pdu.Connection.CaFile),
      },
      Credentials: secrets.pdus.get(id) ?? { Username: null, Password: null },
      credentialSources: secrets.pduSources.get(id) ?? { Username: null, Password: null },
    };
  });
}

/** Runs a check that throws what it finds (one ConfigError, maybe of several problems) into `problems`. */
async function collect(problems: ConfigError[], check: () => unknown): Promise<void> {
  try {
    await check();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(error);
  }
}

/** Problems by line (those without one, such as a variable's, after), otherwise as found. */
function inFileOrder(problems: readonly ConfigError[]): ConfigError[] {
  return problems
    .map((problem, i) => ({ problem, i }))
    .sort((a, b) => (a.problem.line ?? Infinity) - (b.problem.line ?? Infinity) || a.i - b.i)
    .map((p) => p.problem);
}

/** HOSTNAME (a pod's name), else the system's host name; lower-cased, as member names are. */
function defaultMemberName(env: Env): string {
  const fromEnv = env.HOSTNAME;
  return (fromEnv === undefined || fromEnv === "" ? hostname() : fromEnv).toLowerCase();
}

function mqttSchemeForPort(port: number | undefined): MqttScheme {
  const schemes = Object.entries(MQTT_DEFAULT_PORTS) as [MqttScheme, number][];
  return schemes.find(([scheme, p]) => p === port && scheme !== "mqtt")?.[0] ?? "mqtt";
}

/** `Api:` with everything commented out is YAML null: treat every null section as an empty one. */
function nullSectionsToEmpty(schema: SchemaNode, value: Record<string, unknown>): void {
  const visit = (child: SchemaNode | undefined, key: string) => {
    if (child?.type !== "object") return;
    if (value[key] === null) value[key] = {};
    const next = value[key];
    if (isPlainObject(next)) nullSectionsToEmpty(child, next);
  };
  for (const [key, child] of Object.entries(schema.properties ?? {})) visit(child, key);
  const item = Object.values(schema.patternProperties ?? {})[0];
  if (item !== undefined) for (const key of Object.keys(value)) visit(item, key);
}

type Fail = (path: KeyPath, problem: string, linePath?: KeyPath) => ConfigError;

/**
 * The valid instance ids in file order; a missing `Pdus`, an invalid id or two ids that collide
 * are added to `problems`.
 */
function checkInstanceIds(
  data: Record<string, unknown>,
  yaml: ParsedYaml,
  fail: Fail,
  problems: ConfigError[],
): string[] {
  const pdus = data.Pdus;
  if (pdus === undefined || (isPlainObject(pdus) && Object.keys(pdus).length === 0)) {
    problems.push(fail(["Pdus"], "at least one PDU instance is required"));
    return [];
  }
  if (!isPlainObject(pdus)) return []; // the schema reports the wrong type
  const ids: string[] = [];
  const pattern = new RegExp(InstanceIdPattern);
  const seen = new Map<string, string>();
  for (const id of orderedKeys(pdus, yaml.keysOf(["Pdus"]))) {
    if (!pattern.test(id)) {
      problems.push(
        fail(["Pdus", id], `instance ids are 1-64 characters of A-Za-z0-9_- (got ${JSON.stringify(id)})`),
      );
      continue;
    }
    const variableId = instanceVariableId(id);
    const other = seen.get(variableId);
    if (other !== undefined) {
      problems.push(
        fail(
          ["Pdus", id],
          `instance id collides with \`${other}\`: ids must differ in more than case and - versus _ ` +
            `(both would read ${PDU_VARIABLE_PREFIX}_${variableId}_* and ?instance= ignores case)`,
        ),
      );
      continue;
    }
    seen.set(variableId, id);
    ids.push(id);
  }
  return ids;
}

function checkCrossFieldRules(config: Config, yaml: ParsedYaml, fail: Fail, problems: ConfigError[]): void {
  const embedded = config.Mqtt.Connection.Host === null;
  const healthPaths = ["/healthz", "/readyz", "/health/integrations"];
  if (config.Metrics.Enabled && healthPaths.includes(config.Metrics.Path)) {
    problems.push(
      fail(["Metrics", "Path"], `${config.Metrics.Path} is a health endpoint; choose another path`),
    );
  }

  checkListenerPorts(config, yaml, fail, problems);

  for (const [i, address] of config.Api.TrustedProxies.entries()) {
    if (isIP(address) === 0) {
      problems.push(
        fail(
          ["Api", "TrustedProxies", String(i)],
          `must be an IP address written out, like 10.0.0.5 or fd00::5 (got ${showValue(address)}); names and ranges are not accepted`,
          ["Api", "TrustedProxies"],
        ),
      );
    }
  }

  if (config.Http.HeadersTimeout > config.Http.RequestTimeout) {
    problems.push(
      fail(
        ["Http", "HeadersTimeout"],
        `must not be longer than Http.RequestTimeout (${config.Http.RequestTimeout}): the headers are part of the request`,
      ),
    );
  }

  if (config.Alarms.CriticalPercent <= config.Alarms.WarnPercent) {
    const [named, other] = yaml.has(["Alarms", "CriticalPercent"])
      ? (["CriticalPercent", "WarnPercent"] as const)
      : (["WarnPercent", "CriticalPercent"] as const);
    problems.push(
      fail(
        ["Alarms", named],
        `must be ${named === "CriticalPercent" ? "above" : "below"} Alarms.${other} (${config.Alarms[other]}): critical is the higher line`,
      ),
    );
  }

  if (embedded && config.Mqtt.Connection.ProtocolVersion === 5) {
    problems.push(
      fail(
        ["Mqtt", "Connection", "ProtocolVersion"],
        "5 needs an external broker: the embedded broker (used because Mqtt.Connection.Host is not set) " +
          "speaks MQTT 3.1.1 only; use 4 or set Mqtt.Connection.Host",
      ),
    );
  }

  checkClusterRules(config, fail, problems);

  checkPduCredentials(config, yaml, fail, problems);
}

/** Two enabled listeners on one port: the key the file sets is named (the later one when it sets both). */
function checkListenerPorts(config: Config, yaml: ParsedYaml, fail: Fail, problems: ConfigError[]): void {
  const embedded = config.Mqtt.Connection.Host === null;
  const listeners = [
    { path: ["Api", "Port"], port: config.Api.Port, on: config.Api.Enabled },
    { path: ["Health", "Port"], port: config.Health.Port, on: config.Health.Enabled },
    { path: ["Mqtt", "Embedded", "Port"], port: config.Mqtt.Embedded.Port, on: embedded },
  ].filter((l) => l.on && l.port !== 0);
  for (const [i, a] of listeners.entries()) {
    for (const b of listeners.slice(i + 1)) {
      if (a.port !== b.port) continue;
      // Name the key the file sets (the later one when it sets both): that is the one to change.
      const lineA = yaml.has(a.path) ? (yaml.lineOf(a.path) ?? 0) : -1;
      const lineB = yaml.has(b.path) ? (yaml.lineOf(b.path) ?? 0) : -1;
      const [named, other] = lineB > lineA ? [b, a] : [a, b];
      problems.push(
        fail(
          named.path,
          `port ${named.port} is also used by ${other.path.join(".")}; each listener needs its own port`,
        ),
      );
    }
  }
}

/** An SNMP instance's own rules; a Geist instance with ActionsEnabled needs both credentials. */
function checkPduCredentials(config: Config, yaml: ParsedYaml, fail: Fail, problems: ConfigError[]): void {
  for (const instance of config.instances) {
    if (instance.Driver === "snmp") {
      checkSnmp(instance, yaml, fail, problems);
      continue;
    }
    const { Username, Password } = instance.Credentials;
    if (!instance.ActionsEnabled || (nonEmpty(Username) && nonEmpty(Password))) continue;
    const path = ["Pdus", instance.id, "Credentials"];
    const variables = `${instanceVariablePrefix(instance.id)}_USERNAME/_PASSWORD or ${PDU_VARIABLE_PREFIX}_USERNAME/_PASSWORD`;
    problems.push(
      fail(
        path,
        `ActionsEnabled is true but Username and Password are not both set (set them here or with ${variables})`,
        yaml.has(path) ? path : ["Pdus", instance.id, "ActionsEnabled"],
      ),
    );
  }
}

const nonEmpty = (value: string | null): boolean => value !== null && value !== "";

/** Shortest SNMPv3 key accepted (USM derives keys from passwords of at least 8 characters). */
export const MIN_SNMP_KEY_LENGTH = 8;

/**
 * An SNMP instance's settings that could never work: a v2c instance without its read community (or,
 * with ActionsEnabled, its write community), a v3 one without a user name or its keys. Secrets are
 * named by their variables, never shown.
 */
function checkSnmp(instance: InstanceConfig, yaml: ParsedYaml, fail: Fail, problems: ConfigError[]): void {
  const s = instance.Snmp;
  const variable = (name: string) =>
    `${instanceVariablePrefix(instance.id)}_${name} (or ${instanceVariablePrefix(instance.id)}_${name}_FILE)`;
  const at = (...key: string[]) => ["Pdus", instance.id, "Snmp", ...key];
  const where = (path: string[]) => (yaml.has(path) ? path : ["Pdus", instance.id, "Driver"]);
  const version = where(at("Version"));
  if (s.Version === "2c") {
    if (!nonEmpty(s.Community)) {
      problems.push(
        fail(
          at("Community"),
          `Driver is snmp with Version 2c but no read community is set: set ${variable("COMMUNITY")}`,
          version,
        ),
      );
    }
    if (instance.ActionsEnabled && !nonEmpty(s.WriteCommunity)) {
      problems.push(
        fail(
          at("WriteCommunity"),
          `ActionsEnabled is true but no SNMP write community is set: set ${variable("WRITE_COMMUNITY")}`,
          ["Pdus", instance.id, "ActionsEnabled"],
        ),
      );
    }
    return;
  }
  if (!nonEmpty(s.Auth.Username)) {
    problems.push(
      fail(at("Auth", "Username"), "is required with SNMP Version 3 (the USM user name)", version),
    );
  }
  const key = (name: "AuthKey" | "PrivKey", v: string) => {
    const value = s[name];
    if (!nonEmpty(value)) {
      problems.push(fail(at(name), `SNMP Version 3 needs it: set ${variable(v)}`, version));
    } else if ([...(value ?? "")].length < MIN_SNMP_KEY_LENGTH) {
      problems.push(
        fail(at(name), `must be at least ${MIN_SNMP_KEY_LENGTH} characters (${variable(v)})`, version),
      );
    }
  };
  key("AuthKey", "AUTH_KEY");
  if (s.Auth.PrivProtocol !== "none") key("PrivKey", "PRIV_KEY");
}

/** `Cluster` resolved: the member name's default, the secrets from the environment, the CA file's path. */
function resolveCluster(
  section: FileConfig["Cluster"],
  env: Env,
  secrets: { readonly etcd: ClusterConfig["Etcd"]["Credentials"]; readonly clusterSecret: string },
  caFile: (file: string | null) => string | null,
): ClusterConfig {
  return {
    ...section,
    MemberName: section.MemberName ?? defaultMemberName(env),
    Secret: secrets.clusterSecret,
    Etcd: {
      ...section.Etcd,
      CaFile: caFile(section.Etcd.CaFile),
      CertFile: caFile(section.Etcd.CertFile),
      KeyFile: caFile(section.Etcd.KeyFile),
      Credentials: secrets.etcd,
    },
  };
}

/**
 * The rules of `Cluster`: the timing rules of the lease algorithm (docs/cluster.md: a holder gives
 * a lease up before the others may take it, and retries at least once before it gives up), one
 * broker shared by the replicas, the engine's credentials and the advertised URL. A default member
 * name that is not a valid one (a host name with `_`, say) matters only when the cluster is on.
 */
function checkClusterRules(config: Config, fail: Fail, problems: ConfigError[]): void {
  const cluster = config.Cluster;
  if (cluster.Enabled && config.Mqtt.Connection.Host === null) {
    // Replicas share one broker: each one's embedded broker would be its own.
    problems.push(
      fail(
        ["Cluster", "Enabled"],
        "is true, which needs an external MQTT broker shared by the replicas: set Mqtt.Connection.Host (docs/cluster.md)",
      ),
    );
  }
  if (cluster.RenewDeadlineSeconds >= cluster.LeaseDurationSeconds) {
    problems.push(
      fail(
        ["Cluster", "RenewDeadlineSeconds"],
        `must be less than Cluster.LeaseDurationSeconds (${cluster.LeaseDurationSeconds}): a holder gives a lease up before another replica may take it`,
      ),
    );
  }
  if (cluster.RetryPeriodSeconds * 1.2 >= cluster.RenewDeadlineSeconds) {
    problems.push(
      fail(
        ["Cluster", "RetryPeriodSeconds"],
        `times 1.2 must be less than Cluster.RenewDeadlineSeconds (${cluster.RenewDeadlineSeconds}): a holder must be able to retry a renewal before its deadline`,
      ),
    );
  }
  checkClusterNetwork(cluster, fail, problems);
  problems.push(...clusterSecretProblems(config));
  const { CertFile, KeyFile } = cluster.Etcd;
  if ((CertFile === null) !== (KeyFile === null)) {
    const missing = CertFile === null ? "CertFile" : "KeyFile";
    problems.push(
      fail(
        ["Cluster", "Etcd", missing],
        `is required with Cluster.Etcd.${missing === "CertFile" ? "KeyFile" : "CertFile"}: a client certificate needs both its certificate and its key`,
      ),
    );
  }
  if (cluster.Enabled && !new RegExp(MemberNamePattern).test(cluster.MemberName)) {
    problems.push(
      fail(
        ["Cluster", "MemberName"],
        `not set, and the host name ${showValue(cluster.MemberName)} is not a valid member name ` +
          "(lower-case letters, digits, - and ., at most 63, starting and ending with a letter or digit): set Cluster.MemberName",
      ),
    );
  }
}

/** The etcd endpoints without credentials, the peer networks, and an advertised URL within them. */
function checkClusterNetwork(cluster: ClusterConfig, fail: Fail, problems: ConfigError[]): void {
  for (const [i, endpoint] of cluster.Etcd.Endpoints.entries()) {
    // The URL is not repeated: it holds a password.
    if (endpoint.includes("@")) {
      problems.push(
        fail(
          ["Cluster", "Etcd", "Endpoints", String(i)],
          `must not hold credentials (user:password@): set ${ETCD_VARIABLE_PREFIX}_USERNAME and ${ETCD_VARIABLE_PREFIX}_PASSWORD instead`,
          ["Cluster", "Etcd", "Endpoints"],
        ),
      );
    }
  }
  for (const [i, entry] of cluster.PeerNetworks.entries()) {
    const problem = peerNetworkProblem(entry);
    if (problem !== null)
      problems.push(fail(["Cluster", "PeerNetworks", String(i)], problem, ["Cluster", "PeerNetworks"]));
  }
  const advertised = cluster.AdvertiseUrl;
  if (advertised !== null && !peerNetworks(cluster.PeerNetworks).allows(advertised)) {
    problems.push(
      fail(
        ["Cluster", "AdvertiseUrl"],
        `points outside Cluster.PeerNetworks (${cluster.PeerNetworks.join(", ")}): the other replicas would never send it a request; add its network or name to Cluster.PeerNetworks`,
      ),
    );
  }
}

/** Shortest `SERVICE_CLUSTER_SECRET` accepted, in characters. */
export const MIN_CLUSTER_SECRET_LENGTH = 32;

/**
 * The replicas' shared secret: required among several replicas with the REST API on (control and
 * readings sent to any replica are handed to the holder, signed with it), long enough not to be
 * guessed. Without the API nothing is handed between replicas.
 */
function clusterSecretProblems(config: Config): ConfigError[] {
  const { Enabled, Secret } = config.Cluster;
  if (Secret === "" && Enabled && config.Api.Enabled) {
    return [
      new ConfigError(
        CLUSTER_SECRET_VARIABLE,
        `is required with Cluster.Enabled and Api.Enabled: the replicas sign the requests they hand each other with it; set the same secret of at least ${MIN_CLUSTER_SECRET_LENGTH} characters on every replica (openssl rand -hex 32), or ${CLUSTER_SECRET_VARIABLE}_FILE naming a file that holds it`,
      ),
    ];
  }
  if (Secret !== "" && (Secret.length < MIN_CLUSTER_SECRET_LENGTH || /\s/.test(Secret))) {
    return [
      new ConfigError(
        CLUSTER_SECRET_VARIABLE,
        `must be at least ${MIN_CLUSTER_SECRET_LENGTH} characters without spaces (openssl rand -hex 32 makes one)`,
      ),
    ];
  }
  return [];
}

/** Shortest API key accepted, in characters (docs/http.md). */
export const MIN_API_KEY_LENGTH = 16;

/**
 * Why an API key is too weak or cannot be typed reliably, or null. A key is at least
 * {@link MIN_API_KEY_LENGTH} printable ASCII characters (`!` to `~`: no whitespace, no control or
 * invisible characters such as U+200B, no letters outside ASCII that look like others) and not
 * one character repeated. Only the kind of problem is said, never the key.
 */
export function apiKeyProblem(key: string): string | null {
  const characters = [...key];
  const rule =
    `the API key must be at least ${MIN_API_KEY_LENGTH} characters without whitespace, printable ASCII ` +
    "only (! to ~), and not one character repeated";
  const hint = "; generate one, e.g. with `openssl rand -hex 24`";
  if (/\s/u.test(key)) return `${rule} (got ${characters.length} characters with whitespace)${hint}`;
  const outside = characters.find((c) => c < "!" || c > "~");
  if (outside !== undefined) {
    const code = `U+${outside.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
    return `${rule} (got ${code}, which is not printable ASCII)${hint}`;
  }
  if (characters.length < MIN_API_KEY_LENGTH) return `${rule} (got ${characters.length} characters)${hint}`;
  if (new Set(characters).size === 1) {
    return `${rule} (got one character repeated ${characters.length} times)${hint}`;
  }
  return null;
}

/**
 * Secrets that could never work as set: an API key that is guessable or cannot be typed reliably
 * ({@link apiKeyProblem}), and an MQTT password without a user name (MQTT 3.1.1 cannot send it, so
 * the bridge silently never connected). Named where they came from (the variable or the file's
 * key); the value is never repeated.
 */
function checkSecretRules(config: Config, env: Env, fail: Fail, problems: ConfigError[]): void {
  const key = config.Api.ApiKey;
  const problem = key === "" ? null : apiKeyProblem(key);
  if (problem !== null) {
    const variable = [`${API_KEY_VARIABLE}_FILE`, API_KEY_VARIABLE].find((v) => (env[v] ?? "") !== "");
    problems.push(
      variable !== undefined ? new ConfigError(variable, problem) : fail(["Api", "ApiKey"], problem),
    );
  }
  const etcd = config.Cluster.Etcd.Credentials;
  if (nonEmpty(etcd.Password) && !nonEmpty(etcd.Username)) {
    problems.push(
      new ConfigError(
        `${ETCD_VARIABLE_PREFIX}_USERNAME`,
        `is required when ${ETCD_VARIABLE_PREFIX}_PASSWORD is set (etcd authenticates a user name and password)`,
      ),
    );
  }
  const { Username, Password } = config.Mqtt.Credentials;
  if (nonEmpty(Password) && !nonEmpty(Username)) {
    problems.push(
      fail(
        ["Mqtt", "Credentials", "Username"],
        `is required when an MQTT password is set (Mqtt.Credentials.Password or ${MQTT_VARIABLE_PREFIX}_PASSWORD); ` +
          `set it here or with ${MQTT_VARIABLE_PREFIX}_USERNAME`,
        ["Mqtt", "Credentials"],
      ),
    );
  }
}

/**
 * SNMP secrets that would be ignored are refused, naming the key and where the secret came from
 * (never the secret): any of them on an instance without `Driver: snmp`, a community with
 * `Version: 3`, a key with `Version: 2c`, a privacy key with `Auth.PrivProtocol: none`.
 */
function checkSnmpSecretsApply(
  config: Config,
  env: Env,
  yaml: ParsedYaml,
  fail: Fail,
  problems: ConfigError[],
): void {
  for (const instance of config.instances) {
    const s = instance.Snmp;
    const unused = (key: keyof typeof SNMP_SECRET_VARIABLES): string | null => {
      if (instance.Driver !== "snmp") return `Driver is ${instance.Driver}, which uses no SNMP secret`;
      const community = key === "Community" || key === "WriteCommunity";
      if (s.Version === "3" && community)
        return "Version is 3, which authenticates with Auth.Username, AuthKey and PrivKey";
      if (s.Version === "2c" && !community) return "Version is 2c, which uses Community and WriteCommunity";
      if (key === "PrivKey" && s.Auth.PrivProtocol === "none") return "Auth.PrivProtocol is none";
      return null;
    };
    for (const key of Object.keys(SNMP_SECRET_VARIABLES) as (keyof typeof SNMP_SECRET_VARIABLES)[]) {
      const path = ["Pdus", instance.id, "Snmp", key];
      const source = snmpSecretSource(env, instance.id, key, yaml.has(path) ? s[key] : null);
      const why = source === null ? null : unused(key);
      if (why === null) continue;
      const line = yaml.has(path) ? path : ["Pdus", instance.id];
      problems.push(fail(path, `is set (${source}) but ${why}: it would be ignored; remove it`, line));
    }
  }
}

/**
 * Hosts are a host name or an IP address only: a URL, a port or a path written into `Host` passed
 * the schema and failed at run time (`Invalid URL`), so each is refused here with where it goes.
 */
function checkHosts(config: Config, fail: Fail, problems: ConfigError[]): void {
  for (const instance of config.instances) {
    const at = ["Pdus", instance.id, "Connection"];
    const problem = hostProblem(instance.Connection.Host, {
      scheme: `${at.join(".")}.Scheme (http or https)`,
      port: `${at.join(".")}.Port`,
      path: "the bridge asks for the PDU's API paths itself",
      brackets: true,
    });
    if (problem !== null) problems.push(fail([...at, "Host"], problem));
  }
  const host = config.Mqtt.Connection.Host;
  const problem =
    host === null
      ? null
      : hostProblem(host, {
          scheme: "Mqtt.Connection.Scheme (mqtt, mqtts, ws or wss)",
          port: "Mqtt.Connection.Port",
          path: "a broker is named by its host and port only",
          brackets: false,
        });
  if (problem !== null) problems.push(fail(["Mqtt", "Connection", "Host"], problem));
}

interface HostKeys {
  /** Where a scheme goes, e.g. `Pdus.x.Connection.Scheme (http or https)`. */
  readonly scheme: string;
  /** Where a port goes. */
  readonly port: string;
  /** Why no path is needed. */
  readonly path: string;
  /** Whether an IPv6 address may be written in brackets (`[fd00::5]`). */
  readonly brackets: boolean;
}

const portAdvice = (port: string, keys: HostKeys): string =>
  port === "" ? `a port goes in ${keys.port}` : `the port (${port}) goes in ${keys.port}`;

/** Why `host` is not a host name or an IP address alone, saying where its other parts go; or null. */
export function hostProblem(host: string, keys: HostKeys): string | null {
  const shown = showValue(host);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(host);
  if (scheme !== null) {
    let parts: { host: string; port: string; path: string } | null = null;
    try {
      const url = new URL(host);
      parts = { host: url.hostname, port: url.port, path: url.pathname === "/" ? "" : url.pathname };
    } catch {
      // named below without its parts
    }
    const advice = [
      `the scheme (${scheme[1]!.toLowerCase()}) goes in ${keys.scheme}`,
      ...(parts !== null && parts.port !== "" ? [`the port (${parts.port}) in ${keys.port}`] : []),
      ...(parts !== null && parts.path !== "" ? [`and no path (${keys.path})`] : []),
    ];
    const alone = parts !== null && parts.host !== "" ? ` (${parts.host})` : "";
    return `must be a host name or an IP address alone${alone}, not a URL (got ${shown}): ${advice.join(", ")}`;
  }
  if (/[\s@?#\\]/u.test(host)) return `must be a host name or an IP address (got ${shown})`;
  const slash = host.indexOf("/");
  if (slash >= 0) {
    return `must be a host name or an IP address without a path (got ${shown}): write ${showValue(host.slice(0, slash))}; ${keys.path}`;
  }
  const bracketed = /^\[([^\]]*)\](?::(\d*))?$/.exec(host);
  if (bracketed !== null) {
    const inner = bracketed[1]!;
    if (isIP(inner) !== 6) return `must be a host name or an IP address (got ${shown})`;
    if (bracketed[2] !== undefined) {
      const written = keys.brackets ? `[${inner}]` : inner;
      return `must be a host name or an IP address without a port (got ${shown}): write ${written}; ${portAdvice(bracketed[2], keys)}`;
    }
    return keys.brackets
      ? null
      : `must be an IPv6 address without brackets here (got ${shown}): write ${inner}`;
  }
  if (isIP(host) !== 0) return null;
  const port = /^([^:]+):(\d*)$/.exec(host);
  if (port !== null) {
    return `must be a host name or an IP address without a port (got ${shown}): write ${port[1]}; ${portAdvice(port[2]!, keys)}`;
  }
  if (host.includes(":") || !URL.canParse(`http://${host}/`)) {
    return `must be a host name or an IP address (got ${shown})`;
  }
  return null;
}

async function checkCaFiles(config: Config, fail: Fail, problems: ConfigError[]): Promise<void> {
  const files: [KeyPath, string | null][] = [
    [["Mqtt", "Connection", "CaFile"], config.Mqtt.Connection.CaFile],
    [["Api", "Oidc", "CaFile"], config.Api.Oidc.CaFile],
    [["Cluster", "Etcd", "CaFile"], config.Cluster.Etcd.CaFile],
    [["Cluster", "Etcd", "CertFile"], config.Cluster.Etcd.CertFile],
    [["Cluster", "Etcd", "KeyFile"], config.Cluster.Etcd.KeyFile],
    ...config.instances.map((i): [KeyPath, string | null] => [
      ["Pdus", i.id, "Connection", "CaFile"],
      i.Connection.CaFile,
    ]),
  ];
  for (const [path, file] of files) {
    if (file === null) continue;
    try {
      await readFile(file);
    } catch (cause) {
      problems.push(fail(path, `cannot read ${file} (${ioReason(cause)})`));
    }
  }
}
