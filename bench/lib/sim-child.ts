/**
 * A child process holding many simulated PDUs (one node:http server each).
 * Run: `fork("dist/bench/lib/sim-child.js", [count, firstSeed, outlets, "frozen" | "living"])`
 * ("frozen": every value stands still, the simulator's `frozen` option).
 * Ready message: the ports, in seed order. Requests:
 * - `reset`: forget the recorded requests (start of a measured window);
 * - `times`: per simulator, the arrival times (epoch ms, this process's clock) of `GET /api` since
 *   the last reset;
 * - `counts`: per simulator, how many `GET /api` arrived since the last reset;
 * - `pollers` `{since, until}` (epoch ms): per simulator, who polled it in that span, by the
 *   `X-Pdu-Bridge-Member` header of the bridge replica (`""` for a request without one): the number
 *   of `GET /api` and the first and last arrival time ({@link PollerCounts});
 * - `close`: stop every simulator.
 */
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { serveIpc, signalReady } from "./child.js";
import type { PollerCounts } from "./sim-fleet.js";

const [count, firstSeed, outlets] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const frozen = process.argv[5] === "frozen";

const sims: Simulator[] = [];
for (let i = 0; i < count; i++) {
  sims.push(await startSimulator({ outlets, seed: firstSeed + i, requestLogLimit: 2000, frozen }));
}

const polls = (sim: Simulator) => sim.requests.filter((r) => r.method === "GET" && r.path === "/api");

function pollersOf(sim: Simulator, since: number, until: number): PollerCounts {
  const out: PollerCounts = {};
  const log = sim.requests;
  // The log is in arrival order: walk back from the newest to the first before `since`.
  for (let i = log.length - 1; i >= 0; i--) {
    const r = log[i]!;
    if (r.time < since) break;
    if (r.time > until || r.method !== "GET" || r.path !== "/api") continue;
    const key = r.member ?? "";
    const seen = out[key];
    if (seen === undefined) out[key] = [1, r.time, r.time];
    else {
      seen[0]++;
      seen[1] = r.time;
    }
  }
  return out;
}

serveIpc((cmd, message) => {
  switch (cmd) {
    case "reset":
      for (const sim of sims) sim.clearRequests();
      return Promise.resolve(null);
    case "times":
      return Promise.resolve(sims.map((sim) => polls(sim).map((r) => r.time)));
    case "counts":
      return Promise.resolve(sims.map((sim) => polls(sim).length));
    case "pollers": {
      const since = Number(message.since);
      const until = message.until === undefined ? Infinity : Number(message.until);
      return Promise.resolve(sims.map((sim) => pollersOf(sim, since, until)));
    }
    case "close":
      return Promise.all(sims.map((sim) => sim.close())).then(() => null);
    default:
      return Promise.reject(new Error(`unknown command ${cmd}`));
  }
});
signalReady(sims.map((sim) => sim.port));
