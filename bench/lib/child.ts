/**
 * Child processes of the benchmark: every measured program runs in its own process so its CPU time
 * and RSS are its own. Forked helpers answer requests over IPC ({@link IpcChild}); other programs
 * (the bridge, Node-RED) log to a file that the parent can wait on.
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";

import { REPO_ROOT as ROOT, sleep } from "../../testkit/repo.js";

export { DIST, REPO_ROOT as ROOT, sleep } from "../../testkit/repo.js";

/** Every child started here, so that a failed run still stops them (by pid, only ours). */
const started = new Set<ChildProcess>();

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child exited. */
export async function stopChild(child: ChildProcess, graceMs = 6000): Promise<void> {
  started.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Counts a child started elsewhere (a broker) among those {@link killAllStarted} kills. */
export function trackChild(child: ChildProcess): void {
  started.add(child);
  child.once("exit", () => started.delete(child));
}

/** Kills whatever is left (used on failure and on SIGINT of the runner). */
export function killAllStarted(): void {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  started.clear();
}

export interface LoggedChild {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves when the log contains `text`; rejects after `timeoutMs` or when the child exits. */
  waitForLog(text: string | RegExp, timeoutMs: number): Promise<void>;
  log(): string;
}

/** Spawns `node [nodeArgs] script [args]` with stdout and stderr appended to `logFile`. */
export function spawnNode(
  script: string,
  args: readonly string[],
  options: { logFile: string; nodeArgs?: readonly string[]; env?: NodeJS.ProcessEnv; cwd?: string },
): LoggedChild {
  const fd = openSync(options.logFile, "a");
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    stdio: ["ignore", fd, fd],
    env: options.env ?? process.env,
    cwd: options.cwd ?? ROOT,
  });
  closeSync(fd);
  started.add(child);
  child.once("exit", () => started.delete(child));
  if (child.pid === undefined) throw new Error(`could not start ${script}`);
  const log = () => {
    try {
      return readFileSync(options.logFile, "utf8");
    } catch {
      return "";
    }
  };
  return {
    child,
    pid: child.pid,
    logFile: options.logFile,
    log,
    async waitForLog(text, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const content = log();
        if (typeof text === "string" ? content.includes(text) : text.test(content)) return;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(
            `${script} exited (${child.exitCode ?? child.signalCode}):\n${content.slice(-2000)}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `${script}: no ${String(text)} in its log within ${timeoutMs} ms:\n${content.slice(-2000)}`,
          );
        await sleep(200);
      }
    },
  };
}

interface Reply {
  readonly id: number;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: string;
}

/** A forked helper that answers `{id, cmd, ...}` with `{id, ok, result|error}`. */
export class IpcChild {
  readonly child: ChildProcess;
  readonly pid: number;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly #ready: Promise<unknown>;

  constructor(script: string, args: readonly string[], nodeArgs: readonly string[] = []) {
    this.child = fork(script, [...args], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [...nodeArgs],
    });
    started.add(this.child);
    this.child.once("exit", () => started.delete(this.child));
    if (this.child.pid === undefined) throw new Error(`could not fork ${script}`);
    this.pid = this.child.pid;
    this.#ready = new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`${script} exited (${code}) before it was ready`));
      this.child.once("exit", onExit);
      this.child.on("message", (message: unknown) => {
        const m = message as { type?: string; result?: unknown } & Partial<Reply>;
        if (m.type === "ready") {
          this.child.off("exit", onExit);
          resolve(m.result);
          return;
        }
        if (typeof m.id !== "number") return;
        const waiter = this.#pending.get(m.id);
        if (!waiter) return;
        this.#pending.delete(m.id);
        if (m.ok === true) waiter.resolve(m.result);
        else waiter.reject(new Error(m.error ?? "child request failed"));
      });
    });
    this.child.once("exit", () => {
      for (const w of this.#pending.values()) w.reject(new Error(`${script} exited`));
      this.#pending.clear();
    });
  }

  /** What the child sent with its `{type: "ready"}` message. */
  ready<T>(): Promise<T> {
    return this.#ready as Promise<T>;
  }

  request<T>(cmd: string, extra: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, cmd, ...extra });
    });
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** Child side: answers requests with `handler`; call {@link signalReady} once set up. */
export function serveIpc(handler: (cmd: string, message: Record<string, unknown>) => Promise<unknown>): void {
  process.on("message", (message: unknown) => {
    const m = message as { id: number; cmd: string } & Record<string, unknown>;
    handler(m.cmd, m).then(
      (result) => process.send?.({ id: m.id, ok: true, result }),
      (error: unknown) =>
        process.send?.({
          id: m.id,
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  });
  // The parent going away ends the helper.
  process.on("disconnect", () => process.exit(0));
}

export function signalReady(result: unknown): void {
  process.send?.({ type: "ready", result });
}
