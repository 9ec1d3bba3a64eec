/**
 * A real Prometheus (and promtool) for tests: Debian's `prometheus` package, spawned on a free
 * loopback port with a temporary configuration and storage, queried over its HTTP API.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { access, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./mosquitto.js";
import { waitFor } from "./wait.js";

export const PROMETHEUS = process.env.PROMETHEUS_BIN ?? "/usr/bin/prometheus";
export const PROMTOOL = process.env.PROMTOOL_BIN ?? "/usr/bin/promtool";

/** Why the Prometheus tests cannot run here, or undefined when they can. */
export async function prometheusUnavailable(): Promise<string | undefined> {
  try {
    await access(PROMETHEUS);
    await access(PROMTOOL);
    return undefined;
  } catch {
    return `${PROMETHEUS} or ${PROMTOOL} not found (apt-get install prometheus)`;
  }
}

export interface ToolResult {
  readonly code: number;
  readonly output: string;
}

/** Runs promtool with these arguments, `stdin` piped in when given. */
export function promtool(args: readonly string[], stdin?: string): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(PROMTOOL, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      if (error !== null && typeof error.code !== "number")
        reject(new Error(`promtool failed: ${error.message}`));
      else resolve({ code, output: `${stdout}${stderr}` });
    });
    child.stdin?.end(stdin ?? "");
  });
}

export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

export class Prometheus {
  readonly port: number;
  readonly #child: ChildProcess;
  readonly #dir: string;
  #output = "";

  private constructor(port: number, child: ChildProcess, dir: string) {
    this.port = port;
    this.#child = child;
    this.#dir = dir;
    const keep = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString("utf8")).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
  }

  /** Starts Prometheus scraping `target` (host:port) at `metricsPath` every second. */
  static async start(target: string, metricsPath = "/metrics"): Promise<Prometheus> {
    const dir = await mkdtemp(join(tmpdir(), "pdu-bridge-prometheus-"));
    const port = await freePort();
    const config = [
      "global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }",
      "scrape_configs:",
      "  - job_name: pdu-bridge",
      // The bridge's `instance` label is the PDU; keep it rather than renaming it exported_instance.
      "    honor_labels: true",
      `    metrics_path: ${JSON.stringify(metricsPath)}`,
      `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
    ].join("\n");
    await writeFile(join(dir, "prometheus.yml"), `${config}\n`);
    const child = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--log.level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const prometheus = new Prometheus(port, child, dir);
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`prometheus exited: ${prometheus.#output}`);
          const r = await fetch(`http://127.0.0.1:${port}/-/ready`);
          return r.ok;
        },
        "Prometheus to be ready",
        30_000,
        100,
      );
    } catch (error) {
      await prometheus.close();
      throw error;
    }
    return prometheus;
  }

  /** An instant query; the samples of its vector result. */
  async query(expr: string): Promise<Sample[]> {
    const r = await fetch(`http://127.0.0.1:${this.port}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await r.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== "success" || body.data?.resultType !== "vector")
      throw new Error(`query ${expr} failed: ${body.error ?? JSON.stringify(body)}`);
    return body.data.result.map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
  }

  /** The scrape targets' health as Prometheus reports it. */
  async targets(): Promise<{ health: string; lastError: string }[]> {
    const r = await fetch(`http://127.0.0.1:${this.port}/api/v1/targets`);
    const body = (await r.json()) as { data: { activeTargets: { health: string; lastError: string }[] } };
    return body.data.activeTargets;
  }

  get output(): string {
    return this.#output;
  }

  async close(): Promise<void> {
    if (this.#child.exitCode === null) {
      const exited = new Promise((resolve) => this.#child.once("exit", resolve));
      this.#child.kill("SIGTERM");
      const timer = setTimeout(() => this.#child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(this.#dir, { recursive: true, force: true });
  }
}
