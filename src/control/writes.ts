/**
 * The writes themselves: each in its outlet's turn (./outlet-turns.ts), tracked in flight for the
 * stop (./stopping.ts); after an on/off the commanded state latched in the store (or the latch
 * dropped when the write failed), within the turn, so the store ends with the state of the last
 * command written; and one early poll once the PDU may have acted (docs/control.md, "What the core
 * does"). Among several replicas every driver call goes behind the cluster's fence: its grant first,
 * the start check right before the call, the call cut at the grant's end (docs/cluster.md).
 */
import { randomBytes } from "node:crypto";
import { FencingError } from "../fencing.js";
import type { Logger } from "../log.js";
import type { OutletTarget } from "../pdu/driver.js";
import type { SnapshotStore } from "../poller/store.js";
import type { CommandDriver, CommandRow } from "./commands.js";
import {
  DEFAULT_REBOOT_DELAY_S,
  MIN_REBOOT_HOLD_S,
  type OutletTurns,
  type TurnRules,
} from "./outlet-turns.js";
import {
  failureOf,
  fenceRefusal,
  mayHaveActed,
  notSent,
  outletName,
  STOPPED,
  type WriteResult,
  type Written,
} from "./outcomes.js";
import type { WritesInFlight } from "./stopping.js";
import { outletKey, type PlannedOutlet } from "./targets.js";
import type { WriteFence, WriteGrant } from "./types.js";

/** Member outlets of a group written at the same time. */
export const GROUP_CONCURRENCY = 8;
/** Delay of the early poll requested after a write (ms): the PDU has acted by then. */
export const REPOLL_DELAY_MS = 1000;
/** A caller's command id (ControlRequest.commandId): room is left for the per-outlet suffix. */
export const COMMAND_ID_PATTERN = /^[A-Za-z0-9_-]{1,48}$/;

export interface WriterDeps {
  readonly store: SnapshotStore;
  pollSoon(instanceId: string, delayMs?: number): void;
  readonly logger: Logger;
  /**
   * Among several replicas: the grant every PDU write waits for (the cluster's fencing,
   * docs/cluster.md); reboot and resetStats pass their once-only id. Absent: one process, no fence.
   */
  readonly fence?: WriteFence;
}

/** What a fenced write records with its grant: a once-only id, a reboot hold. */
interface FenceRecord {
  readonly onceId?: string | undefined;
  readonly hold?: { readonly key: string; readonly ms: number } | undefined;
}

/** An outlet's reboot hold (ms), as the outlet's turns count it (./outlet-turns.ts). */
const rebootHoldMs = (rebootDelayS: number | null): number =>
  Math.max(MIN_REBOOT_HOLD_S, rebootDelayS ?? DEFAULT_REBOOT_DELAY_S) * 1000;

export class Writer {
  readonly #deps: WriterDeps;
  readonly #turns: OutletTurns;
  readonly #inFlight: WritesInFlight;

  constructor(deps: WriterDeps, turns: OutletTurns, inFlight: WritesInFlight) {
    this.#deps = deps;
    this.#turns = turns;
    this.#inFlight = inFlight;
  }

  /**
   * A command's writes, a group's members at most {@link GROUP_CONCURRENCY} at a time; in input
   * order. A reboot or resetStats (or any command with `once`: an asset's cord, a sequence's step)
   * gives each outlet write a once-only id `<commandId>-<k>` from the command's id (one is made when
   * it is absent or malformed), so the same command never runs twice.
   */
  writeCommand(
    instanceId: string,
    client: CommandDriver,
    targets: readonly PlannedOutlet[],
    row: CommandRow,
    options: {
      readonly commandId?: string | undefined;
      readonly once?: boolean;
      readonly relayIntervalMs: number;
    },
  ): Promise<Written[]> {
    const { commandId, relayIntervalMs } = options;
    const once = options.once === true || !row.idempotent;
    const id =
      commandId !== undefined && COMMAND_ID_PATTERN.test(commandId)
        ? commandId
        : randomBytes(12).toString("base64url");
    const onceId = (k: number): string | undefined => (once ? `${id}-${k}` : undefined);
    return mapBounded([...targets.entries()], GROUP_CONCURRENCY, ([k, t]) =>
      this.#writeOutlet(instanceId, client, t, row, onceId(k), relayIntervalMs),
    );
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
    onceId: string | undefined,
    relayIntervalMs: number,
  ): Promise<Written> {
    const target: OutletTarget = { deviceId: planned.deviceId, index: planned.index, route: planned.route };
    const key = outletKey(instanceId, target.deviceId, target.index);
    const turn = await this.#turns.acquire(key, row, planned.rebootDelay, relayIntervalMs);
    if (!turn.ok) return { target, ok: false, ...notSent(turn) };
    // Among several replicas the reboot hold is recorded with the bucket's lease too, where the
    // next holder reads it (docs/cluster.md, "The reboot hold").
    const hold = row.oncePerRebootDelay ? { key, ms: rebootHoldMs(planned.rebootDelay) } : undefined;
    let result: Written | undefined;
    try {
      result = await this.#inFlight.track(this.#send(instanceId, client, target, row, { onceId, hold }));
      if (row.latches !== null) this.#latch(instanceId, target, row.latches, result);
      return result;
    } finally {
      // A write that may have reached the PDU starts the outlet's reboot delay hold and its relay
      // protection (./outlet-turns.ts).
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

  async #send(
    instanceId: string,
    client: CommandDriver,
    target: OutletTarget,
    row: CommandRow,
    record: FenceRecord,
  ): Promise<Written> {
    if (this.#inFlight.stopping) return { target, ok: false, ...STOPPED };
    const result = await this.#fenced(instanceId, record, (signal) => row.call(client, target, signal));
    if (!result.ok) {
      this.#deps.logger.debug(
        { outlet: outletName(target), action: row.name, error: result.error },
        "control: write failed",
      );
    }
    return { target, ...result };
  }

  /** One write to instance `instanceId` in the turn of `key`, fenced and tracked in flight; never rejects. */
  async inTurn(
    instanceId: string,
    key: string,
    rules: TurnRules,
    send: (signal: AbortSignal) => Promise<void>,
  ): Promise<WriteResult> {
    const turn = await this.#turns.acquire(key, rules, null);
    if (!turn.ok) return { ok: false, ...notSent(turn) };
    try {
      if (this.#inFlight.stopping) return { ok: false, ...STOPPED };
      const writing = this.#fenced(instanceId, {}, send).then((result) => {
        if (!result.ok) {
          this.#deps.logger.debug({ key, action: rules.name, error: result.error }, "control: write failed");
        }
        return result;
      });
      return await this.#inFlight.track(writing);
    } finally {
      turn.release(false);
    }
  }

  /**
   * One driver call behind the fence (among several replicas): the grant first (a conditional
   * renewal of the instance's lease, recording the once-only id), its start check right before the
   * call, the call aborted by a stop or by the grant's end. Without a fence, the call alone. Never
   * rejects.
   */
  async #fenced(
    instanceId: string,
    record: FenceRecord,
    send: (signal: AbortSignal) => Promise<void>,
  ): Promise<WriteResult> {
    const fence = this.#deps.fence;
    let grant: WriteGrant | null = null;
    if (fence !== undefined) {
      try {
        grant = await fence.beforeWrite(instanceId, {
          ...(record.onceId === undefined ? {} : { onceId: record.onceId }),
          ...(record.hold === undefined ? {} : { hold: record.hold }),
        });
      } catch (e) {
        return { ok: false, ...fenceRefusal(e) };
      }
    }
    let signal = this.#inFlight.signal;
    try {
      if (grant !== null) {
        grant.assertMayStart();
        signal = AbortSignal.any([signal, grant.signal]);
      }
      await send(signal);
      return { ok: true };
    } catch (e) {
      if (e instanceof FencingError) return { ok: false, ...fenceRefusal(e) };
      return { ok: false, ...failureOf(e, signal) };
    } finally {
      grant?.done();
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
