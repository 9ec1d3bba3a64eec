/**
 * A log line driven from outside, folded: the first occurrence is logged at once, the rest within
 * {@link FOLD_INTERVAL_MS} are counted and logged as one line with the count (`folded`) when the
 * interval ends. A flood of bad requests writes a line per interval, not one per request.
 */
import type { Logger } from "../../log.js";

export const FOLD_INTERVAL_MS = 10_000;

export class FoldedLog {
  readonly #logger: Logger;
  readonly #message: string;
  readonly #intervalMs: number;
  #folded = 0;
  #last: Record<string, unknown> = {};
  #timer: NodeJS.Timeout | null = null;

  constructor(logger: Logger, message: string, intervalMs = FOLD_INTERVAL_MS) {
    this.#logger = logger;
    this.#message = message;
    this.#intervalMs = intervalMs;
  }

  /** One occurrence, with what to say about it. */
  note(fields: Record<string, unknown>): void {
    if (this.#timer !== null) {
      this.#folded++;
      this.#last = fields;
      return;
    }
    this.#logger.warn(fields, this.#message);
    this.#arm();
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#folded === 0) return;
      this.#logger.warn({ ...this.#last, folded: this.#folded }, `${this.#message} (repeated)`);
      this.#folded = 0;
      this.#arm();
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Logs what is folded now and stops the timer. */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#folded > 0)
      this.#logger.warn({ ...this.#last, folded: this.#folded }, `${this.#message} (repeated)`);
    this.#folded = 0;
  }
}
