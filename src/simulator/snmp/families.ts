/**
 * The SNMP simulator's families kept in files of their own (CyberPower, Eaton, Sentry3): the
 * profiles they serve, their default outlet names, their tables and what a control write means.
 * SimUnit (./units.ts) hands them its state through a FamilyView.
 */
import type { FamilyView, SimContent } from "./tables.js";
import { CPS_COMMANDS, cyberpowerContent, cyberpowerDefaultName } from "./unit-cyberpower.js";
import { eatonCommand, eatonContent, eatonDefaultName } from "./unit-eaton.js";
import { SENTRY3_COMMANDS, sentry3Content, sentry3DefaultName } from "./unit-sentry3.js";

export const FAMILY_SIM_PROFILES = [
  "servertech-sentry3",
  "cyberpower-epdu2",
  "cyberpower-epdu",
  "eaton-epdu",
] as const;
export type FamilyProfile = (typeof FAMILY_SIM_PROFILES)[number];

/** Units on the family's chain: its simulated agent serves this many units of `outlets` each. */
export function familyChain(profile: string): number {
  return profile === "servertech-sentry3" || profile === "eaton-epdu" ? 2 : 1;
}

export function familyDefaultName(profile: FamilyProfile, n: number, outlets: number): string {
  switch (profile) {
    case "servertech-sentry3":
      return sentry3DefaultName(n, outlets);
    case "cyberpower-epdu2":
    case "cyberpower-epdu":
      return cyberpowerDefaultName(n);
    case "eaton-epdu":
      return eatonDefaultName(n);
  }
}

export function familyContent(profile: FamilyProfile, view: FamilyView): SimContent {
  switch (profile) {
    case "servertech-sentry3":
      return sentry3Content(view);
    case "cyberpower-epdu2":
      return cyberpowerContent(view, true);
    case "cyberpower-epdu":
      return cyberpowerContent(view, false);
    case "eaton-epdu":
      return eatonContent(view);
  }
}

/** What `value` written to the control column `column` (sub-identifier) means. */
export function familyCommand(
  profile: string,
  value: number,
  column: number | undefined,
): "on" | "off" | "reboot" | null {
  switch (profile) {
    case "servertech-sentry3":
      return SENTRY3_COMMANDS[value] ?? null;
    case "cyberpower-epdu2":
    case "cyberpower-epdu":
      return CPS_COMMANDS[value] ?? null;
    case "eaton-epdu":
      return eatonCommand(value, column);
    default:
      return null;
  }
}
