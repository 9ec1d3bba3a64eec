/**
 * ServerTech Sentry4-MIB's events (st4Events, 1.3.6.1.4.1.1718.4.100.0). The outlet's state change
 * carries st4OutletState.<unit>.<cord>.<outlet> (DeviceState on(1), off(2)); the model numbers an
 * outlet (cord − 1) × 128 + outlet, as the profile does. An overcurrent protector's status event
 * carries st4OcpStatus (DeviceStatus, breakerTripped(12)).
 */
import { indexAfter, outletIndex, type Trap } from "../../trap-events.js";
import type { TrapTable } from "../trap-rule.js";

const ST4 = "1.3.6.1.4.1.1718.4";
/** st4OutletState and st4OcpStatus. */
export const SENTRY4_OUTLET_STATE = `${ST4}.1.8.3.1.1`;
const OCP_STATUS = `${ST4}.1.6.3.1.1`;

function outletState(trap: Trap) {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, SENTRY4_OUTLET_STATE);
    if (index === null || index.length !== 3) continue;
    const [, cord = 0, n = 0] = index;
    const outlet = cord >= 1 && cord <= 4 && n >= 1 && n <= 128 ? outletIndex((cord - 1) * 128 + n) : null;
    const state = v.value === 1 ? "on" : v.value === 2 ? "off" : null;
    return { outlet, state };
  }
  return { outlet: null, state: null };
}

function ocpStatus(trap: Trap) {
  const v = trap.varbinds.find((b) => b.oid.startsWith(`${OCP_STATUS}.`));
  const state = v?.value === 12 ? "tripped" : v?.value === 0 ? "normal" : null;
  return { outlet: null, state };
}

/** The trap OID of Sentry4's event `n`. */
export const sentry4TrapOid = (n: number) => `${ST4}.100.0.${n}`;

export const SENTRY4_TRAPS: TrapTable = {
  family: "ServerTech Sentry4",
  rules: {
    [sentry4TrapOid(1)]: { name: "st4UnitStatusEvent", kind: "sensor" },
    [sentry4TrapOid(8)]: { name: "st4LineCurrentEvent", kind: "load-state" },
    [sentry4TrapOid(12)]: { name: "st4OcpStatusEvent", kind: "breaker-tripped", read: ocpStatus },
    [sentry4TrapOid(14)]: { name: "st4BranchCurrentEvent", kind: "load-state" },
    [sentry4TrapOid(16)]: { name: "st4OutletStateChangeEvent", kind: "outlet-switched", read: outletState },
    [sentry4TrapOid(17)]: { name: "st4OutletCurrentEvent", kind: "load-state" },
    [sentry4TrapOid(20)]: { name: "st4TempSensorEvent", kind: "sensor" },
    [sentry4TrapOid(21)]: { name: "st4HumidSensorEvent", kind: "sensor" },
  },
};
