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
 * - Relay protection: a write that `switchesRelay` less than the instance's `RelayProtection` after
 *   the last such write sent to the outlet is refused (`relay`, 409, saying when it may run), when
 *   it asks and when a waiting one's turn comes: however the commands alternate, the relay changes
 *   state at most once per interval.
 * - Stopping: waiting writes end `stopped` (never sent), new ones are refused.
 *
 * Memory: one entry per outlet with a write executing or waiting (outlets that are in a snapshot,
 * so bounded by what the PDUs report), plus one timestamp per outlet held within its reboot delay
 * and one per outlet within its relay protection, pruned as they pass and each capped at
 * {@link REBOOT_MEMORY_MAX}.
 */
import type { CommandRow } from "./commands.js";

/** How a write takes part in the turns: its name (for messages) and its rules. */
export type TurnRules = Pick<
  CommandRow,
  "name" | "supersedesWaiting" | "oncePerRebootDelay" | "switchesRelay"
>;

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
  /** Relay protection: the outlet switched `sinceMs` ago; a switch may run from `at` (epoch ms). */
  | { readonly kind: "relay"; readonly at: number; readonly sinceMs: number; readonly intervalMs: number }
  | { readonly kind: "stopped" };

/** Ends a write's turn; `sent`: the write may have reached the PDU (starts a reboot delay's hold). */
export type Release = (sent: boolean) => void;

export type Turn = { readonly ok: true; readonly release: Release } | ({ readonly ok: false } & Refused);

/** A write in an outlet's turn: its rules and how long it holds the outlet once sent (ms). */
interface TurnHolder {
  readonly rules: TurnRules;
  readonly rebootHoldMs: number;
  /** The relay protection of the outlet's instance (ms; 0: none). */
  readonly relayIntervalMs: number;
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
  /** outlet key -> when its relay last switched and the protection then in force (epoch ms, ms) */
  readonly #switched = new Map<string, { at: number; intervalMs: number }>();
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
   * ended, or with why it must not be sent. `rebootDelayS`: the outlet's reboot delay, if known;
   * `relayIntervalMs`: the relay protection of the outlet's instance (0: none).
   */
  acquire(key: string, rules: TurnRules, rebootDelayS: number | null, relayIntervalMs = 0): Promise<Turn> {
    if (this.#stopped) return Promise.resolve({ ok: false, kind: "stopped" });
    const now = this.#now();
    const turn = this.#outlets.get(key) ?? { running: null, waiting: null };
    const rebootHoldMs = Math.max(MIN_REBOOT_HOLD_S, rebootDelayS ?? DEFAULT_REBOOT_DELAY_S) * 1000;
    const holder: TurnHolder = { rules, rebootHoldMs, relayIntervalMs };
    const refused = this.#refusal(key, turn, rules, relayIntervalMs, now);
    if (refused !== null) return Promise.resolve({ ok: false, ...refused });
    if (turn.running === null) {
      turn.running = holder;
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
    return this.#wait(turn, holder, now);
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
  #wait(turn: OutletTurn, holder: TurnHolder, since: number): Promise<Turn> {
    return new Promise<Turn>((resolve) => {
      const timer = setTimeout(() => {
        if (turn.waiting?.timer !== timer) return;
        turn.waiting = null;
        resolve({ ok: false, kind: "expired", waitedMs: this.#now() - since });
      }, this.#waitLimitMs);
      turn.waiting = { ...holder, since, resolve, timer };
    });
  }

  /**
   * Why a write with `rules` may not have the outlet's turn now (its reboot hold, its relay
   * protection), or null. `turn`: what runs and waits for the outlet (none at a handover).
   */
  #refusal(
    key: string,
    turn: OutletTurn,
    rules: TurnRules,
    relayIntervalMs: number,
    now: number,
  ): Refused | null {
    if (rules.oncePerRebootDelay) {
      const busy = this.#heldBy(key, turn, now);
      if (busy !== null) return { kind: "busy", reason: busy };
    }
    if (!rules.switchesRelay) return null;
    const last = this.#switched.get(key);
    if (last === undefined) return null;
    // The longer of the protection in force when it switched and the one in force now.
    const intervalMs = Math.max(last.intervalMs, relayIntervalMs);
    if (now - last.at >= intervalMs) {
      if (now - last.at >= last.intervalMs) this.#switched.delete(key);
      return null;
    }
    return { kind: "relay", at: last.at + intervalMs, sinceMs: now - last.at, intervalMs };
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
      if (running?.rules.switchesRelay === true && sent && running.relayIntervalMs > 0) {
        this.#switchedNow(key, running.relayIntervalMs);
      }
      const next = turn.waiting;
      turn.waiting = null;
      if (next === null || this.#stopped) {
        turn.running = null;
        this.#outlets.delete(key);
        return;
      }
      clearTimeout(next.timer);
      const idle = { running: null, waiting: null };
      const refused = this.#refusal(key, idle, next.rules, next.relayIntervalMs, this.#now());
      if (refused !== null) {
        turn.running = null;
        this.#outlets.delete(key);
        next.resolve({ ok: false, ...refused });
        return;
      }
      turn.running = {
        rules: next.rules,
        rebootHoldMs: next.rebootHoldMs,
        relayIntervalMs: next.relayIntervalMs,
      };
      next.resolve({ ok: true, release: this.#releaser(key, turn) });
    };
  }

  /** Refuses new `oncePerRebootDelay` writes of the outlet for `holdMs`. */
  #hold(key: string, holdMs: number): void {
    const now = this.#now();
    makeRoom(this.#heldUntil, (until) => until <= now);
    this.#heldUntil.delete(key);
    this.#heldUntil.set(key, now + holdMs);
  }

  /** The outlet's relay switched now: new switches are refused for `intervalMs`. */
  #switchedNow(key: string, intervalMs: number): void {
    const now = this.#now();
    makeRoom(this.#switched, (last) => now - last.at >= last.intervalMs);
    this.#switched.delete(key);
    this.#switched.set(key, { at: now, intervalMs });
  }
}

/**
 * Room for one more entry in a map capped at {@link REBOOT_MEMORY_MAX}: the entries that have
 * `passed` go first, then the oldest.
 */
function makeRoom<V>(map: Map<string, V>, passed: (value: V) => boolean): void {
  if (map.size < REBOOT_MEMORY_MAX) return;
  for (const [k, value] of map) if (passed(value)) map.delete(k);
  if (map.size < REBOOT_MEMORY_MAX) return;
  const oldest = map.keys().next();
  if (oldest.done !== true) map.delete(oldest.value);
}
