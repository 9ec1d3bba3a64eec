/**
 * A client's address as the listeners count it: an IPv4 peer of a dual-stack listener
 * (`::ffff:10.0.0.5`) as its IPv4 address, and an IPv6 client by its /64 prefix (one host commonly
 * holds a whole /64, so counting single addresses would let it take places without end). The
 * connection limits (connection-gate.ts), the key guard's lock-out and the console's event streams
 * use these, so that one client is one client everywhere.
 */
import { isIP } from "node:net";

/** `::ffff:10.0.0.5` (an IPv4 peer of a dual-stack listener) as `10.0.0.5`; other addresses as they are. */
export function plainAddress(address: string): string {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(trimmed);
  return mapped?.[1] ?? trimmed;
}

/**
 * What a client is counted under: its IPv4 address (a mapped one unwrapped), or for IPv6 its /64
 * prefix (`2001:db8:1:2::/64`).
 */
export function clientKey(address: string): string {
  const plain = plainAddress(address);
  if (isIP(plain) !== 6) return plain;
  const [head = "", tail = ""] = plain.toLowerCase().split("::", 2);
  const left = head === "" ? [] : head.split(":");
  const right = plain.includes("::") ? (tail === "" ? [] : tail.split(":")) : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
