/**
 * Every SNMP profile, in detection order within a vendor (the first whose probe table answers wins:
 * an AP8xxx also answers some rPDU objects, so rPDU2 comes before rPDU; a PX2 before a PX; a
 * Sentry4 before a Sentry3; a CyberPower unit that answers ePDU2 also answers ePDU).
 */
import type { SnmpProfile } from "./profile.js";
import { APC_RPDU } from "./profiles/apc-rpdu.js";
import { APC_RPDU2 } from "./profiles/apc-rpdu2.js";
import { CYBERPOWER_EPDU } from "./profiles/cyberpower-epdu.js";
import { CYBERPOWER_EPDU2 } from "./profiles/cyberpower-epdu2.js";
import { EATON_EPDU } from "./profiles/eaton-epdu.js";
import { RARITAN_PX } from "./profiles/raritan-px.js";
import { RARITAN_PX2 } from "./profiles/raritan-px2.js";
import { SERVERTECH_SENTRY3 } from "./profiles/servertech-sentry3.js";
import { SERVERTECH_SENTRY4 } from "./profiles/servertech-sentry4.js";

export const PROFILES: readonly SnmpProfile[] = [
  APC_RPDU2,
  APC_RPDU,
  RARITAN_PX2,
  RARITAN_PX,
  SERVERTECH_SENTRY4,
  SERVERTECH_SENTRY3,
  CYBERPOWER_EPDU2,
  CYBERPOWER_EPDU,
  EATON_EPDU,
];

export function profileById(id: string): SnmpProfile | undefined {
  return PROFILES.find((p) => p.id === id);
}
