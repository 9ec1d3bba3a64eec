/**
 * The energy seam: what the surfaces (MQTT, Home Assistant discovery, metrics, the console) read of
 * the lifetime energy counters that the `energy` part keeps (src/energy/, docs/energy.md). A
 * lifetime counter never decreases: it carries on through the PDU's resets, a replaced unit, a
 * 32-bit wrap, restarts and failovers.
 */

/** The measurement type and topic level of a lifetime counter (`…/measurements/energyLifetime`). */
export const ENERGY_LIFETIME = "energyLifetime";

/** The lifetime counters, read by the surfaces at the time they publish. */
export interface EnergyReader {
  /**
   * Whether the instance's counters are known (among replicas: its bucket's checkpoint was read
   * here); until then every counter reads null, and a surface keeps what it published as it is.
   */
  ready(instanceId: string): boolean;
  /**
   * The outlet's lifetime energy in watt-hours, or null: the outlet reports no energy, or its
   * counter is not known yet (among replicas: before the bucket's checkpoint was read).
   */
  outletWh(instanceId: string, deviceId: string, index: number): number | null;
  /** The same for an entity (a phase, bank, breaker, inlet or total) by its key. */
  entityWh(instanceId: string, deviceId: string, key: string): number | null;
}

/** No lifetime counters (tests and tools that build a surface without the `energy` part). */
export const NO_ENERGY: EnergyReader = Object.freeze({
  ready: () => true,
  outletWh: () => null,
  entityWh: () => null,
});

/** Watt-hours as the kWh payload of an `energyLifetime` topic: three decimals (watt-hour resolution). */
export function kwhText(wh: number): string {
  return (Math.floor(wh) / 1000).toFixed(3);
}
