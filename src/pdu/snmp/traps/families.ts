/**
 * The trap tables of the families added after the first three: Eaton's EATON-EPDU-MIB
 * notifications (1.3.6.1.4.1.534.6.6.7.0) here, CyberPower's (./cyberpower.ts) and Sentry3's
 * (./sentry3.ts) beside it. Each Eaton notification carries strappingIndex and the row it is about:
 *
 * - notifyOutletControlStatus: outletIndex, outletControlStatus.<strappingIndex>.<outletIndex>
 *   (off(0), on(1), pendingOff(2), pendingOn(3));
 * - notifyGroupBreakerStatus: groupIndex, groupBreakerStatus (breakerOn(1), breakerOff(2): a
 *   breaker-group's breaker open, which a unit reports when it trips);
 * - the threshold notifications: the value and its …ThStatus (good(0), lowWarning(1),
 *   lowCritical(2), highWarning(3), highCritical(4)).
 */
import { indexAfter, named, outletIndex, type Trap } from "../../trap-events.js";
import type { TrapReading, TrapTable } from "../trap-rule.js";
import { CYBERPOWER_TRAPS } from "./cyberpower.js";
import { SENTRY3_TRAPS } from "./sentry3.js";

const EP = "1.3.6.1.4.1.534.6.6.7";
/** outletControlStatus (outletControlEntry 2: strappingIndex, outletIndex). */
export const EATON_OUTLET_CONTROL_STATUS = `${EP}.6.6.1.2`;
/** groupBreakerStatus (groupEntry 5). */
export const EATON_GROUP_BREAKER_STATUS = `${EP}.5.1.1.5`;
/** inputCurrentThStatus, groupCurrentThStatus, outletCurrentThStatus. */
const INPUT_CURRENT_TH_STATUS = `${EP}.3.3.1.5`;
const GROUP_CURRENT_TH_STATUS = `${EP}.5.4.1.4`;
export const EATON_OUTLET_CURRENT_TH_STATUS = `${EP}.6.4.1.4`;

/** A …ThStatus as a load state. */
const TH_STATES: Readonly<Record<number, string>> = {
  0: "normal",
  1: "low",
  2: "low",
  3: "warning",
  4: "critical",
};

/** The index and value of the first varbind under `column`. */
function row(trap: Trap, column: string): { index: number[] | null; value: number | null } {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, column);
    if (index !== null) return { index, value: typeof v.value === "number" ? v.value : null };
  }
  return { index: null, value: null };
}

function outletControl(trap: Trap): TrapReading {
  const { index, value } = row(trap, EATON_OUTLET_CONTROL_STATUS);
  return {
    outlet: index?.length === 2 ? outletIndex(index[1]) : null,
    state: named({ 0: "off", 1: "on", 2: "pendingOff", 3: "pendingOn" }, value),
  };
}

function breaker(trap: Trap): TrapReading {
  const { value } = row(trap, EATON_GROUP_BREAKER_STATUS);
  return { outlet: null, state: value === 2 ? "tripped" : value === 1 ? "closed" : null };
}

const threshold =
  (column: string, ofOutlet: boolean) =>
  (trap: Trap): TrapReading => {
    const { index, value } = row(trap, column);
    const outlet = ofOutlet && index?.length === 2 ? outletIndex(index[1]) : null;
    return { outlet, state: named(TH_STATES, value) };
  };

/** The trap OID of EATON-EPDU-MIB's notification `n`. */
export const eatonTrapOid = (n: number) => `${EP}.0.${n}`;

const EATON_TRAPS: TrapTable = {
  family: "Eaton ePDU",
  rules: {
    [eatonTrapOid(4)]: { name: "notifyBootUp", kind: "unit-restarted" },
    [eatonTrapOid(11)]: { name: "notifyInputVoltageThStatus", kind: "sensor" },
    [eatonTrapOid(12)]: {
      name: "notifyInputCurrentThStatus",
      kind: "load-state",
      read: threshold(INPUT_CURRENT_TH_STATUS, false),
    },
    [eatonTrapOid(21)]: { name: "notifyGroupVoltageThStatus", kind: "sensor" },
    [eatonTrapOid(22)]: {
      name: "notifyGroupCurrentThStatus",
      kind: "load-state",
      read: threshold(GROUP_CURRENT_TH_STATUS, false),
    },
    [eatonTrapOid(23)]: { name: "notifyGroupBreakerStatus", kind: "breaker-tripped", read: breaker },
    [eatonTrapOid(31)]: { name: "notifyOutletVoltageThStatus", kind: "sensor" },
    [eatonTrapOid(32)]: {
      name: "notifyOutletCurrentThStatus",
      kind: "load-state",
      read: threshold(EATON_OUTLET_CURRENT_TH_STATUS, true),
    },
    [eatonTrapOid(33)]: { name: "notifyOutletControlStatus", kind: "outlet-switched", read: outletControl },
    [eatonTrapOid(41)]: { name: "notifyTemperatureThStatus", kind: "sensor" },
    [eatonTrapOid(42)]: { name: "notifyHumidityThStatus", kind: "sensor" },
    [eatonTrapOid(43)]: { name: "notifyContactState", kind: "sensor" },
  },
};

export const FAMILY_TRAPS: readonly TrapTable[] = [EATON_TRAPS, CYBERPOWER_TRAPS, SENTRY3_TRAPS];
