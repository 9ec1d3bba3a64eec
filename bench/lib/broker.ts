/**
 * A mosquitto for one scenario, on a free loopback port, with its pid exposed so its CPU can be
 * sampled. By default, unlike testkit/mosquitto.ts, it lifts the per-client queue limits: a
 * benchmark subscriber on `#` must count every message, not see QoS 0 messages dropped under
 * bursts. `limits: "default"` keeps mosquitto's own (1,000 queued and 20 in flight per client, the
 * rest dropped), as a broker installed with its default configuration runs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canConnect, freePort } from "../../testkit/repo.js";
import { sleep, stopChild, trackChild } from "./child.js";

export interface Broker {
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  close(): Promise<void>;
}

/** "unlimited": `max_queued_messages 0` and `max_inflight_messages 0`; "default": mosquitto's own limits. */
export type BrokerLimits = "unlimited" | "default";

export async function startBroker(binary: string, limits: BrokerLimits = "unlimited"): Promise<Broker> {
  const dir = await mkdtemp(join(tmpdir(), "pdu-bridge-bench-mosquitto-"));
  // mosquitto started as root drops to its own user: let it read its files.
  await chmod(dir, 0o755);
  const port = await freePort();
  const conf = join(dir, "mosquitto.conf");
  const lines = [
    `listener ${port} 127.0.0.1`,
    "allow_anonymous true",
    "persistence false",
    "log_dest stderr",
    "log_type error",
    "log_type warning",
    ...(limits === "unlimited" ? ["max_queued_messages 0", "max_inflight_messages 0"] : []),
  ];
  await writeFile(conf, `${lines.join("\n")}\n`, { mode: 0o644 });
  const child: ChildProcess = spawn(binary, ["-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
  trackChild(child);
  let output = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    output = (output + chunk).slice(-4000);
  });
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null) throw new Error(`mosquitto exited with ${child.exitCode}: ${output}`);
    if (Date.now() > deadline) throw new Error(`mosquitto did not listen on ${port}: ${output}`);
    await sleep(50);
  }
  return {
    host: "127.0.0.1",
    port,
    pid: child.pid!,
    url: `mqtt://127.0.0.1:${port}`,
    async close() {
      await stopChild(child, 3000);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
