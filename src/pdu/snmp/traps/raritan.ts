/**
 * Raritan PDU2-MIB's notifications (PX2, PX3), under traps (1.3.6.1.4.1.13742.6.0). A sensor's
 * state change is one notification per place of the sensor (inlet, outlet, overcurrent protector,
 * ...), whatever the sensor measures: its OBJECTS carry typeOfSensor and the sensor's measurement
 * row (measurements…SensorState.<pduId>.<index>.<sensorType>: SensorStateEnumeration), so the type
 * of sensor decides what the change is. An outlet's onOff(14) sensor is the outlet switched, a
 * protector's trip(15) sensor its trip (open: tripped), a current or power sensor's threshold a
 * load state; any other sensor (voltage, temperature, ...) is a sensor event. The first-generation
 * PX's PDU-MIB notifications (1.3.6.1.4.1.13742.4.0) have a table of their own below.
 */
import {
  indexAfter,
  named,
  numberUnder,
  outletIndex,
  textUnder,
  type Trap,
  type TrapEventKind,
} from "../../trap-events.js";
import type { TrapReading, TrapRule, TrapTable } from "../trap-rule.js";

const PDU2 = "1.3.6.1.4.1.13742.6";
/** measurementsOutletSensorState (outletSensorMeasurementsEntry 3: pduId, outletId, sensorType). */
export const RARITAN_OUTLET_STATE = `${PDU2}.5.4.3.1.3`;
/** measurementsOverCurrentProtectorSensorState (pduId, overCurrentProtectorIndex, sensorType). */
export const RARITAN_OCP_STATE = `${PDU2}.5.3.3.1.3`;
/** measurementsInletSensorState and measurementsInletPoleSensorState. */
const INLET_STATE = `${PDU2}.5.2.3.1.3`;
const INLET_POLE_STATE = `${PDU2}.5.2.4.1.3`;
/** typeOfSensor (trapInformation 10), outletLabel, overCurrentProtectorLabel. */
export const RARITAN_TYPE_OF_SENSOR = `${PDU2}.0.0.10`;
export const RARITAN_OUTLET_LABEL = `${PDU2}.3.5.3.1.2`;
export const RARITAN_OCP_LABEL = `${PDU2}.3.4.3.1.2`;
/** switchingOperation (outletSwitchControlEntry 2): off(0), on(1), cycle(2). */
export const RARITAN_SWITCHING_OPERATION = `${PDU2}.4.1.2.1.2`;

/** SensorTypeEnumeration values the tables read. */
export const RARITAN_SENSOR = {
  rmsCurrent: 1,
  activePower: 5,
  apparentPower: 6,
  onOff: 14,
  trip: 15,
} as const;

/** SensorStateEnumeration, the states of every sensor row. */
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
  12: "ok",
  14: "fail",
  26: "fault",
  27: "warning",
  28: "critical",
};

/** A threshold state as a load state. */
const LOAD_STATES: Readonly<Record<number, string>> = {
  2: "low",
  3: "low",
  4: "normal",
  5: "warning",
  6: "critical",
};

const LOAD_SENSORS: ReadonlySet<number> = new Set([
  RARITAN_SENSOR.rmsCurrent,
  RARITAN_SENSOR.activePower,
  RARITAN_SENSOR.apparentPower,
]);

/** The measurement row under `column`: the row's index (second sub-identifier), sensor type, state. */
function sensorRow(
  trap: Trap,
  column: string,
): { index: number | null; type: number | null; state: number | null } {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, column);
    if (index === null || index.length !== 3) continue;
    return {
      index: index[1] ?? null,
      type: index[2] ?? numberUnder(trap, RARITAN_TYPE_OF_SENSOR),
      state: typeof v.value === "number" ? v.value : null,
    };
  }
  return { index: null, type: numberUnder(trap, RARITAN_TYPE_OF_SENSOR), state: null };
}

/** What a sensor of `type` changing to `state` is, wherever it is. */
function sensorChange(
  type: number | null,
  state: number | null,
): { kind: TrapEventKind; state: string | null } {
  if (type === RARITAN_SENSOR.onOff) return { kind: "outlet-switched", state: named(STATES, state) };
  if (type === RARITAN_SENSOR.trip)
    return { kind: "breaker-tripped", state: state === 0 ? "tripped" : named(STATES, state) };
  if (type !== null && LOAD_SENSORS.has(type))
    return { kind: "load-state", state: named(LOAD_STATES, state) };
  return { kind: "sensor", state: named(STATES, state) };
}

/** outletSensorStateChange: the outlet from the row, the change from its sensor type. */
function outletSensor(trap: Trap): TrapReading {
  const row = sensorRow(trap, RARITAN_OUTLET_STATE);
  return {
    ...sensorChange(row.type, row.state),
    outlet: outletIndex(row.index),
    label: textUnder(trap, RARITAN_OUTLET_LABEL),
  };
}

/** overCurrentProtectorSensorStateChange: the change from the protector's sensor type. */
function protectorSensor(trap: Trap): TrapReading {
  const row = sensorRow(trap, RARITAN_OCP_STATE);
  return { ...sensorChange(row.type, row.state), outlet: null, label: textUnder(trap, RARITAN_OCP_LABEL) };
}

/** inletSensorStateChange, inletPoleSensorStateChange: a load state or a sensor. */
const inletSensor =
  (column: string) =>
  (trap: Trap): TrapReading => {
    const row = sensorRow(trap, column);
    return { ...sensorChange(row.type, row.state), outlet: null };
  };

/** powerControl: the outlet (from its measurementsOutletSensorState row) and the operation asked. */
function powerControl(trap: Trap): TrapReading {
  const row = sensorRow(trap, RARITAN_OUTLET_STATE);
  const operation = numberUnder(trap, RARITAN_SWITCHING_OPERATION);
  return {
    outlet: outletIndex(row.index),
    state: named({ 0: "off", 1: "on", 2: "cycle" }, operation),
    label: textUnder(trap, RARITAN_OUTLET_LABEL),
  };
}

const sensor = (name: string, read?: TrapRule["read"]): TrapRule => ({
  name,
  kind: "sensor",
  ...(read === undefined ? {} : { read }),
});

/** The trap OID of PDU2-MIB's notification `n`. */
export const raritanTrapOid = (n: number) => `${PDU2}.0.${n}`;

export const RARITAN_TRAPS: TrapTable = {
  family: "Raritan PDU2",
  rules: {
    [raritanTrapOid(1)]: { name: "systemStarted", kind: "unit-restarted" },
    [raritanTrapOid(2)]: { name: "systemReset", kind: "unit-restarted" },
    [raritanTrapOid(23)]: { name: "powerControl", kind: "outlet-switched", read: powerControl },
    [raritanTrapOid(60)]: sensor("pduSensorStateChange"),
    [raritanTrapOid(61)]: sensor("inletSensorStateChange", inletSensor(INLET_STATE)),
    [raritanTrapOid(62)]: sensor("inletPoleSensorStateChange", inletSensor(INLET_POLE_STATE)),
    [raritanTrapOid(63)]: sensor("outletSensorStateChange", outletSensor),
    [raritanTrapOid(65)]: sensor("overCurrentProtectorSensorStateChange", protectorSensor),
    [raritanTrapOid(66)]: sensor("externalSensorStateChange"),
    [raritanTrapOid(102)]: sensor("unitSensorStateChange"),
  },
};

const PX = "1.3.6.1.4.1.13742.4";
/** PDU-MIB's outletOperationalState and outletLabel (outletEntry 3, 2: outletIndex), circuitBreakerLabel. */
export const RARITAN_PX_OUTLET_STATE = `${PX}.1.2.2.1.3`;
export const RARITAN_PX_OUTLET_LABEL = `${PX}.1.2.2.1.2`;
const PX_BREAKER_LABEL = `${PX}.1.5.2.1.2`;

/** PDU-MIB powerControl: the outlet from outletOperationalState's row (error(-1), off(0), on(1), cycling(2)). */
function pxPowerControl(trap: Trap): TrapReading {
  for (const v of trap.varbinds) {
    const index = indexAfter(v.oid, RARITAN_PX_OUTLET_STATE);
    if (index?.length !== 1) continue;
    const state = typeof v.value === "number" ? v.value : null;
    return {
      outlet: outletIndex(index[0]),
      state: named({ [-1]: "error", 0: "off", 1: "on", 2: "cycling" }, state),
      label: textUnder(trap, RARITAN_PX_OUTLET_LABEL),
    };
  }
  return { outlet: null, state: null, label: textUnder(trap, RARITAN_PX_OUTLET_LABEL) };
}

const pxBreaker = (trap: Trap): TrapReading => ({
  outlet: null,
  state: null,
  label: textUnder(trap, PX_BREAKER_LABEL),
});

/** The trap OID of PDU-MIB's notification `n` (the first-generation PX). */
export const raritanPxTrapOid = (n: number) => `${PX}.0.${n}`;

/**
 * Raritan PX's PDU-MIB notifications, under traps (1.3.6.1.4.1.13742.4.0): powerControl carries
 * outletLabel and outletOperationalState of the outlet switched; circuitBreakerTripped and
 * …Recovered carry circuitBreakerLabel; rebootCompleted the unit's restart; thresholdAlarm a
 * sensor's threshold (sensorDescr, thresholdSeverity: what it is is in the texts).
 */
export const RARITAN_PX_TRAPS: TrapTable = {
  family: "Raritan PX",
  rules: {
    [raritanPxTrapOid(2)]: { name: "rebootCompleted", kind: "unit-restarted" },
    [raritanPxTrapOid(23)]: { name: "powerControl", kind: "outlet-switched", read: pxPowerControl },
    [raritanPxTrapOid(45)]: { name: "thresholdAlarm", kind: "sensor" },
    [raritanPxTrapOid(51)]: {
      name: "circuitBreakerTripped",
      kind: "breaker-tripped",
      state: "tripped",
      read: pxBreaker,
    },
    [raritanPxTrapOid(52)]: {
      name: "circuitBreakerRecovered",
      kind: "breaker-tripped",
      state: "closed",
      read: pxBreaker,
    },
  },
};
