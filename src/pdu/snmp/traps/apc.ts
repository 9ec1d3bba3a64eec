/**
 * APC PowerNet-MIB's notifications of rack PDUs (rPDU, rPDU2 and the MasterSwitch before them).
 * PowerNet's traps are SMIv1 TRAP-TYPEs of enterprise apc (1.3.6.1.4.1.318): as SNMPv2 trap OIDs
 * `318.0.<specific>`. Each rule names its TRAP-TYPE and the VARIABLES it reads:
 *
 * - the Switched Rack PDU's outlet traps carry rPDUIdentSerialNumber, rPDUIdentName,
 *   rPDUOutletControlIndex (the outlet's number, as its value) and rPDUOutletControlOutletName;
 * - the outlet load traps carry rPDUOutletStatusIndex (the outlet's number), the bank/phase and
 *   unit load traps the bank or phase number (not an outlet);
 * - the MasterSwitch's outletOn/Off/Reboot name sPDUOutletControlIndex; agents send the number as
 *   the first trap argument, mtrapargsInteger (0: every outlet, so no one outlet).
 *
 * PowerNet has no notification of a tripped breaker: a bank's overload arrives as a load state, and
 * a trip is inferred from currents (docs/events.md). A bank or phase falling under its low-load
 * threshold is APC's own advice for noticing a trip: it arrives as the load state `low`.
 */
import { numberUnder, outletIndex, textUnder, type Trap } from "../../trap-events.js";
import type { TrapReading, TrapRule, TrapTable } from "../trap-rule.js";

const APC = "1.3.6.1.4.1.318";
/** mtrapargs: the arguments of PowerNet traps that name no object of their own. */
export const APC_TRAP_ARGS = `${APC}.2.3`;
/** mtrapargsInteger and mtrapargsString (scalars: `.0`). */
export const APC_TRAP_INTEGER = `${APC_TRAP_ARGS}.1`;
export const APC_TRAP_STRING = `${APC_TRAP_ARGS}.3`;
/** rPDUIdentSerialNumber and rPDUIdentName (scalars). */
export const APC_RPDU_SERIAL = `${APC}.1.1.12.1.6`;
export const APC_RPDU_NAME = `${APC}.1.1.12.1.1`;
/** rPDUOutletControlIndex and rPDUOutletControlOutletName (rPDUOutletControlEntry 1, 2). */
export const APC_OUTLET_CONTROL_INDEX = `${APC}.1.1.12.3.3.1.1.1`;
export const APC_OUTLET_CONTROL_NAME = `${APC}.1.1.12.3.3.1.1.2`;
/** rPDUOutletStatusIndex and rPDUOutletStatusOutletName (rPDUOutletStatusEntry 1, 2). */
const OUTLET_STATUS_INDEX = `${APC}.1.1.12.3.5.1.1.1`;
const OUTLET_STATUS_NAME = `${APC}.1.1.12.3.5.1.1.2`;
/** sPDUOutletControlIndex (the MasterSwitch's sPDUOutletControlEntry 1). */
const SPDU_OUTLET_CONTROL_INDEX = `${APC}.1.1.4.4.2.1.1`;

/** The outlet of an rPDU outlet trap: rPDUOutletControlIndex's value, its name the label. */
function rpduOutlet(trap: Trap): TrapReading {
  return {
    outlet: outletIndex(numberUnder(trap, APC_OUTLET_CONTROL_INDEX)),
    state: null,
    label: textUnder(trap, APC_OUTLET_CONTROL_NAME),
  };
}

/** The outlet of an outlet load trap: rPDUOutletStatusIndex's value. */
function loadOutlet(trap: Trap): TrapReading {
  return {
    outlet: outletIndex(numberUnder(trap, OUTLET_STATUS_INDEX)),
    state: null,
    label: textUnder(trap, OUTLET_STATUS_NAME),
  };
}

/** The outlet of a MasterSwitch outlet trap: sPDUOutletControlIndex, else mtrapargsInteger. */
function masterSwitchOutlet(trap: Trap): TrapReading {
  const n = numberUnder(trap, SPDU_OUTLET_CONTROL_INDEX) ?? numberUnder(trap, APC_TRAP_INTEGER);
  return { outlet: outletIndex(n), state: null };
}

const switched = (name: string, state: string, read: TrapRule["read"]): TrapRule => ({
  name,
  kind: "outlet-switched",
  state,
  read,
});
const load = (name: string, state: string, read?: TrapRule["read"]): TrapRule => ({
  name,
  kind: "load-state",
  state,
  ...(read === undefined ? {} : { read }),
});

/** The trap OID of PowerNet's specific trap `n`. */
export const apcTrapOid = (n: number) => `${APC}.0.${n}`;

export const APC_TRAPS: TrapTable = {
  family: "APC PowerNet",
  rules: {
    [apcTrapOid(41)]: switched("outletOn", "on", masterSwitchOutlet),
    [apcTrapOid(42)]: switched("outletOff", "off", masterSwitchOutlet),
    [apcTrapOid(43)]: switched("outletReboot", "reboot", masterSwitchOutlet),
    // Bank or phase load: rPDULoadStatusBankNumber, rPDULoadStatusPhaseNumber.
    [apcTrapOid(222)]: load("rPDUBankPhaseLowLoad", "low"),
    [apcTrapOid(223)]: load("rPDUBankPhaseLowLoadCleared", "normal"),
    [apcTrapOid(224)]: load("rPDUBankPhaseNearOverload", "warning"),
    [apcTrapOid(225)]: load("rPDUBankPhaseNearOverloadCleared", "normal"),
    [apcTrapOid(226)]: load("rPDUBankPhaseOverload", "critical"),
    [apcTrapOid(227)]: load("rPDUBankPhaseOverloadCleared", "normal"),
    [apcTrapOid(268)]: switched("rPDUOutletOn", "on", rpduOutlet),
    [apcTrapOid(269)]: switched("rPDUOutletOff", "off", rpduOutlet),
    // Unit load by phase: rPDULoadStatusPhaseNumber.
    [apcTrapOid(272)]: load("rPDULowLoad", "low"),
    [apcTrapOid(273)]: load("rPDULowLoadCleared", "normal"),
    [apcTrapOid(274)]: load("rPDUNearOverload", "warning"),
    [apcTrapOid(275)]: load("rPDUNearOverloadCleared", "normal"),
    [apcTrapOid(276)]: load("rPDUOverload", "critical"),
    [apcTrapOid(277)]: load("rPDUOverloadCleared", "normal"),
    // Outlet load: rPDUOutletStatusIndex.
    [apcTrapOid(630)]: load("rPDUOutletLowLoad", "low", loadOutlet),
    [apcTrapOid(631)]: load("rPDUOutletLowLoadCleared", "normal", loadOutlet),
    [apcTrapOid(632)]: load("rPDUOutletNearOverload", "warning", loadOutlet),
    [apcTrapOid(633)]: load("rPDUOutletNearOverloadCleared", "normal", loadOutlet),
    [apcTrapOid(634)]: load("rPDUOutletOverload", "critical", loadOutlet),
    [apcTrapOid(635)]: load("rPDUOutletOverloadCleared", "normal", loadOutlet),
  },
};
