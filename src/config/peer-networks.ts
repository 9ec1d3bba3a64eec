/**
 * `Cluster.PeerNetworks` (docs/cluster.md, "REST on any replica"): where another replica's
 * advertised URL may point. Each entry is a network in CIDR form (matched against an IP address in
 * the URL), a host name (matched exactly) or a DNS suffix starting with a dot (matched as the end of
 * a name). A name is never resolved to check it: what is checked is what would be connected to.
 */
import { BlockList, isIP } from "node:net";

/** A checker of hosts against the configured entries. */
export interface PeerNetworks {
  /** Whether an http(s) origin's host is within the entries. */
  allows(origin: string): boolean;
}

/** Why an entry is not a network, host name or suffix, or null. */
export function peerNetworkProblem(entry: string): string | null {
  const slash = entry.indexOf("/");
  if (slash < 0) return null;
  const address = entry.slice(0, slash);
  const bits = Number(entry.slice(slash + 1));
  const family = isIP(address);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > max) {
    return "is not a network in CIDR form (an IPv4 or IPv6 address, / and a prefix length: 10.244.0.0/16, fd00::/8)";
  }
  return null;
}

/** The checker of `entries` (entries that are not valid are left out: the configuration refuses them). */
export function peerNetworks(entries: readonly string[]): PeerNetworks {
  const blocks = new BlockList();
  const names = new Set<string>();
  const suffixes: string[] = [];
  for (const entry of entries) {
    const slash = entry.indexOf("/");
    if (slash < 0) {
      if (entry.startsWith(".")) suffixes.push(entry.toLowerCase());
      else names.add(entry.toLowerCase());
      continue;
    }
    if (peerNetworkProblem(entry) !== null) continue;
    const address = entry.slice(0, slash);
    blocks.addSubnet(address, Number(entry.slice(slash + 1)), isIP(address) === 4 ? "ipv4" : "ipv6");
  }
  return {
    allows(origin) {
      let host: string;
      try {
        host = new URL(origin).hostname.toLowerCase();
      } catch {
        return false;
      }
      if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
      const family = isIP(host);
      if (family !== 0) return blocks.check(host, family === 4 ? "ipv4" : "ipv6");
      return names.has(host) || suffixes.some((s) => host.endsWith(s) && host.length > s.length);
    },
  };
}
