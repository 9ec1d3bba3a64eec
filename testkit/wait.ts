/** Waiting for a condition in tests: a deadline for correctness, never a speed assertion. */
import { sleep } from "./repo.js";

/**
 * Polls `check` (sync or async) until it returns something other than undefined, null or false and
 * returns that; a throw counts as "not yet" and is reported if the deadline passes. `what` names the
 * condition in that report; a function is asked only then (for state that grows while waiting).
 */
export async function waitFor<T>(
  check: () => T | false | null | undefined | Promise<T | false | null | undefined>,
  what: string | (() => string),
  timeoutMs = 8000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false && value !== null) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      const named = typeof what === "function" ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${named}${why}`);
    }
    await sleep(intervalMs);
  }
}

export { sleep } from "./repo.js";
