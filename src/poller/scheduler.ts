/**
 * One scheduler for every instance: a single timer armed for the earliest due poll, a min-heap of
 * due times, each instance at its own interval, never two polls of one instance at once.
 *
 * Cadence is fixed-rate: the next poll is due one interval after the previous was *due*, not after
 * it finished, so a slow PDU does not drift and a healthy one keeps its rhythm. A poll still running
 * when its next turn comes makes that turn be skipped (counted), not queued. First polls are spread
 * over each instance's interval, at most FIRST_POLL_SPREAD_MS, so 500 instances do not fire together
 * and none waits long for its first snapshot (control answers 503 until then); a fleet so large that
 * this would start more than FIRST_POLLS_PER_S polls a second spreads them over up to its interval.
 * From its second poll on, each instance keeps its own phase, spread evenly over its whole interval
 * ({@link steadyPhase}): a fleet polled every minute whose first polls came within 10 s would
 * otherwise poll in a 10 s burst every minute and idle for the rest of it.
 *
 * A part of the service (src/lifecycle.ts): it records each poll's outcome in the store, tells the
 * bus `pollDone`, and listens to `configApplied` (poll intervals), `pollSoon` (a write wants its
 * outcome polled) and `ownershipChanged` (an instance taken over is polled at once). It polls only
 * the instances its {@link Ownership} owns at each turn; an instance it does not own keeps its
 * cadence without being polled.
 */
import type { EventBus } from "../bus.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import { SnapshotBounds } from "../pdu/bounds.js";
import { describeError } from "../pdu/errors.js";
import type { Snapshot } from "../pdu/model.js";
import type { SnapshotStore } from "./store.js";
import { ParseWarningLog } from "./warnings.js";

/** First polls are spread over the interval, but over no more than this... */
export const FIRST_POLL_SPREAD_MS = 10_000;
/**
 * ...unless that would start more first polls a second than this: a first poll costs several times
 * a later one (every topic and Home Assistant config of the PDU is made and sent), so a large fleet
 * first polled all at once peaks far above the memory of one whose first polls are spread
 * (docs/performance.md, "Measurements behind the code").
 */
export const FIRST_POLLS_PER_S = 100;

/** When (ms after start) the `i`-th of `count` instances is first polled, given its interval. */
export function firstPollOffset(
  i: number,
  count: number,
  intervalMs: number,
  spreadMs = FIRST_POLL_SPREAD_MS,
): number {
  const spread = Math.max(spreadMs, (count * 1000) / FIRST_POLLS_PER_S);
  return Math.floor((Math.min(intervalMs, spread) * i) / count);
}

/**
 * The phase (ms after start, modulo its interval) the `i`-th of `count` instances is polled at from
 * its second poll on: the fleet evenly over the interval. Never before its first poll's offset.
 */
export function steadyPhase(i: number, count: number, intervalMs: number): number {
  return Math.floor((intervalMs * i) / count);
}

export interface PollTarget {
  readonly id: string;
  readonly intervalMs: number;
  poll(signal: AbortSignal): Promise<Snapshot>;
}

export interface PollerOptions {
  logger: Logger;
  /** Told `pollDone` of every poll that finished (succeeded or failed, not aborted); heard from. */
  bus: EventBus;
  /** Which instances to poll at each turn; default all. */
  ownership?: Ownership;
  now?: () => number;
  /** Over how long at most the first polls are spread (ms); default {@link FIRST_POLL_SPREAD_MS}. */
  firstPollSpreadMs?: number;
}

interface Slot {
  target: PollTarget;
  /** The bounds on what the instance's PDU sends (src/pdu/bounds.ts), applied to every snapshot. */
  readonly bounds: SnapshotBounds;
  intervalMs: number;
  due: number;
  /**
   * Until the poll after the first: a time on the grid of the instance's steady phase (start +
   * {@link steadyPhase}) at its interval then; null once the instance keeps it, or when its
   * interval changed.
   */
  settle: { readonly at: number; readonly intervalMs: number } | null;
  inFlight: Promise<void> | null;
  /** Set by pollSoon: poll as soon as the current poll (if any) is done. */
  soon: boolean;
  skipped: number;
  /** Position in the heap, -1 when not queued. */
  heapIndex: number;
}

export class Poller {
  readonly name = "poller";
  readonly #slots = new Map<string, Slot>();
  readonly #heap: Slot[] = [];
  readonly #store: SnapshotStore;
  readonly #logger: Logger;
  readonly #warnings: ParseWarningLog;
  readonly #now: () => number;
  readonly #bus: EventBus;
  readonly #ownership: Ownership;
  readonly #abort = new AbortController();
  readonly #firstPollSpreadMs: number;
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  #running = false;

  constructor(targets: readonly PollTarget[], store: SnapshotStore, options: PollerOptions) {
    this.#store = store;
    this.#logger = options.logger;
    this.#warnings = new ParseWarningLog(options.logger);
    this.#now = options.now ?? Date.now;
    this.#bus = options.bus;
    this.#ownership = options.ownership ?? OWN_ALL;
    this.#firstPollSpreadMs = options.firstPollSpreadMs ?? FIRST_POLL_SPREAD_MS;
    for (const target of targets) {
      this.#slots.set(target.id, {
        target,
        bounds: new SnapshotBounds(),
        intervalMs: target.intervalMs,
        due: 0,
        settle: null,
        inFlight: null,
        soon: false,
        skipped: 0,
        heapIndex: -1,
      });
    }
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#bus.listen(this, {
      configApplied: ({ live }) => {
        for (const [id, seconds] of live.pollIntervals) this.setInterval(id, seconds * 1000);
      },
      pollSoon: ({ instanceId, delayMs }) => this.pollSoon(instanceId, delayMs),
      ownershipChanged: ({ gained }) => {
        for (const id of gained) this.pollSoon(id);
      },
    });
    const start = this.#now();
    const slots = [...this.#slots.values()];
    slots.forEach((slot, i) => {
      slot.due = start + firstPollOffset(i, slots.length, slot.intervalMs, this.#firstPollSpreadMs);
      slot.settle = {
        at: start + steadyPhase(i, slots.length, slot.intervalMs),
        intervalMs: slot.intervalMs,
      };
      this.#push(slot);
    });
    this.#arm();
  }

  /** Abort in-flight polls and wait for them to settle. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
    await Promise.allSettled([...this.#slots.values()].flatMap((s) => (s.inFlight ? [s.inFlight] : [])));
  }

  /** Poll this instance as soon as possible (e.g. after a command), without breaking its cadence. */
  pollSoon(id: string, delayMs = 0): void {
    const slot = this.#slots.get(id);
    if (!slot || !this.#running) return;
    if (slot.inFlight) {
      slot.soon = true;
      return;
    }
    const at = this.#now() + delayMs;
    if (at < slot.due) this.#reschedule(slot, at);
  }

  /** Change an instance's interval (configuration reload); takes effect from its next poll. */
  setInterval(id: string, intervalMs: number): void {
    const slot = this.#slots.get(id);
    if (!slot) return;
    slot.intervalMs = intervalMs;
    if (!slot.inFlight && this.#running) this.#reschedule(slot, Math.min(slot.due, this.#now() + intervalMs));
  }

  /** Polls skipped because the previous one was still running, per instance. */
  skippedPolls(id: string): number {
    return this.#slots.get(id)?.skipped ?? 0;
  }

  #tick(): void {
    this.#timer = null;
    this.#timerAt = Infinity;
    const now = this.#now();
    while (this.#heap.length > 0 && this.#heap[0]!.due <= now) {
      const slot = this.#pop();
      this.#run(slot, now);
    }
    this.#arm();
  }

  #run(slot: Slot, now: number): void {
    const scheduledFor = this.#settled(slot, slot.due);
    // Next turn one interval after this one was due; skip turns that are already past.
    const behind = Math.max(0, now - scheduledFor);
    slot.due = scheduledFor + slot.intervalMs * (Math.floor(behind / slot.intervalMs) + 1);
    if (slot.inFlight) {
      slot.skipped++;
      this.#push(slot);
      return;
    }
    // Another process polls it now: its turn passes, its cadence stays.
    if (!this.#ownership.owns(slot.target.id)) {
      this.#push(slot);
      return;
    }
    slot.inFlight = this.#pollOnce(slot).finally(() => {
      slot.inFlight = null;
      if (!this.#running) return;
      if (slot.soon) {
        slot.soon = false;
        this.#reschedule(slot, this.#now());
      }
    });
    this.#push(slot);
  }

  /**
   * The turn the next is counted from: `due` itself, or, at the instance's first turn, the point of
   * its steady phase's grid one interval before the first one at least half an interval after
   * `due` (so its second poll comes half an interval to one and a half after its first).
   */
  #settled(slot: Slot, due: number): number {
    const settle = slot.settle;
    slot.settle = null;
    if (settle === null || settle.intervalMs !== slot.intervalMs) return due;
    const interval = slot.intervalMs;
    const next = settle.at + interval * Math.ceil((due + interval / 2 - settle.at) / interval);
    return next - interval;
  }

  async #pollOnce(slot: Slot): Promise<void> {
    const id = slot.target.id;
    const started = this.#now();
    try {
      const polled = await slot.target.poll(this.#abort.signal);
      if (!this.#running && this.#abort.signal.aborted) return;
      // Where a driver's snapshot enters the service: over a bound, parts are left out or the
      // answer is refused (thrown, a failed poll like any other).
      const snapshot = slot.bounds.apply(polled);
      this.#bus.emit("pollDone", { instanceId: id, ms: this.#now() - started });
      this.#store.recordSuccess(id, snapshot);
      this.#warnings.note(id, snapshot);
      this.#logger.debug({ instance: id, ms: this.#now() - started }, "poll ok");
    } catch (error) {
      if (this.#abort.signal.aborted) return;
      this.#bus.emit("pollDone", { instanceId: id, ms: this.#now() - started });
      const before = this.#store.get(id)?.consecutiveFailures ?? 0;
      this.#store.recordFailure(id, error);
      // Log the first failure of a run at warn, the rest at debug, so a dead PDU does not flood the log.
      const level = before === 0 ? "warn" : "debug";
      this.#logger[level]({ instance: id, error: describeError(error), failures: before + 1 }, "poll failed");
    }
  }

  #arm(): void {
    if (!this.#running || this.#heap.length === 0) return;
    const next = this.#heap[0]!.due;
    if (this.#timer && next >= this.#timerAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = next;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, next - this.#now()));
  }

  #reschedule(slot: Slot, due: number): void {
    if (slot.heapIndex >= 0) this.#remove(slot);
    slot.due = due;
    this.#push(slot);
    this.#arm();
  }

  // --- binary min-heap on `due` -------------------------------------------------------------

  #push(slot: Slot): void {
    slot.heapIndex = this.#heap.length;
    this.#heap.push(slot);
    this.#up(slot.heapIndex);
  }

  #pop(): Slot {
    const top = this.#heap[0]!;
    this.#remove(top);
    return top;
  }

  #remove(slot: Slot): void {
    const i = slot.heapIndex;
    const last = this.#heap.pop()!;
    slot.heapIndex = -1;
    if (last === slot) return;
    this.#heap[i] = last;
    last.heapIndex = i;
    this.#down(i);
    this.#up(i);
  }

  #up(i: number): void {
    const heap = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.due <= heap[i]!.due) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let min = i;
      if (l < heap.length && heap[l]!.due < heap[min]!.due) min = l;
      if (r < heap.length && heap[r]!.due < heap[min]!.due) min = r;
      if (min === i) return;
      this.#swap(i, min);
      i = min;
    }
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap;
    const sa = heap[a]!;
    const sb = heap[b]!;
    heap[a] = sb;
    heap[b] = sa;
    sa.heapIndex = b;
    sb.heapIndex = a;
  }
}
