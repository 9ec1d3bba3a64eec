/**
 * The cluster's status seam: this replica in the cluster as the coordination layer reports it
 * (src/cluster/, `status()`) and as the health listener reads it (src/http/health/, readiness and
 * the `cluster` entry of /health/integrations) without depending on the cluster's code.
 * docs/cluster.md describes the fields' meaning.
 */

/** A member of the installation as this replica sees it. */
export interface MemberView {
  readonly name: string;
  readonly ready: boolean;
  /** This replica. */
  readonly self: boolean;
}

export interface ClusterStatus {
  readonly member: string;
  /** The engine as the replica uses it (etcd endpoints and prefix, or namespace and lease prefix). */
  readonly engine: string;
  readonly state: "starting" | "running" | "stopping" | "stopped";
  /** Why this replica holds nothing although it runs (bucket count mismatch, its name taken), or null. */
  readonly blocked: string | null;
  /**
   * The engine answered a list within RenewDeadline (judged from the replica's own rounds, no
   * request of its own).
   */
  readonly reachable: boolean;
  /** Milliseconds since the engine last answered a list (on the monotonic clock), or null before it ever did. */
  readonly lastAnswerAgeMs: number | null;
  /** RenewDeadline in milliseconds: the limit `reachable` is judged by. */
  readonly renewDeadlineMs: number;
  readonly ready: boolean;
  /** Buckets held now, ascending. */
  readonly buckets: readonly number[];
  /**
   * Alive members of this installation as this replica sees them, by name (itself included while
   * its own lease is valid).
   */
  readonly members: readonly MemberView[];
  /** Buckets acquired and lost by this replica since it started. */
  readonly transitions: number;
  /** The last engine error, while the engine is unreachable; else null. */
  readonly lastError: string | null;
}
