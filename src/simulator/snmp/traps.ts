/**
 * The simulated PDU's traps: what a real unit of each family sends when an outlet is switched at
 * its own panel (docs/simulator.md, "Traps"), as SNMPv2c traps to a configured destination. The
 * notification and its varbinds follow each family's MIB: APC PowerNet rPDUOutletOn/Off with the
 * outlet in mtrapargsInteger, Raritan PDU2 outletSensorStateChange with the outlet's onOff sensor
 * row, Sentry4 st4OutletStateChangeEvent with st4OutletState, Eaton notifyOutletControlStatus with
 * outletControlStatus. The other families send none. A trap can be lost on purpose (a test of what
 * the bridge does without it).
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

/** The trap OID and varbinds of an outlet switched to `on`, per family; absent: the family sends none. */
const OUTLET_TRAPS: Partial<Record<SimProfile, (outlet: number, on: boolean) => [string, Varbind[]]>> = {
  "apc-rpdu2": apcOutlet,
  "apc-rpdu": apcOutlet,
  "raritan-px2": (outlet, on) => [
    "1.3.6.1.4.1.13742.6.0.63",
    [{ oid: `1.3.6.1.4.1.13742.6.5.4.3.1.3.1.${outlet}.14`, type: INTEGER, value: on ? 7 : 8 }],
  ],
  "servertech-sentry4": (outlet, on) => [
    "1.3.6.1.4.1.1718.4.100.0.16",
    [{ oid: `1.3.6.1.4.1.1718.4.1.8.3.1.1.1.1.${outlet}`, type: INTEGER, value: on ? 1 : 2 }],
  ],
  "eaton-epdu": (outlet, on) => [
    "1.3.6.1.4.1.534.6.6.7.0.33",
    [{ oid: `1.3.6.1.4.1.534.6.6.7.6.6.1.2.0.${outlet}`, type: INTEGER, value: on ? 1 : 0 }],
  ],
};

function apcOutlet(outlet: number, on: boolean): [string, Varbind[]] {
  return [
    `1.3.6.1.4.1.318.0.${on ? 268 : 269}`,
    [
      { oid: "1.3.6.1.4.1.318.2.3.1.0", type: INTEGER, value: outlet },
      { oid: "1.3.6.1.4.1.318.2.3.3.0", type: STRING, value: `Outlet ${outlet} turned ${on ? "on" : "off"}` },
    ],
  ];
}

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

  /** The trap of an outlet switched (1-based), unless traps are lost or the family sends none. */
  outletSwitched(outlet: number, on: boolean): void {
    const make = OUTLET_TRAPS[this.#profile];
    if (make === undefined || this.#lost) return;
    const [oid, varbinds] = make(outlet, on);
    this.#sent++;
    this.#session.trap(oid, varbinds as snmp.Varbind[], () => {
      // No answer comes to a trap; a send error is a lost trap.
    });
  }

  close(): void {
    this.#session.close();
  }
}
