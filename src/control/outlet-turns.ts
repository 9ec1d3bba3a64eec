/**
 * Per-outlet command discipline (docs/control.md): for each outlet (instance, device, index) at
 * most one command executes and at most one waits.
 *
 * - Nothing executing: the command starts at once.
 * - Something executing, nothing waiting: the command waits. A waiting command older than
 *   {@link WAIT_LIMIT_MS} is dropped (`expired`, 503), so a slow PDU never executes stale commands.
 * - Something executing and something waiting: a newer `on`/`off` takes the waiting one's place
 *   (that one ends `superseded`, 409): the last state asked for is the one that is written. Any
 *   other newer command is refused (`busy`, 409).
 * - A `reboot` while a reboot of the same outlet executes, waits, or was sent less than its reboot
 *   delay ago is refused (`busy`, 409): a flood of reboot commands reaches the PDU as one reboot.
 * - Stopping: waiting commands end `stopped` (never sent), new ones are refused.
 *
 * Memory: one entry per outlet with a command executing or waiting (outlets that are in a snapshot,
 * so bounded by what the PDUs report), plus one timestamp per outlet rebooted within its delay,
 * pruned as they pass and capped at {@link REBOOT_MEMORY_MAX}.
 */
import type { OutletControlAction } from "./types.js";

/** A command of the table, or `set`: a settings write (label, delays, power-on action). */
export type DisciplineAction = OutletControlAction | "set";

/** A waiting command older than this is dropped with 503 (ms). */
export const WAIT_LIMIT_MS = 30_000;
/** Reboot delay assumed when the PDU does not report the outlet's (s). */
export const DEFAULT_REBOOT_DELAY_S = 5;
/** The shortest time a second reboot of one outlet is refused after the first was sent (s). */
export const MIN_REBOOT_HOLD_S = 2;
/** Outlets remembered as rebooting at most (oldest forgotten first). */
export const REBOOT_MEMORY_MAX = 100_000;

/** Why a command did not get its turn. */
export type Refused =
  | { readonly kind: "superseded" }
  | { readonly kind: "expired"; readonly waitedMs: number }
  | { readonly kind: "busy"; readonly reason: string }
  | { readonly kind: "stopped" };

/** Ends a command's turn; `rebootSent`: a reboot that may have reached the PDU (starts its hold). */
export type Release = (rebootSent: boolean) => void;

export type Turn = { readonly ok: true; readonly release: Release } | ({ readonly ok: false } & Refused);

interface Waiting {
  readonly action: DisciplineAction;
  readonly since: number;
  readonly rebootHoldMs: number;
  readonly resolve: (turn: Turn) => void;
  readonly timer: NodeJS.Timeout;
}

interface OutletSlot {
  running: { readonly action: DisciplineAction; readonly rebootHoldMs: number } | null;
  waiting: Waiting | null;
}

export interface DisciplineOptions {
  readonly waitLimitMs?: number;
  readonly now?: () => number;
}

export class OutletDiscipline {
  readonly #slots = new Map<string, OutletSlot>();
  /** outlet key -> until when a new reboot is refused (epoch ms) */
  readonly #rebootUntil = new Map<string, number>();
  readonly #waitLimitMs: number;
  readonly #now: () => number;
  #stopped = false;

  constructor(options: DisciplineOptions = {}) {
    this.#waitLimitMs = options.waitLimitMs ?? WAIT_LIMIT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Outlets with a command executing or waiting. */
  get size(): number {
    return this.#slots.size;
  }

  /** Commands executing now. */
  get running(): number {
    let n = 0;
    for (const slot of this.#slots.values()) if (slot.running !== null) n++;
    return n;
  }

  /**
   * Asks for `key`'s turn for `action`. Resolves with a release to call once the write ended, or
   * with why the command must not be sent. `rebootDelayS`: the outlet's reboot delay, if known.
   */
  acquire(key: string, action: DisciplineAction, rebootDelayS: number | null): Promise<Turn> {
    if (this.#stopped) return Promise.resolve({ ok: false, kind: "stopped" });
    const now = this.#now();
    const slot = this.#slots.get(key) ?? { running: null, waiting: null };
    const rebootHoldMs = Math.max(MIN_REBOOT_HOLD_S, rebootDelayS ?? DEFAULT_REBOOT_DELAY_S) * 1000;
    if (action === "reboot") {
      const busy = this.#rebootBusy(key, slot, now);
      if (busy !== null) return Promise.resolve({ ok: false, kind: "busy", reason: busy });
    }
    if (slot.running === null) {
      slot.running = { action, rebootHoldMs };
      this.#slots.set(key, slot);
      return Promise.resolve({ ok: true, release: this.#releaser(key, slot) });
    }
    const waiting = slot.waiting;
    if (waiting !== null) {
      if (action !== "on" && action !== "off") {
        return Promise.resolve({
          ok: false,
          kind: "busy",
          reason: `a ${waiting.action} of this outlet is already waiting behind a ${slot.running.action}`,
        });
      }
      clearTimeout(waiting.timer);
      slot.waiting = null;
      waiting.resolve({ ok: false, kind: "superseded" });
    }
    return new Promise<Turn>((resolve) => {
      const timer = setTimeout(() => {
        if (slot.waiting?.timer !== timer) return;
        slot.waiting = null;
        resolve({ ok: false, kind: "expired", waitedMs: this.#now() - now });
      }, this.#waitLimitMs);
      slot.waiting = { action, since: now, rebootHoldMs, resolve, timer };
    });
  }

  /** Refuses new commands and ends every waiting one as `stopped`; executing ones go on. */
  stop(): void {
    this.#stopped = true;
    for (const slot of this.#slots.values()) {
      const waiting = slot.waiting;
      if (waiting === null) continue;
      clearTimeout(waiting.timer);
      slot.waiting = null;
      waiting.resolve({ ok: false, kind: "stopped" });
    }
  }

  #rebootBusy(key: string, slot: OutletSlot, now: number): string | null {
    if (slot.running?.action === "reboot") return "a reboot of this outlet is running";
    if (slot.waiting?.action === "reboot") return "a reboot of this outlet is already waiting";
    const until = this.#rebootUntil.get(key);
    if (until === undefined) return null;
    if (until <= now) {
      this.#rebootUntil.delete(key);
      return null;
    }
    return `this outlet was rebooted less than its reboot delay ago (${Math.ceil((until - now) / 1000)} s left)`;
  }

  #releaser(key: string, slot: OutletSlot): Release {
    let released = false;
    return (rebootSent: boolean) => {
      if (released) return;
      released = true;
      const running = slot.running;
      if (running?.action === "reboot" && rebootSent) this.#holdReboot(key, running.rebootHoldMs);
      const next = slot.waiting;
      slot.waiting = null;
      if (next === null || this.#stopped) {
        slot.running = null;
        this.#slots.delete(key);
        return;
      }
      clearTimeout(next.timer);
      if (next.action === "reboot") {
        const busy = this.#rebootBusy(key, { running: null, waiting: null }, this.#now());
        if (busy !== null) {
          slot.running = null;
          this.#slots.delete(key);
          next.resolve({ ok: false, kind: "busy", reason: busy });
          return;
        }
      }
      slot.running = { action: next.action, rebootHoldMs: next.rebootHoldMs };
      next.resolve({ ok: true, release: this.#releaser(key, slot) });
    };
  }

  #holdReboot(key: string, holdMs: number): void {
    const now = this.#now();
    if (this.#rebootUntil.size >= REBOOT_MEMORY_MAX) {
      for (const [k, until] of this.#rebootUntil) if (until <= now) this.#rebootUntil.delete(k);
      if (this.#rebootUntil.size >= REBOOT_MEMORY_MAX) {
        const oldest = this.#rebootUntil.keys().next();
        if (oldest.done !== true) this.#rebootUntil.delete(oldest.value);
      }
    }
    this.#rebootUntil.delete(key);
    this.#rebootUntil.set(key, now + holdMs);
  }
}
