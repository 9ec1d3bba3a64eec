/**
 * The rules of the REST API's sign-in and HTTPS keys (`Api.PublicUrl`, `Api.Tls`, `Api.Oidc`) that
 * span keys or need files: checked by the loader after the schema, each failure a ConfigError naming
 * the key (exit 2).
 */
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { resolve } from "node:path";
import { createSecureContext } from "node:tls";
import type { KeyPath } from "./document.js";
import { ConfigError as ConfigErrorClass, type ConfigError } from "./errors.js";
import type { Config, FileConfig } from "./schema.js";
import { ioReason } from "./secrets.js";
import { showValue } from "./validate.js";

export { OIDC_SECRET_VARIABLE } from "./secrets.js";

type Fail = (path: KeyPath, problem: string, linePath?: KeyPath) => ConfigError;

/** `Api` with its file paths resolved against `baseDir` and the client secret (environment, else file). */
export function resolveApiSection(api: FileConfig["Api"], baseDir: string, clientSecret: string | null) {
  const path = (file: string | null) => (file === null ? null : resolve(baseDir, file));
  return {
    ...api,
    PublicUrl: api.PublicUrl === null ? null : api.PublicUrl.replace(/\/+$/, ""),
    Tls: { CertFile: path(api.Tls.CertFile), KeyFile: path(api.Tls.KeyFile) },
    Oidc: { ...api.Oidc, ClientSecret: clientSecret, CaFile: path(api.Oidc.CaFile) },
  };
}

/** Loopback host names and addresses, the only ones an issuer may be reached at over plain HTTP. */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, "");
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  return bare === "::1";
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** The rules between keys of `Api.PublicUrl`, `Api.Tls` and `Api.Oidc` (no file is read here); every problem. */
export function checkApiAuthRules(config: Config, fail: Fail, problems: ConfigError[]): void {
  const api = config.Api;
  if (api.PublicUrl !== null) {
    const url = parseUrl(api.PublicUrl);
    const problem =
      url === null || (url.protocol !== "https:" && url.protocol !== "http:")
        ? "must be an http or https URL"
        : url.username !== "" || url.password !== ""
          ? "must not contain a user name or password"
          : url.pathname !== "/" || url.search !== "" || url.hash !== ""
            ? "must be an origin only (scheme, host and port, no path): the console and the API are served at the root"
            : null;
    if (problem !== null)
      problems.push(fail(["Api", "PublicUrl"], `${problem} (got ${showValue(api.PublicUrl)})`));
  }
  const { CertFile, KeyFile } = api.Tls;
  if ((CertFile === null) !== (KeyFile === null)) {
    const missing = CertFile === null ? "CertFile" : "KeyFile";
    problems.push(
      fail(
        ["Api", "Tls", missing],
        "is required with the other of Api.Tls.CertFile and Api.Tls.KeyFile (HTTPS needs both)",
        ["Api", "Tls"],
      ),
    );
  }
  const oidc = api.Oidc;
  if (!oidc.Enabled) {
    if (oidc.ProtectReads) {
      problems.push(
        fail(
          ["Api", "Oidc", "ProtectReads"],
          "needs Api.Oidc.Enabled: true (the console reads through a session; machines keep the API key)",
        ),
      );
    }
    return;
  }
  const issuer = issuerProblem(oidc.Issuer);
  if (issuer !== null) problems.push(fail(["Api", "Oidc", "Issuer"], issuer));
  if (!oidc.Scopes.includes("openid")) {
    problems.push(fail(["Api", "Oidc", "Scopes"], `must include openid (got ${oidc.Scopes.join(", ")})`));
  }
  if (oidc.Roles.Viewer.length === 0 && oidc.Roles.Operator.length === 0) {
    problems.push(
      fail(
        ["Api", "Oidc", "Roles"],
        "lists no group or role in Viewer or Operator, so nobody could use the console",
      ),
    );
  }
  if (oidc.Sessions.IdleTimeout > oidc.Sessions.AbsoluteTimeout) {
    problems.push(
      fail(
        ["Api", "Oidc", "Sessions", "IdleTimeout"],
        `must not be longer than Api.Oidc.Sessions.AbsoluteTimeout (${oidc.Sessions.AbsoluteTimeout})`,
      ),
    );
  }
  if (api.PublicUrl === null) {
    problems.push(
      fail(
        ["Api", "PublicUrl"],
        "is required when Api.Oidc.Enabled is true: the sign-in's redirect URI and the origin a console change must come from are built from it, never from a request's Host header; set it to the origin browsers use (https://pdu.example.com)",
        ["Api", "Oidc", "Enabled"],
      ),
    );
  }
}

/** Why `Api.Oidc.Issuer` cannot be used to sign in, or null. */
function issuerProblem(value: string | null): string | null {
  if (value === null || value === "") return "is required when Api.Oidc.Enabled is true";
  const issuer = parseUrl(value);
  if (issuer === null || (issuer.protocol !== "https:" && issuer.protocol !== "http:")) {
    return `must be an https URL (got ${showValue(value)})`;
  }
  if (issuer.protocol === "http:" && !isLoopbackHost(issuer.hostname)) {
    return `must be an https URL: tokens are fetched from it (plain http is accepted for a loopback provider only; got ${showValue(value)})`;
  }
  if (issuer.search !== "" || issuer.hash !== "" || issuer.username !== "" || issuer.password !== "") {
    return `must have no query, fragment or credentials (got ${showValue(value)})`;
  }
  return null;
}

/** The certificate and key of `Api.Tls` (PEM text), or null when HTTPS is off. */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/** Reads `Api.Tls` and checks that the key belongs to the certificate; failures name the key. */
export async function readApiTls(config: Config, fail: Fail): Promise<TlsFiles | null> {
  const { CertFile, KeyFile } = config.Api.Tls;
  if (CertFile === null || KeyFile === null) return null;
  const read = async (file: string, key: "CertFile" | "KeyFile"): Promise<string | ConfigError> => {
    try {
      return await readFile(file, "utf8");
    } catch (cause) {
      return fail(["Api", "Tls", key], `cannot read ${file} (${ioReason(cause)})`);
    }
  };
  const [cert, key] = [await read(CertFile, "CertFile"), await read(KeyFile, "KeyFile")];
  if (typeof cert !== "string" || typeof key !== "string") {
    throw ConfigErrorClass.all([cert, key].filter((r): r is ConfigError => typeof r !== "string"));
  }
  const files = { cert, key };
  try {
    createSecureContext(files);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const keyProblem = /key|decoder|PEM/i.test(reason) && !/certificate/i.test(reason);
    throw fail(
      ["Api", "Tls", keyProblem ? "KeyFile" : "CertFile"],
      `is not a usable PEM certificate and private key pair (${reason})`,
    );
  }
  return files;
}

/** `Api.Tls` read for the listener at start (the loader checked it already; a file may have changed since). */
export function apiTlsFiles(config: Config): Promise<TlsFiles | null> {
  return readApiTls(config, (path, problem) => new ConfigErrorClass(path.join("."), problem));
}
