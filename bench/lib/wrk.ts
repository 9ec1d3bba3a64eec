/** Runs wrk and parses its report (`--latency` distribution, requests/s, errors). */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

export interface WrkResult {
  readonly url: string;
  readonly requestsPerSecond: number;
  readonly requests: number;
  /** Latency percentiles in ms. */
  readonly p50Ms: number | null;
  readonly p75Ms: number | null;
  readonly p90Ms: number | null;
  readonly p99Ms: number | null;
  /** Socket errors (connect, read, write, timeout) plus non-2xx/3xx answers. */
  readonly errors: number;
  readonly raw: string;
}

/** `1.23ms`, `850.00us`, `1.02s`, `2.00m` → ms. */
export function durationMs(text: string): number | null {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return null;
  const v = Number(m[1]);
  switch (m[2]) {
    case "us":
      return v / 1000;
    case "ms":
      return v;
    case "s":
      return v * 1000;
    default:
      return v * 60_000;
  }
}

export function parseWrk(url: string, raw: string): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, "m").exec(raw);
    return m ? durationMs(m[1]!) : null;
  };
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(raw);
  const total = /(\d+) requests in/.exec(raw);
  let errors = 0;
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  if (socket) errors += socket.slice(1).reduce((n, v) => n + Number(v), 0);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(raw);
  if (non2xx) errors += Number(non2xx[1]);
  if (!rps) throw new Error(`cannot parse wrk output:\n${raw}`);
  return {
    url,
    requestsPerSecond: Number(rps[1]),
    requests: total ? Number(total[1]) : 0,
    p50Ms: pct("50"),
    p75Ms: pct("75"),
    p90Ms: pct("90"),
    p99Ms: pct("99"),
    errors,
    raw,
  };
}

export async function runWrk(
  wrk: string,
  url: string,
  options: { connections: number; threads: number; seconds: number },
): Promise<WrkResult> {
  const args = [
    `-c${options.connections}`,
    `-t${options.threads}`,
    `-d${options.seconds}s`,
    "--latency",
    url,
  ];
  const { stdout } = await promisify(execFile)(wrk, args, { timeout: (options.seconds + 30) * 1000 });
  return parseWrk(url, stdout);
}
