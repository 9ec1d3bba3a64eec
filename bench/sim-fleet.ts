/**
 * A fleet of simulated Geist PDUs in one process, for the soak: `node dist/bench/sim-fleet.js
 * --count 200 [--outlets 8] [--seed 1000]`. Each simulator listens on its own ephemeral port on
 * 127.0.0.1 with a distinct seed (so distinct device ids) and records no requests (a recording
 * simulator would grow by itself over a long run). Prints one JSON line `{"ports":[...]}` when every
 * simulator listens, then runs until SIGTERM/SIGINT.
 */
import { parseArgs } from "node:util";
import { startSimulator, type Simulator } from "../src/simulator/index.js";

const { values } = parseArgs({
  options: {
    count: { type: "string", default: "200" },
    outlets: { type: "string", default: "8" },
    seed: { type: "string", default: "1000" },
  },
  strict: true,
});
const count = Number(values.count);
const outlets = Number(values.outlets);
const seed = Number(values.seed);

const sims: Simulator[] = [];
for (let i = 0; i < count; i++) {
  sims.push(await startSimulator({ seed: seed + i, outlets, requestLogLimit: 0 }));
}
process.stdout.write(`${JSON.stringify({ ports: sims.map((s) => s.port) })}\n`);

const stop = (): void => {
  void Promise.allSettled(sims.map((s) => s.close())).then(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
