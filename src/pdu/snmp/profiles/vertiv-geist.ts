/**
 * Agents whose units the bridge reads over another driver, not SNMP: a Vertiv or Geist PDU (any
 * sysObjectID under enterprise 21239, VERTIV-V5-MIB / GEIST-V4-MIB) also serves the HTTP API that
 * the `geist` driver reads, with switching and everything the model holds. Detection names the
 * driver instead of guessing an SNMP profile.
 */
export interface OtherDriverAgent {
  /** sysObjectID prefix (the vendor's enterprise subtree, with its trailing dot). */
  readonly sysObjectId: string;
  readonly vendor: string;
  /** The `Driver` value that reads these units. */
  readonly driver: string;
}

export const OTHER_DRIVER_AGENTS: readonly OtherDriverAgent[] = [
  { sysObjectId: "1.3.6.1.4.1.21239.", vendor: "Vertiv/Geist", driver: "geist" },
];
