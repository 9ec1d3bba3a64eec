/**
 * Raritan PDU2-MIB's notifications (PX2, PX3): one notification per kind of sensor whose state
 * changed, under traps (1.3.6.1.4.1.13742.6.0). The varbinds carry the sensor's measurement row
 * (…SensorState.<pduId>.<index>.<sensorType>), which says the outlet or protector and the new
 * state (SensorStateEnumeration).
 */
import { indexAfter, outletIndex, type Trap } from "../../trap-events.js";
import type { TrapTable } from "../trap-rule.js";

const PDU2 = "1.3.6.1.4.1.13742.6";
/** measurementsOutletSensorState and measurementsOverCurrentProtectorSensorState. */
export const RARITAN_OUTLET_STATE = `${PDU2}.5.4.3.1.3`;
const OCP_STATE = `${PDU2}.5.3.3.1.3`;
/** SensorTypeEnumeration onOff(14) and trip(15). */
export const RARITAN_ON_OFF = 14;

/** SensorStateEnumeration names of the states a trap's row reads. */
const STATES: Readonly<Record<number, string>> = {
  [-1]: "unavailable",
  0: "open",
  1: "closed",
  2: "belowLowerCritical",
  3: "belowLowerWarning",
  4: "normal",
  5: "aboveUpperWarning",
  6: "aboveUpperCritical",
  7: "on",
  8: "off",
  9: "detected",
  10: "notDetected",
  11: "alarmed",
};

/** The row (index, state) of the first varbind under `column`. */
function row(trap: Trap, column: string): { index: number | null; state: string | null } {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, column);
    if (index === null || index.length !== 3) continue;
    const state = typeof v.value === "number" ? (STATES[v.value] ?? null) : null;
    return { index: outletIndex(index[1]), state };
  }
  return { index: null, state: null };
}

/** The trap OID of PDU2-MIB's notification `n`. */
export const raritanTrapOid = (n: number) => `${PDU2}.0.${n}`;

export const RARITAN_TRAPS: TrapTable = {
  family: "Raritan PDU2",
  rules: {
    [raritanTrapOid(2)]: { name: "rebootCompleted", kind: "unit-restarted" },
    [raritanTrapOid(60)]: { name: "pduSensorStateChange", kind: "sensor" },
    [raritanTrapOid(61)]: { name: "inletSensorStateChange", kind: "sensor" },
    [raritanTrapOid(62)]: { name: "inletPoleSensorStateChange", kind: "sensor" },
    [raritanTrapOid(63)]: {
      name: "outletSensorStateChange",
      kind: "outlet-switched",
      read: (trap) => {
        const { index, state } = row(trap, RARITAN_OUTLET_STATE);
        return { outlet: index, state };
      },
    },
    [raritanTrapOid(65)]: {
      name: "overCurrentProtectorSensorStateChange",
      kind: "breaker-tripped",
      // A protector's trip sensor reads open (tripped) or closed.
      read: (trap) => {
        const { state } = row(trap, OCP_STATE);
        return { outlet: null, state: state === "open" ? "tripped" : state };
      },
    },
    [raritanTrapOid(66)]: { name: "externalSensorStateChange", kind: "sensor" },
  },
};
