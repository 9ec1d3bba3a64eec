/**
 * The control core's writes in flight and its stop (docs/control.md, "Stopping"): once stopping,
 * nothing new is sent; writes in flight get a budget to finish and are then cut, so their outcome
 * is reported unknown, never "retry". The hard-stop signal cuts them at once.
 */
import type { Logger } from "../log.js";

/** How long a stop lets writes in flight finish before they are cut and reported outcome unknown (ms). */
export const STOP_BUDGET_MS = 2000;

export class WritesInFlight {
  /** Aborted when a stop's budget ran out (or the hard-stop signal fired): cuts in-flight writes. */
  readonly #cut = new AbortController();
  /** Writes in flight (settle, never reject). */
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #hard: AbortSignal | undefined;
  readonly #logger: Logger;
  #closing = false;

  /** `onHardStop` runs once when `hard` aborts (at once when it already has). */
  constructor(logger: Logger, hard: AbortSignal | undefined, onHardStop: () => void) {
    this.#logger = logger;
    this.#hard = hard;
    if (hard === undefined) return;
    const onAbort = () => {
      onHardStop();
      this.#cut.abort(hard.reason);
    };
    if (hard.aborted) onAbort();
    else hard.addEventListener("abort", onAbort, { once: true });
  }

  /** A stop began (graceful or hard): nothing new is sent. */
  get stopping(): boolean {
    return this.#closing || this.#hard?.aborted === true;
  }

  /** The signal each write is sent with: aborted when writes in flight are cut. */
  get signal(): AbortSignal {
    return this.#cut.signal;
  }

  /** Tracks a write (which must never reject) until it settles. */
  async track<T>(writing: Promise<T>): Promise<T> {
    this.#inflight.add(writing);
    try {
      return await writing;
    } finally {
      this.#inflight.delete(writing);
    }
  }

  /** Lets writes in flight finish within `budgetMs`, then cuts the rest and waits for their end. */
  async stop(budgetMs: number): Promise<void> {
    this.#closing = true;
    if (this.#inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const budget = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, budgetMs);
      });
      await Promise.race([Promise.allSettled([...this.#inflight]), budget]);
      clearTimeout(timer);
    }
    if (this.#inflight.size > 0) {
      this.#logger.warn(
        { writes: this.#inflight.size },
        "control: writes still in flight at the end of the stop budget; their outcome is unknown",
      );
      this.#cut.abort(new Error("the service stopped"));
      await Promise.allSettled([...this.#inflight]);
    }
  }
}
