/**
 * A real mosquitto for tests: spawned on a free loopback port from a temporary config, stoppable
 * (SIGTERM or SIGKILL) and restartable on the same port. No persistence, so a restart loses every
 * retained message, which is what the bridge's republish-on-reconnect must cope with.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { canConnect, freePort } from "./repo.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export const MOSQUITTO = process.env.MOSQUITTO_BIN ?? "/usr/sbin/mosquitto";
const MOSQUITTO_PASSWD = process.env.MOSQUITTO_PASSWD_BIN ?? "/usr/bin/mosquitto_passwd";

export interface MosquittoOptions {
  /** Default: a free port. */
  readonly port?: number;
  /** user → password; when given, anonymous clients are refused. */
  readonly users?: Readonly<Record<string, string>>;
  /** More lines of mosquitto.conf (e.g. `max_packet_size 1024`). */
  readonly extra?: readonly string[];
}

export class Mosquitto {
  readonly host = "127.0.0.1";
  readonly port: number;
  readonly #dir: string;
  readonly #conf: string;
  #child: ChildProcess | null = null;
  #output = "";

  private constructor(port: number, dir: string, conf: string) {
    this.port = port;
    this.#dir = dir;
    this.#conf = conf;
  }

  static async start(options: MosquittoOptions = {}): Promise<Mosquitto> {
    const dir = await mkdtemp(join(tmpdir(), "pdu-bridge-mosquitto-"));
    // mosquitto started as root drops to its own user: let it read its files.
    await chmod(dir, 0o755);
    const port = options.port ?? (await freePort());
    const lines = [`listener ${port} 127.0.0.1`, "persistence false", "log_dest stderr"];
    if (options.users !== undefined) {
      const passwords = join(dir, "passwords");
      await writeFile(passwords, "", { mode: 0o644 });
      for (const [user, password] of Object.entries(options.users)) {
        await promisify(execFile)(MOSQUITTO_PASSWD, ["-b", passwords, user, password]);
      }
      await chmod(passwords, 0o644);
      lines.push("allow_anonymous false", `password_file ${passwords}`);
    } else {
      lines.push("allow_anonymous true");
    }
    lines.push(...(options.extra ?? []));
    const conf = join(dir, "mosquitto.conf");
    await writeFile(conf, `${lines.join("\n")}\n`, { mode: 0o644 });
    const broker = new Mosquitto(port, dir, conf);
    await broker.#spawn();
    return broker;
  }

  get url(): string {
    return `mqtt://${this.host}:${this.port}`;
  }

  /** What mosquitto wrote to stderr (for assertion messages). */
  get output(): string {
    return this.#output;
  }

  /** Stops the broker (SIGTERM: clean; SIGKILL: crash) and waits for the process to exit. */
  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    const child = this.#child;
    this.#child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(signal);
    await exited;
  }

  /** Starts again on the same port (after {@link stop}). */
  async restart(): Promise<void> {
    await this.stop();
    await this.#spawn();
  }

  /** Stops the broker and removes its files. */
  async close(): Promise<void> {
    await this.stop("SIGKILL");
    await rm(this.#dir, { recursive: true, force: true });
  }

  async #spawn(): Promise<void> {
    const child = spawn(MOSQUITTO, ["-c", this.#conf], { stdio: ["ignore", "ignore", "pipe"] });
    this.#child = child;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.#output += chunk;
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`mosquitto exited with ${child.exitCode}: ${this.#output}`);
      if (await canConnect(this.port, this.host)) return;
      if (Date.now() > deadline) throw new Error(`mosquitto did not listen on ${this.port}: ${this.#output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
