/**
 * ServerTech Sentry4-MIB's events (st4Events, 1.3.6.1.4.1.1718.4.100.0). Each event's OBJECTS
 * carry the row it is about (…<unit>.<cord>.<index>) and its status (DeviceStatus):
 *
 * - st4OutletStateChangeEvent: st4OutletID, st4OutletName, st4OutletState (DeviceState on(1),
 *   off(2)); the model numbers an outlet (cord − 1) × 128 + outlet, as the profile does, on its unit;
 * - st4OcpStatusEvent: st4OcpID, st4OcpLabel, st4OcpStatus (breakerTripped(12), normal(0));
 * - the line, branch and outlet current events: the row's current and its …CurrentStatus
 *   (normal(0), lowAlarm(14), lowWarning(15), highWarning(16), highAlarm(17)).
 */
import { indexAfter, named, outletIndex, textUnder, type Trap } from "../../trap-events.js";
import type { TrapReading, TrapTable } from "../trap-rule.js";

const ST4 = "1.3.6.1.4.1.1718.4";
/** st4OutletState and st4OutletName (st4OutletMonitorEntry 1, st4OutletConfigEntry 3). */
export const SENTRY4_OUTLET_STATE = `${ST4}.1.8.3.1.1`;
export const SENTRY4_OUTLET_NAME = `${ST4}.1.8.2.1.3`;
/** st4OcpStatus and st4OcpLabel. */
export const SENTRY4_OCP_STATUS = `${ST4}.1.6.3.1.1`;
const OCP_LABEL = `${ST4}.1.6.2.1.4`;
/** st4LineCurrentStatus, st4BranchCurrentStatus, st4OutletCurrentStatus. */
const LINE_CURRENT_STATUS = `${ST4}.1.4.3.1.4`;
const BRANCH_CURRENT_STATUS = `${ST4}.1.7.3.1.4`;
export const SENTRY4_OUTLET_CURRENT_STATUS = `${ST4}.1.8.3.1.4`;

/** DeviceStatus of a current as a load state. */
const LOAD_STATES: Readonly<Record<number, string>> = {
  0: "normal",
  14: "low",
  15: "low",
  16: "warning",
  17: "critical",
};

/** The row (unit, cord, index) and value of the first varbind under `column`. */
function row(trap: Trap, column: string): { index: number[] | null; value: number | null } {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, column);
    if (index === null || index.length !== 3) continue;
    return { index, value: typeof v.value === "number" ? v.value : null };
  }
  return { index: null, value: null };
}

/** The model's number of the outlet at (cord, outlet), or null. */
function outletOf(index: number[] | null): number | null {
  const [, cord = 0, n = 0] = index ?? [];
  return cord >= 1 && cord <= 4 && n >= 1 && n <= 128 ? outletIndex((cord - 1) * 128 + n) : null;
}

function outletState(trap: Trap): TrapReading {
  const { index, value } = row(trap, SENTRY4_OUTLET_STATE);
  return {
    outlet: outletOf(index),
    state: named({ 0: "unknown", 1: "on", 2: "off" }, value),
    label: textUnder(trap, SENTRY4_OUTLET_NAME),
  };
}

function ocpStatus(trap: Trap): TrapReading {
  const { value } = row(trap, SENTRY4_OCP_STATUS);
  return {
    outlet: null,
    state: value === 12 ? "tripped" : value === 0 ? "normal" : null,
    label: textUnder(trap, OCP_LABEL),
  };
}

const currentStatus =
  (column: string, ofOutlet: boolean) =>
  (trap: Trap): TrapReading => {
    const { index, value } = row(trap, column);
    return {
      outlet: ofOutlet ? outletOf(index) : null,
      state: named(LOAD_STATES, value),
      ...(ofOutlet ? { label: textUnder(trap, SENTRY4_OUTLET_NAME) } : {}),
    };
  };

/** The trap OID of Sentry4's event `n`. */
export const sentry4TrapOid = (n: number) => `${ST4}.100.0.${n}`;

export const SENTRY4_TRAPS: TrapTable = {
  family: "ServerTech Sentry4",
  rules: {
    [sentry4TrapOid(1)]: { name: "st4UnitStatusEvent", kind: "sensor" },
    [sentry4TrapOid(8)]: {
      name: "st4LineCurrentEvent",
      kind: "load-state",
      read: currentStatus(LINE_CURRENT_STATUS, false),
    },
    [sentry4TrapOid(12)]: { name: "st4OcpStatusEvent", kind: "breaker-tripped", read: ocpStatus },
    [sentry4TrapOid(14)]: {
      name: "st4BranchCurrentEvent",
      kind: "load-state",
      read: currentStatus(BRANCH_CURRENT_STATUS, false),
    },
    [sentry4TrapOid(16)]: { name: "st4OutletStateChangeEvent", kind: "outlet-switched", read: outletState },
    [sentry4TrapOid(17)]: {
      name: "st4OutletCurrentEvent",
      kind: "load-state",
      read: currentStatus(SENTRY4_OUTLET_CURRENT_STATUS, true),
    },
    [sentry4TrapOid(20)]: { name: "st4TempSensorEvent", kind: "sensor" },
    [sentry4TrapOid(21)]: { name: "st4HumidSensorEvent", kind: "sensor" },
  },
};
