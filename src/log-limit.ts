/**
 * Lines driven from outside (a broker client's garbage, a flapping PDU, a replica's bad requests)
 * folded per key: in each window of a key the first `burst` lines pass, the rest are only counted,
 * and when the window ends one summary line says how many were folded ("… and 4,812 more like this
 * in the last 10 s"). Nothing is lost but the repetition, and what an outsider can make the service
 * write is bounded by the number of keys, which is bounded too (further keys share one).
 */
import type { Logger } from "./log.js";

export interface FoldOptions {
  /** Length of a key's window, from its first line (default 10 s). */
  windowMs?: number;
  /** Lines of one key that pass in a window (default 5). */
  burst?: number;
  /** Keys followed at once (default 1,000); lines of any further key share {@link OVERFLOW_KEY}. */
  maxKeys?: number;
}

/** The key that lines of keys over `maxKeys` share. */
export const OVERFLOW_KEY = "(more keys)";

export const FOLD_DEFAULTS: Required<FoldOptions> = { windowMs: 10_000, burst: 5, maxKeys: 1000 };

/** The summary of a window: what was folded, with the last folded line's sample. */
export interface Folded<T> {
  key: string;
  count: number;
  windowMs: number;
  sample: T;
}

interface Window<T> {
  start: number;
  passed: number;
  folded: number;
  sample: T | undefined;
}

/** `… and 4,812 more like this in the last 10 s` */
export function foldedText(count: number, windowMs: number): string {
  const seconds = Math.max(1, Math.round(windowMs / 1000));
  return `… and ${count.toLocaleString("en-US")} more like this in the last ${seconds} s`;
}

/**
 * Decides per key which lines pass and tells `summarise` what it folded when a window ends (from one
 * timer, armed only while something is folded, and unref'd), and at `flush`/`close`.
 */
export class LineFolder<T> {
  readonly #windows = new Map<string, Window<T>>();
  readonly #options: Required<FoldOptions>;
  readonly #summarise: (folded: Folded<T>) => void;
  #timer: NodeJS.Timeout | undefined;

  constructor(summarise: (folded: Folded<T>) => void, options: FoldOptions = {}) {
    this.#summarise = summarise;
    this.#options = { ...FOLD_DEFAULTS, ...options };
  }

  /** Whether the line of `key` is to be written now; when not, it is counted (with its sample). */
  admit(key: string, sample: T): boolean {
    const now = Date.now();
    const window = this.#window(key, now);
    if (window.passed < this.#options.burst) {
      window.passed += 1;
      return true;
    }
    window.folded += 1;
    window.sample = sample;
    this.#arm(window.start + this.#options.windowMs - now);
    return false;
  }

  /** Summaries of every window with folded lines, now, and every window forgotten. */
  flush(): void {
    const windows = [...this.#windows];
    this.#windows.clear();
    for (const [key, window] of windows) this.#report(key, window);
  }

  /** Flushes and stops the timer. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.flush();
  }

  /** Keys followed now (for tests and bounds). */
  get size(): number {
    return this.#windows.size;
  }

  #window(key: string, now: number): Window<T> {
    const existing = this.#windows.get(key);
    if (existing !== undefined) {
      if (now - existing.start < this.#options.windowMs) return existing;
      this.#windows.delete(key);
      this.#report(key, existing);
    }
    if (this.#windows.size >= this.#options.maxKeys) this.#sweep(now);
    const own = this.#windows.size < this.#options.maxKeys || key === OVERFLOW_KEY;
    if (!own) return this.#window(OVERFLOW_KEY, now);
    const fresh: Window<T> = { start: now, passed: 0, folded: 0, sample: undefined };
    this.#windows.set(key, fresh);
    return fresh;
  }

  #report(key: string, window: Window<T>): void {
    if (window.folded === 0 || window.sample === undefined) return;
    try {
      this.#summarise({ key, count: window.folded, windowMs: this.#options.windowMs, sample: window.sample });
    } catch {
      // A summary that cannot be written is not worth more than the lines it stands for.
    }
  }

  /** Reports and forgets every window that has ended; re-arms for the first one still open with folds. */
  #sweep(now: number): void {
    let next = Infinity;
    for (const [key, window] of this.#windows) {
      const end = window.start + this.#options.windowMs;
      if (now >= end) {
        this.#windows.delete(key);
        this.#report(key, window);
      } else if (window.folded > 0) next = Math.min(next, end - now);
    }
    if (next !== Infinity) this.#arm(next);
  }

  #arm(delayMs: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#sweep(Date.now());
      },
      Math.max(1, delayMs),
    );
    this.#timer.unref();
  }
}

export type FoldLevel = "debug" | "info" | "warn" | "error";

interface LogSample {
  level: FoldLevel;
  fields: Record<string, unknown>;
  msg: string;
}

/**
 * A logger's lines folded per key: `log.warn(key, fields, msg)` writes the line while its key's
 * window has room, and the window's summary is the last folded line with `folded` (the count) and
 * `foldedWindowS`, its message followed by {@link foldedText}.
 */
export class FoldedLog {
  readonly #folder: LineFolder<LogSample>;
  readonly #logger: Logger;

  constructor(logger: Logger, options: FoldOptions = {}) {
    this.#logger = logger;
    this.#folder = new LineFolder<LogSample>(({ count, windowMs, sample }) => {
      const fields = { ...sample.fields, folded: count, foldedWindowS: Math.round(windowMs / 1000) };
      logger[sample.level](fields, `${sample.msg} ${foldedText(count, windowMs)}`);
    }, options);
  }

  /** Writes the line, or counts it into its key's summary. */
  write(level: FoldLevel, key: string, fields: Record<string, unknown>, msg: string): void {
    if (this.#folder.admit(key, { level, fields, msg })) this.#logger[level](fields, msg);
  }

  info(key: string, fields: Record<string, unknown>, msg: string): void {
    this.write("info", key, fields, msg);
  }

  warn(key: string, fields: Record<string, unknown>, msg: string): void {
    this.write("warn", key, fields, msg);
  }

  error(key: string, fields: Record<string, unknown>, msg: string): void {
    this.write("error", key, fields, msg);
  }

  /** Writes the pending summaries now (at stop, so that no count is lost). */
  close(): void {
    this.#folder.close();
  }
}
