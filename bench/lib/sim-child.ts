/**
 * A child process holding many simulated PDUs (one node:http server each).
 * Run: `fork("dist/bench/lib/sim-child.js", [count, firstSeed, outlets, "frozen" | "living"])`
 * ("frozen": every value stands still, the simulator's `frozen` option).
 * Ready message: the ports, in seed order. Requests:
 * - `reset`: forget the recorded requests (start of a measured window);
 * - `times`: per simulator, the arrival times (epoch ms, this process's clock) of `GET /api` since
 *   the last reset;
 * - `counts`: per simulator, how many `GET /api` arrived since the last reset;
 * - `close`: stop every simulator.
 */
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { serveIpc, signalReady } from "./child.js";

const [count, firstSeed, outlets] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const frozen = process.argv[5] === "frozen";

const sims: Simulator[] = [];
for (let i = 0; i < count; i++) {
  sims.push(await startSimulator({ outlets, seed: firstSeed + i, requestLogLimit: 2000, frozen }));
}

const polls = (sim: Simulator) => sim.requests.filter((r) => r.method === "GET" && r.path === "/api");

serveIpc((cmd) => {
  switch (cmd) {
    case "reset":
      for (const sim of sims) sim.clearRequests();
      return Promise.resolve(null);
    case "times":
      return Promise.resolve(sims.map((sim) => polls(sim).map((r) => r.time)));
    case "counts":
      return Promise.resolve(sims.map((sim) => polls(sim).length));
    case "close":
      return Promise.all(sims.map((sim) => sim.close())).then(() => null);
    default:
      return Promise.reject(new Error(`unknown command ${cmd}`));
  }
});
signalReady(sims.map((sim) => sim.port));
