/**
 * ServerTech Sentry3-MIB's events (events, 1.3.6.1.4.1.1718.3.100.0). Each event's OBJECTS carry
 * the row it is about (outlets and branches …<tower>.<infeed>.<index>, infeeds …<tower>.<infeed>)
 * and that row's status:
 *
 * - outletChangeEvent: outletID, outletName, outletStatus (off(0), on(1), offWait(2), onWait(3),
 *   offError(4), onError(5), noComm(6), reading(7), offFuse(8), onFuse(9)): sent when the status
 *   moves between an "on" and an "off" state; the model numbers an outlet (infeed − 1) × 64 +
 *   outlet on its tower, as the profile does;
 * - branchStatusEvent: branchName, branchStatus (the same values): offFuse and onFuse are the
 *   branch's fuse or breaker open;
 * - infeedLoadEvent, outletLoadEvent, branchLoadEvent: …LoadStatus (normal(0), notOn(1),
 *   reading(2), loadLow(3), loadHigh(4), overLoad(5), readError(6), noComm(7)).
 */
import { indexAfter, named, outletIndex, textUnder, type Trap } from "../../trap-events.js";
import type { TrapReading, TrapTable } from "../trap-rule.js";

const ST3 = "1.3.6.1.4.1.1718.3";
/** outletName, outletStatus, outletLoadStatus (outletEntry 3, 5, 6). */
export const SENTRY3_OUTLET_NAME = `${ST3}.2.3.1.3`;
export const SENTRY3_OUTLET_STATUS = `${ST3}.2.3.1.5`;
export const SENTRY3_OUTLET_LOAD_STATUS = `${ST3}.2.3.1.6`;
/** infeedLoadStatus (infeedEntry 6), branchName, branchStatus, branchLoadStatus (branchEntry 3, 5, 6). */
const INFEED_LOAD_STATUS = `${ST3}.2.2.1.6`;
const BRANCH_NAME = `${ST3}.2.7.1.3`;
export const SENTRY3_BRANCH_STATUS = `${ST3}.2.7.1.5`;
const BRANCH_LOAD_STATUS = `${ST3}.2.7.1.6`;

/** outletStatus and branchStatus names. */
const STATUS: Readonly<Record<number, string>> = {
  0: "off",
  1: "on",
  2: "offWait",
  3: "onWait",
  4: "offError",
  5: "onError",
  6: "noComm",
  7: "reading",
  8: "offFuse",
  9: "onFuse",
};
/** The "on" and "off" states of outletStatus, as outletChangeEvent's DESCRIPTION groups them. */
const ON_OFF: Readonly<Record<number, string>> = {
  0: "off",
  2: "off",
  4: "off",
  8: "off",
  1: "on",
  3: "on",
  5: "on",
  9: "on",
};
/** …LoadStatus as a load state (notOn: no load to judge, normal). */
const LOAD_STATES: Readonly<Record<number, string>> = {
  0: "normal",
  1: "normal",
  3: "low",
  4: "warning",
  5: "critical",
};

/** The row index and value of the first varbind under `column`. */
function row(trap: Trap, column: string): { index: number[] | null; value: number | null } {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, column);
    if (index !== null) return { index, value: typeof v.value === "number" ? v.value : null };
  }
  return { index: null, value: null };
}

/** The model's number of the outlet at (tower, infeed, outlet), or null. */
function outletOf(index: number[] | null): number | null {
  if (index?.length !== 3) return null;
  const [, infeed = 0, n = 0] = index;
  return infeed >= 1 && infeed <= 4 && n >= 1 && n <= 64 ? outletIndex((infeed - 1) * 64 + n) : null;
}

function outletChange(trap: Trap): TrapReading {
  const { index, value } = row(trap, SENTRY3_OUTLET_STATUS);
  return {
    outlet: outletOf(index),
    state: named(ON_OFF, value),
    label: textUnder(trap, SENTRY3_OUTLET_NAME),
  };
}

function outletStatus(trap: Trap): TrapReading {
  const { index, value } = row(trap, SENTRY3_OUTLET_STATUS);
  return {
    outlet: outletOf(index),
    state: named(STATUS, value),
    label: textUnder(trap, SENTRY3_OUTLET_NAME),
  };
}

function branchStatus(trap: Trap): TrapReading {
  const { value } = row(trap, SENTRY3_BRANCH_STATUS);
  const state =
    value === 8 || value === 9 ? "tripped" : value === 0 || value === 1 ? "normal" : named(STATUS, value);
  return { outlet: null, state, label: textUnder(trap, BRANCH_NAME) };
}

const loadStatus =
  (column: string, ofOutlet: boolean) =>
  (trap: Trap): TrapReading => {
    const { index, value } = row(trap, column);
    return {
      outlet: ofOutlet ? outletOf(index) : null,
      state: named(LOAD_STATES, value),
      label: textUnder(trap, ofOutlet ? SENTRY3_OUTLET_NAME : BRANCH_NAME),
    };
  };

/** The trap OID of Sentry3's event `n`. */
export const sentry3TrapOid = (n: number) => `${ST3}.100.0.${n}`;

export const SENTRY3_TRAPS: TrapTable = {
  family: "ServerTech Sentry3",
  rules: {
    [sentry3TrapOid(1)]: { name: "towerStatusEvent", kind: "sensor" },
    [sentry3TrapOid(2)]: { name: "infeedStatusEvent", kind: "sensor" },
    [sentry3TrapOid(3)]: {
      name: "infeedLoadEvent",
      kind: "load-state",
      read: (trap) => ({ outlet: null, state: named(LOAD_STATES, row(trap, INFEED_LOAD_STATUS).value) }),
    },
    [sentry3TrapOid(4)]: { name: "outletStatusEvent", kind: "sensor", read: outletStatus },
    [sentry3TrapOid(5)]: {
      name: "outletLoadEvent",
      kind: "load-state",
      read: loadStatus(SENTRY3_OUTLET_LOAD_STATUS, true),
    },
    [sentry3TrapOid(6)]: { name: "outletChangeEvent", kind: "outlet-switched", read: outletChange },
    [sentry3TrapOid(10)]: { name: "tempHumidSensorStatusEvent", kind: "sensor" },
    [sentry3TrapOid(11)]: { name: "tempHumidSensorTempEvent", kind: "sensor" },
    [sentry3TrapOid(12)]: { name: "tempHumidSensorHumidEvent", kind: "sensor" },
    [sentry3TrapOid(13)]: { name: "contactClosureEvent", kind: "sensor" },
    [sentry3TrapOid(14)]: { name: "branchStatusEvent", kind: "breaker-tripped", read: branchStatus },
    [sentry3TrapOid(15)]: {
      name: "branchLoadEvent",
      kind: "load-state",
      read: loadStatus(BRANCH_LOAD_STATUS, false),
    },
  },
};
