/**
 * Memory sizing of the Node.js process (docs/deployment.md, "Memory").
 *
 * V8 sizes its heap from the machine's memory. On a host with plenty of it the limit is about 4 GB,
 * and V8 then lets garbage grow to up to four times the live heap before a full collection (a
 * 1000-PDU bridge, about 130 MB live, peaks above 500 MB). Under a limit below 512 MB V8 grows the
 * heap by at most about twice the live size instead. The image and the Helm chart therefore run the
 * service with `--max-old-space-size=480` (enough for about 1800 24-outlet PDUs) and a 32 MB young
 * generation, and the service warns at start when the limit it runs with looks too small for the
 * configured fleet.
 *
 * The command itself applies the same flags (`node dist/src/main.js`, `npx pdu-bridge`, a systemd
 * unit): when neither the command line nor `NODE_OPTIONS` sets them, `run` starts the service again
 * with them ({@link relaunchWithHeapFlags}) and logs which flags it runs with and why.
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { getHeapStatistics } from "node:v8";

/** The heap cap the container image, the Helm chart and `npm run bench` run the service with. */
export const DEFAULT_MAX_OLD_SPACE_MB = 480;

/**
 * Young generation (each semi-space, MB; Node's default is 16). Every request and poll allocates
 * short-lived objects; a small young generation promotes the ones still in flight at each scavenge,
 * which under the heap cap means more full collections. 32 keeps the REST API near a bare node:http
 * server's rate (docs/performance.md, scenario api) for about 30 MB more RSS at 1000 PDUs.
 */
export const DEFAULT_MAX_SEMI_SPACE_MB = 32;

/** `NODE_OPTIONS` of the image and the chart. */
export const DEFAULT_NODE_OPTIONS = `--max-old-space-size=${DEFAULT_MAX_OLD_SPACE_MB} --max-semi-space-size=${DEFAULT_MAX_SEMI_SPACE_MB}`;

/** Live heap measured with 24-outlet PDUs (npm run bench): a base plus a share per instance. */
const BASE_HEAP_MB = 40;
const HEAP_PER_INSTANCE_MB = 0.15;
/** Room for garbage between full collections. */
const HEADROOM = 1.5;

/** About how much heap (MB) a fleet of `instances` needs, headroom included. */
export function heapNeededMb(instances: number): number {
  return Math.ceil((BASE_HEAP_MB + HEAP_PER_INSTANCE_MB * instances) * HEADROOM);
}

/** The V8 heap limit of this process, in MB. */
export function heapLimitMb(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 1024 / 1024);
}

/** The heap flags the service runs with, by V8 option name. */
const HEAP_FLAGS: readonly (readonly [string, number])[] = [
  ["max-old-space-size", DEFAULT_MAX_OLD_SPACE_MB],
  ["max-semi-space-size", DEFAULT_MAX_SEMI_SPACE_MB],
];

/**
 * Set in the environment of the service started again with the heap flags: the flags it added. Its
 * presence also keeps that process from starting another.
 */
export const RUNTIME_FLAGS_ENV = "PDU_BRIDGE_HEAP_FLAGS";

/** Why the flags are applied, for the start-up log. */
export const HEAP_FLAGS_WHY =
  "without a heap cap V8 lets garbage grow to about four times the live heap before a full collection";

/** Node options given on the command line and in NODE_OPTIONS, as separate words. */
function nodeOptionWords(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].filter((w) => w.startsWith("--"));
}

/** `--name` or `--name=…`, with V8's `_` spelling too. */
function isFlag(word: string, name: string): boolean {
  const normal = word.replaceAll("_", "-");
  return normal === `--${name}` || normal.startsWith(`--${name}=`);
}

/** The heap flags already set by whoever started the process (kept as they are). */
export function userHeapFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return nodeOptionWords(execArgv, nodeOptions).filter((w) => HEAP_FLAGS.some(([name]) => isFlag(w, name)));
}

/**
 * The service's heap flags that neither the command line nor NODE_OPTIONS sets. With the number of
 * configured instances, the old-space cap is raised to what that fleet needs ({@link heapNeededMb})
 * when that is more than the default: a fixed cap would end a large fleet's service out of memory.
 */
export function missingHeapFlags(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  instances: number | null = null,
): string[] {
  const words = nodeOptionWords(execArgv, nodeOptions);
  return HEAP_FLAGS.filter(([name]) => !words.some((w) => isFlag(w, name))).map(([name, mb]) => {
    const sized =
      name === "max-old-space-size" && instances !== null ? Math.max(mb, heapNeededMb(instances)) : mb;
    return `--${name}=${sized}`;
  });
}

/** The start-up log line of the heap flags: which ones the service added, which ones it kept. */
export function heapFlagsReport(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): { readonly applied: string[]; readonly kept: string[]; readonly why: string | null } {
  const applied = (env[RUNTIME_FLAGS_ENV] ?? "").split(" ").filter((w) => w !== "");
  const kept = userHeapFlags(execArgv, env.NODE_OPTIONS).filter((w) => !applied.includes(w));
  return { applied, kept, why: applied.length > 0 ? HEAP_FLAGS_WHY : null };
}

type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;

/**
 * Starts the service again with `flags` and the same arguments. Node 22.15 and later: the process
 * is replaced (`process.execve`: same pid, nothing returns). Older Node: a child with the same stdio
 * runs it; SIGTERM, SIGINT and SIGHUP are passed on, and the promise resolves to the child's exit
 * code (128 + the signal's number when a signal ended it). Should that first process die without
 * passing a signal on (SIGKILL), the service stops as on SIGTERM ({@link stopWithRelay}).
 */
export function relaunchWithHeapFlags(flags: readonly string[]): Promise<number> {
  const args = [...flags, ...process.execArgv, ...process.argv.slice(1)];
  const env = { ...process.env, [RUNTIME_FLAGS_ENV]: flags.join(" ") };
  const execve = (process as { execve?: Execve }).execve;
  if (typeof execve === "function") execve(process.execPath, [process.execPath, ...args], env);
  // The IPC channel only tells the child when this process is gone ({@link stopWithRelay}).
  const child = spawn(process.execPath, args, { stdio: ["inherit", "inherit", "inherit", "ipc"], env });
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];
  const pass = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of signals) process.on(signal, pass);
  return new Promise((resolve) => {
    child.once("error", (error) => {
      process.stderr.write(
        `pdu-bridge: cannot start the service with ${flags.join(" ")}: ${error.message}\n`,
      );
      resolve(1);
    });
    child.once("exit", (code, signal) => {
      for (const s of signals) process.off(s, pass);
      resolve(code ?? (signal === null ? 1 : 128 + constants.signals[signal]));
    });
  });
}

/**
 * In a service started by {@link relaunchWithHeapFlags} as a child (Node before 22.15): stop as on
 * SIGTERM when the process that started it is gone, so that no service is left behind.
 */
export function stopWithRelay(): void {
  if (process.env[RUNTIME_FLAGS_ENV] === undefined || process.channel === undefined) return;
  process.channel.unref();
  process.once("disconnect", () => process.kill(process.pid, "SIGTERM"));
}
