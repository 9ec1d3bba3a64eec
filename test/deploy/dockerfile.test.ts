import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { DEFAULT_NODE_OPTIONS } from "../../src/runtime.js";
import {
  envPairs,
  execForm,
  globalArgs,
  parseDockerfile,
  splitFlags,
  substituteArgs,
  type Stage,
} from "../../testkit/dockerfile.js";
import { REPO_ROOT } from "../../testkit/repo.js";

const text = readFileSync(`${REPO_ROOT}Dockerfile`, "utf8");
const stages = parseDockerfile(text);
const runtime = stages.at(-1)!;
/** The build arguments' defaults: what `docker build .` uses. */
const defaults = globalArgs(text);
const stageNamed = (name: string) => stages.find((s) => s.name === name);
/** A stage's base with the default build arguments, followed through stage names to an image. */
function baseImage(stage: Stage): string {
  const image = substituteArgs(stage.image, defaults);
  const parent = stageNamed(image);
  return parent === undefined ? image : baseImage(parent);
}
/** The stage a `COPY --from=x` reads with the default build arguments (following `FROM stage`). */
function sourceStage(from: string): Stage | undefined {
  let stage = stageNamed(substituteArgs(from, defaults));
  for (let next = stage && stageNamed(substituteArgs(stage.image, defaults)); next !== undefined;) {
    stage = next;
    next = stageNamed(substituteArgs(stage.image, defaults));
  }
  return stage;
}
const dockerignore = readFileSync(`${REPO_ROOT}.dockerignore`, "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#"));

const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string) => all(stage, keyword).at(-1);

/** COPY instructions as { from, sources, dest }. */
function copies(stage: Stage) {
  return all(stage, "COPY").map((i) => {
    const { flags, rest } = splitFlags(i.args);
    const words = rest.split(/\s+/);
    return { from: flags.get("from"), sources: words.slice(0, -1), dest: words.at(-1)! };
  });
}

/** The HEALTHCHECK's command, exec form. */
function healthcheckCommand(): string[] {
  const healthcheck = last(runtime, "HEALTHCHECK");
  assert.ok(healthcheck, "the runtime stage has a HEALTHCHECK");
  const { rest } = splitFlags(healthcheck.args);
  assert.match(rest, /^CMD\s+\[/, "HEALTHCHECK CMD in exec form");
  return execForm(rest.replace(/^CMD\s+/, ""))!;
}

describe("Dockerfile", () => {
  it("is multi-stage on Node 24 by default, the base a build argument, building with every dependency", () => {
    assert.ok(stages.length >= 2, `${stages.length} stage(s)`);
    assert.equal(defaults.get("BASE_IMAGE"), "node:24-bookworm-slim");
    assert.equal(defaults.get("APP_SOURCE"), "registry", "the default build installs from the registry");
    for (const stage of stages) {
      assert.ok(
        stage.image === "${BASE_IMAGE}" ||
          stage.image === "scratch" ||
          stageNamed(substituteArgs(stage.image, defaults)),
        `stage ${stage.name ?? "?"} is on \${BASE_IMAGE}, scratch or another stage, not ${stage.image}`,
      );
    }
    assert.equal(baseImage(runtime), "node:24-bookworm-slim");
    const build = stages.find((s) => s.name === "build");
    assert.ok(build, "a stage named build");
    const runs = all(build, "RUN").map((i) => i.args);
    assert.ok(
      runs.some((r) => /^npm ci\b/.test(r) && !r.includes("--omit=dev")),
      runs.join(" | "),
    );
    assert.ok(
      runs.some((r) => r.includes("npm run build")),
      runs.join(" | "),
    );
  });

  it("ships production dependencies only, and of the build only dist/src", () => {
    const runtimeCopies = copies(runtime);
    const modules = runtimeCopies.find((c) => c.dest.replace(/\/$/, "").endsWith("node_modules"));
    assert.ok(modules?.from !== undefined, "node_modules come from another stage");
    // With the default APP_SOURCE the runtime's files come from app-registry, which copies them from
    // the deps and build stages.
    const app = sourceStage(modules.from);
    assert.equal(app?.name, "app-registry");
    const appModules = copies(app).find((c) => c.dest.endsWith("node_modules"));
    assert.ok(appModules?.from !== undefined, `${app.name} copies node_modules from another stage`);
    const depsStage = stages.find((s) => s.name === appModules.from);
    assert.ok(
      depsStage !== undefined &&
        all(depsStage, "RUN").some((r) => /npm ci\b.*--omit=dev\b.*--omit=optional\b/.test(r.args)),
      `stage ${appModules.from} installs with npm ci --omit=dev --omit=optional (helm is optional)`,
    );
    for (const c of copies(app).filter((c) => c.from === "build")) {
      assert.deepEqual(c.sources, ["/app/dist/src"], "only the compiled service comes from the build stage");
    }
    assert.deepEqual(
      runtimeCopies
        .filter((c) => c.from !== undefined)
        .map((c) => c.sources)
        .sort(),
      [["/app/dist/src"], ["/app/node_modules"]],
      "from the app stage only node_modules and dist/src",
    );
    const fromContext = runtimeCopies.filter((c) => c.from === undefined).flatMap((c) => c.sources);
    assert.deepEqual(fromContext.sort(), ["config.schema.json", "package.json"]);
    assert.equal(all(runtime, "RUN").length, 0, "nothing runs (and writes) in the runtime stage");
  });

  it("copies from the build context only files that exist and that .dockerignore lets through", () => {
    assert.equal(dockerignore[0], "*", ".dockerignore is an allow-list");
    const allowed = dockerignore.filter((l) => l.startsWith("!")).map((l) => l.slice(1).replace(/\/$/, ""));
    for (const stage of stages) {
      for (const source of copies(stage)
        .filter((c) => c.from === undefined)
        .flatMap((c) => c.sources)) {
        const path = source.replace(/\/$/, "");
        // Made by scripts/ci-prod-install.sh --out .prebuilt only for APP_SOURCE=prebuilt builds.
        if (stage.name === "app-prebuilt") assert.match(path, /^\.prebuilt\//);
        else assert.ok(existsSync(`${REPO_ROOT}${path}`), `${path} exists`);
        assert.ok(
          allowed.some((a) => path === a || path.startsWith(`${a}/`)),
          `${path} is allowed by .dockerignore`,
        );
      }
    }
  });

  it("runs as uid 10001, never root", () => {
    const user = last(runtime, "USER");
    assert.ok(user, "USER in the runtime stage");
    assert.equal(user.args.split(":")[0], "10001");
    assert.ok(
      runtime.instructions.indexOf(user) > runtime.instructions.indexOf(last(runtime, "COPY")!),
      "USER comes after the files are in place",
    );
  });

  it("reads /config/config.yaml, exposes 8081 and 8082 and starts dist/src/main.js", () => {
    const env = new Map(all(runtime, "ENV").flatMap((i) => [...envPairs(i.args)]));
    assert.equal(env.get("SERVICE_CONFIG"), "/config/config.yaml");
    assert.deepEqual(
      all(runtime, "EXPOSE").flatMap((i) => i.args.split(/\s+/)),
      ["8081", "8082"],
    );
    const entrypoint = execForm(last(runtime, "ENTRYPOINT")!.args);
    assert.deepEqual(entrypoint, ["node", "dist/src/main.js"]);
    assert.ok(existsSync(`${REPO_ROOT}dist/src/main.js`), "the entry point is what the build produces");
  });

  it("caps the heap as src/runtime.ts documents (the bench measures the service with the same cap)", () => {
    const env = new Map(all(runtime, "ENV").flatMap((i) => [...envPairs(i.args)]));
    assert.equal(env.get("NODE_OPTIONS"), DEFAULT_NODE_OPTIONS);
  });

  it("health-checks /healthz on 127.0.0.1:8081 with node itself", () => {
    const command = healthcheckCommand();
    assert.equal(command[0], "node");
    assert.equal(command[1], "-e");
    assert.match(command[2]!, /http:\/\/127\.0\.0\.1:8081\/healthz/);
  });

  describe("the HEALTHCHECK script, run against a local health listener", () => {
    let server: Server;
    let status = 200;
    const paths: string[] = [];
    before(async () => {
      server = createServer((req, res) => {
        paths.push(req.url ?? "");
        res.writeHead(req.url === "/healthz" ? status : 404, { "content-type": "text/plain" }).end("OK");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** Runs the script with the port changed to `port`; resolves its exit code. */
    const runAgainst = (port: number) =>
      new Promise<number>((resolve) => {
        const script = healthcheckCommand()[2]!.replace("127.0.0.1:8081", `127.0.0.1:${port}`);
        execFile(process.execPath, ["-e", script], { timeout: 10_000 }, (error) =>
          resolve(error === null ? 0 : typeof error.code === "number" ? error.code : -1),
        );
      });

    it("exits 0 while /healthz answers 200, 1 on an error status or no listener", async () => {
      const port = (server.address() as AddressInfo).port;
      status = 200;
      assert.equal(await runAgainst(port), 0);
      assert.deepEqual(paths, ["/healthz"]);
      status = 503;
      assert.equal(await runAgainst(port), 1);

      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const closedPort = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      assert.equal(await runAgainst(closedPort), 1);
    });
  });

  it("APP_SOURCE=prebuilt copies the same two directories from .prebuilt/, which git ignores", () => {
    const prebuilt = stageNamed("app-prebuilt");
    assert.ok(prebuilt, "a stage app-prebuilt");
    assert.equal(prebuilt.image, "scratch");
    assert.deepEqual(
      copies(prebuilt).map((c) => [c.from, c.sources, c.dest]),
      [
        [undefined, [".prebuilt/node_modules"], "/app/node_modules"],
        [undefined, [".prebuilt/dist/src"], "/app/dist/src"],
      ],
    );
    assert.deepEqual(
      copies(stageNamed("app-registry")!).map((c) => c.dest),
      ["/app/node_modules", "/app/dist/src"],
      "both app stages fill the same paths",
    );
    assert.equal(stageNamed("app")?.image, "app-${APP_SOURCE}");
    const gitignore = readFileSync(`${REPO_ROOT}.gitignore`, "utf8").split("\n");
    assert.ok(gitignore.includes("/.prebuilt/"), ".gitignore has /.prebuilt/");
    const script = readFileSync(`${REPO_ROOT}scripts/image-check.sh`, "utf8");
    assert.match(script, /ci-prod-install\.sh --out \.prebuilt/);
    assert.match(script, /--build-arg APP_SOURCE=prebuilt/);
  });
});
