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

/** A member whose lease this replica saw stop changing: gone without leaving, paused, or cut off. */
export interface SilentMember {
  readonly name: string;
  /** Milliseconds since this replica last saw its member lease renewed (on its monotonic clock). */
  readonly silentForMs: number;
}

/**
 * A bucket nobody polls as this replica sees it: free (released, never taken, or its lease
 * expired), or held by a member that stopped renewing it, whose lease is running out.
 */
export interface UnpolledBucket {
  readonly bucket: number;
  /** The member its lease names; null when it names nobody. */
  readonly holder: string | null;
  /** Milliseconds since its lease was last seen renewed; null when it names nobody. */
  readonly silentForMs: number | null;
  /** Milliseconds until another replica may take it (0: it may be taken now). */
  readonly freeInMs: number;
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
  /** Other members whose renewals stopped, as long as their member lease is kept in the engine. */
  readonly silent: readonly SilentMember[];
  /** Buckets not held here that nobody polls now, ascending. */
  readonly unpolled: readonly UnpolledBucket[];
}
