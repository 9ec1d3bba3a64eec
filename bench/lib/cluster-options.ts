/**
 * Sizes and timings of the `cluster` scenario (bench/cluster.ts), from the runner's `--cluster-*`
 * flags: the defaults keep a full run within about six minutes on 2 cores.
 */

/** Lease timings of a replica, in seconds (`Cluster.LeaseDurationSeconds` and the others). */
export interface LeaseTimings {
  readonly lease: number;
  readonly renew: number;
  readonly retry: number;
}

export interface ClusterBenchOptions {
  /** Instances per replica (N): 3 replicas poll 3N PDUs, and so does the single process. */
  readonly instancesPerReplica: number;
  /** `kill -9`s measured (each replica in turn, restarted after each). */
  readonly kills: number;
  /** `Cluster.Buckets`. */
  readonly buckets: number;
  /** Seconds of the CPU window. */
  readonly windowSeconds: number;
  /** Every PDU's `PollInterval`, seconds. */
  readonly pollIntervalS: number;
  /** The replicas of the failover and rebalancing measurements. */
  readonly timings: LeaseTimings;
  /** The replicas of the CPU measurement: the service's defaults. */
  readonly cpuTimings: LeaseTimings;
}

/** The service's defaults (docs/cluster.md, Timings). */
export const DEFAULT_TIMINGS: LeaseTimings = { lease: 15, renew: 10, retry: 2 };
/** Shorter leases for the failover runs, so that ten kills fit in a few minutes. */
export const FAILOVER_TIMINGS: LeaseTimings = { lease: 6, renew: 4, retry: 1 };

export interface ClusterFlags {
  readonly instances?: string;
  readonly kills?: string;
  readonly buckets?: string;
  readonly window?: string;
  readonly timings?: string;
  readonly poll?: string;
}

/** The options of a run; throws an Error naming the flag on a bad value. */
export function clusterOptions(quick: boolean, flags: ClusterFlags): ClusterBenchOptions {
  const int = (flag: string, text: string | undefined, fallback: number, min: number, max: number) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`--cluster-${flag}: expected an integer from ${min} to ${max}, got "${text}"`);
    return n;
  };
  return {
    instancesPerReplica: int("instances", flags.instances, quick ? 10 : 100, 1, 2000),
    kills: int("kills", flags.kills, quick ? 2 : 10, 1, 100),
    buckets: int("buckets", flags.buckets, quick ? 16 : 64, 3, 1024),
    windowSeconds: int("window", flags.window, quick ? 20 : 60, 5, 3600),
    pollIntervalS: int("poll", flags.poll, quick ? 4 : 10, 1, 300),
    timings: flags.timings === undefined ? FAILOVER_TIMINGS : parseTimings(flags.timings),
    cpuTimings: DEFAULT_TIMINGS,
  };
}

/** `6,4,1` → LeaseDuration, RenewDeadline, RetryPeriod, checked by the service's own rules. */
export function parseTimings(text: string): LeaseTimings {
  const parts = text.split(",").map((p) => Number(p.trim()));
  const [lease, renew, retry] = parts;
  if (
    parts.length !== 3 ||
    lease === undefined ||
    renew === undefined ||
    retry === undefined ||
    !parts.every((p) => Number.isFinite(p) && p > 0) ||
    !(renew < lease) ||
    !(retry * 1.2 < renew)
  )
    throw new Error(
      `--cluster-timings: expected LeaseDuration,RenewDeadline,RetryPeriod in seconds with ` +
        `RenewDeadline < LeaseDuration and RetryPeriod × 1.2 < RenewDeadline, got "${text}"`,
    );
  return { lease, renew, retry };
}
