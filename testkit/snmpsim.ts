/**
 * Debian's snmpsimd (a third-party SNMP agent) serving the project's recordings (testkit/snmprec/)
 * on a loopback port, from a temporary data directory: one data file per profile, named
 * `<profile>.snmprec`, so the v2c community selects the recording. Writable objects carry the
 * `writecache` variation, so SETs change what later GETs answer. Optional SNMPv3 user.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { chmod, copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { InstanceConfig } from "../src/config/schema.js";
import { freePort, REPO_ROOT, sleep } from "./repo.js";

/** An SNMP instance as the loader would resolve it, aimed at a loopback agent. */
export function snmpInstance(
  id: string,
  port: number,
  snmp: Partial<InstanceConfig["Snmp"]>,
  timeout = 2,
): InstanceConfig {
  return {
    id,
    primary: true,
    Connection: {
      Host: "127.0.0.1",
      Port: port,
      Scheme: "http",
      Timeout: timeout,
      ValidateCertificate: true,
      CaFile: null,
    },
    Credentials: { Username: null, Password: null },
    PollInterval: 5,
    ActionsEnabled: true,
    RelayProtection: 3,
    Overrides: { Outlets: {}, Entities: {}, Groups: {} },
    Ratings: {},
    Driver: "snmp",
    Snmp: {
      Version: "2c",
      Profile: "auto",
      Auth: { Username: null, Protocol: "sha", PrivProtocol: "aes" },
      MaxRepetitions: 24,
      Community: null,
      WriteCommunity: null,
      AuthKey: null,
      PrivKey: null,
      ...snmp,
    },
  };
}

export const RECORDINGS = join(REPO_ROOT, "testkit", "snmprec");
const run = promisify(execFile);

export interface V3User {
  readonly user: string;
  readonly authKey: string;
  readonly privKey?: string;
  /** snmpsimd's names: SHA / SHA256, AES. */
  readonly authProto: "SHA" | "SHA256";
}

export interface Snmpsim {
  readonly port: number;
  readonly dir: string;
  /** `snmpget -Oqv` of one OID with the community (the recording's name). */
  get(community: string, oid: string): Promise<string>;
  /** `snmpget -Oqv` of one OID as the v3 user (the recording the empty context selects). */
  getV3(oid: string): Promise<string>;
  /** `snmpwalk -On` of a subtree: `[oid, type, value]` lines as snmpwalk prints them. */
  walk(community: string, oid: string): Promise<string[]>;
  close(): Promise<void>;
}

/** The data files of a directory that snmpsimd serves (their names without extension are the communities). */
const DATA_FILE = /\.(snmprec|snmpwalk)$/;

/**
 * `only`: serve just these recordings (with SNMPv3, the empty context gets one of the data files:
 * give one recording). A v3 user without `privKey` is authNoPriv. `dataDir`: serve that directory
 * in place instead of the project's recordings (nothing is copied; snmpsimd keeps its index and
 * what SETs write in a temporary cache directory); `only` and `v3` do not apply to it.
 */
export async function startSnmpsim(
  options: { v3?: V3User; only?: readonly string[]; dataDir?: string } = {},
): Promise<Snmpsim> {
  const dir = await mkdtemp(join(tmpdir(), "snmpsim-"));
  const cache = join(dir, "cache");
  const data = options.dataDir ?? join(dir, "data");
  await run("mkdir", ["-p", cache, ...(options.dataDir === undefined ? [data] : [])]);
  let probe = options.only?.[0] ?? "apc-rpdu2";
  if (options.dataDir !== undefined) {
    const first = (await readdir(data)).find((f) => DATA_FILE.test(f));
    if (first === undefined) throw new Error(`no .snmprec or .snmpwalk file in ${data}`);
    probe = first.replace(DATA_FILE, "");
  }
  for (const f of options.dataDir === undefined ? await readdir(RECORDINGS) : []) {
    if (!f.endsWith(".snmprec")) continue;
    if (options.only !== undefined && !options.only.includes(f.replace(/\.snmprec$/, ""))) continue;
    await copyFile(join(RECORDINGS, f), join(data, f));
  }
  // snmpsimd drops to an unprivileged user when started as root: it must be able to write both.
  // SNMPv3 requests carry no community: with an empty context, snmpsimd picks the data file by
  // transport (`<transport domain>/<source address>.snmprec`), here the first recording of `only`.
  const v3Dir = join(data, "1.3.6.1.6.1.1.0");
  if (options.v3 !== undefined) {
    await run("mkdir", ["-p", v3Dir]);
    await copyFile(
      join(RECORDINGS, `${options.only?.[0] ?? "apc-rpdu2"}.snmprec`),
      join(v3Dir, "127.0.0.1.snmprec"),
    );
    await chmod(v3Dir, 0o777);
    await chmod(join(v3Dir, "127.0.0.1.snmprec"), 0o666);
  }
  for (const p of options.dataDir === undefined ? [dir, data, cache] : [dir, cache]) await chmod(p, 0o777);
  if (options.dataDir === undefined)
    for (const f of await readdir(data)) if (f.endsWith(".snmprec")) await chmod(join(data, f), 0o666);
  const port = await freePort();
  const args = [
    `--data-dir=${data}`,
    `--cache-dir=${cache}`,
    `--agent-udpv4-endpoint=127.0.0.1:${port}`,
    "--logging-method=null",
  ];
  if (process.getuid?.() === 0) args.push("--process-user=nobody", "--process-group=nogroup");
  if (options.v3 !== undefined) {
    const v = options.v3;
    args.push(
      `--v3-user=${v.user}`,
      `--v3-auth-key=${v.authKey}`,
      `--v3-auth-proto=${v.authProto}`,
      ...(v.privKey === undefined ? [] : [`--v3-priv-key=${v.privKey}`, "--v3-priv-proto=AES"]),
    );
  }
  const child: ChildProcess = spawn("snmpsimd", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => {
    if (stderr.length < 8192) stderr += b.toString();
  });
  const get = async (community: string, oid: string): Promise<string> => {
    const { stdout } = await run("snmpget", [
      "-v2c",
      "-c",
      community,
      "-Oqv",
      "-t",
      "1",
      "-r",
      "0",
      `127.0.0.1:${port}`,
      oid,
    ]);
    return stdout.trim();
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await get(probe, "1.3.6.1.2.1.1.2.0")) !== "") break;
    } catch {
      // not up yet (it indexes the recordings first)
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      await rm(dir, { recursive: true, force: true });
      throw new Error(`snmpsimd did not start: ${stderr}`);
    }
    await sleep(200);
  }
  return {
    port,
    dir,
    get,
    async getV3(oid) {
      const v = options.v3;
      if (v === undefined) throw new Error("no v3 user");
      const auth = ["-u", v.user, "-a", v.authProto, "-A", v.authKey];
      const level =
        v.privKey === undefined ? ["-l", "authNoPriv"] : ["-l", "authPriv", "-x", "AES", "-X", v.privKey];
      const { stdout } = await run("snmpget", [
        "-v3",
        ...auth,
        ...level,
        "-Oqv",
        "-t",
        "2",
        "-r",
        "0",
        `127.0.0.1:${port}`,
        oid,
      ]);
      return stdout.trim();
    },
    async walk(community, oid) {
      const { stdout } = await run(
        "snmpwalk",
        ["-v2c", "-c", community, "-On", "-t", "2", `127.0.0.1:${port}`, oid],
        {
          maxBuffer: 16 * 1024 * 1024,
        },
      );
      return stdout.split("\n").filter((l) => l !== "");
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await Promise.race([exited, sleep(3000)]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The recording of a profile as `oid → { tag, value }` (value as written, hex decoded to text for strings). */
export async function readRecording(profile: string): Promise<Map<string, { tag: string; value: string }>> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(join(RECORDINGS, `${profile}.snmprec`), "utf8");
  const out = new Map<string, { tag: string; value: string }>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const [oid, tag, ...rest] = line.split("|");
    if (oid === undefined || tag === undefined) continue;
    let value = rest.join("|");
    const t = tag.replace(/:writecache$/, "");
    if (tag.endsWith(":writecache"))
      value = value.replace(/^(hex)?value=/, (m) => (m === "hexvalue=" ? "\u0000hex:" : ""));
    if (value.startsWith("\u0000hex:")) value = Buffer.from(value.slice(5), "hex").toString("latin1");
    else if (t.endsWith("x")) value = Buffer.from(value, "hex").toString("latin1");
    out.set(oid, { tag: t.replace(/x$/, ""), value });
  }
  return out;
}
