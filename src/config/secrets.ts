/**
 * Secrets from the environment (docs/configuration.md, Secrets): each variable has a `<NAME>_FILE` form naming a file
 * that holds the value. Precedence: `<NAME>_FILE`, then `<NAME>`, then the configuration file.
 * An empty variable counts as unset; a `_FILE` that cannot be read is an error, never ignored.
 */
import { readFile } from "node:fs/promises";
import { ConfigError } from "./errors.js";
import type { FileConfig } from "./schema.js";
import type { Problem } from "./validate.js";

export type Env = Readonly<Record<string, string | undefined>>;

export interface Credentials {
  Username: string | null;
  Password: string | null;
}

/**
 * Where each credential of an instance came from, for messages that say what to fix: a variable
 * (`SERVICE_PDU_RACK_A_PASSWORD`, `…_FILE`, `SERVICE_PDU_PASSWORD`) or the file's key
 * (`Pdus.rack-a.Credentials.Password`); null when not set.
 */
export interface CredentialSources {
  readonly Username: string | null;
  readonly Password: string | null;
}

export const API_KEY_VARIABLE = "SERVICE_API_KEY";
export const MQTT_VARIABLE_PREFIX = "SERVICE_MQTT";
export const PDU_VARIABLE_PREFIX = "SERVICE_PDU";
/** The etcd backend's credentials (Cluster.Etcd); there are no keys for them in the file. */
export const ETCD_VARIABLE_PREFIX = "SERVICE_ETCD";
/** The console sign-in's client secret (`Api.Oidc.ClientSecret`). */
export const OIDC_SECRET_VARIABLE = "SERVICE_OIDC_CLIENT_SECRET";
/** The secret the replicas sign their requests to each other with (Cluster); never in the file. */
export const CLUSTER_SECRET_VARIABLE = "SERVICE_CLUSTER_SECRET";

/** An instance id as it appears in variable names: upper-cased, `-` as `_` (`rack-a` → `RACK_A`). */
export const instanceVariableId = (id: string): string => id.toUpperCase().replaceAll("-", "_");

/** `SERVICE_PDU_RACK_A` for instance `rack-a`; append `_USERNAME` or `_PASSWORD`. */
export const instanceVariablePrefix = (id: string): string =>
  `${PDU_VARIABLE_PREFIX}_${instanceVariableId(id)}`;

/**
 * The value of secret `name`: from the file `<name>_FILE` names, else `<name>`; undefined when
 * neither is set. A file that cannot be read is a {@link ConfigError}, thrown, or added to
 * `problems` when given (the value is then undefined).
 */
export async function readSecret(
  env: Env,
  name: string,
  problems?: ConfigError[],
): Promise<string | undefined> {
  return (await readSecretFrom(env, name, problems))?.value;
}

/** {@link readSecret}, with the variable the value came from. */
async function readSecretFrom(
  env: Env,
  name: string,
  problems?: ConfigError[],
): Promise<{ value: string; from: string } | undefined> {
  const fileVariable = `${name}_FILE`;
  const path = env[fileVariable];
  if (path !== undefined && path !== "") {
    try {
      return { value: (await readFile(path, "utf8")).replace(/[\r\n]+$/, ""), from: fileVariable };
    } catch (cause) {
      const problem = new ConfigError(fileVariable, `cannot read ${path} (${ioReason(cause)})`);
      if (problems === undefined) throw problem;
      problems.push(problem);
      return undefined;
    }
  }
  const plain = env[name];
  return plain === undefined || plain === "" ? undefined : { value: plain, from: name };
}

export function ioReason(cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code;
  const reasons: Record<string, string> = {
    ENOENT: "no such file",
    EACCES: "permission denied",
    EISDIR: "it is a directory",
    ENOTDIR: "a parent is not a directory",
  };
  if (typeof code === "string") return reasons[code] ?? code;
  return cause instanceof Error ? cause.message : String(cause);
}

const nonEmpty = (value: string | null | undefined): string | undefined =>
  value === null || value === undefined || value === "" ? undefined : value;

/** An instance's SNMP secrets: from `SERVICE_PDU_<ID>_*` (and `_FILE`), else the file's `Pdus.<id>.Snmp`. */
export interface SnmpSecrets {
  Community: string | null;
  WriteCommunity: string | null;
  AuthKey: string | null;
  PrivKey: string | null;
}

/** Config key → the variable suffix after `SERVICE_PDU_<ID>_`. */
export const SNMP_SECRET_VARIABLES: Readonly<Record<keyof SnmpSecrets, string>> = {
  Community: "COMMUNITY",
  WriteCommunity: "WRITE_COMMUNITY",
  AuthKey: "AUTH_KEY",
  PrivKey: "PRIV_KEY",
};

export interface MergedSecrets {
  readonly apiKey: string;
  readonly mqtt: Credentials;
  /** By instance id. */
  readonly pdus: ReadonlyMap<string, Credentials>;
  /** Where each PDU credential came from, by instance id. */
  readonly pduSources: ReadonlyMap<string, CredentialSources>;
  /** By instance id, for every instance (a Geist one's are refused by the loader's rules). */
  readonly snmp: ReadonlyMap<string, SnmpSecrets>;
  /** Only from the environment. */
  readonly etcd: Credentials;
  /** {@link CLUSTER_SECRET_VARIABLE}, "" when not set. */
  readonly clusterSecret: string;
  /** Every `_FILE` variable whose file cannot be read (its secret is taken as not set). */
  readonly problems: readonly ConfigError[];
}

/**
 * Where an instance's SNMP secret comes from, for messages that never show it: its variable (the
 * `_FILE` form first) when set, else the file's key when the file sets it; null when neither.
 */
export function snmpSecretSource(
  env: Env,
  id: string,
  key: keyof SnmpSecrets,
  inFile: string | null | undefined,
): string | null {
  const name = `${instanceVariablePrefix(id)}_${SNMP_SECRET_VARIABLES[key]}`;
  const variable = [`${name}_FILE`, name].find((v) => (env[v] ?? "") !== "");
  if (variable !== undefined) return variable;
  return nonEmpty(inFile) === undefined ? null : `Pdus.${id}.Snmp.${key} in the file`;
}

/**
 * The secrets the service runs with. A PDU field comes from `SERVICE_PDU_<ID>_*`, else the file,
 * else `SERVICE_PDU_*` (the global pair fills whatever an instance leaves unset).
 */
export async function mergeSecrets(
  file: FileConfig,
  ids: readonly string[],
  env: Env,
): Promise<MergedSecrets> {
  // Read every variable up front so a broken _FILE is reported even where another value wins.
  const problems: ConfigError[] = [];
  const secret = (name: string) => readSecret(env, name, problems);
  const secretFrom = (name: string) => readSecretFrom(env, name, problems);
  const apiKey = await secret(API_KEY_VARIABLE);
  const mqttUsername = await secret(`${MQTT_VARIABLE_PREFIX}_USERNAME`);
  const mqttPassword = await secret(`${MQTT_VARIABLE_PREFIX}_PASSWORD`);
  const pduUsername = await secretFrom(`${PDU_VARIABLE_PREFIX}_USERNAME`);
  const pduPassword = await secretFrom(`${PDU_VARIABLE_PREFIX}_PASSWORD`);
  const etcdUsername = await secret(`${ETCD_VARIABLE_PREFIX}_USERNAME`);
  const etcdPassword = await secret(`${ETCD_VARIABLE_PREFIX}_PASSWORD`);
  const clusterSecret = (await secret(CLUSTER_SECRET_VARIABLE)) ?? "";

  const pdus = new Map<string, Credentials>();
  const pduSources = new Map<string, CredentialSources>();
  const snmp = new Map<string, SnmpSecrets>();
  for (const id of ids) {
    const own = instanceVariablePrefix(id);
    const fileSnmp = file.Pdus[id]?.Snmp;
    const read = async (key: keyof SnmpSecrets) =>
      (await secret(`${own}_${SNMP_SECRET_VARIABLES[key]}`)) ?? nonEmpty(fileSnmp?.[key]) ?? null;
    snmp.set(id, {
      Community: await read("Community"),
      WriteCommunity: await read("WriteCommunity"),
      AuthKey: await read("AuthKey"),
      PrivKey: await read("PrivKey"),
    });
    const fromFile = file.Pdus[id]?.Credentials;
    const inFile = (field: "Username" | "Password") => {
      const value = nonEmpty(fromFile?.[field]);
      return value === undefined ? undefined : { value, from: `Pdus.${id}.Credentials.${field}` };
    };
    const username = (await secretFrom(`${own}_USERNAME`)) ?? inFile("Username") ?? pduUsername;
    const password = (await secretFrom(`${own}_PASSWORD`)) ?? inFile("Password") ?? pduPassword;
    pdus.set(id, { Username: username?.value ?? null, Password: password?.value ?? null });
    pduSources.set(id, { Username: username?.from ?? null, Password: password?.from ?? null });
  }
  return {
    pduSources,
    apiKey: apiKey ?? file.Api.ApiKey,
    mqtt: {
      Username: mqttUsername ?? nonEmpty(file.Mqtt.Credentials.Username) ?? null,
      Password: mqttPassword ?? nonEmpty(file.Mqtt.Credentials.Password) ?? null,
    },
    pdus,
    snmp,
    etcd: { Username: etcdUsername ?? null, Password: etcdPassword ?? null },
    clusterSecret,
    problems,
  };
}

/**
 * For a ConfigMap: every secret written in the text itself (they belong in a Kubernetes Secret). A
 * configuration file may hold any secret (the environment wins); a ConfigMap none.
 */
export function secretsInConfigMap(file: FileConfig, ids: readonly string[]): Problem[] {
  const refuse = (path: string[], variables: string) => ({
    path,
    problem: `secrets do not belong in ConfigMaps; set ${variables}`,
  });
  const found: Problem[] = [];
  if (file.Api.ApiKey !== "") {
    found.push(refuse(["Api", "ApiKey"], `${API_KEY_VARIABLE} or ${API_KEY_VARIABLE}_FILE`));
  }
  if (nonEmpty(file.Mqtt.Credentials.Password) !== undefined) {
    const name = `${MQTT_VARIABLE_PREFIX}_PASSWORD`;
    found.push(refuse(["Mqtt", "Credentials", "Password"], `${name} or ${name}_FILE`));
  }
  if (nonEmpty(file.Api.Oidc.ClientSecret) !== undefined) {
    found.push(
      refuse(["Api", "Oidc", "ClientSecret"], `${OIDC_SECRET_VARIABLE} or ${OIDC_SECRET_VARIABLE}_FILE`),
    );
  }
  for (const id of ids) {
    if (nonEmpty(file.Pdus[id]?.Credentials.Password) !== undefined) {
      const name = `${instanceVariablePrefix(id)}_PASSWORD`;
      found.push(
        refuse(
          ["Pdus", id, "Credentials", "Password"],
          `${name} or ${name}_FILE (or ${PDU_VARIABLE_PREFIX}_PASSWORD for every instance)`,
        ),
      );
    }
    for (const [key, variable] of Object.entries(SNMP_SECRET_VARIABLES)) {
      if (nonEmpty(file.Pdus[id]?.Snmp[key as keyof SnmpSecrets]) === undefined) continue;
      const name = `${instanceVariablePrefix(id)}_${variable}`;
      found.push(refuse(["Pdus", id, "Snmp", key], `${name} or ${name}_FILE`));
    }
  }
  return found;
}
