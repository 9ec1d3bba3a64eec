/**
 * CyberPower CPS-MIB's notifications of rack PDUs: SMIv1 TRAP-TYPEs of enterprise cps
 * (1.3.6.1.4.1.3808), as SNMPv2 trap OIDs `3808.0.<specific>`. Each rule names its TRAP-TYPE and
 * reads the VARIABLES it lists:
 *
 * - `ePDU` (every firmware): ePDUOutletOn/Off carry ePDUOutletControlIndex (the outlet's number,
 *   as its value) and ePDUOutletControlOutletName; the outlet load traps
 *   ePDUOutletConfigMonitoredNumber and …Name; the unit (phase) and bank load traps the phase or
 *   bank number (not an outlet);
 * - `ePDU2` (the daisy-chain generation): one "event" and one "alarm"/"alarm cleared" notification
 *   per part. pduOutletSwitchedEvent carries ePDU2OutletSwitchedControlNumber (the outlet on its
 *   unit) and …Name; what happened is in its text (mtrapinfoString), so the event names no state:
 *   the poll right after it does. The phase, bank and outlet alarms say an alarm, not which one.
 *
 * CPS-MIB has no notification of a tripped breaker: a trip is inferred from currents.
 */
import { numberUnder, outletIndex, textUnder, type Trap } from "../../trap-events.js";
import type { TrapReading, TrapRule, TrapTable } from "../trap-rule.js";

const CPS = "1.3.6.1.4.1.3808";
const E = `${CPS}.1.1.3`;
const E2 = `${CPS}.1.1.6`;
/** ePDUOutletControlIndex and ePDUOutletControlOutletName (ePDUOutletControlEntry 1, 2). */
export const CPS_OUTLET_CONTROL_INDEX = `${E}.3.3.1.1.1`;
export const CPS_OUTLET_CONTROL_NAME = `${E}.3.3.1.1.2`;
/** ePDUOutletConfigMonitoredNumber and …Name (ePDUOutletConfigMonitoredEntry 3, 2). */
const OUTLET_MONITORED_NUMBER = `${E}.3.4.3.1.3`;
const OUTLET_MONITORED_NAME = `${E}.3.4.3.1.2`;
/** ePDU2OutletSwitchedControlNumber and …Name (ePDU2OutletSwitchedControlEntry 3, 4). */
export const CPS2_SWITCHED_CONTROL_NUMBER = `${E2}.6.1.5.1.3`;
export const CPS2_SWITCHED_CONTROL_NAME = `${E2}.6.1.5.1.4`;
/** ePDU2OutletSwitchedStatusNumber, …Name; ePDU2OutletMeteredStatusNumber, …Name. */
const SWITCHED_STATUS_NUMBER = `${E2}.6.1.4.1.3`;
const SWITCHED_STATUS_NAME = `${E2}.6.1.4.1.4`;
const METERED_STATUS_NUMBER = `${E2}.6.2.4.1.3`;
const METERED_STATUS_NAME = `${E2}.6.2.4.1.4`;
/** mtrapinfoString: the trap's text. */
export const CPS_TRAP_STRING = `${CPS}.2.2.3`;

/** The outlet whose number is the value under `number`, named by the text under `name`. */
const outletFrom =
  (number: string, name: string) =>
  (trap: Trap): TrapReading => ({
    outlet: outletIndex(numberUnder(trap, number)),
    state: null,
    label: textUnder(trap, name),
  });

const switched = (name: string, state: string | undefined, read: TrapRule["read"]): TrapRule => ({
  name,
  kind: "outlet-switched",
  ...(state === undefined ? {} : { state }),
  read,
});
const load = (name: string, state: string, read?: TrapRule["read"]): TrapRule => ({
  name,
  kind: "load-state",
  state,
  ...(read === undefined ? {} : { read }),
});

const controlled = outletFrom(CPS_OUTLET_CONTROL_INDEX, CPS_OUTLET_CONTROL_NAME);
const monitored = outletFrom(OUTLET_MONITORED_NUMBER, OUTLET_MONITORED_NAME);
const switchedOutlet = outletFrom(CPS2_SWITCHED_CONTROL_NUMBER, CPS2_SWITCHED_CONTROL_NAME);
const switchedStatus = outletFrom(SWITCHED_STATUS_NUMBER, SWITCHED_STATUS_NAME);
const meteredStatus = outletFrom(METERED_STATUS_NUMBER, METERED_STATUS_NAME);

/** The trap OID of CPS-MIB's specific trap `n`. */
export const cyberpowerTrapOid = (n: number) => `${CPS}.0.${n}`;

export const CYBERPOWER_TRAPS: TrapTable = {
  family: "CyberPower ePDU",
  rules: {
    [cyberpowerTrapOid(102)]: switched("ePDUOutletOn", "on", controlled),
    [cyberpowerTrapOid(103)]: switched("ePDUOutletOff", "off", controlled),
    // Unit load by phase: ePDULoadStatusPhaseNumber.
    [cyberpowerTrapOid(106)]: load("ePDULowLoad", "low"),
    [cyberpowerTrapOid(107)]: load("ePDULowLoadCleared", "normal"),
    [cyberpowerTrapOid(108)]: load("ePDUNearOverload", "warning"),
    [cyberpowerTrapOid(109)]: load("ePDUNearOverloadCleared", "normal"),
    [cyberpowerTrapOid(110)]: load("ePDUOverload", "critical"),
    [cyberpowerTrapOid(111)]: load("ePDUOverloadCleared", "normal"),
    [cyberpowerTrapOid(116)]: { name: "ePDULineUndervoltage", kind: "sensor", state: "low" },
    [cyberpowerTrapOid(117)]: { name: "ePDULineUndervoltageCleared", kind: "sensor", state: "normal" },
    [cyberpowerTrapOid(118)]: { name: "ePDULineOvervoltage", kind: "sensor", state: "high" },
    [cyberpowerTrapOid(119)]: { name: "ePDULineOvervoltageCleared", kind: "sensor", state: "normal" },
    // Bank load: ePDULoadStatusBankNumber.
    [cyberpowerTrapOid(124)]: load("ePDUBankLowLoad", "low"),
    [cyberpowerTrapOid(125)]: load("ePDUBankLowLoadCleared", "normal"),
    [cyberpowerTrapOid(126)]: load("ePDUBankNearOverload", "warning"),
    [cyberpowerTrapOid(127)]: load("ePDUBankNearOverloadCleared", "normal"),
    [cyberpowerTrapOid(128)]: load("ePDUBankOverload", "critical"),
    [cyberpowerTrapOid(129)]: load("ePDUBankOverloadCleared", "normal"),
    // Outlet load: ePDUOutletConfigMonitoredNumber.
    [cyberpowerTrapOid(132)]: load("ePDUOutletLowLoad", "low", monitored),
    [cyberpowerTrapOid(133)]: load("ePDUOutletLowLoadCleared", "normal", monitored),
    [cyberpowerTrapOid(134)]: load("ePDUOutletNearOverload", "warning", monitored),
    [cyberpowerTrapOid(135)]: load("ePDUOutletNearOverloadCleared", "normal", monitored),
    [cyberpowerTrapOid(136)]: load("ePDUOutletOverload", "critical", monitored),
    [cyberpowerTrapOid(137)]: load("ePDUOutletOverloadCleared", "normal", monitored),
    [cyberpowerTrapOid(404)]: load("pduPhaseAlarm", "alarm"),
    [cyberpowerTrapOid(405)]: load("pduPhaseAlarmClear", "normal"),
    [cyberpowerTrapOid(407)]: load("pduBankAlarm", "alarm"),
    [cyberpowerTrapOid(408)]: load("pduBankAlarmClear", "normal"),
    [cyberpowerTrapOid(409)]: switched("pduOutletSwitchedEvent", undefined, switchedOutlet),
    [cyberpowerTrapOid(410)]: load("pduOutletSwitchedAlarm", "alarm", switchedStatus),
    [cyberpowerTrapOid(411)]: load("pduOutletSwitchedAlarmClear", "normal", switchedStatus),
    [cyberpowerTrapOid(413)]: load("pduOutletMeteredAlarm", "alarm", meteredStatus),
    [cyberpowerTrapOid(414)]: load("pduOutletMeteredAlarmClear", "normal", meteredStatus),
  },
};
