/**
 * External programs the benchmarks need: mosquitto (the broker) and wrk (HTTP load). Missing ones
 * are installed with apt-get (the benchmark runs as root on a Debian machine).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Absolute path of `command`, looking at PATH (`command -v`) and then the sbin directories. */
export function which(command: string): string | null {
  const r = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" });
  const found = r.status === 0 ? r.stdout.trim() : "";
  if (found !== "") return found;
  for (const dir of ["/usr/sbin", "/usr/local/sbin", "/sbin"]) {
    if (existsSync(`${dir}/${command}`)) return `${dir}/${command}`;
  }
  return null;
}

export interface Tools {
  readonly mosquitto: string;
  readonly wrk: string | null;
}

/** Finds mosquitto and (when `needWrk`) wrk, installing the missing ones with apt-get. */
export function ensureTools(needWrk: boolean, log: (line: string) => void): Tools {
  const missing: string[] = [];
  if (which("mosquitto") === null) missing.push("mosquitto");
  if (needWrk && which("wrk") === null) missing.push("wrk");
  if (missing.length > 0) {
    log(`installing ${missing.join(", ")} with apt-get`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], {
      stdio: "inherit",
      env,
    });
  }
  const mosquitto = which("mosquitto");
  if (mosquitto === null) throw new Error("mosquitto is not installed and apt-get could not install it");
  const wrk = which("wrk");
  if (needWrk && wrk === null) throw new Error("wrk is not installed and apt-get could not install it");
  return { mosquitto, wrk };
}
