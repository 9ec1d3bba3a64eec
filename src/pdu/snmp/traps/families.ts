/**
 * The trap tables of the families added after the first three: Eaton's EATON-EPDU-MIB
 * notifications (1.3.6.1.4.1.534.6.6.7.0). Each notification carries the row it is about: an
 * outlet's control status (outletControlStatus.<strappingIndex>.<outletIndex>: off(0), on(1),
 * pendingOff(2), pendingOn(3)), a group's breaker (groupBreakerStatus: breakerOn(1), breakerOff(2)).
 * CyberPower's and Sentry3's notifications are not read yet: their traps are `other` events, which
 * still poll the instance at once.
 */
import { indexAfter, outletIndex, type Trap } from "../../trap-events.js";
import type { TrapTable } from "../trap-rule.js";

const EP = "1.3.6.1.4.1.534.6.6.7";
/** outletControlStatus and groupBreakerStatus. */
export const EATON_OUTLET_CONTROL_STATUS = `${EP}.6.6.1.2`;
const GROUP_BREAKER_STATUS = `${EP}.5.1.1.5`;

function outletControl(trap: Trap) {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, EATON_OUTLET_CONTROL_STATUS);
    if (index === null || index.length !== 2) continue;
    const state = ({ 0: "off", 1: "on", 2: "pendingOff", 3: "pendingOn" } as Record<number, string>)[
      typeof v.value === "number" ? v.value : -1
    ];
    return { outlet: outletIndex(index[1]), state: state ?? null };
  }
  return { outlet: null, state: null };
}

function breaker(trap: Trap) {
  const v = trap.varbinds.find((b) => b.oid.startsWith(`${GROUP_BREAKER_STATUS}.`));
  const state = v?.value === 2 ? "tripped" : v?.value === 1 ? "closed" : null;
  return { outlet: null, state };
}

/** The trap OID of EATON-EPDU-MIB's notification `n`. */
export const eatonTrapOid = (n: number) => `${EP}.0.${n}`;

const EATON_TRAPS: TrapTable = {
  family: "Eaton ePDU",
  rules: {
    [eatonTrapOid(4)]: { name: "notifyBootUp", kind: "unit-restarted" },
    [eatonTrapOid(11)]: { name: "notifyInputVoltageThStatus", kind: "sensor" },
    [eatonTrapOid(12)]: { name: "notifyInputCurrentThStatus", kind: "load-state" },
    [eatonTrapOid(22)]: { name: "notifyGroupCurrentThStatus", kind: "load-state" },
    [eatonTrapOid(23)]: { name: "notifyGroupBreakerStatus", kind: "breaker-tripped", read: breaker },
    [eatonTrapOid(32)]: { name: "notifyOutletCurrentThStatus", kind: "load-state" },
    [eatonTrapOid(33)]: { name: "notifyOutletControlStatus", kind: "outlet-switched", read: outletControl },
    [eatonTrapOid(41)]: { name: "notifyTemperatureThStatus", kind: "sensor" },
    [eatonTrapOid(42)]: { name: "notifyHumidityThStatus", kind: "sensor" },
  },
};

export const FAMILY_TRAPS: readonly TrapTable[] = [EATON_TRAPS];
