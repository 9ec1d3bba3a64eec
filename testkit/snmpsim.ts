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
import { freePort, REPO_ROOT, sleep } from "./repo.js";

export const RECORDINGS = join(REPO_ROOT, "testkit", "snmprec");
const run = promisify(execFile);

export interface V3User {
  readonly user: string;
  readonly authKey: string;
  readonly privKey: string;
  /** snmpsimd's names: SHA / SHA256, AES. */
  readonly authProto: "SHA" | "SHA256";
}

export interface Snmpsim {
  readonly port: number;
  readonly dir: string;
  /** `snmpget -Oqv` of one OID with the community (the recording's name). */
  get(community: string, oid: string): Promise<string>;
  /** `snmpwalk -On` of a subtree: `[oid, type, value]` lines as snmpwalk prints them. */
  walk(community: string, oid: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function startSnmpsim(options: { v3?: V3User } = {}): Promise<Snmpsim> {
  const dir = await mkdtemp(join(tmpdir(), "snmpsim-"));
  const data = join(dir, "data");
  const cache = join(dir, "cache");
  await run("mkdir", ["-p", data, cache]);
  for (const f of await readdir(RECORDINGS)) {
    if (f.endsWith(".snmprec")) await copyFile(join(RECORDINGS, f), join(data, f));
  }
  // snmpsimd drops to an unprivileged user when started as root: it must be able to write both.
  for (const p of [dir, data, cache]) await chmod(p, 0o777);
  for (const f of await readdir(data)) await chmod(join(data, f), 0o666);
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
      `--v3-priv-key=${v.privKey}`,
      "--v3-priv-proto=AES",
    );
  }
  const child: ChildProcess = spawn("snmpsimd", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => {
    if (stderr.length < 8192) stderr += b.toString();
  });
  const get = async (community: string, oid: string): Promise<string> => {
    const { stdout } = await run("snmpget", ["-v2c", "-c", community, "-Oqv", "-t", "1", "-r", "0", `127.0.0.1:${port}`, oid]);
    return stdout.trim();
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await get("apc-rpdu2", "1.3.6.1.2.1.1.2.0")) !== "") break;
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
    async walk(community, oid) {
      const { stdout } = await run("snmpwalk", ["-v2c", "-c", community, "-On", "-t", "2", `127.0.0.1:${port}`, oid], {
        maxBuffer: 16 * 1024 * 1024,
      });
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
    if (tag.endsWith(":writecache")) value = value.replace(/^(hex)?value=/, (m) => (m === "hexvalue=" ? "\u0000hex:" : ""));
    if (value.startsWith("\u0000hex:")) value = Buffer.from(value.slice(5), "hex").toString("latin1");
    else if (t.endsWith("x")) value = Buffer.from(value, "hex").toString("latin1");
    out.set(oid, { tag: t.replace(/x$/, ""), value });
  }
  return out;
}
