/**
 * At most one settings write per target (an outlet, a device, an entity, a group) per
 * {@link SETTINGS_GAP_MS}: a request that comes while the target's last write is younger than that,
 * or still running, waits in the target's pending write, which merges every request of the burst
 * (field by field, the last value wins) and runs once the gap has passed. Every request of the burst
 * gets that one write's result, with the settings written and how many requests it merged; its
 * first request is the one audited (./audit.ts).
 *
 * Memory: one entry per target written in the last gap or with a write pending (targets in a
 * snapshot, so bounded by what the PDUs report), and per pending write the requests waiting for it
 * (bounded by what arrives within one gap).
 */
import type { WriteResult } from "./outcomes.js";

/** The least time between two settings writes of one target (ms). */
export const SETTINGS_GAP_MS = 1000;

/** What one request of a burst gets: the write's result, what it wrote, and the burst. */
export interface BurstResult {
  readonly result: WriteResult;
  readonly settings: Readonly<Record<string, unknown>>;
  /** Requests the write merged (1: none but this one). */
  readonly requests: number;
  /** This request was the burst's first (the one audited). */
  readonly first: boolean;
}

/** Writes the merged settings; never rejects. */
export type BurstWrite = (settings: Readonly<Record<string, unknown>>) => Promise<WriteResult>;

interface Pending {
  settings: Record<string, unknown>;
  /** The latest request's write (its target as the latest snapshot has it). */
  write: BurstWrite;
  readonly waiters: ((outcome: BurstResult) => void)[];
}

interface Target {
  /** When its last write started (epoch ms). */
  lastStart: number;
  running: boolean;
  pending: Pending | null;
  timer: NodeJS.Timeout | undefined;
}

export class SettingsBursts {
  readonly #targets = new Map<string, Target>();
  readonly #gapMs: number;

  constructor(gapMs = SETTINGS_GAP_MS) {
    this.#gapMs = gapMs;
  }

  /** Targets followed now (written in the last gap, or with a write pending). */
  get size(): number {
    return this.#targets.size;
  }

  /** Adds `settings` to the target's next write; resolves with that write's result. */
  submit(key: string, settings: Readonly<Record<string, unknown>>, write: BurstWrite): Promise<BurstResult> {
    let target = this.#targets.get(key);
    if (target === undefined) {
      target = { lastStart: -Infinity, running: false, pending: null, timer: undefined };
      this.#targets.set(key, target);
    }
    const pending = target.pending ?? { settings: {}, write, waiters: [] };
    target.pending = pending;
    Object.assign(pending.settings, settings);
    pending.write = write;
    const answer = new Promise<BurstResult>((resolve) => pending.waiters.push(resolve));
    this.#schedule(key, target);
    return answer;
  }

  /** Runs the pending write now if the gap has passed, else once it has (or once the running one ends). */
  #schedule(key: string, target: Target): void {
    if (target.running || target.pending === null) return;
    if (target.timer !== undefined) clearTimeout(target.timer);
    target.timer = undefined;
    const wait = target.lastStart + this.#gapMs - Date.now();
    if (wait <= 0) {
      this.#run(key, target);
      return;
    }
    target.timer = setTimeout(() => {
      target.timer = undefined;
      this.#run(key, target);
    }, wait);
  }

  #run(key: string, target: Target): void {
    const pending = target.pending;
    if (pending === null) return;
    target.pending = null;
    target.running = true;
    target.lastStart = Date.now();
    const settings = Object.freeze({ ...pending.settings });
    void pending.write(settings).then(
      (result) => this.#done(key, target, pending, { result, settings }),
      (error: unknown) => {
        const failed: WriteResult = { ok: false, kind: "failed", error: String(error) };
        this.#done(key, target, pending, { result: failed, settings });
      },
    );
  }

  #done(
    key: string,
    target: Target,
    pending: Pending,
    written: Pick<BurstResult, "result" | "settings">,
  ): void {
    target.running = false;
    const requests = pending.waiters.length;
    pending.waiters.forEach((resolve, i) => resolve({ ...written, requests, first: i === 0 }));
    if (target.pending !== null) {
      this.#schedule(key, target);
      return;
    }
    // Forget the target once its gap has passed with nothing pending.
    const left = target.lastStart + this.#gapMs - Date.now();
    target.timer = setTimeout(
      () => {
        target.timer = undefined;
        if (target.pending === null && !target.running) this.#targets.delete(key);
        else this.#schedule(key, target);
      },
      Math.max(0, left),
    );
    target.timer.unref();
  }
}
