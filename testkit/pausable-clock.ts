/**
 * A clock that can be paused, for a simulator's `now`: paused, the simulator's time (and the energy
 * its outlets integrate) stands still, so a test can read exact values across polls.
 */
export class PausableClock {
  #offset = 0;
  #pausedAt: number | null = null;
  readonly now = (): number => this.#pausedAt ?? Date.now() - this.#offset;
  pause(): void {
    this.#pausedAt ??= this.now();
  }
  resume(): void {
    if (this.#pausedAt === null) return;
    this.#offset = Date.now() - this.#pausedAt;
    this.#pausedAt = null;
  }
}
