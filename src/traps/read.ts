/**
 * A trap as net-snmp's receiver hands it over, read into the bounded {@link Trap} the trap tables
 * take (src/pdu/trap-events.ts): the trap OID (SNMPv2 snmpTrapOID.0, or SNMPv1's generic and
 * specific numbers as RFC 3584 maps them), and at most TRAP_BOUNDS.varbinds varbinds, each a number
 * or a text within the bounds. Nothing here trusts a type: anything else is null or left out, and a
 * trap without a readable trap OID is refused (null).
 */
import { isTrapOid, TRAP_BOUNDS, type Trap, type TrapVarbind } from "../pdu/trap-events.js";

/** snmpTrapOID.0, the varbind of an SNMPv2 trap that names it. */
export const SNMP_TRAP_OID = "1.3.6.1.6.3.1.1.4.1.0";
/** sysUpTime.0, the first varbind of an SNMPv2 trap. */
export const SYS_UP_TIME = "1.3.6.1.2.1.1.3.0";
/** The SNMPv2 OIDs of SNMPv1's generic traps 0–5 (RFC 3584, section 3.1): snmpTraps.(generic + 1). */
const GENERIC_TRAPS = "1.3.6.1.6.3.1.1.5";
/** net-snmp's PduType of an SNMPv1 trap. */
const V1_TRAP = 164;

/** The value of a varbind as the trap tables read it. */
function valueOf(value: unknown): number | string | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "bigint") {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= 0n ? Number(value) : null;
  }
  if (typeof value === "string") return value.slice(0, TRAP_BOUNDS.textChars);
  if (Buffer.isBuffer(value))
    return value
      .subarray(0, TRAP_BOUNDS.textChars * 4)
      .toString("utf8")
      .slice(0, TRAP_BOUNDS.textChars);
  return null;
}

function varbindsOf(raw: unknown): TrapVarbind[] {
  if (!Array.isArray(raw)) return [];
  const out: TrapVarbind[] = [];
  for (const item of raw.slice(0, TRAP_BOUNDS.varbinds) as unknown[]) {
    if (typeof item !== "object" || item === null) continue;
    const { oid, value } = item as { oid?: unknown; value?: unknown };
    if (isTrapOid(oid)) out.push({ oid, value: valueOf(value) });
  }
  return out;
}

/** The SNMPv1 trap's OID, or null. */
function v1TrapOid(pdu: Record<string, unknown>): string | null {
  const { enterprise, generic, specific } = pdu;
  if (typeof generic !== "number" || !Number.isInteger(generic) || generic < 0) return null;
  if (generic < 6) return `${GENERIC_TRAPS}.${generic + 1}`;
  if (generic !== 6 || !isTrapOid(enterprise)) return null;
  if (typeof specific !== "number" || !Number.isInteger(specific) || specific < 0 || specific > 2 ** 32)
    return null;
  const oid = `${enterprise}.0.${specific}`;
  return isTrapOid(oid) ? oid : null;
}

/** The trap in `pdu` (net-snmp's callback data), or null when it names no trap OID. */
export function readTrap(pdu: unknown): Trap | null {
  if (typeof pdu !== "object" || pdu === null) return null;
  const record = pdu as Record<string, unknown>;
  const varbinds = varbindsOf(record.varbinds);
  if (record.type === V1_TRAP) {
    const trapOid = v1TrapOid(record);
    return trapOid === null ? null : { trapOid, varbinds };
  }
  const named = varbinds.find((v) => v.oid === SNMP_TRAP_OID);
  if (named === undefined || !isTrapOid(named.value)) return null;
  return {
    trapOid: named.value,
    varbinds: varbinds.filter((v) => v.oid !== SNMP_TRAP_OID && v.oid !== SYS_UP_TIME),
  };
}
