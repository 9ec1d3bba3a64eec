/**
 * At most one extra poll per instance per second however many traps arrive: the first trap of a
 * quiet instance asks the poller at once (`pollSoon`); traps within the second after it ask for one
 * more poll at that second's end, so the last of a burst is seen too. Keyed by configured instances
 * only (the receiver matched them), so the state is bounded by the configuration.
 */
export const REPOLL_GAP_MS = 1000;

export class RepollLimiter {
  readonly #last = new Map<string, number>();
  readonly #pending = new Map<string, NodeJS.Timeout>();
  readonly #poll: (id: string) => void;
  readonly #now: () => number;
  #polls = 0;

  constructor(poll: (id: string) => void, now: () => number = Date.now) {
    this.#poll = poll;
    this.#now = now;
  }

  /** Polls asked for so far. */
  get polls(): number {
    return this.#polls;
  }

  /** A trap from `id` was accepted. */
  trap(id: string): void {
    // A poll already asked for at the second's end covers this trap too, even when a busy loop
    // runs its timer late (firing here as well would poll twice in that second).
    if (this.#pending.has(id)) return;
    const now = this.#now();
    const last = this.#last.get(id);
    if (last === undefined || now - last >= REPOLL_GAP_MS) {
      this.#fire(id, now);
      return;
    }
    const timer = setTimeout(
      () => {
        this.#pending.delete(id);
        this.#fire(id, this.#now());
      },
      last + REPOLL_GAP_MS - now,
    );
    timer.unref();
    this.#pending.set(id, timer);
  }

  stop(): void {
    for (const timer of this.#pending.values()) clearTimeout(timer);
    this.#pending.clear();
  }

  #fire(id: string, now: number): void {
    this.#last.set(id, now);
    this.#polls++;
    this.#poll(id);
  }
}
