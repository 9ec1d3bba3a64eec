/**
 * The fencing seam's error: a PDU write refused by the cluster's fencing rules. The cluster throws
 * it (src/cluster/elector.ts); the control core turns it into an outcome (503 not-held, outcome
 * unknown for a once-only id already used, 409 busy for an outlet whose reboot hold the bucket's
 * lease records) without depending on the cluster's code.
 */
export class FencingError extends Error {
  readonly reason: "not-holder" | "late" | "renewal-failed" | "once-used" | "held" | "stopping";
  /** The member holding the bucket as last seen (for forwarding), when it is not this one. */
  readonly holder: string | null;
  constructor(reason: FencingError["reason"], message: string, holder: string | null = null) {
    super(message);
    this.name = "FencingError";
    this.reason = reason;
    this.holder = holder;
  }
}
