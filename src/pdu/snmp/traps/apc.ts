/**
 * APC PowerNet-MIB's notifications of rack PDUs (rPDU, rPDU2 and the MasterSwitch before them).
 * PowerNet's traps are SMIv1 TRAP-TYPEs of enterprise apc (1.3.6.1.4.1.318): as SNMPv2 trap OIDs
 * `318.0.<specific>`. Their arguments are the `mtrapargs` scalars (1.3.6.1.4.1.318.2.3): the outlet
 * traps carry the outlet's number as the first integer argument. PowerNet has no notification of a
 * tripped breaker: a bank's overload arrives as a load state, and a trip is inferred from currents.
 */
import { outletIndex, type Trap } from "../../trap-events.js";
import type { TrapRule, TrapTable } from "../trap-rule.js";

const APC = "1.3.6.1.4.1.318";
/** mtrapargs: the arguments of every PowerNet trap. */
export const APC_TRAP_ARGS = `${APC}.2.3`;
/** mtrapargsInteger.0 and mtrapargsString.0. */
export const APC_TRAP_INTEGER = `${APC_TRAP_ARGS}.1.0`;
export const APC_TRAP_STRING = `${APC_TRAP_ARGS}.3.0`;

/** The outlet: the first integer argument. */
function firstInteger(trap: Trap) {
  const arg = trap.varbinds.find((v) => v.oid.startsWith(`${APC_TRAP_ARGS}.`) && typeof v.value === "number");
  return { outlet: outletIndex(arg?.value), state: null };
}

const outlet = (name: string, state: string): TrapRule => ({
  name,
  kind: "outlet-switched",
  state,
  read: firstInteger,
});
const load = (name: string, state: string): TrapRule => ({ name, kind: "load-state", state });

/** The trap OID of PowerNet's specific trap `n`. */
export const apcTrapOid = (n: number) => `${APC}.0.${n}`;

export const APC_TRAPS: TrapTable = {
  family: "APC PowerNet",
  rules: {
    [apcTrapOid(41)]: outlet("outletOn", "on"),
    [apcTrapOid(42)]: outlet("outletOff", "off"),
    [apcTrapOid(43)]: outlet("outletReboot", "reboot"),
    [apcTrapOid(268)]: outlet("rPDUOutletOn", "on"),
    [apcTrapOid(269)]: outlet("rPDUOutletOff", "off"),
    [apcTrapOid(274)]: load("rPDUNearOverload", "warning"),
    [apcTrapOid(275)]: load("rPDUNearOverloadCleared", "normal"),
    [apcTrapOid(276)]: load("rPDUOverload", "critical"),
    [apcTrapOid(277)]: load("rPDUOverloadCleared", "normal"),
  },
};
