/**
 * Per-key serialisation: `run(key, task)` starts `task` only after every task queued earlier under
 * the same key has settled (fulfilled or rejected). Tasks under different keys run independently.
 * Keys that nobody waits on are forgotten, so the map only holds keys with work in flight.
 */
export class KeyedLock {
  /** key -> the settling of the last task queued under it */
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await task();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with a task running or queued (for tests and debugging). */
  get size(): number {
    return this.#tails.size;
  }
}
