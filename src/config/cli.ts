/**
 * `pdu-bridge check-config [--config FILE]`: validates the file and the environment and prints the
 * effective configuration with secrets masked (read from the ConfigMap when
 * SERVICE_CONFIG_SOURCE=kubernetes and no --config is given), ending with a YAML comment line that
 * says the configuration is valid (so stdout stays YAML). Exit codes: 0 valid, 2 configuration
 * error (every problem on stderr, one line each), 1 anything else.
 *
 * Overrides: check-config does not contact any PDU, so it checks their structure (the schema, safe
 * keys and names: errors) and settings that have no effect as written (warnings on stderr, exit 0);
 * whether the device ids, outlet indexes, entity and group keys exist is warned about by the
 * service after each instance's first poll.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "./errors.js";
import { configSource, loadKubernetesConfig } from "./kubernetes/source.js";
import { loadConfigFile, resolveConfigPath, type Env } from "./load.js";
import { effectiveConfigYaml } from "./mask.js";
import { hasOverrides, overrideNotes } from "./overrides.js";
import type { Config } from "./schema.js";

export const CHECK_CONFIG_USAGE = "usage: pdu-bridge check-config [--config FILE]";

/** `argv` is what follows `check-config`; `out` and `err` receive whole lines, newline included. */
export async function runCheckConfig(
  argv: string[],
  env: Env,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<number> {
  let configArg: string | undefined;
  try {
    const { values } = parseArgs({
      args: argv,
      options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    if (values.help === true) {
      out(`${CHECK_CONFIG_USAGE}\n`);
      return 0;
    }
    configArg = values.config;
  } catch (error) {
    err(
      `pdu-bridge check-config: ${error instanceof Error ? error.message : String(error)}\n${CHECK_CONFIG_USAGE}\n`,
    );
    return 2;
  }

  try {
    // Without --config, check what the service itself would run with: in ConfigMap mode, the ConfigMap.
    const config =
      configArg === undefined && configSource(env) === "kubernetes"
        ? (await loadKubernetesConfig(env)).config
        : await loadConfigFile(resolveConfigPath(configArg, env), env);
    out(effectiveConfigYaml(config));
    const warnings = overrideWarnings(config);
    for (const line of warnings) err(`warning: ${line}\n`);
    out(`${validLine(config, warnings.length)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      err(`${error.message}\n`);
      return 2;
    }
    err(`pdu-bridge check-config: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/** The last line of a valid configuration's output: `# /etc/pdu-bridge/config.yaml is valid (2 PDU instances)`. */
export function validLine(config: Config, warnings: number): string {
  const n = config.instances.length;
  const note = warnings === 0 ? "" : `; ${warnings} warning${warnings === 1 ? "" : "s"} on stderr`;
  return `# ${config.origin} is valid (${n} PDU instance${n === 1 ? "" : "s"}${note})`;
}

/** Warnings about overrides that check-config can give without polling (see the note above). */
function overrideWarnings(config: Config): string[] {
  const lines = config.instances.flatMap((instance) => overrideNotes(instance));
  const ids = config.instances.filter((instance) => hasOverrides(instance)).map((i) => i.id);
  if (ids.length > 0) {
    lines.push(
      `overrides of ${ids.join(", ")}: device ids, outlet indexes, entity and group keys are not checked here (check-config does not contact PDUs); the service warns about unknown ones after each instance's first poll`,
    );
  }
  return lines;
}
