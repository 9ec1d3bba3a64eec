/**
 * The walks third parties recorded from real PDUs (../shared/recordings/snmp/, beside the project
 * or beside its worktrees), served as they are by Debian's snmpsimd (nothing copied: the
 * community is the file name without its extension), and read by tests themselves (`readWalk`) so
 * that expected values never come from the bridge's own parser.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, REPO_ROOT, sleep } from "./repo.js";

const run = promisify(execFile);

/** The folder of the walks recorded from real units (beside the project, or beside its worktrees). */
export function sharedRecordings(): string {
  const candidates = [
    join(REPO_ROOT, "..", "shared", "recordings", "snmp"),
    join(REPO_ROOT, "..", "..", "shared", "recordings", "snmp"),
  ];
  const found = candidates.find((dir) => existsSync(join(dir, "cyberpower-pdu44005.snmpwalk")));
  if (found === undefined) throw new Error(`no shared recordings in ${candidates.join(" or ")}`);
  return found;
}

/** A net-snmp `snmpwalk -On` file as OID → value (strings without their quotes; NULL as ""). */
export async function readWalk(file: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const line of (await readFile(file, "utf8")).split("\n")) {
    const m = /^\.?([0-9.]+) = (?:([A-Za-z0-9-]+): )?(.*)$/.exec(line);
    if (m?.[1] === undefined) continue;
    const value = m[3] ?? "";
    out.set(m[1], m[2] === "STRING" ? value.replace(/^"(.*)"$/, "$1") : value === "NULL" ? "" : value);
  }
  return out;
}

/** snmpsimd serving a folder as it is (nothing copied), on a loopback port. */
export async function serveInPlace(
  dir: string,
  probe: string,
): Promise<{ port: number; close(): Promise<void> }> {
  const cache = await mkdtemp(join(tmpdir(), "snmpsim-cache-"));
  await chmod(cache, 0o777);
  const port = await freePort();
  const args = [
    `--data-dir=${dir}`,
    `--cache-dir=${cache}`,
    `--agent-udpv4-endpoint=127.0.0.1:${port}`,
    "--logging-method=null",
  ];
  if (process.getuid?.() === 0) args.push("--process-user=nobody", "--process-group=nogroup");
  const child: ChildProcess = spawn("snmpsimd", args, { stdio: ["ignore", "ignore", "ignore"] });
  const close = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    await rm(cache, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const { stdout } = await run("snmpget", [
        "-v2c",
        "-c",
        probe,
        "-Oqv",
        "-t",
        "1",
        "-r",
        "0",
        `127.0.0.1:${port}`,
        "1.3.6.1.2.1.1.2.0",
      ]);
      if (stdout.trim() !== "") break;
    } catch {
      // not up yet: it indexes the folder first
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await close();
      throw new Error("snmpsimd did not start");
    }
    await sleep(200);
  }
  return { port, close };
}
