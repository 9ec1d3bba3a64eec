/**
 * The one lifecycle of the service's parts: an ordered list, started in order and stopped in
 * reverse. A part that fails to start leaves nothing running of itself (its own `start` cleans up
 * its work, the lifecycle its bus listeners) and the parts started before it are stopped, in
 * reverse, before the failure is passed on.
 */
import type { EventBus } from "./bus.js";
import type { Logger } from "./log.js";

/**
 * A part of the running service (the list is in src/app.ts, described in docs/architecture.md).
 * `start` registers its bus listeners (`bus.listen(this, …)`) and starts its work; `stop` ends its
 * work. The lifecycle releases the part's listeners right before its `stop` (so a stopping part
 * hears no more events) and after a `start` that failed. Neither is called twice by {@link Lifecycle}.
 */
export interface Part {
  readonly name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export class Lifecycle {
  readonly #parts: readonly Part[];
  readonly #logger: Logger;
  readonly #bus: Pick<EventBus, "release"> | null;
  /** The parts started, in start order. */
  readonly #started: Part[] = [];
  #starting: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;

  /** `bus`: where the parts register their listeners, each part as their owner. */
  constructor(parts: readonly Part[], logger: Logger, bus: Pick<EventBus, "release"> | null = null) {
    this.#parts = parts;
    this.#logger = logger;
    this.#bus = bus;
  }

  /** The parts' names in start order. */
  get names(): string[] {
    return this.#parts.map((p) => p.name);
  }

  /**
   * Starts every part in order. When one fails, stops those started (reverse order) and rethrows
   * its error. A stop asked for meanwhile waits for the part starting, and leaves the rest unstarted.
   */
  async start(): Promise<void> {
    this.#starting ??= this.#startAll();
    try {
      await this.#starting;
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  async #startAll(): Promise<void> {
    for (const part of this.#parts) {
      if (this.#stopping !== null) return;
      try {
        await part.start();
      } catch (error) {
        this.#bus?.release(part);
        this.#logger.debug({ part: part.name, err: error }, "part failed to start");
        throw error;
      }
      this.#started.push(part);
    }
  }

  /**
   * Stops the started parts in reverse order; an error is logged and the next part stopped all the
   * same. Safe to call more than once (later calls wait for the first).
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    await this.#starting?.catch(() => undefined);
    while (this.#started.length > 0) {
      const part = this.#started.pop()!;
      this.#bus?.release(part);
      try {
        await part.stop();
      } catch (error) {
        this.#logger.warn({ part: part.name, err: error }, "error while stopping");
      }
    }
  }
}
