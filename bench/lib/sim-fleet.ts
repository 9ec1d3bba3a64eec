/**
 * A fleet of simulated PDUs spread over a few child processes (so that serving them does not share
 * a process, or an event loop, with anything measured). PDU i has seed i and id `pdu-NNNN`.
 */
import { resolve } from "node:path";
import { DIST, IpcChild } from "./child.js";

/** Member (`""`: none) → [polls, first arrival, last arrival] (epoch ms) of one PDU in a span. */
export type PollerCounts = Record<string, [number, number, number]>;

export interface SimFleet {
  /** Port of PDU i (index = PDU number). */
  readonly ports: readonly number[];
  readonly pids: readonly number[];
  /** Forget the recorded polls (start of a measured window). */
  reset(): Promise<void>;
  /** Arrival times of `GET /api` per PDU since the last reset. */
  times(): Promise<number[][]>;
  /** Number of `GET /api` per PDU since the last reset. */
  counts(): Promise<number[]>;
  /**
   * Per PDU, who polled it between `since` and `until` (epoch ms; default: now) by the replica's
   * member header (`""`: a request without one), with the first and last arrival.
   */
  pollers(since: number, until?: number): Promise<PollerCounts[]>;
  /** Waits until every PDU in `first` PDUs got at least `n` polls since the last reset. */
  waitForPolls(n: number, timeoutMs: number, first?: number): Promise<void>;
  close(): Promise<void>;
}

export const pduId = (i: number): string => `pdu-${String(i).padStart(4, "0")}`;

export async function startSimFleet(options: {
  pdus: number;
  processes: number;
  outlets: number;
  /** Every value stands still (the simulator's `frozen` option); default false. */
  frozen?: boolean;
}): Promise<SimFleet> {
  const processes = Math.max(1, Math.min(options.processes, options.pdus));
  const per = Math.ceil(options.pdus / processes);
  const script = resolve(DIST, "bench/lib/sim-child.js");
  const children: IpcChild[] = [];
  for (let seed = 0; seed < options.pdus; seed += per) {
    const count = Math.min(per, options.pdus - seed);
    children.push(
      new IpcChild(script, [
        String(count),
        String(seed),
        String(options.outlets),
        options.frozen === true ? "frozen" : "living",
      ]),
    );
  }
  const portLists = await Promise.all(children.map((c) => c.ready<number[]>()));
  const ports = portLists.flat();
  const all = async <T>(cmd: string): Promise<T[]> =>
    (await Promise.all(children.map((c) => c.request<T[]>(cmd)))).flat();
  const fleet: SimFleet = {
    ports,
    pids: children.map((c) => c.pid),
    reset: async () => {
      await Promise.all(children.map((c) => c.request("reset")));
    },
    times: () => all<number[]>("times"),
    counts: () => all<number>("counts"),
    pollers: async (since, until) =>
      (
        await Promise.all(
          children.map((c) =>
            c.request<PollerCounts[]>("pollers", until === undefined ? { since } : { since, until }),
          ),
        )
      ).flat(),
    async waitForPolls(n, timeoutMs, first = ports.length) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const counts = (await fleet.counts()).slice(0, first);
        const behind = counts.filter((c) => c < n).length;
        if (behind === 0) return;
        if (Date.now() > deadline)
          throw new Error(
            `${behind} of ${first} PDUs were polled fewer than ${n} times within ${timeoutMs} ms`,
          );
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    async close() {
      await Promise.allSettled(children.map((c) => c.request("close")));
      await Promise.all(children.map((c) => c.stop()));
    },
  };
  return fleet;
}
