/**
 * The one log capture of the tests: a debug-level logger whose lines are kept exactly as written
 * (to search for secrets), parsed on demand, with the control audit lines parsed as they arrive
 * (tests that wait for them after every case would otherwise re-parse the whole log each time).
 */
import { createLogger, type Logger } from "../src/log.js";

export type LogLine = Record<string, unknown>;

export class LogCapture {
  /** Every line as written (one JSON object per line, without the newline). */
  readonly raw: string[] = [];
  /** The control audit lines (`audit: "control"`), parsed, in order. */
  readonly audits: LogLine[] = [];
  readonly logger: Logger;
  readonly #waiters = new Set<{ count: number; resolve: () => void }>();

  constructor() {
    this.logger = createLogger({ level: "debug", destination: { write: (chunk) => this.#add(chunk) } });
  }

  #add(chunk: string): void {
    for (const line of chunk.split("\n")) {
      if (line === "") continue;
      this.raw.push(line);
      if (line.includes('"audit":"control"')) this.audits.push(JSON.parse(line) as LogLine);
    }
    for (const waiter of this.#waiters) if (this.audits.length >= waiter.count) waiter.resolve();
  }

  /** Every line so far, parsed. */
  get lines(): LogLine[] {
    return this.raw.map((l) => JSON.parse(l) as LogLine);
  }

  /** Everything written so far, as text. */
  text(): string {
    return this.raw.join("\n");
  }

  /** Resolves as soon as there are at least `count` audit lines; fails after `ms`. */
  waitForAudits(count: number, what: string, ms = 5000): Promise<void> {
    if (this.audits.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.#waiters.add(waiter);
    });
  }
}
