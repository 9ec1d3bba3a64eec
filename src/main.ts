#!/usr/bin/env node
/**
 * The command line: `pdu-bridge [run] --config F`, `check-config`, `simulate`, `demo`.
 * Exit codes: 0 clean stop, 2 configuration error (one message, no stack), 1 anything else fatal.
 */
import { parseArgs } from "node:util";
import { App } from "./app.js";
import { runCheckConfig } from "./config/cli.js";
import { ConfigError } from "./config/errors.js";
import { loadConfigFile, resolveConfigPath } from "./config/load.js";
import { runSimulateCommand } from "./simulator/cli.js";

const USAGE = `usage:
  pdu-bridge [run] [--config FILE]         run the bridge
  pdu-bridge check-config [--config FILE]  validate the configuration and print it, secrets masked
  pdu-bridge simulate [--port N] [--devices N] [--outlets N] [--oneview] [--https]
  pdu-bridge demo                          simulator + embedded broker + bridge, for a first look`;

/** How long shutdown may take before the process exits anyway (contract §1: within 5 s). */
const STOP_DEADLINE_MS = 4500;

export async function runBridge(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: "string", short: "c" } },
    strict: true,
  });
  const config = await loadConfigFile(resolveConfigPath(values.config, process.env), process.env);
  const app = await App.start(config);
  return waitForSignal(() => app.stop());
}

/** Resolves 0 after SIGTERM/SIGINT once `stop` finished, or when the deadline passes. */
export function waitForSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      process.stderr.write(`pdu-bridge: ${signal}, stopping\n`);
      const deadline = setTimeout(() => resolve(0), STOP_DEADLINE_MS);
      stop().then(
        () => {
          clearTimeout(deadline);
          resolve(0);
        },
        (error: unknown) => {
          clearTimeout(deadline);
          process.stderr.write(`pdu-bridge: error while stopping: ${String(error)}\n`);
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

function isArgsError(error: unknown): error is Error {
  return (
    error instanceof TypeError && String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")
  );
}

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  const command =
    first === "--help" || first === "-h"
      ? "help"
      : first === undefined || first.startsWith("-")
        ? "run"
        : first;
  const args = command === first ? rest : argv;
  try {
    switch (command) {
      case "run":
        return await runBridge(args);
      case "check-config":
        return await runCheckConfig(
          args,
          process.env,
          (s) => process.stdout.write(s),
          (s) => process.stderr.write(s),
        );
      case "simulate":
        return await runSimulateCommand(args);
      case "help":
        process.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        process.stderr.write(`pdu-bridge: unknown command "${command}"\n${USAGE}\n`);
        return 2;
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    if (isArgsError(error)) {
      process.stderr.write(`pdu-bridge: ${error.message}\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`pdu-bridge: fatal: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
// Whatever is still open (sockets closing, timers) must not keep a stopped service alive.
setTimeout(() => process.exit(), 200).unref();
