/**
 * Which configured instances this process polls, publishes, takes MQTT commands for and writes to
 * right now. One process owns them all ({@link OWN_ALL}, the service today). With several replicas
 * the coordination layer (src/cluster/) answers instead, and tells the parts when the answer
 * changes with an `ownershipChanged` event on the bus (src/bus.ts); docs/architecture.md
 * ("Ownership") lists where each part asks.
 */
export interface Ownership {
  /** Whether this process owns the instance now: it may poll, publish, take commands and write. */
  owns(instanceId: string): boolean;
}

/** The one owner of the whole fleet. */
export const OWN_ALL: Ownership = Object.freeze({ owns: () => true });
