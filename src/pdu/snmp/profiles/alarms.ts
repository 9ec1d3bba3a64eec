/**
 * Enumerations shared by several tables of a family, as alarm states (names as in the MIBs).
 */
import type { AlarmState } from "../profile.js";

const normal = (name: string): AlarmState => ({ name, severity: "", raised: false });
const warning = (name: string): AlarmState => ({ name, severity: "warning", raised: true });
const alarm = (name: string): AlarmState => ({ name, severity: "alarm", raised: true });
export const states = { normal, warning, alarm };

/** PowerNet-MIB rPDU2 load states: lowLoad(1), normal(2), nearOverload(3), overload(4) (device: notsupported(5)). */
export const APC_LOAD_STATES: Readonly<Record<number, AlarmState>> = {
  1: warning("lowLoad"),
  2: normal("normal"),
  3: warning("nearOverload"),
  4: alarm("overload"),
  5: normal("notsupported"),
};

/** PowerNet-MIB rPDU2SensorTempHumidityStatusTempStatus / …HumidityStatus. */
export const APC_SENSOR_STATES: Readonly<Record<number, AlarmState>> = {
  1: normal("notPresent"),
  2: alarm("belowMin"),
  3: warning("belowLow"),
  4: normal("normal"),
  5: warning("aboveHigh"),
  6: alarm("aboveMax"),
};

/** PDU2-MIB SensorStateEnumeration, for numeric sensors (rmsCurrent, activePower, ...). */
export const RARITAN_NUMERIC_STATES: Readonly<Record<number, AlarmState>> = {
  [-1]: normal("unavailable"),
  2: alarm("belowLowerCritical"),
  3: warning("belowLowerWarning"),
  4: normal("normal"),
  5: warning("aboveUpperWarning"),
  6: alarm("aboveUpperCritical"),
};

/**
 * PDU2-MIB SensorStateEnumeration for trip sensors: the MIB lists unavailable, open, closed; an
 * overcurrent protector that is open has tripped.
 */
export const RARITAN_TRIP_STATES: Readonly<Record<number, AlarmState>> = {
  [-1]: normal("unavailable"),
  0: alarm("open"),
  1: normal("closed"),
};

/** Sentry4-MIB DeviceStatus. */
export const SENTRY4_STATUS: Readonly<Record<number, AlarmState>> = {
  0: normal("normal"),
  1: normal("disabled"),
  2: normal("purged"),
  5: normal("reading"),
  6: normal("settle"),
  7: normal("notFound"),
  8: warning("lost"),
  9: warning("readError"),
  10: warning("noComm"),
  11: warning("pwrError"),
  12: alarm("breakerTripped"),
  13: alarm("fuseBlown"),
  14: alarm("lowAlarm"),
  15: warning("lowWarning"),
  16: warning("highWarning"),
  17: alarm("highAlarm"),
  18: alarm("alarm"),
  19: alarm("underLimit"),
  20: alarm("overLimit"),
  21: warning("nvmFail"),
  22: warning("profileError"),
  23: warning("conflict"),
};
