/** What a profile's trap table is (./trap-table.ts looks traps up in them; the tables are in ./traps/). */
import type { Trap, TrapEventKind } from "../trap-events.js";

/** What a rule's reader finds in a trap's varbinds; each field null where they do not say. */
export interface TrapReading {
  readonly outlet: number | null;
  readonly state: string | null;
  /** The kind, where the varbinds decide it (a Raritan sensor's type); absent: the rule's. */
  readonly kind?: TrapEventKind;
  /** The name the trap gives what it is about (an outlet's or protector's label): untrusted text. */
  readonly label?: string | null;
}

/** One notification of a family's MIB. */
export interface TrapRule {
  /** The notification's name in its MIB. */
  readonly name: string;
  readonly kind: TrapEventKind;
  /** What the notification itself says, when its name says it (rPDUOutletOn: on). */
  readonly state?: string;
  /** The outlet, state, kind and label from the varbinds (untrusted: bounded). */
  readonly read?: (trap: Trap) => TrapReading;
}

/** A family's notifications by trap OID. */
export interface TrapTable {
  readonly family: string;
  readonly rules: Readonly<Record<string, TrapRule>>;
}
