/**
 * Which instance a trap is from: its source address must be the `Host` of an SNMP instance (a host
 * name is looked up once, at start; its addresses are that instance's), and its credentials ones
 * that instance may send with: a v1/v2c community of SERVICE_TRAP_COMMUNITIES, or the instance's
 * own SNMPv3 user (net-snmp's receiver has checked the user's digest and decrypted the trap by
 * then). Several instances behind one address (ports of one agent) are told apart by their v3 users;
 * with a community the first of them in the file takes the trap.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isSnmpV3 } from "../config/traps.js";
import type { InstanceConfig } from "../config/schema.js";

/** The credentials a trap came with, as the receiver read them. */
export type TrapCredentials = { readonly community: string } | { readonly user: string };

/** Why a trap was dropped (the `reason` of `pdu_trap_dropped_total`). */
export const TRAP_DROP_REASONS = [
  "unknown-source",
  "bad-community",
  "bad-user",
  "bad-auth",
  "malformed",
  "not-held",
] as const;
export type TrapDropReason = (typeof TRAP_DROP_REASONS)[number];

/** Addresses as they are compared: IPv4-mapped IPv6 addresses as IPv4, IPv6 in lower case. */
export function normalAddress(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith("::ffff:") && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

export class TrapSources {
  readonly #byAddress = new Map<string, InstanceConfig[]>();
  readonly #communities: ReadonlySet<string>;

  private constructor(communities: readonly string[]) {
    this.#communities = new Set(communities);
  }

  /** The sources of `instances` (the SNMP ones), their host names looked up; one that cannot be is left out. */
  static async of(
    instances: readonly InstanceConfig[],
    communities: readonly string[],
  ): Promise<TrapSources> {
    const sources = new TrapSources(communities);
    const snmp = instances.filter((i) => i.Driver === "snmp");
    const found = await Promise.all(snmp.map((i) => addressesOf(i.Connection.Host)));
    snmp.forEach((instance, n) => {
      for (const address of found[n]!) {
        const list = sources.#byAddress.get(address) ?? [];
        list.push(instance);
        sources.#byAddress.set(address, list);
      }
    });
    return sources;
  }

  /** Whether any instance has this source address. */
  known(address: string): boolean {
    return this.#byAddress.has(normalAddress(address));
  }

  /** The instance a trap from `address` with `credentials` is from, or why it is dropped. */
  match(address: string, credentials: TrapCredentials): InstanceConfig | TrapDropReason {
    const candidates = this.#byAddress.get(normalAddress(address));
    if (candidates === undefined) return "unknown-source";
    if ("community" in credentials) {
      if (!this.#communities.has(credentials.community)) return "bad-community";
      return candidates[0]!;
    }
    const owner = candidates.find((i) => isSnmpV3(i) && i.Snmp.Auth.Username === credentials.user);
    return owner ?? "bad-user";
  }
}

async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host) !== 0) return [normalAddress(host)];
  try {
    return (await lookup(host, { all: true })).map((a) => normalAddress(a.address));
  } catch {
    return [];
  }
}
