/**
 * The rules of `Traps` (docs/events.md, "SNMP traps"): the v2c communities read from
 * SERVICE_TRAP_COMMUNITIES, and what makes a receiver that is on useless or ambiguous. The v3 users
 * the receiver takes are the SNMP instances' own (`Pdus.<id>.Snmp`), one user per name: two instances
 * naming one user with other keys could not both be told apart by the user alone, so that is refused.
 */
import type { Config, FileConfig, InstanceConfig, TrapsConfig } from "./schema.js";

/** The variable (or its _FILE form) that holds the v2c communities, comma-separated. */
export const TRAP_COMMUNITIES_VARIABLE = "SERVICE_TRAP_COMMUNITIES";
/** The longest community taken; a longer one is refused by name. */
export const MAX_TRAP_COMMUNITY_LENGTH = 64;
/** At most this many communities. */
export const MAX_TRAP_COMMUNITIES = 16;

export interface TrapProblem {
  readonly path: readonly string[];
  readonly problem: string;
}

/** The communities of the variable's value, split at commas and trimmed, with the problems of the list. */
export function parseTrapCommunities(value: string | undefined): {
  readonly communities: readonly string[];
  readonly problems: readonly string[];
} {
  if (value === undefined || value.trim() === "") return { communities: [], problems: [] };
  const parts = value.split(",").map((part) => part.trim());
  const problems: string[] = [];
  if (parts.some((part) => part === ""))
    problems.push("an empty community in the list (two commas, or one at an end)");
  if (parts.some((part) => part.length > MAX_TRAP_COMMUNITY_LENGTH)) {
    problems.push(`a community longer than ${MAX_TRAP_COMMUNITY_LENGTH} characters`);
  }
  if (parts.length > MAX_TRAP_COMMUNITIES) problems.push(`more than ${MAX_TRAP_COMMUNITIES} communities`);
  return { communities: [...new Set(parts.filter((part) => part !== ""))], problems };
}

/** `Traps` of the file with the communities read. */
export function resolveTraps(section: FileConfig["Traps"], communities: readonly string[]): TrapsConfig {
  return { ...section, Communities: communities };
}

/** An SNMP instance polled with SNMPv3. */
export function isSnmpV3(instance: InstanceConfig): boolean {
  return instance.Driver === "snmp" && String(instance.Snmp.Version) === "3";
}

/** What makes the receiver useless or ambiguous; nothing when traps are off. */
export function trapProblems(config: Config): TrapProblem[] {
  if (!config.Traps.Enabled) return [];
  const problems: TrapProblem[] = [];
  const snmp = config.instances.filter((i) => i.Driver === "snmp");
  if (snmp.length === 0) {
    problems.push({
      path: ["Traps", "Enabled"],
      problem: "no instance has Driver snmp: no trap could be matched",
    });
  } else if (config.Traps.Communities.length === 0 && !snmp.some(isSnmpV3)) {
    problems.push({
      path: ["Traps", "Enabled"],
      problem: `no trap could be accepted: set ${TRAP_COMMUNITIES_VARIABLE} (v2c communities) or an SNMP instance with Version 3`,
    });
  }
  const users = new Map<string, InstanceConfig>();
  for (const instance of snmp.filter(isSnmpV3)) {
    const name = instance.Snmp.Auth.Username;
    if (name === null) continue;
    const first = users.get(name);
    if (first === undefined) users.set(name, instance);
    else if (userKey(first) !== userKey(instance)) {
      problems.push({
        path: ["Pdus", instance.id, "Snmp", "Auth", "Username"],
        problem: `the SNMPv3 user is also instance ${first.id}'s with other keys or protocols: the trap receiver takes one user per name`,
      });
    }
  }
  return problems;
}

function userKey(instance: InstanceConfig): string {
  const s = instance.Snmp;
  return JSON.stringify([s.Auth.Protocol, s.Auth.PrivProtocol, s.AuthKey, s.PrivKey]);
}
