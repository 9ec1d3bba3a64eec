/**
 * An SNMP profile's trap table (docs/events.md, "SNMP traps"): which notifications of the family's
 * MIB the bridge knows, and how each becomes a typed event. The tables live beside the profiles
 * (./traps/); {@link trapEvent} looks a trap up in all of them by its trap OID (every family's
 * notifications are under its own enterprise), so a trap is read the same whichever profile polls
 * the instance. A trap no table names is an `other` event with its OID.
 */
import type { Trap, TrapEvent } from "../trap-events.js";
import { displayTextProblem } from "../../display.js";
import type { TrapReading, TrapRule, TrapTable } from "./trap-rule.js";
import { APC_TRAPS } from "./traps/apc.js";
import { FAMILY_TRAPS } from "./traps/families.js";
import { RARITAN_PX_TRAPS, RARITAN_TRAPS } from "./traps/raritan.js";
import { SENTRY4_TRAPS } from "./traps/sentry4.js";

/** SNMPv2-MIB's generic notifications, which every agent sends. */
const GENERIC: TrapTable = {
  family: "SNMPv2-MIB",
  rules: {
    "1.3.6.1.6.3.1.1.5.1": { name: "coldStart", kind: "unit-restarted", state: "cold" },
    "1.3.6.1.6.3.1.1.5.2": { name: "warmStart", kind: "unit-restarted", state: "warm" },
  },
};

export const TRAP_TABLES: readonly TrapTable[] = [
  GENERIC,
  APC_TRAPS,
  RARITAN_TRAPS,
  RARITAN_PX_TRAPS,
  SENTRY4_TRAPS,
  ...FAMILY_TRAPS,
];

const BY_OID: ReadonlyMap<string, TrapRule> = new Map(
  TRAP_TABLES.flatMap((table) => Object.entries(table.rules)),
);

/** The event a trap becomes. Never throws: a rule's reader that fails leaves outlet and state out. */
export function trapEvent(trap: Trap): TrapEvent {
  const rule = BY_OID.get(trap.trapOid);
  if (rule === undefined)
    return { kind: "other", trap: trap.trapOid, outlet: null, state: null, label: null };
  let read: TrapReading = { outlet: null, state: null };
  try {
    if (rule.read !== undefined) read = { ...rule.read(trap) };
  } catch {
    // A reader meets only bounded values; anything it cannot read stays out of the event.
  }
  return {
    kind: read.kind ?? rule.kind,
    trap: rule.name,
    outlet: read.outlet,
    state: read.state ?? rule.state ?? null,
    label: shownLabel(read.label),
  };
}

/** A label the PDU sent, as the event carries it: blank or breaking the rule for display text, none. */
function shownLabel(label: string | null | undefined): string | null {
  if (typeof label !== "string") return null;
  const trimmed = label.trim();
  return trimmed === "" || displayTextProblem(trimmed) !== null ? null : trimmed;
}
