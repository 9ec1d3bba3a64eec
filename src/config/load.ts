/**
 * Loading the configuration: find the file, parse the YAML, reject unknown keys, apply defaults,
 * validate with the schema, merge secrets from the environment, infer ports and schemes, and check
 * the rules that span keys. Every problem is a {@link ConfigError} naming the key, file and line.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { dirname, resolve } from "node:path";
import { Value } from "typebox/value";
import { ratingKeyProblem } from "../pdu/load.js";
import { overrideProblem } from "../pdu/overrides.js";
import {
  checkApiAuthRules,
  checkOidcSecretInFile,
  OIDC_SECRET_VARIABLE,
  readApiTls,
  resolveApiSection,
} from "./oidc.js";
import { parseYaml, type KeyPath, type ParsedYaml } from "./document.js";
import { ConfigError } from "./errors.js";
import {
  ConfigSchema,
  InstanceIdPattern,
  PduSchema,
  type Config,
  type InstanceConfig,
  type MqttConfig,
  type MqttScheme,
  type PduScheme,
} from "./schema.js";
import {
  API_KEY_VARIABLE,
  instanceVariableId,
  instanceVariablePrefix,
  ioReason,
  mergeSecrets,
  MQTT_VARIABLE_PREFIX,
  readSecret,
  PDU_VARIABLE_PREFIX,
  secretInConfigMap,
  type Env,
} from "./secrets.js";
import {
  asSchemaNode,
  describeFirstError,
  findUnknownKey,
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
  const schema = asSchemaNode(ConfigSchema);
  nullSectionsToEmpty(schema, data);

  const unknown = findUnknownKey(schema, data, (path) => yaml.keysOf(path));
  if (unknown !== undefined) throw fail(unknown.path, unknown.problem);

  const ids = checkInstanceIds(data, yaml, fail);

  Value.Default(ConfigSchema, data);
  // typebox leaves the values of a record alone, so each instance gets its defaults here.
  for (const id of ids) Value.Default(PduSchema, (data.Pdus as Record<string, unknown>)[id]);

  const problem = describeFirstError(schema, data, Value.Errors(ConfigSchema, data));
  if (problem !== undefined) throw fail(problem.path, problem.problem);
  if (!Value.Check(ConfigSchema, data)) throw new ConfigError("", "invalid configuration", { file: origin });
  checkOidcSecretInFile(data, fail);

  if (options.source === "kubernetes") {
    const secret = secretInConfigMap(data, ids);
    if (secret !== undefined) throw fail(secret.path, secret.problem);
  }
  const secrets = await mergeSecrets(data, ids, env);
  const clientSecret = (await readSecret(env, OIDC_SECRET_VARIABLE)) ?? null;
  const baseDir = options.baseDir ?? process.cwd();
  const caFile = (file: string | null) => (file === null ? null : resolve(baseDir, file));

  const primaryId = ids.includes("default") ? "default" : ids[0];
  const instances = ids.map((id): InstanceConfig => {
    const pdu = data.Pdus[id]!;
    const scheme: PduScheme = pdu.Connection.Scheme ?? (pdu.Connection.Port === 443 ? "https" : "http");
    return {
      id,
      primary: id === primaryId,
      ...pdu,
      Connection: {
        ...pdu.Connection,
        Port: pdu.Connection.Port ?? (scheme === "https" ? 443 : 80),
        Scheme: scheme,
        CaFile: caFile(pdu.Connection.CaFile),
      },
      Credentials: secrets.pdus.get(id) ?? { Username: null, Password: null },
    };
  });

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

  const { Pdus: _pdus, Mqtt: _mqtt, ...sections } = data;
  const config: Config = {
    ...sections,
    Mqtt: mqtt,
    Api: resolveApiSection({ ...data.Api, ApiKey: secrets.apiKey }, baseDir, clientSecret),
    instances,
    origin,
  };
  for (const instance of instances) {
    const bad = overrideProblem(instance);
    if (bad !== undefined) throw fail([...bad.path], bad.problem);
    for (const key of Object.keys(instance.Ratings.Entities ?? {})) {
      const problem = ratingKeyProblem(key);
      if (problem !== null) throw fail(["Pdus", instance.id, "Ratings", "Entities", key], problem);
    }
  }
  checkCrossFieldRules(config, yaml, fail);
  checkApiAuthRules(config, fail);
  checkSecretRules(config, env, fail);
  await checkCaFiles(config, fail);
  await readApiTls(config, fail);
  return config;
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

/** The instance ids in file order, after checking there is one and that they are valid and distinct. */
function checkInstanceIds(data: Record<string, unknown>, yaml: ParsedYaml, fail: Fail): string[] {
  const pdus = data.Pdus;
  if (pdus === undefined || (isPlainObject(pdus) && Object.keys(pdus).length === 0)) {
    throw fail(["Pdus"], "at least one PDU instance is required");
  }
  if (!isPlainObject(pdus)) return []; // the schema reports the wrong type
  const ids = orderedKeys(pdus, yaml.keysOf(["Pdus"]));
  const pattern = new RegExp(InstanceIdPattern);
  const seen = new Map<string, string>();
  for (const id of ids) {
    if (!pattern.test(id)) {
      throw fail(["Pdus", id], `instance ids are 1-64 characters of A-Za-z0-9_- (got ${JSON.stringify(id)})`);
    }
    const variableId = instanceVariableId(id);
    const other = seen.get(variableId);
    if (other !== undefined) {
      throw fail(
        ["Pdus", id],
        `instance id collides with \`${other}\`: ids must differ in more than case and - versus _ ` +
          `(both would read ${PDU_VARIABLE_PREFIX}_${variableId}_* and ?instance= ignores case)`,
      );
    }
    seen.set(variableId, id);
  }
  return ids;
}

function checkCrossFieldRules(config: Config, yaml: ParsedYaml, fail: Fail): void {
  const embedded = config.Mqtt.Connection.Host === null;
  const healthPaths = ["/healthz", "/readyz", "/health/integrations"];
  if (config.Metrics.Enabled && healthPaths.includes(config.Metrics.Path)) {
    throw fail(["Metrics", "Path"], `${config.Metrics.Path} is a health endpoint; choose another path`);
  }

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
      throw fail(
        named.path,
        `port ${named.port} is also used by ${other.path.join(".")}; each listener needs its own port`,
      );
    }
  }

  for (const [i, address] of config.Api.TrustedProxies.entries()) {
    if (isIP(address) === 0) {
      throw fail(
        ["Api", "TrustedProxies", String(i)],
        `must be an IP address written out, like 10.0.0.5 or fd00::5 (got ${showValue(address)}); names and ranges are not accepted`,
        ["Api", "TrustedProxies"],
      );
    }
  }

  if (config.Http.HeadersTimeout > config.Http.RequestTimeout) {
    throw fail(
      ["Http", "HeadersTimeout"],
      `must not be longer than Http.RequestTimeout (${config.Http.RequestTimeout}): the headers are part of the request`,
    );
  }

  if (config.Alarms.CriticalPercent <= config.Alarms.WarnPercent) {
    const [named, other] = yaml.has(["Alarms", "CriticalPercent"])
      ? (["CriticalPercent", "WarnPercent"] as const)
      : (["WarnPercent", "CriticalPercent"] as const);
    throw fail(
      ["Alarms", named],
      `must be ${named === "CriticalPercent" ? "above" : "below"} Alarms.${other} (${config.Alarms[other]}): critical is the higher line`,
    );
  }

  if (embedded && config.Mqtt.Connection.ProtocolVersion === 5) {
    throw fail(
      ["Mqtt", "Connection", "ProtocolVersion"],
      "5 needs an external broker: the embedded broker (used because Mqtt.Connection.Host is not set) " +
        "speaks MQTT 3.1.1 only; use 4 or set Mqtt.Connection.Host",
    );
  }

  for (const instance of config.instances) {
    const { Username, Password } = instance.Credentials;
    if (!instance.ActionsEnabled || (nonEmpty(Username) && nonEmpty(Password))) continue;
    const path = ["Pdus", instance.id, "Credentials"];
    const variables = `${instanceVariablePrefix(instance.id)}_USERNAME/_PASSWORD or ${PDU_VARIABLE_PREFIX}_USERNAME/_PASSWORD`;
    throw fail(
      path,
      `ActionsEnabled is true but Username and Password are not both set (set them here or with ${variables})`,
      yaml.has(path) ? path : ["Pdus", instance.id, "ActionsEnabled"],
    );
  }
}

const nonEmpty = (value: string | null): boolean => value !== null && value !== "";

/** Shortest API key accepted, in characters (contract §7). */
export const MIN_API_KEY_LENGTH = 16;

/**
 * Secrets that could never work as set (issue 14, item 11): an API key that is short enough to
 * guess or holds whitespace (a key of " " can never be sent), and an MQTT password without a user
 * name (MQTT 3.1.1 cannot send it, so the bridge silently never connected). Named where they came
 * from (the variable or the file's key); the value is never repeated.
 */
function checkSecretRules(config: Config, env: Env, fail: Fail): void {
  const key = config.Api.ApiKey;
  if (key !== "" && ([...key].length < MIN_API_KEY_LENGTH || /\s/u.test(key))) {
    const problem =
      `the API key must be at least ${MIN_API_KEY_LENGTH} characters without whitespace ` +
      `(got ${[...key].length} characters${/\s/u.test(key) ? " with whitespace" : ""}); ` +
      "generate one, e.g. with `openssl rand -hex 24`";
    const variable = [`${API_KEY_VARIABLE}_FILE`, API_KEY_VARIABLE].find((v) => (env[v] ?? "") !== "");
    if (variable !== undefined) throw new ConfigError(variable, problem);
    throw fail(["Api", "ApiKey"], problem);
  }
  const { Username, Password } = config.Mqtt.Credentials;
  if (nonEmpty(Password) && !nonEmpty(Username)) {
    throw fail(
      ["Mqtt", "Credentials", "Username"],
      `is required when an MQTT password is set (Mqtt.Credentials.Password or ${MQTT_VARIABLE_PREFIX}_PASSWORD); ` +
        `set it here or with ${MQTT_VARIABLE_PREFIX}_USERNAME`,
      ["Mqtt", "Credentials"],
    );
  }
}

async function checkCaFiles(config: Config, fail: Fail): Promise<void> {
  const files: [KeyPath, string | null][] = [
    [["Mqtt", "Connection", "CaFile"], config.Mqtt.Connection.CaFile],
    [["Api", "Oidc", "CaFile"], config.Api.Oidc.CaFile],
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
      throw fail(path, `cannot read ${file} (${ioReason(cause)})`);
    }
  }
}
