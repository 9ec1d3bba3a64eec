/**
 * An SNMP simulator's unit in a fleet of loads (../fleet.ts): the port the fleet reads it through
 * (relays, volts, the currents it serves for its entities, its write journal; stopping it makes its
 * agent answer nothing) and a socket on every outlet. The unit's outlets are the fleet's outlets
 * 0, 1, … (no device: a cord names the unit and the 0-based index).
 */
import type { FleetPduPort } from "../fleet.js";
import type { FleetMembership } from "../types.js";
import type { SnmpControl } from "./tables.js";
import { UNIT_VOLTS, type SimUnit } from "./units.js";

export function joinSnmpFleet(
  unit: SimUnit,
  membership: FleetMembership,
  agent: {
    readonly controls: readonly SnmpControl[];
    setAnswering(answering: boolean): void;
    /** Writes the unit's values into the agent's MIB now. */
    refresh(): void;
  },
): void {
  let pending = false;
  const port: FleetPduPort = {
    hasOutlet: (_device, index) => Number.isInteger(index) && index >= 0 && index < unit.outlets.length,
    relayOn: (_device, index, t) => unit.relayOn(index, t),
    relayChanges: (_device, index, t) => unit.relayChanges(index, t),
    volts: () => UNIT_VOLTS,
    setAnswering: (answering) => {
      agent.setAnswering(answering);
      return Promise.resolve();
    },
    entities: () => unit.entityAmps().map((e) => ({ device: null, key: e.key, amps: e.amps, watts: null })),
    writes: () =>
      agent.controls.map((c) => ({ time: c.time, device: null, outlet: c.outlet, action: c.action })),
    changed: () => {
      if (pending) return;
      pending = true;
      setImmediate(() => {
        pending = false;
        agent.refresh();
      });
    },
  };
  const link = membership.fleet.attach(membership.name, membership.feed ?? null, port);
  unit.attach((i) => ({
    watts: (t) => link.watts(null, i, t),
    powerFactor: () => link.powerFactor(null, i),
    energyWh: (t) => link.energyWh(null, i, t),
    switching: (t) => link.switching(t),
    switched: (t) => link.switched(null, i, t),
  }));
}
