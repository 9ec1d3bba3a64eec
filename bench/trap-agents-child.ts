/**
 * The simulated PDUs of `--only traps` (bench/traps.ts), out of the bench's process and the bridge's:
 *
 * - `--responders <units> <seed>`: `units` APC rPDU2 units (24 outlets) served by the bench's
 *   pre-encoded responder (lib/snmp-responder.ts) on ports of 127.0.0.1; each unit records when each
 *   poll's first request reached it (requests closer together than {@link BURST_GAP_MS} are one
 *   poll). IPC: `polls` → each unit's poll start times (epoch ms), `close`.
 * - `--simulators <count> <trap port> <community>`: `count` units of the project's own simulator
 *   (src/simulator/snmp), unit k on its own address 127.2.0.(k+1), sending its traps from that
 *   address to the receiver on 127.0.0.1:<trap port>. IPC: `switch {index, action}` switches outlet
 *   1 of unit `index` at its panel (the unit changes state and sends its trap) and answers the epoch
 *   ms it did; `close`.
 *
 * Both answer `ready` with their units' `{host, port}`.
 */
import { startResponder } from "./lib/snmp-responder.js";
import { serveIpc, signalReady } from "./lib/child.js";
import { startSnmpSimulator, type SnmpSimulator } from "../src/simulator/snmp/agent.js";

/** Requests to one unit closer together than this are one poll (one walk of its tables). */
const BURST_GAP_MS = 2000;
/** rPDU2IdentSerialNumber: each unit answers a serial of its own, as real units do. */
const SERIAL_OID = "1.3.6.1.4.1.318.1.1.26.2.1.9.1";
export const BENCH_COMMUNITY = "bench";

/** Unit k's address among the real simulators. */
export const simulatorHost = (k: number) => `127.2.${Math.floor(k / 250)}.${(k % 250) + 1}`;

async function responders(units: number, seed: number): Promise<void> {
  const starts: number[][] = Array.from({ length: units }, () => []);
  const last = new Array<number>(units).fill(0);
  const responder = await startResponder({
    profile: "apc-rpdu2",
    outlets: 24,
    units,
    seed,
    community: BENCH_COMMUNITY,
    serial: { oid: SERIAL_OID, prefix: "3F17" },
    onRequest: (_address, _port, unit) => {
      const now = Date.now();
      if (now - (last[unit] ?? 0) > BURST_GAP_MS) starts[unit]?.push(now);
      last[unit] = now;
    },
  });
  serveIpc((cmd) => {
    if (cmd === "polls") return Promise.resolve(starts);
    if (cmd === "close") return responder.close().then(() => null);
    return Promise.reject(new Error(`unknown command ${cmd}`));
  });
  signalReady(responder.ports.map((port) => ({ host: "127.0.0.1", port })));
}

async function simulators(count: number, trapPort: number, community: string): Promise<void> {
  const sims: SnmpSimulator[] = [];
  for (let k = 0; k < count; k++) {
    sims.push(
      await startSnmpSimulator({
        profile: "apc-rpdu2",
        outlets: 24,
        host: simulatorHost(k),
        port: 0,
        community: BENCH_COMMUNITY,
        frozen: true,
        seed: k,
        trapTo: { host: "127.0.0.1", port: trapPort, community },
      }),
    );
  }
  serveIpc((cmd, message) => {
    if (cmd === "switch") {
      const sim = sims[Number(message.index)];
      if (sim === undefined) return Promise.reject(new Error(`no unit ${String(message.index)}`));
      const at = Date.now();
      sim.panelSwitch(1, message.action === "off" ? "off" : "on");
      return Promise.resolve(at);
    }
    if (cmd === "close") return Promise.all(sims.map((s) => s.close())).then(() => null);
    return Promise.reject(new Error(`unknown command ${cmd}`));
  });
  signalReady(sims.map((s) => ({ host: s.host, port: s.port })));
}

if (process.argv[2] === "--responders") {
  await responders(Number(process.argv[3]), Number(process.argv[4]));
} else if (process.argv[2] === "--simulators") {
  await simulators(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] ?? "public");
}
