/**
 * No unhandled rejection or uncaught exception anywhere: in the test process, and in the child
 * processes a test starts.
 *
 * In a test file, call {@link failOnUnhandled} once at the top (before any `describe`/`it`). It
 * registers `unhandledRejection` and `uncaughtException` handlers that record what happened, an
 * `afterEach` that fails the test during (or right after) which something was recorded, and an
 * `after` that fails the file for anything recorded outside a test (in hooks, or late async
 * activity that node:test only reports as a diagnostic). It also checks every child registered
 * with {@link watch}.
 *
 * For a child process, wrap it in a {@link WatchedChild} right after `spawn` (stdout and stderr must
 * be pipes; a CliProcess does this) and register it with {@link watch}. Its output is kept and, once it exited, {@link WatchedChild.problems} lists: any line
 * that looks like a crash (`unhandled`, `uncaught`, Node's fatal-error footer `Node.js v20.x`,
 * V8's `FATAL ERROR`), an exit code other than 0, and an exit by a signal the test did not send
 * with {@link WatchedChild.kill}. Children still running when the file ends are stopped (SIGTERM,
 * then SIGKILL after 6 s) and checked too.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { after, afterEach } from "node:test";

interface Incident {
  readonly kind: "unhandledRejection" | "uncaughtException";
  readonly message: string;
}

/** Output that means a process crashed or nearly did (case-insensitive where it is prose). */
export const CRASH_PATTERNS: readonly RegExp[] = [
  /unhandled/i,
  /uncaught/i,
  /^Node\.js v\d+\.\d+/m,
  /FATAL ERROR/,
];

const incidents: Incident[] = [];
const children = new Set<WatchedChild>();
let installed = false;

function describeThrown(value: unknown): string {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  try {
    return `non-error value: ${JSON.stringify(value)}`;
  } catch {
    return `non-error value: ${String(value)}`;
  }
}

/** Anything recorded so far (for reports). */
export function recordedIncidents(): readonly Incident[] {
  return incidents;
}

/**
 * Makes the current test file fail on an unhandled rejection or uncaught exception, and checks
 * its watched children when it ends. Idempotent.
 */
export function failOnUnhandled(): void {
  if (installed) return;
  installed = true;
  process.on("unhandledRejection", (reason: unknown) => {
    incidents.push({ kind: "unhandledRejection", message: describeThrown(reason) });
  });
  process.on("uncaughtException", (error: unknown) => {
    incidents.push({ kind: "uncaughtException", message: describeThrown(error) });
  });

  let reported = 0;
  afterEach(() => {
    const fresh = incidents.slice(reported);
    reported = incidents.length;
    assert.deepEqual(
      fresh.map((i) => `${i.kind}: ${i.message}`),
      [],
      "unhandled rejection or uncaught exception during this test",
    );
  });

  after(async () => {
    for (const child of children) await child.finish();
    const problems = [...children].flatMap((c) => c.problems().map((p) => `${c.name}: ${p}`));
    const late = incidents.slice(reported).map((i) => `${i.kind}: ${i.message}`);
    assert.deepEqual(
      [...late, ...problems],
      [],
      "unhandled rejections, uncaught exceptions or crashed child processes",
    );
  });
}

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Date.now() when the process exited. */
  readonly at: number;
}

/** A child process whose output and exit are checked (see the file comment). */
export class WatchedChild {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves when the process exited. */
  readonly exited: Promise<ChildExit>;
  #stdout = "";
  #stderr = "";
  #exit: ChildExit | null = null;
  readonly #sent = new Set<NodeJS.Signals>();

  constructor(child: ChildProcess, name: string) {
    this.child = child;
    this.name = name;
    child.stdout?.setEncoding("utf8");
    child.stderr?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      this.#stdout += chunk;
    });
    child.stderr?.on("data", (chunk: string) => {
      this.#stderr += chunk;
    });
    this.exited = new Promise<ChildExit>((resolve) => {
      // `close` (not `exit`): the output pipes are drained by then, so problems() sees all of it.
      child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
        this.#exit = { code, signal, at: Date.now() };
        resolve(this.#exit);
      });
    });
  }

  get stdout(): string {
    return this.#stdout;
  }

  get stderr(): string {
    return this.#stderr;
  }

  /** stdout and stderr, for assertion messages. */
  get output(): string {
    return `--- stdout\n${this.#stdout}\n--- stderr\n${this.#stderr}`;
  }

  /** null while running. */
  get exit(): ChildExit | null {
    return this.#exit;
  }

  get running(): boolean {
    return this.#exit === null;
  }

  /** Sends a signal; an exit by this signal is then not counted as a crash. */
  kill(signal: NodeJS.Signals): void {
    if (!this.running) return;
    this.#sent.add(signal);
    this.child.kill(signal);
  }

  /** Stops the process if it still runs: SIGTERM, then SIGKILL after `graceMs`. */
  async finish(graceMs = 6000): Promise<ChildExit> {
    if (this.#exit !== null) return this.#exit;
    this.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), graceMs);
    });
    const exit = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (exit !== null) return exit;
    this.kill("SIGKILL");
    return this.exited;
  }

  /** What is wrong with this process so far: crash-like output, a crash exit. */
  problems(): string[] {
    const found: string[] = [];
    for (const [stream, text] of [
      ["stdout", this.#stdout],
      ["stderr", this.#stderr],
    ] as const) {
      for (const pattern of CRASH_PATTERNS) {
        const line = text.split("\n").find((l) => pattern.test(l));
        if (line !== undefined) found.push(`${stream} matches ${String(pattern)}: ${line.slice(0, 500)}`);
      }
    }
    const exit = this.#exit;
    if (exit !== null) {
      if (exit.signal !== null && !this.#sent.has(exit.signal)) {
        found.push(`killed by ${exit.signal}, which the test did not send`);
      } else if (exit.signal === null && exit.code !== 0) {
        found.push(`exited with code ${String(exit.code)}`);
      }
    }
    return found;
  }

  /** Throws (failing the caller) when {@link problems} finds anything. */
  assertClean(): void {
    const problems = this.problems();
    assert.deepEqual(problems, [], `${this.name} crashed or reported an unhandled error\n${this.output}`);
  }
}

/** Checks a child process (its output captured by a WatchedChild) until the test file ends. */
export function watch(watched: WatchedChild): WatchedChild {
  children.add(watched);
  return watched;
}
