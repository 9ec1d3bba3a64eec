#!/usr/bin/env node
/**
 * The command line: `pdu-bridge [run] --config F`, `check-config`, `simulate`, `demo`.
 * Exit codes: 0 clean stop, 2 configuration error (one message, no stack), 1 anything else fatal.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "./config/errors.js";
import type { Logger } from "./log.js";
import { describeError } from "./pdu/errors.js";
import { applyHeapFlags } from "./runtime.js";

// The service itself (fastify, MQTT, the simulator) and the configuration loader are imported by the
// commands that run them, so that `check-config` starts in a fraction of the time.
const loadApp = async () => (await import("./app.js")).App;

const USAGE = `usage:
  pdu-bridge [run] [--config FILE]         run the bridge
  pdu-bridge check-config [--config FILE]  validate the configuration and print it, secrets masked
  pdu-bridge simulate [--port N] [--devices N] [--outlets N] [--oneview] [--https]
  pdu-bridge simulate --snmp <profile> [--outlets N] [--port N] [--hostile MODE]
  pdu-bridge demo                          simulator + embedded broker + bridge, for a first look`;

/** How long shutdown may take before the process exits anyway (docs/deployment.md: it exits within 5 s). */
const STOP_DEADLINE_MS = 4500;

export async function runBridge(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: "string", short: "c" } },
    strict: true,
  });
  const { configSource } = await import("./config/kubernetes/source.js");
  if (configSource(process.env) === "kubernetes") return runFromKubernetes();
  const { loadConfigFile, resolveConfigPath } = await import("./config/load.js");
  const config = await loadConfigFile(resolveConfigPath(values.config, process.env), process.env);
  const App = await loadApp();
  const app = await App.start(config);
  return waitForSignal(() => app.stop(), undefined, safetyNet(app.logger));
}

/**
 * ConfigMap mode: changes that can apply live (poll intervals, log level) are applied; any other
 * change stops the service cleanly with exit 0 so the orchestrator starts it again on the new one.
 */
async function runFromKubernetes(): Promise<number> {
  const { loadKubernetesConfig } = await import("./config/kubernetes/source.js");
  const source = await loadKubernetesConfig(process.env);
  const App = await loadApp();
  const app = await App.start(source.config);
  let restartRequired!: () => void;
  const restart = new Promise<void>((resolve) => (restartRequired = resolve));
  const watch = source.watch(
    {
      onChange: (next, live) => app.applyLive(next, live),
      // Instances the new configuration leaves out lose their Home Assistant discovery now.
      onRestartRequired: (_reason, next) => {
        app.clearRemovedInstances(next);
        restartRequired();
      },
      onError: (error) =>
        app.logger.warn({ error: describeError(error) }, "configuration change not applied"),
    },
    app.logger,
  );
  return waitForSignal(
    async () => {
      await watch.stop();
      await app.stop();
    },
    restart,
    safetyNet(app.logger),
  );
}

/** Unhandled rejections logged per minute at most; the first one after a full minute counts the rest. */
const REJECTIONS_PER_MINUTE = 10;

/**
 * The last line of defence, for errors nothing else handled (docs/reliability.md, "The
 * process-level safety net"), installed once the service runs:
 *
 * - a rejected promise nobody handles: logged (at most REJECTIONS_PER_MINUTE a minute), and the
 *   service keeps serving. The operation that failed is over and left nothing half done that a
 *   later one depends on; what it was for (a poll, a publish, a request) fails on its own and shows
 *   where it belongs (lastError, readiness, a 5xx).
 * - an exception nothing catches: logged, then the service stops as on SIGTERM (`offline`
 *   published, writes in flight finished or reported) and the process exits with 1. The exception
 *   unwound a synchronous step at an unknown point, which may have left a part of the service half
 *   updated: only a new process is sure to be whole again (and a supervisor starts one).
 *
 * Resolves at the first uncaught exception.
 */
function safetyNet(logger: Logger): Promise<void> {
  let windowStart = 0;
  let logged = 0;
  let unlogged = 0;
  process.on("unhandledRejection", (reason: unknown) => {
    const now = Date.now();
    if (now - windowStart >= 60_000) {
      windowStart = now;
      logged = 0;
    }
    if (logged >= REJECTIONS_PER_MINUTE) {
      unlogged++;
      return;
    }
    logged++;
    const note = unlogged > 0 ? ` (${unlogged} more since the last line)` : "";
    unlogged = 0;
    logger.error({ err: reason }, `unhandled rejection: logged, the service keeps running${note}`);
  });
  return new Promise((resolve) => {
    process.on("uncaughtException", (error: Error, origin: string) => {
      logger.fatal({ err: error, origin }, "uncaught exception: the service stops and exits with 1");
      resolve();
    });
  });
}

/**
 * Resolves 0 after SIGTERM/SIGINT (or `also`) once `stop` finished, or when the deadline passes; 1
 * when the stop was for `fatal` (an uncaught exception), or when `fatal` came while stopping.
 */
export function waitForSignal(
  stop: () => Promise<void>,
  also?: Promise<void>,
  fatal?: Promise<void>,
): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    let code = 0;
    const begin = (why: string) => {
      if (stopping) return;
      stopping = true;
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      process.stderr.write(`pdu-bridge: ${why}, stopping\n`);
      const deadline = setTimeout(() => resolve(code), STOP_DEADLINE_MS);
      stop().then(
        () => {
          clearTimeout(deadline);
          resolve(code);
        },
        (error: unknown) => {
          clearTimeout(deadline);
          process.stderr.write(`pdu-bridge: error while stopping: ${describeError(error)}\n`);
          resolve(1);
        },
      );
    };
    const onSignal = (signal: NodeJS.Signals) => begin(signal);
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    void also?.then(() => begin("configuration changed"));
    void fatal?.then(() => {
      code = 1;
      begin("a fatal error");
    });
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
      case "run": {
        // The service's GC policy (docs/deployment.md, "Memory"), unless whoever started it chose
        // their own; set before the service allocates its heap.
        applyHeapFlags();
        return await runBridge(args);
      }
      case "check-config": {
        const { runCheckConfig } = await import("./config/cli.js");
        const write = (stream: NodeJS.WriteStream) => (text: string) => void stream.write(text);
        return await runCheckConfig(args, process.env, write(process.stdout), write(process.stderr));
      }
      case "simulate": {
        const { runSimulateCommand } = await import("./simulator/cli.js");
        return await runSimulateCommand(args);
      }
      case "demo": {
        const { runDemo } = await import("./demo.js");
        return await runDemo(args, {
          out: (s) => process.stdout.write(s),
          until: (stop) => waitForSignal(stop),
        });
      }
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
