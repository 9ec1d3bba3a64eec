/**
 * Several replicas' coordination layers in one process, each with its own lease-store client (its
 * own connections to the engine), as the election tests need them: start and stop them, freeze one
 * (a paused or killed process), read who holds what, and watch the one invariant that matters:
 * never two replicas holding one bucket at the same instant.
 *
 * The monitor samples every replica's `holds` every few milliseconds on the shared clock and
 * records any bucket two of them hold at once; events are kept in one sequence across replicas.
 */
import { createClusterWithStore, type Cluster, type ClusterEvent } from "../src/cluster/index.js";
import type { LeaseStore } from "../src/cluster/store.js";
import { silentLogger, type Logger } from "../src/log.js";
import { sleep, waitFor } from "./wait.js";

export interface Timings {
  readonly LeaseDurationSeconds: number;
  readonly RenewDeadlineSeconds: number;
  readonly RetryPeriodSeconds: number;
}

/** Short leases for tests: a takeover in about 3 s. */
export const FAST: Timings = { LeaseDurationSeconds: 3, RenewDeadlineSeconds: 2, RetryPeriodSeconds: 0.5 };

export interface Replica {
  readonly name: string;
  readonly cluster: Cluster;
}

export interface SeenEvent {
  readonly seq: number;
  readonly member: string;
  readonly event: ClusterEvent;
}

export class Fleet {
  readonly buckets: number;
  readonly timings: Timings;
  readonly replicas = new Map<string, Replica>();
  /** Every event of every replica, in the order they happened. */
  readonly events: SeenEvent[] = [];
  /** Buckets seen held by two replicas at once (must stay empty). */
  readonly overlaps: string[] = [];
  readonly #makeStore: (name: string) => LeaseStore;
  readonly #logger: Logger;
  readonly #monitor: NodeJS.Timeout;
  #seq = 0;

  constructor(
    makeStore: (name: string) => LeaseStore,
    options: { buckets: number; timings?: Timings; logger?: Logger },
  ) {
    this.#makeStore = makeStore;
    this.buckets = options.buckets;
    this.timings = options.timings ?? FAST;
    this.#logger = options.logger ?? silentLogger();
    this.#monitor = setInterval(() => this.#check(), 5);
  }

  /** Starts a replica (ready unless told otherwise) and waits for its first round. */
  async add(name: string, options: { ready?: boolean; buckets?: number } = {}): Promise<Replica> {
    const cluster = createClusterWithStore(
      this.#makeStore(name),
      { MemberName: name, Buckets: options.buckets ?? this.buckets, ...this.timings },
      { logger: this.#logger.child({ replica: name }), ready: options.ready ?? true },
    );
    cluster.on((event) => this.events.push({ seq: ++this.#seq, member: name, event }));
    const replica = { name, cluster };
    this.replicas.set(name, replica);
    await cluster.start();
    return replica;
  }

  get(name: string): Cluster {
    const replica = this.replicas.get(name);
    if (replica === undefined) throw new Error(`no replica ${name}`);
    return replica.cluster;
  }

  /** Leaves cleanly (SIGTERM). */
  async stop(name: string): Promise<void> {
    const cluster = this.get(name);
    this.replicas.delete(name);
    await cluster.stop();
  }

  /**
   * Freezes a replica without releasing anything (a process killed or paused). It stays in the
   * monitor: what it would answer if it resumed must never overlap with another holder.
   */
  halt(name: string): void {
    this.get(name).halt();
  }

  /** Bucket → the replicas holding it now. */
  holders(): Map<number, string[]> {
    const map = new Map<number, string[]>();
    for (const { name, cluster } of this.replicas.values()) {
      for (const bucket of cluster.status().buckets) map.set(bucket, [...(map.get(bucket) ?? []), name]);
    }
    return map;
  }

  /** How many buckets each replica holds now. */
  counts(): Record<string, number> {
    return Object.fromEntries(
      [...this.replicas.values()].map((r) => [r.name, r.cluster.status().buckets.length]),
    );
  }

  /** Waits until every bucket is held, by the given replicas only, spread within one of even. */
  async waitBalanced(names: readonly string[], timeoutMs = 20_000): Promise<Record<string, number>> {
    return waitFor(
      () => {
        const holders = this.holders();
        if (holders.size !== this.buckets) return false;
        const counts = Object.fromEntries(names.map((n) => [n, 0]));
        for (const [, who] of holders) {
          if (who.length !== 1 || !(who[0]! in counts)) return false;
          counts[who[0]!]! += 1;
        }
        const values = Object.values(counts);
        if (Math.max(...values) - Math.min(...values) > 1) return false;
        return counts;
      },
      `every bucket held by ${names.join(", ")} within one of even (now ${JSON.stringify(this.counts())})`,
      timeoutMs,
    );
  }

  /**
   * Waits until the fleet is balanced ({@link waitBalanced}) and no bucket has changed hands for
   * `quietMs` (replicas that started together may still be handing a few buckets over when the
   * counts first look even).
   */
  async waitSettled(
    names: readonly string[],
    timeoutMs = 20_000,
    quietMs = 1500,
  ): Promise<Record<string, number>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const counts = await this.waitBalanced(names, Math.max(1000, deadline - Date.now()));
      const seq = this.#seq;
      await sleep(quietMs);
      if (this.#seq === seq) return counts;
      if (Date.now() > deadline) throw new Error(`the fleet did not settle within ${timeoutMs} ms`);
    }
  }

  /** Acquisitions since `seq` (each one a bucket that moved or was taken). */
  acquiredSince(seq: number): SeenEvent[] {
    return this.events.filter((e) => e.seq > seq && e.event.type === "acquired");
  }

  get lastSeq(): number {
    return this.#seq;
  }

  #check(): void {
    const seen = new Map<number, string>();
    for (const { name, cluster } of this.replicas.values()) {
      for (const bucket of cluster.status().buckets) {
        const other = seen.get(bucket);
        if (other !== undefined) this.overlaps.push(`bucket ${bucket} held by ${other} and ${name}`);
        seen.set(bucket, name);
      }
    }
  }

  /** Stops every replica still running, then the monitor. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.replicas.values()].map((r) => r.cluster.stop()));
    this.replicas.clear();
    clearInterval(this.#monitor);
  }
}
