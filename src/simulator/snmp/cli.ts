/** `pdu-bridge simulate --snmp <profile>`: runs the built-in SNMP PDU simulator until SIGINT/SIGTERM. */
import { parseArgs } from "node:util";
import {
  SNMP_HOSTILE_MODES,
  startSnmpSimulator,
  type SnmpHostileMode,
  type SnmpSimulatorOptions,
} from "./agent.js";
import { SIM_PROFILES, type SimProfile } from "./units.js";

export const SIMULATE_SNMP_USAGE = `Usage: pdu-bridge simulate --snmp <profile> [options]

  --snmp P              the PDU family: ${SIM_PROFILES.join(", ")}
  --outlets N           outlets, default 8
  --port N              UDP port, default 1161 (0: pick a free one)
  --host H              listen address, default 127.0.0.1
  --community C         read community, default public
  --write-community C   write community (control, names), default private
  --v3-user U           also serve an SNMPv3 user (with --v3-auth-key, optional --v3-priv-key)
  --v3-auth-protocol P  sha (default) or sha256
  --v3-auth-key K       authentication key (8 characters or more)
  --v3-priv-key K       privacy key (AES-128); without it the user is authNoPriv
  --trap-to H:P         send a trap to H:P when an outlet is switched at the panel (v2c)
  --trap-community C    the traps' community, default public
  --hostile M           a hostile agent: ${SNMP_HOSTILE_MODES.join(", ")}
  --seed N              seed of the living values, default 1
  --frozen              hold every value still
  -h, --help            show this help`;

const OPTIONS = {
  snmp: { type: "string" },
  outlets: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  community: { type: "string" },
  "write-community": { type: "string" },
  "v3-user": { type: "string" },
  "v3-auth-protocol": { type: "string" },
  "v3-auth-key": { type: "string" },
  "v3-priv-key": { type: "string" },
  "trap-to": { type: "string" },
  "trap-community": { type: "string" },
  hostile: { type: "string" },
  seed: { type: "string" },
  frozen: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

function int(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number | string {
  if (raw === undefined) return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  return n >= min && n <= max ? n : `--${name} must be an integer from ${min} to ${max}, got "${raw}"`;
}

/** The simulator's options from the flags, `{ help: true }`, or the message of the first bad flag. */
export function parseSimulateSnmpArgs(
  argv: readonly string[],
): SnmpSimulatorOptions | { help: true } | string {
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  if (values.help === true) return { help: true };
  const profile = values.snmp;
  if (profile === undefined || !(SIM_PROFILES as readonly string[]).includes(profile)) {
    return `--snmp must be one of ${SIM_PROFILES.join(", ")}, got "${profile ?? ""}"`;
  }
  const outlets = int(values.outlets, "outlets", 1, 128, 8);
  const port = int(values.port, "port", 0, 65535, 1161);
  const seed = int(values.seed, "seed", 0, 2 ** 32 - 1, 1);
  for (const v of [outlets, port, seed]) if (typeof v === "string") return v;
  const hostile = values.hostile;
  if (hostile !== undefined && !(SNMP_HOSTILE_MODES as readonly string[]).includes(hostile)) {
    return `--hostile must be one of ${SNMP_HOSTILE_MODES.join(", ")}, got "${hostile}"`;
  }
  let v3: SnmpSimulatorOptions["v3"];
  if (values["v3-user"] !== undefined) {
    const authKey = values["v3-auth-key"];
    const privKey = values["v3-priv-key"];
    if (authKey === undefined || authKey.length < 8)
      return "--v3-user needs --v3-auth-key of 8 characters or more";
    if (privKey !== undefined && privKey.length < 8) return "--v3-priv-key must be 8 characters or more";
    const protocol = values["v3-auth-protocol"] ?? "sha";
    if (protocol !== "sha" && protocol !== "sha256")
      return `--v3-auth-protocol must be sha or sha256, got "${protocol}"`;
    v3 = {
      user: values["v3-user"],
      authProtocol: protocol,
      authKey,
      ...(privKey === undefined ? {} : { privKey }),
    };
  }
  const trapTo = trapDestination(values["trap-to"], values["trap-community"]);
  if (typeof trapTo === "string") return trapTo;
  return {
    ...(trapTo === undefined ? {} : { trapTo }),
    profile: profile as SimProfile,
    outlets: outlets as number,
    port: port as number,
    host: values.host ?? "127.0.0.1",
    community: values.community ?? "public",
    writeCommunity: values["write-community"] ?? "private",
    seed: seed as number,
    frozen: values.frozen === true,
    ...(v3 === undefined ? {} : { v3 }),
    ...(hostile === undefined ? {} : { hostile: hostile as SnmpHostileMode }),
  };
}

/** `--trap-to host:port` (an IPv6 host in brackets) and its community, or the problem. */
function trapDestination(
  raw: string | undefined,
  community: string | undefined,
): SnmpSimulatorOptions["trapTo"] | string {
  if (raw === undefined) return undefined;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(raw);
  const port = match === null ? NaN : Number(match[3]);
  if (match === null || !(port >= 1 && port <= 65535)) return `--trap-to must be host:port, got "${raw}"`;
  return { host: match[1] ?? match[2]!, port, community: community ?? "public" };
}

export interface SimulateSnmpIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly until: () => Promise<void>;
}

/** Runs the SNMP simulator with the flags after `simulate`; resolves to the exit code. */
export async function runSimulateSnmp(argv: readonly string[], io: SimulateSnmpIo): Promise<number> {
  const parsed = parseSimulateSnmpArgs(argv);
  if (typeof parsed === "string") {
    io.err(`simulate: ${parsed}`);
    io.err(SIMULATE_SNMP_USAGE);
    return 2;
  }
  if ("help" in parsed) {
    io.out(SIMULATE_SNMP_USAGE);
    return 0;
  }
  let sim;
  try {
    sim = await startSnmpSimulator(parsed);
  } catch (e) {
    io.err(`simulate: cannot start: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  const where = sim.host.includes(":") ? `[${sim.host}]:${sim.port}` : `${sim.host}:${sim.port}`;
  io.out(`SNMP PDU simulator: ${sim.profile}, ${sim.unit.outlets.length} outlets, udp ${where}`);
  io.out(`  communities: read "${sim.community}", write "${sim.writeCommunity}"`);
  if (parsed.v3 !== undefined)
    io.out(
      `  SNMPv3 user "${parsed.v3.user}" (${parsed.v3.privKey === undefined ? "authNoPriv" : "authPriv"})`,
    );
  if (parsed.hostile !== undefined) io.out(`  hostile mode: ${parsed.hostile}`);
  io.out(`  try: snmpwalk -v2c -c ${sim.community} ${where} 1.3.6.1.4.1`);
  io.out("Press Ctrl+C to stop.");
  await io.until();
  await sim.close();
  io.out("Simulator stopped.");
  return 0;
}
