/** `pdu-bridge simulate`: runs the built-in Geist PDU simulator until SIGINT/SIGTERM. */

import { parseArgs } from "node:util";
import { startSimulator } from "./index.js";
import type { Simulator, SimulatorOptions } from "./types.js";

export const SIMULATE_USAGE = `Usage: pdu-bridge simulate [options]

  --port N            port of the (master) PDU, default 8080 (0: pick a free one)
  --host H            listen address, default 127.0.0.1
  --devices N         devices per PDU, default 1
  --outlets N         outlets per device, default 8
  --oneview           run a OneView cluster: a master plus members on their own proxy ports
  --members N         members of the cluster, default 2 (implies --oneview)
  --https             serve HTTPS with a self-signed certificate
  --seed N            seed of device ids and measurements, default 1
  --state-lag-ms N    reported outlet state lags a switch by N ms (real units: about 60000)
  --idle-drop-ms N    drop idle keep-alive connections after N ms
  --frozen            freeze every measurement: reads return the same values until something
                      is written (power, current and voltage at their base, energy not accruing)
  -h, --help          show this help

An SNMP PDU instead: pdu-bridge simulate --snmp <profile> [--outlets N] (--snmp --help for more)`;

export interface SimulateIo {
  /** Where normal output goes, one line per call (default: stdout). */
  out?: (line: string) => void;
  /** Where errors go (default: stderr). */
  err?: (line: string) => void;
  /** Aborting it stops the simulator like SIGINT does. */
  signal?: AbortSignal;
}

const OPTIONS = {
  port: { type: "string" },
  host: { type: "string" },
  devices: { type: "string" },
  outlets: { type: "string" },
  oneview: { type: "boolean" },
  members: { type: "string" },
  https: { type: "boolean" },
  seed: { type: "string" },
  "state-lag-ms": { type: "string" },
  "idle-drop-ms": { type: "string" },
  frozen: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const RANGES: Readonly<Record<string, readonly [number, number]>> = {
  port: [0, 65535],
  devices: [1, 64],
  outlets: [1, 128],
  members: [1, 64],
  seed: [0, 2 ** 32 - 1],
  "state-lag-ms": [0, 3_600_000],
  "idle-drop-ms": [1, 3_600_000],
};

/** Parses the flags into simulator options, or returns the message of the first bad one. */
export function parseSimulateArgs(argv: readonly string[]): SimulatorOptions | { help: true } | string {
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  if (values.help === true) return { help: true };
  const ints: Record<string, number | undefined> = {};
  for (const [name, [min, max]] of Object.entries(RANGES)) {
    const raw = (values as Record<string, unknown>)[name];
    if (typeof raw !== "string") continue;
    const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(n >= min && n <= max)) return `--${name} must be an integer from ${min} to ${max}, got "${raw}"`;
    ints[name] = n;
  }
  const members = ints.members;
  return {
    host: values.host ?? "127.0.0.1",
    port: ints.port ?? 8080,
    devices: ints.devices ?? 1,
    outlets: ints.outlets ?? 8,
    oneview: members !== undefined ? { members } : values.oneview === true,
    https: values.https === true,
    seed: ints.seed ?? 1,
    stateLagMs: ints["state-lag-ms"] ?? 0,
    idleDropMs: ints["idle-drop-ms"] ?? null,
    frozen: values.frozen === true,
  };
}

function describe(sim: Simulator): string[] {
  const lines = [`Geist PDU simulator (${sim.units.length > 1 ? "OneView cluster" : "single unit"})`];
  for (const unit of sim.units) {
    const role = unit.role === "member" ? `member ${unit.index} (proxy port)` : unit.role;
    lines.push(`  ${unit.url}  ${unit.label}, ${role}, devices: ${unit.deviceIds.join(", ")}`);
  }
  if (sim.units.length > 1) lines.push(`  OneView: ${sim.url}/oneview`);
  lines.push("Login: admin / admin");
  if (sim.certificatePem !== null)
    lines.push("Self-signed certificate (use as CaFile):", sim.certificatePem.trim());
  lines.push("Press Ctrl+C to stop.");
  return lines;
}

function untilStopped(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    if (signal?.aborted === true) stop();
    else signal?.addEventListener("abort", stop, { once: true });
  });
}

/** Runs `simulate` with its arguments (after the command name); resolves to the exit code. */
export async function runSimulateCommand(argv: string[], io: SimulateIo = {}): Promise<number> {
  const out = io.out ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const err = io.err ?? ((line: string) => void process.stderr.write(`${line}\n`));
  if (argv.some((a) => a === "--snmp" || a.startsWith("--snmp="))) {
    const { runSimulateSnmp } = await import("./snmp/cli.js");
    return runSimulateSnmp(argv, { out, err, until: () => untilStopped(io.signal) });
  }
  const parsed = parseSimulateArgs(argv);
  if (typeof parsed === "string") {
    err(`simulate: ${parsed}`);
    err(SIMULATE_USAGE);
    return 2;
  }
  if ("help" in parsed) {
    out(SIMULATE_USAGE);
    return 0;
  }
  let sim: Simulator;
  try {
    sim = await startSimulator(parsed);
  } catch (e) {
    err(`simulate: cannot start: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  for (const line of describe(sim)) out(line);
  await untilStopped(io.signal);
  await sim.close();
  out("Simulator stopped.");
  return 0;
}
