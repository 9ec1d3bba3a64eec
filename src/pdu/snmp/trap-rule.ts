/** What a profile's trap table is (./trap-table.ts looks traps up in them; the tables are in ./traps/). */
import type { Trap, TrapEventKind } from "../trap-events.js";

/** One notification of a family's MIB. */
export interface TrapRule {
  /** The notification's name in its MIB. */
  readonly name: string;
  readonly kind: TrapEventKind;
  /** What the notification itself says, when its name says it (rPDUOutletOn: on). */
  readonly state?: string;
  /** The outlet and the state from the varbinds, each null where they do not say (untrusted: bounded). */
  readonly read?: (trap: Trap) => { readonly outlet: number | null; readonly state: string | null };
}

/** A family's notifications by trap OID. */
export interface TrapTable {
  readonly family: string;
  readonly rules: Readonly<Record<string, TrapRule>>;
}
