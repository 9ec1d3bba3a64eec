/**
 * The outlets' turns, the per-outlet command discipline of docs/control.md: for each outlet
 * (instance, device, index) at most one write executes and at most one waits. How a write takes
 * part is its rules: a command's row of the command table (./commands.ts: `supersedesWaiting`,
 * `oncePerRebootDelay`), or the settings write's (./settings.ts); this file names no command.
 *
 * - Nothing executing: the write starts at once.
 * - Something executing, nothing waiting: the write waits. A waiting write older than
 *   {@link WAIT_LIMIT_MS} is dropped (`expired`, 503), so a slow PDU never executes stale commands.
 * - Something executing and something waiting: a newer write that `supersedesWaiting` takes the
 *   waiting one's place (that one ends `superseded`, 409): the last state asked for is the one that
 *   is written. Any other newer write is refused (`busy`, 409).
 * - A write with `oncePerRebootDelay` while one with that rule executes, waits, or was sent less
 *   than the outlet's reboot delay ago is refused (`busy`, 409): a flood of reboot commands reaches
 *   the PDU as one reboot.
 * - Stopping: waiting writes end `stopped` (never sent), new ones are refused.
 *
 * Memory: one entry per outlet with a write executing or waiting (outlets that are in a snapshot,
 * so bounded by what the PDUs report), plus one timestamp per outlet held within its reboot delay,
 * pruned as they pass and capped at {@link REBOOT_MEMORY_MAX}.
 */
import type { CommandRow } from "./commands.js";

/** How a write takes part in the turns: its name (for messages) and its rules. */
export type TurnRules = Pick<CommandRow, "name" | "supersedesWaiting" | "oncePerRebootDelay">;

/** A waiting write older than this is dropped with 503 (ms). */
export const WAIT_LIMIT_MS = 30_000;
/** Reboot delay assumed when the PDU does not report the outlet's (s). */
export const DEFAULT_REBOOT_DELAY_S = 5;
/** The shortest time a second reboot of one outlet is refused after the first was sent (s). */
export const MIN_REBOOT_HOLD_S = 2;
/** Outlets remembered as within their reboot delay at most (oldest forgotten first). */
export const REBOOT_MEMORY_MAX = 100_000;

/** Why a write did not get its turn. */
export type Refused =
  | { readonly kind: "superseded" }
  | { readonly kind: "expired"; readonly waitedMs: number }
  | { readonly kind: "busy"; readonly reason: string }
  | { readonly kind: "stopped" };

/** Ends a write's turn; `sent`: the write may have reached the PDU (starts a reboot delay's hold). */
export type Release = (sent: boolean) => void;

export type Turn = { readonly ok: true; readonly release: Release } | ({ readonly ok: false } & Refused);

/** A write in an outlet's turn: its rules and how long it holds the outlet once sent (ms). */
interface TurnHolder {
  readonly rules: TurnRules;
  readonly rebootHoldMs: number;
}

interface Waiting extends TurnHolder {
  readonly since: number;
  readonly resolve: (turn: Turn) => void;
  readonly timer: NodeJS.Timeout;
}

interface OutletTurn {
  running: TurnHolder | null;
  waiting: Waiting | null;
}

export interface OutletTurnsOptions {
  readonly waitLimitMs?: number;
  readonly now?: () => number;
}

export class OutletTurns {
  readonly #outlets = new Map<string, OutletTurn>();
  /** outlet key -> until when a new `oncePerRebootDelay` write is refused (epoch ms) */
  readonly #heldUntil = new Map<string, number>();
  readonly #waitLimitMs: number;
  readonly #now: () => number;
  #stopped = false;

  constructor(options: OutletTurnsOptions = {}) {
    this.#waitLimitMs = options.waitLimitMs ?? WAIT_LIMIT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Outlets with a write executing or waiting. */
  get size(): number {
    return this.#outlets.size;
  }

  /** Writes executing now. */
  get running(): number {
    let n = 0;
    for (const turn of this.#outlets.values()) if (turn.running !== null) n++;
    return n;
  }

  /**
   * Asks for `key`'s turn for a write with `rules`. Resolves with a release to call once the write
   * ended, or with why it must not be sent. `rebootDelayS`: the outlet's reboot delay, if known.
   */
  acquire(key: string, rules: TurnRules, rebootDelayS: number | null): Promise<Turn> {
    if (this.#stopped) return Promise.resolve({ ok: false, kind: "stopped" });
    const now = this.#now();
    const turn = this.#outlets.get(key) ?? { running: null, waiting: null };
    const rebootHoldMs = Math.max(MIN_REBOOT_HOLD_S, rebootDelayS ?? DEFAULT_REBOOT_DELAY_S) * 1000;
    if (rules.oncePerRebootDelay) {
      const busy = this.#heldBy(key, turn, now);
      if (busy !== null) return Promise.resolve({ ok: false, kind: "busy", reason: busy });
    }
    if (turn.running === null) {
      turn.running = { rules, rebootHoldMs };
      this.#outlets.set(key, turn);
      return Promise.resolve({ ok: true, release: this.#releaser(key, turn) });
    }
    const waiting = turn.waiting;
    if (waiting !== null) {
      if (!rules.supersedesWaiting) {
        const reason = `a ${waiting.rules.name} of this outlet is already waiting behind a ${turn.running.rules.name}`;
        return Promise.resolve({ ok: false, kind: "busy", reason });
      }
      clearTimeout(waiting.timer);
      turn.waiting = null;
      waiting.resolve({ ok: false, kind: "superseded" });
    }
    return this.#wait(turn, rules, rebootHoldMs, now);
  }

  /** Refuses new writes and ends every waiting one as `stopped`; executing ones go on. */
  stop(): void {
    this.#stopped = true;
    for (const turn of this.#outlets.values()) {
      const waiting = turn.waiting;
      if (waiting === null) continue;
      clearTimeout(waiting.timer);
      turn.waiting = null;
      waiting.resolve({ ok: false, kind: "stopped" });
    }
  }

  /** Waits behind the running write, at most the wait limit. */
  #wait(turn: OutletTurn, rules: TurnRules, rebootHoldMs: number, since: number): Promise<Turn> {
    return new Promise<Turn>((resolve) => {
      const timer = setTimeout(() => {
        if (turn.waiting?.timer !== timer) return;
        turn.waiting = null;
        resolve({ ok: false, kind: "expired", waitedMs: this.#now() - since });
      }, this.#waitLimitMs);
      turn.waiting = { rules, rebootHoldMs, since, resolve, timer };
    });
  }

  /** Why a new `oncePerRebootDelay` write of the outlet is refused, or null. */
  #heldBy(key: string, turn: OutletTurn, now: number): string | null {
    const running = turn.running?.rules;
    if (running?.oncePerRebootDelay === true) return `a ${running.name} of this outlet is running`;
    const waiting = turn.waiting?.rules;
    if (waiting?.oncePerRebootDelay === true) return `a ${waiting.name} of this outlet is already waiting`;
    const until = this.#heldUntil.get(key);
    if (until === undefined) return null;
    if (until <= now) {
      this.#heldUntil.delete(key);
      return null;
    }
    return `this outlet was rebooted less than its reboot delay ago (${Math.ceil((until - now) / 1000)} s left)`;
  }

  /** The release of the running write: hands the turn to the waiting one, if any. */
  #releaser(key: string, turn: OutletTurn): Release {
    let released = false;
    return (sent: boolean) => {
      if (released) return;
      released = true;
      const running = turn.running;
      if (running?.rules.oncePerRebootDelay === true && sent) this.#hold(key, running.rebootHoldMs);
      const next = turn.waiting;
      turn.waiting = null;
      if (next === null || this.#stopped) {
        turn.running = null;
        this.#outlets.delete(key);
        return;
      }
      clearTimeout(next.timer);
      if (next.rules.oncePerRebootDelay) {
        const busy = this.#heldBy(key, { running: null, waiting: null }, this.#now());
        if (busy !== null) {
          turn.running = null;
          this.#outlets.delete(key);
          next.resolve({ ok: false, kind: "busy", reason: busy });
          return;
        }
      }
      turn.running = { rules: next.rules, rebootHoldMs: next.rebootHoldMs };
      next.resolve({ ok: true, release: this.#releaser(key, turn) });
    };
  }

  /** Refuses new `oncePerRebootDelay` writes of the outlet for `holdMs`. */
  #hold(key: string, holdMs: number): void {
    const now = this.#now();
    if (this.#heldUntil.size >= REBOOT_MEMORY_MAX) {
      for (const [k, until] of this.#heldUntil) if (until <= now) this.#heldUntil.delete(k);
      if (this.#heldUntil.size >= REBOOT_MEMORY_MAX) {
        const oldest = this.#heldUntil.keys().next();
        if (oldest.done !== true) this.#heldUntil.delete(oldest.value);
      }
    }
    this.#heldUntil.delete(key);
    this.#heldUntil.set(key, now + holdMs);
  }
}
