/**
 * The `State.Dir` checkpoint store: written atomically and read back as written; a file that is
 * not a checkpoint this bridge can read (damaged, another program's, a newer version's, out of
 * bounds) refuses the start with the file named and what to do, and is never overwritten. The
 * CLI exits 2 on it.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { App } from "../../src/app.js";
import { parseConfigText } from "../../src/config/load.js";
import { silentLogger } from "../../src/log.js";
import { checkpointOf, CHECKPOINT_FORMAT } from "../../src/energy/checkpoint.js";
import { StateDir } from "../../src/energy/state-dir.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess } from "../../testkit/cli-process.js";

const GOOD = checkpointOf(
  {
    lab: {
      seenAt: 1_764_316_800_000,
      devices: [
        ["E4A1000001", 0, [[0, 1234.5, 234.5, 1_764_316_790_000]], [["total0", 9000, 90, 1_764_316_790_000]]],
      ],
    },
  },
  1_764_316_801_000,
);

/** Files that must refuse the start, each with what the message says of it. */
const REFUSED: readonly (readonly [string, string, RegExp])[] = [
  ["damaged", '{"format":"pdu-bridge/energy","vers', /is not JSON/],
  [
    "foreign",
    JSON.stringify({ format: "someone-else", version: 1 }),
    /not an energy checkpoint this bridge can read/,
  ],
  ["newer", JSON.stringify({ ...GOOD, version: 99 }), /written by a newer pdu-bridge/],
  [
    "negative",
    JSON.stringify({
      ...GOOD,
      instances: { lab: { ...GOOD.instances.lab, devices: [["d", 0, [[0, -5, 0, 0]], []]] } },
    }),
    /is damaged.*\$\.instances\["lab"\]\.devices\[0\]\[2\]\[0\]\[1\]/,
  ],
  ["array", "[1,2,3]", /not an energy checkpoint/],
];

describe("State.Dir", () => {
  let sim: Simulator;
  let dir: string;

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
  });
  after(async () => {
    await sim?.close();
  });

  const config = (stateDir: string) =>
    parseConfigText(
      appYaml({
        pdus: [pduYaml("lab", sim, { pollInterval: 60 })],
        extra: `State:\n  Dir: ${JSON.stringify(stateDir)}`,
      }),
      "state-dir-test.yaml",
      {},
    );

  it("writes a checkpoint atomically and reads back what it wrote", async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-state-"));
    try {
      const state = new StateDir(join(dir, "nested"));
      assert.equal(await state.load(), null, "no checkpoint yet");
      const bytes = await state.save(GOOD);
      assert.ok(bytes > 0);
      assert.deepEqual(await state.load(), GOOD);
      assert.deepEqual(await readdir(join(dir, "nested")), ["energy.json"], "no temporary file left");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  for (const [name, text, says] of REFUSED) {
    it(`refuses to start on a ${name} file, naming it and what to do, and leaves it as it was`, async () => {
      dir = await mkdtemp(join(tmpdir(), "pdu-bridge-state-"));
      try {
        const file = join(dir, "energy.json");
        await writeFile(file, text);
        const error = await App.start(await config(dir), { logger: silentLogger() }).then(
          async (app) => {
            await app.stop();
            return null;
          },
          (e: unknown) => e,
        );
        assert.ok(error instanceof ConfigError, String(error));
        assert.match(error.message, /State\.Dir/);
        assert.ok(error.message.includes(file), error.message);
        assert.match(error.message, says);
        assert.match(error.message, /move the file away/);
        assert.equal(await readFile(file, "utf8"), text, "the file is left as it was");
        assert.deepEqual(await readdir(dir), ["energy.json"]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it("the CLI exits 2 on a damaged file, naming it", async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-state-"));
    try {
      const file = join(dir, "energy.json");
      await writeFile(file, "not json at all");
      const configFile = join(dir, "config.yaml");
      await writeFile(
        configFile,
        appYaml({
          pdus: [pduYaml("lab", sim, { pollInterval: 60 })],
          extra: `State:\n  Dir: ${JSON.stringify(dir)}`,
        }),
      );
      const cli = CliProcess.spawn(["--config", configFile], childEnv());
      const exit = await cli.waitForExit(30_000);
      assert.equal(exit.code, 2, cli.stderr);
      assert.ok(cli.stderr.includes(file), cli.stderr);
      assert.match(cli.stderr, /move the file away/);
      assert.equal(await readFile(file, "utf8"), "not json at all");
      assert.equal(CHECKPOINT_FORMAT, "pdu-bridge/energy");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
