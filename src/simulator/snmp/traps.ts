/**
 * The simulated PDU's traps: what a real unit of each family sends when an outlet is switched at
 * its own panel (docs/snmp.md, "The simulator"), as SNMPv2c traps to a configured destination. The
 * notification and its varbinds are those its MIB's TRAP-TYPE or NOTIFICATION-TYPE lists: APC
 * PowerNet rPDUOutletOn/Off, Raritan PDU2 outletSensorStateChange of the outlet's onOff sensor,
 * Sentry4 st4OutletStateChangeEvent, Sentry3 outletChangeEvent, CyberPower ePDUOutletOn/Off
 * (`ePDU`) and pduOutletSwitchedEvent (`ePDU2`), Eaton notifyOutletControlStatus, each with the
 * outlet's name where the MIB carries one; Raritan PX (PDU-MIB) powerControl. A trap can be lost on
 * purpose (a test of what the bridge does without it).
 */
import snmp from "net-snmp";
import type { SimProfile } from "./units.js";

/** Where traps go. */
export interface TrapDestination {
  readonly host: string;
  readonly port: number;
  /** v2c community; default `public`. */
  readonly community?: string;
}

type Varbind = { oid: string; type: number; value: unknown };

const INTEGER = snmp.ObjectType.Integer;
const STRING = snmp.ObjectType.OctetString;

/**
 * The trap OID and varbinds of outlet `n` (1-based over the whole chain of units) named `name`
 * switched on or off, per family; `perUnit`: the outlets of each unit of a chain.
 */
type OutletTrap = (n: number, on: boolean, name: string, perUnit: number) => [string, Varbind[]];

const int = (oid: string, value: number): Varbind => ({ oid, type: INTEGER, value });
const str = (oid: string, value: string): Varbind => ({ oid, type: STRING, value });

/** PowerNet-MIB rPDUOutletOn/Off: rPDUIdentSerialNumber, rPDUIdentName, rPDUOutletControlIndex, …OutletName, mtrapargsString. */
const apcOutlet: OutletTrap = (n, on, name) => [
  `1.3.6.1.4.1.318.0.${on ? 268 : 269}`,
  [
    str("1.3.6.1.4.1.318.1.1.12.1.6.0", "ZA2212012345"),
    str("1.3.6.1.4.1.318.1.1.12.1.1.0", "rack-pdu"),
    int("1.3.6.1.4.1.318.1.1.12.3.3.1.1.1.0", n),
    str("1.3.6.1.4.1.318.1.1.12.3.3.1.1.2.0", name),
    str("1.3.6.1.4.1.318.2.3.3.0", `Outlet ${n} turned ${on ? "on" : "off"}`),
  ],
];

/** Absent: the family sends none. */
const OUTLET_TRAPS: Partial<Record<SimProfile, OutletTrap>> = {
  "apc-rpdu2": apcOutlet,
  "apc-rpdu": apcOutlet,
  // PDU2-MIB outletSensorStateChange: outletLabel, typeOfSensor onOff(14), the sensor's row (on(7), off(8)), oldSensorState.
  "raritan-px2": (n, on, name) => [
    "1.3.6.1.4.1.13742.6.0.63",
    [
      str(`1.3.6.1.4.1.13742.6.3.5.3.1.2.1.${n}`, name),
      int("1.3.6.1.4.1.13742.6.0.0.10", 14),
      int(`1.3.6.1.4.1.13742.6.5.4.3.1.3.1.${n}.14`, on ? 7 : 8),
      int("1.3.6.1.4.1.13742.6.0.0.2", on ? 8 : 7),
    ],
  ],
  // PDU-MIB powerControl: objectName, objectInstance, outletLabel, outletOperationalState (off(0), on(1)).
  "raritan-px": (n, on, name) => [
    "1.3.6.1.4.1.13742.4.0.23",
    [
      str("1.3.6.1.4.1.13742.4.1.1.12.0", "PX"),
      str("1.3.6.1.4.1.13742.4.1.1.13.0", "rack-px"),
      str(`1.3.6.1.4.1.13742.4.1.2.2.1.2.${n}`, name),
      int(`1.3.6.1.4.1.13742.4.1.2.2.1.3.${n}`, on ? 1 : 0),
    ],
  ],
  // Sentry4-MIB st4OutletStateChangeEvent: st4OutletID, st4OutletName, st4OutletState (on(1), off(2)).
  "servertech-sentry4": (n, on, name) => [
    "1.3.6.1.4.1.1718.4.100.0.16",
    [
      str(`1.3.6.1.4.1.1718.4.1.8.2.1.2.1.1.${n}`, `AA${n}`),
      str(`1.3.6.1.4.1.1718.4.1.8.2.1.3.1.1.${n}`, name),
      int(`1.3.6.1.4.1.1718.4.1.8.3.1.1.1.1.${n}`, on ? 1 : 2),
    ],
  ],
  // Sentry3-MIB outletChangeEvent: outletID, outletName, outletStatus (off(0), on(1)) of its tower's infeed 1.
  "servertech-sentry3": (n, on, name, perUnit) => {
    const tower = Math.floor((n - 1) / perUnit) + 1;
    const row = `${tower}.1.${n - (tower - 1) * perUnit}`;
    return [
      "1.3.6.1.4.1.1718.3.100.0.6",
      [
        str(`1.3.6.1.4.1.1718.3.2.3.1.2.${row}`, `${String.fromCharCode(64 + tower)}A${n}`),
        str(`1.3.6.1.4.1.1718.3.2.3.1.3.${row}`, name),
        int(`1.3.6.1.4.1.1718.3.2.3.1.5.${row}`, on ? 1 : 0),
      ],
    ];
  },
  // CPS-MIB ePDUOutletOn/Off: ePDUIdentSerialNumber, ePDUIdentName, ePDUOutletControlIndex, …OutletName, mtrapinfoString.
  "cyberpower-epdu": (n, on, name) => [
    `1.3.6.1.4.1.3808.0.${on ? 102 : 103}`,
    [
      str("1.3.6.1.4.1.3808.1.1.3.1.6.0", "GD3N7E2000123"),
      str("1.3.6.1.4.1.3808.1.1.3.1.1.0", "rack-cps-f"),
      int("1.3.6.1.4.1.3808.1.1.3.3.3.1.1.1.0", n),
      str("1.3.6.1.4.1.3808.1.1.3.3.3.1.1.2.0", name),
      str("1.3.6.1.4.1.3808.2.2.3.0", `Outlet ${n} turned ${on ? "on" : "off"}.`),
    ],
  ],
  // CPS-MIB pduOutletSwitchedEvent: ePDU2IdentSerialNumber, ePDU2IdentName, ePDU2OutletSwitchedControlIndex,
  // …Number, …Name, mtrapinfoString (the new state is in the text only).
  "cyberpower-epdu2": (n, on, name) => [
    "1.3.6.1.4.1.3808.0.409",
    [
      str("1.3.6.1.4.1.3808.1.1.6.2.2.1.10.1", "GD3N7E2000123"),
      str("1.3.6.1.4.1.3808.1.1.6.2.2.1.3.1", "rack-cps-f"),
      int(`1.3.6.1.4.1.3808.1.1.6.6.1.5.1.1.${n}`, n),
      int(`1.3.6.1.4.1.3808.1.1.6.6.1.5.1.3.${n}`, n),
      str(`1.3.6.1.4.1.3808.1.1.6.6.1.5.1.4.${n}`, name),
      str("1.3.6.1.4.1.3808.2.2.3.0", `Outlet ${n} turned ${on ? "on" : "off"}.`),
    ],
  ],
  // EATON-EPDU-MIB notifyOutletControlStatus: strappingIndex, outletIndex, outletControlStatus (off(0), on(1)).
  "eaton-epdu": (n, on, _name, perUnit) => {
    const strap = Math.floor((n - 1) / perUnit);
    const k = n - strap * perUnit;
    return [
      "1.3.6.1.4.1.534.6.6.7.0.33",
      [
        int(`1.3.6.1.4.1.534.6.6.7.1.2.1.1.${strap}`, strap),
        int(`1.3.6.1.4.1.534.6.6.7.6.1.1.1.${strap}.${k}`, k),
        int(`1.3.6.1.4.1.534.6.6.7.6.6.1.2.${strap}.${k}`, on ? 1 : 0),
      ],
    ];
  },
};

/** Whether the family sends a trap when an outlet is switched. */
export function sendsOutletTraps(profile: SimProfile): boolean {
  return OUTLET_TRAPS[profile] !== undefined;
}

export class TrapSender {
  readonly #profile: SimProfile;
  readonly #session: snmp.Session;
  #lost = false;
  #sent = 0;

  /** `source`: the unit's own address, which a real PDU sends its traps from. */
  constructor(profile: SimProfile, destination: TrapDestination, source: string) {
    this.#profile = profile;
    this.#session = snmp.createSession(destination.host, destination.community ?? "public", {
      trapPort: destination.port,
      sourceAddress: source,
      version: snmp.Version2c,
      transport: destination.host.includes(":") ? "udp6" : "udp4",
    });
    this.#session.on("error", () => {
      // A trap is fire and forget: a destination that is not there changes nothing here.
    });
  }

  /** Traps sent so far (lost ones not counted). */
  get sent(): number {
    return this.#sent;
  }

  /** From now on traps are lost (true) or sent (false). */
  setLost(lost: boolean): void {
    this.#lost = lost;
  }

  /** The trap of an outlet (1-based) named `name` switched, unless traps are lost or the family sends none. */
  outletSwitched(outlet: number, on: boolean, name: string, perUnit: number): void {
    const make = OUTLET_TRAPS[this.#profile];
    if (make === undefined || this.#lost) return;
    const [oid, varbinds] = make(outlet, on, name, perUnit);
    this.#sent++;
    this.#session.trap(oid, varbinds as snmp.Varbind[], () => {
      // No answer comes to a trap; a send error is a lost trap.
    });
  }

  close(): void {
    this.#session.close();
  }
}
