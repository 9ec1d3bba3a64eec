/**
 * The writes themselves: each in its outlet's turn (./outlet-turns.ts), tracked in flight for the
 * stop (./stopping.ts); after an on/off the commanded state latched in the store (or the latch
 * dropped when the write failed), within the turn, so the store ends with the state of the last
 * command written; and one early poll once the PDU may have acted (docs/control.md, "What the core
 * does").
 */
import type { Logger } from "../log.js";
import type { OutletTarget } from "../pdu/driver.js";
import { describeError } from "../pdu/errors.js";
import type { SnapshotStore } from "../poller/store.js";
import type { CommandDriver, CommandRow } from "./commands.js";
import type { OutletTurns, TurnRules } from "./outlet-turns.js";
import {
  failureOf,
  mayHaveActed,
  notSent,
  outletName,
  STOPPED,
  type WriteResult,
  type Written,
} from "./outcomes.js";
import type { WritesInFlight } from "./stopping.js";
import { outletKey, type PlannedOutlet } from "./targets.js";

/** Member outlets of a group written at the same time. */
export const GROUP_CONCURRENCY = 8;
/** Delay of the early poll requested after a write (ms): the PDU has acted by then. */
export const REPOLL_DELAY_MS = 1000;

export interface WriterDeps {
  readonly store: SnapshotStore;
  pollSoon(instanceId: string, delayMs?: number): void;
  readonly logger: Logger;
}

export class Writer {
  readonly #deps: WriterDeps;
  readonly #turns: OutletTurns;
  readonly #inFlight: WritesInFlight;

  constructor(deps: WriterDeps, turns: OutletTurns, inFlight: WritesInFlight) {
    this.#deps = deps;
    this.#turns = turns;
    this.#inFlight = inFlight;
  }

  /** A command's writes, a group's members at most {@link GROUP_CONCURRENCY} at a time; in input order. */
  writeCommand(
    instanceId: string,
    client: CommandDriver,
    targets: readonly PlannedOutlet[],
    row: CommandRow,
  ): Promise<Written[]> {
    return mapBounded(targets, GROUP_CONCURRENCY, (t) => this.#writeOutlet(instanceId, client, t, row));
  }

  /** One early poll of the instance when the PDU may have acted on a write, unless stopping. */
  repollAfter(instanceId: string, results: readonly WriteResult[]): void {
    if (mayHaveActed(results) && !this.#inFlight.stopping) this.#deps.pollSoon(instanceId, REPOLL_DELAY_MS);
  }

  /**
   * One outlet's write in that outlet's turn. The latch (or its removal, after a failed on/off)
   * happens within the turn too, so the store ends with the state of the last command written.
   */
  async #writeOutlet(
    instanceId: string,
    client: CommandDriver,
    planned: PlannedOutlet,
    row: CommandRow,
  ): Promise<Written> {
    const target: OutletTarget = { deviceId: planned.deviceId, index: planned.index, route: planned.route };
    const key = outletKey(instanceId, target.deviceId, target.index);
    const turn = await this.#turns.acquire(key, row, planned.rebootDelay);
    if (!turn.ok) return { target, ok: false, ...notSent(turn) };
    let result: Written | undefined;
    try {
      result = await this.#inFlight.track(this.#send(client, target, row));
      if (row.latches !== null) this.#latch(instanceId, target, row.latches, result);
      return result;
    } finally {
      // A write that may have reached the PDU starts the outlet's reboot delay hold (./outlet-turns.ts).
      turn.release(
        result === undefined || result.ok || result.kind === "unknown" || result.kind === "timeout",
      );
    }
  }

  /** After an on/off: the commanded state latched when it was written, else the PDU's report shown. */
  #latch(instanceId: string, target: OutletTarget, state: "on" | "off", result: Written): void {
    const store = this.#deps.store;
    if (result.ok) store.latch(instanceId, target.deviceId, target.index, state);
    // The write may or may not have happened: show what the PDU reports, not an older command.
    else if (result.kind !== "stopped") store.unlatch(instanceId, target.deviceId, target.index);
  }

  async #send(client: CommandDriver, target: OutletTarget, row: CommandRow): Promise<Written> {
    if (this.#inFlight.stopping) return { target, ok: false, ...STOPPED };
    const signal = this.#inFlight.signal;
    try {
      await row.call(client, target, signal);
      return { target, ok: true };
    } catch (e) {
      this.#deps.logger.debug(
        { outlet: outletName(target), action: row.name, error: describeError(e) },
        "control: write failed",
      );
      return { target, ok: false, ...failureOf(e, signal) };
    }
  }

  /** One write in the turn of `key`, tracked in flight; never rejects. */
  async inTurn(
    key: string,
    rules: TurnRules,
    send: (signal: AbortSignal) => Promise<void>,
  ): Promise<WriteResult> {
    const turn = await this.#turns.acquire(key, rules, null);
    if (!turn.ok) return { ok: false, ...notSent(turn) };
    try {
      if (this.#inFlight.stopping) return { ok: false, ...STOPPED };
      const signal = this.#inFlight.signal;
      const writing = send(signal).then(
        () => ({ ok: true }) as const,
        (e: unknown) => {
          this.#deps.logger.debug(
            { key, action: rules.name, error: describeError(e) },
            "control: write failed",
          );
          return { ok: false, ...failureOf(e, signal) } as const;
        },
      );
      return await this.#inFlight.track(writing);
    } finally {
      turn.release(false);
    }
  }
}

/** Runs `fn` over `items`, at most `limit` at a time; results in input order. `fn` must not reject. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  const queue = items.entries();
  const worker = async (): Promise<void> => {
    // Every worker pulls from the same iterator, so each item is taken exactly once.
    for (const [i, item] of queue) results[i] = await fn(item);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
