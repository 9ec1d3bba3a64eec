/**
 * What a PDU's trap says, vendor-neutral (docs/events.md, "SNMP traps"): the trap as the receiver
 * read it (bounded, untyped values turned into numbers or text), and the typed event an SNMP
 * profile's trap table makes of it. A trap is untrusted input: its varbinds are cut to
 * {@link TRAP_BOUNDS}, its texts to the bounds on what a PDU sends, and an event's outlet is a
 * plain index within the bounds or absent.
 */
import { PDU_BOUNDS } from "./bounds.js";

/** The kinds of event a trap becomes (`other`: a trap no table names; it still polls the instance). */
export const TRAP_EVENT_KINDS = [
  "outlet-switched",
  "breaker-tripped",
  "load-state",
  "sensor",
  "unit-restarted",
  "other",
] as const;
export type TrapEventKind = (typeof TRAP_EVENT_KINDS)[number];

export const TRAP_BOUNDS = Object.freeze({
  /** Varbinds of one trap read; the rest are left out. */
  varbinds: 64,
  /** Characters of an OID (a longer one is left out). */
  oidChars: 256,
  /** Characters of a text value kept. */
  textChars: PDU_BOUNDS.textChars,
  /** The highest outlet index an event names. */
  outletIndex: PDU_BOUNDS.outlets,
});

/** One varbind of a trap: a number (integers, gauges, counters, time ticks) or text, else null. */
export interface TrapVarbind {
  readonly oid: string;
  readonly value: number | string | null;
}

/** A trap as read: its trap OID (snmpTrapOID, or v1's enterprise and specific number) and varbinds. */
export interface Trap {
  readonly trapOid: string;
  readonly varbinds: readonly TrapVarbind[];
}

/** The event a trap becomes. */
export interface TrapEvent {
  readonly kind: TrapEventKind;
  /** The notification's name in its MIB (`rPDUOutletOn`), or the trap OID when no table names it. */
  readonly trap: string;
  /** The outlet it is about (the PDU's own 1-based number), when it names one. */
  readonly outlet: number | null;
  /** What it says: on/off, tripped/closed, normal/low/warning/critical, a sensor state's name. */
  readonly state: string | null;
  /**
   * The name the trap gives what it is about (the outlet's or protector's label on the PDU), when
   * it carries one: untrusted text within the bounds that passes the rule for display text.
   */
  readonly label: string | null;
}

const OID_PATTERN = /^[0-9]+(\.[0-9]+){1,127}$/;

/** Whether `oid` is a well-formed OID within the bounds. */
export function isTrapOid(oid: unknown): oid is string {
  return typeof oid === "string" && oid.length <= TRAP_BOUNDS.oidChars && OID_PATTERN.test(oid);
}

/** An outlet index from a varbind's value, or null unless it is a whole number within the bounds. */
export function outletIndex(value: number | string | null | undefined): number | null {
  return typeof value === "number" &&
    Number.isInteger(value) &&
    value >= 1 &&
    value <= TRAP_BOUNDS.outletIndex
    ? value
    : null;
}

/** The first varbind whose OID starts with `prefix` (a column or scalar and its index), or undefined. */
export function varbindUnder(trap: Trap, prefix: string): TrapVarbind | undefined {
  const start = `${prefix}.`;
  return trap.varbinds.find((v) => v.oid.startsWith(start));
}

/** The number the first varbind under `prefix` holds, or null. */
export function numberUnder(trap: Trap, prefix: string): number | null {
  const value = varbindUnder(trap, prefix)?.value;
  return typeof value === "number" ? value : null;
}

/** The text the first varbind under `prefix` holds, or null. */
export function textUnder(trap: Trap, prefix: string): string | null {
  const value = varbindUnder(trap, prefix)?.value;
  return typeof value === "string" ? value : null;
}

/** The name a MIB's enumeration gives `value`, or null (not a number, or not a value it names). */
export function named(names: Readonly<Record<number, string>>, value: number | null): string | null {
  return value === null ? null : (names[value] ?? null);
}

/** The sub-identifiers of a varbind's OID after `prefix` (its table index), or null. */
export function indexAfter(oid: string, prefix: string): number[] | null {
  if (!oid.startsWith(`${prefix}.`)) return null;
  return oid
    .slice(prefix.length + 1)
    .split(".")
    .map(Number);
}
