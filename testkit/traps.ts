/** Helpers of the trap tests: a free UDP port for the receiver, and a counter read from /metrics. */
import { createSocket } from "node:dgram";

/** A UDP port that was free on the IPv6 and IPv4 wildcard a moment ago (the trap receiver's). */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp6");
  await new Promise<void>((resolve) => socket.bind(0, resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** A series' value in a Prometheus text answer (`name{labels}` exactly as written), 0 when absent. */
export function metricValue(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
