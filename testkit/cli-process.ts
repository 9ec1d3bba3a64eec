/**
 * The real command line as a child process (`node dist/src/main.js ...`): captured stdout/stderr,
 * the pino JSON lines of stdout parsed, the listener ports read from the "pdu-bridge started" line,
 * signals, and the exit. Its environment is the test's choice only: no SERVICE_* or KUBERNETES_*
 * variable leaks in from the environment the tests run in.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./repo.js";
import { waitFor } from "./mqtt-client.js";
import { CRASH_PATTERNS, WatchedChild } from "./no-unhandled.js";

export const MAIN_JS = join(REPO_ROOT, "dist", "src", "main.js");

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export type LogLine = Record<string, unknown>;

/** `process.env` without the service's own variables, plus `extra`. */
export function childEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(SERVICE_|KUBERNETES_)/.test(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

export class CliProcess {
  readonly child: ChildProcess;
  /** Output capture and crash checks (the fault tests register it with `watch`). */
  readonly watched: WatchedChild;
  /** Resolves when the process exited. */
  readonly exited: Promise<Exit>;

  private constructor(child: ChildProcess, name: string) {
    this.child = child;
    this.watched = new WatchedChild(child, name);
    this.exited = this.watched.exited.then(({ code, signal }) => ({ code, signal }));
  }

  /** Runs `node dist/src/main.js ...args` with exactly `env` (see {@link childEnv}). */
  static spawn(
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    name = "pdu-bridge",
    nodeArgs: readonly string[] = [],
  ): CliProcess {
    const child = spawn(process.execPath, [...nodeArgs, MAIN_JS, ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new CliProcess(child, name);
  }

  get stdout(): string {
    return this.watched.stdout;
  }

  get stderr(): string {
    return this.watched.stderr;
  }

  /** Both streams, for searching and for assertion messages. */
  get output(): string {
    return this.watched.output;
  }

  get exit(): Exit | null {
    const exit = this.watched.exit;
    return exit === null ? null : { code: exit.code, signal: exit.signal };
  }

  /** The JSON log lines written to stdout so far (other lines are skipped). */
  logs(): LogLine[] {
    const lines: LogLine[] = [];
    for (const line of this.stdout.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        lines.push(JSON.parse(line) as LogLine);
      } catch {
        // a line still being written
      }
    }
    return lines;
  }

  /** Waits for a log line matching `predicate`; fails early when the process exits first. */
  waitForLog(predicate: (line: LogLine) => boolean, what: string, timeoutMs = 20_000): Promise<LogLine> {
    return waitFor(
      () => {
        const found = this.logs().find(predicate);
        if (found) return found;
        if (this.exit !== null)
          throw new Error(`exited (${JSON.stringify(this.exit)}) before ${what}\n${this.output}`);
        return undefined;
      },
      what,
      timeoutMs,
    ).catch((error: unknown) => {
      if (this.exit !== null) throw error;
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${this.output}`);
    });
  }

  /** Waits for "pdu-bridge started" and returns the listeners' ports. */
  async started(timeoutMs = 20_000): Promise<{ apiPort: number | null; healthPort: number | null }> {
    const line = await this.waitForLog(
      (l) => l.msg === "pdu-bridge started",
      "pdu-bridge started",
      timeoutMs,
    );
    const port = (v: unknown): number | null => (typeof v === "number" ? v : null);
    return { apiPort: port(line.apiPort), healthPort: port(line.healthPort) };
  }

  /** Waits for the exit; fails after `timeoutMs` (the process is left running for {@link kill}). */
  async waitForExit(timeoutMs = 15_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the process did not exit within ${timeoutMs} ms\n${this.output}`)),
        timeoutMs,
      );
    });
    try {
      const exit = await Promise.race([this.exited, deadline]);
      // Whatever exit code a test expects, a crash (unhandled rejection, uncaught exception) is a failure.
      const crash = CRASH_PATTERNS.find((pattern) => pattern.test(this.stderr));
      if (crash !== undefined) throw new Error(`the process crashed (${String(crash)})\n${this.output}`);
      return exit;
    } finally {
      clearTimeout(timer);
    }
  }

  signal(signal: NodeJS.Signals): void {
    this.watched.kill(signal);
  }

  /** SIGKILL if still running, and wait (for after hooks). */
  async kill(): Promise<void> {
    if (this.exit !== null) return;
    this.watched.kill("SIGKILL");
    await this.exited;
  }
}

/** A temporary directory for config and secret files, removed by `remove()`. */
export async function tempDir(): Promise<{
  path: string;
  write(name: string, text: string): Promise<string>;
  remove(): Promise<void>;
}> {
  const path = await mkdtemp(join(tmpdir(), "pdu-bridge-e2e-"));
  return {
    path,
    async write(name, text) {
      const file = join(path, name);
      await writeFile(file, text, { mode: 0o600 });
      return file;
    },
    remove: () => rm(path, { recursive: true, force: true }),
  };
}

/** Does `text` look like it holds a JavaScript stack trace? */
export const hasStackTrace = (text: string): boolean => /\n\s+at .+[(:]\d+/.test(text);
