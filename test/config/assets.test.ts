/**
 * The configuration of assets, feeds and sequences (section 16, docs/assets.md) through the loader:
 * every rule a ConfigError naming its key and line, all of a file's problems in one error, and the
 * CLI's exit 2; a valid file's keys reach the assets' model; and which changes apply live.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { buildAssetModel } from "../../src/config/asset-model.js";
import { assetsSectionOf } from "../../src/config/assets.js";
import { ConfigError } from "../../src/config/errors.js";
import { diffConfig } from "../../src/config/kubernetes/diff.js";
import { parseConfigText } from "../../src/config/load.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));

const PDUS = [
  "Pdus:",
  "  rack-a1:",
  "    Connection: { Host: 127.0.0.1 }",
  "    Feed: A",
  "  rack-b1:",
  "    Connection: { Host: 127.0.0.2 }",
  "    Feed: B",
  '    OutletCircuits: { "0-11": breaker0, "12-23": breaker1 }',
].join("\n");

const FEEDS = "Feeds:\n  A: { Label: Feed A }\n  B: {}";

const GOOD = [
  PDUS,
  FEEDS,
  "Assets:",
  "  db-01:",
  "    Label: Database primary",
  "    Cords:",
  "      - { Instance: rack-a1, Outlet: 3 }",
  "      - { Instance: rack-b1, Device: DEV-B, Outlet: 3 }",
  "    Protected: true",
  "    Priority: 1",
  "    Tenant: acme",
  "    Tags: [db, prod]",
  "    StartSeconds: 60",
  "Sequences: { MaxConcurrentStarts: 2 }",
  "",
].join("\n");

/** The ConfigError of `text` (it must be one). */
async function problemsOf(text: string): Promise<readonly ConfigError[]> {
  const error = await parseConfigText(text, "assets.yaml", {}).then(
    () => assert.fail("expected a ConfigError"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ConfigError, String(error));
  return error.problems;
}

describe("the configuration of assets and feeds", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-assets-config-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("a valid file reaches the assets' model: defaults applied, feeds of instances, circuits parsed", async () => {
    const config = await parseConfigText(GOOD, "assets.yaml", {});
    const { model, problems } = buildAssetModel(assetsSectionOf(config));
    assert.deepEqual(problems, []);
    const db = model.assets.get("db-01")!;
    assert.equal(db.label, "Database primary");
    assert.deepEqual(db.cords, [
      { instance: "rack-a1", device: null, outlet: 3 },
      { instance: "rack-b1", device: "DEV-B", outlet: 3 },
    ]);
    assert.deepEqual(
      [db.protected, db.priority, db.tenant, db.tags, db.startSeconds],
      [true, 1, "acme", ["db", "prod"], 60],
    );
    assert.deepEqual(
      [...model.instanceFeeds],
      [
        ["rack-a1", "A"],
        ["rack-b1", "B"],
      ],
    );
    assert.equal(model.feeds.get("A")?.label, "Feed A");
    assert.equal(model.feeds.get("B")?.label, "B");
    assert.equal(model.circuits.get("rack-b1")?.length, 2);
    assert.deepEqual(model.sequences, { maxConcurrentStarts: 2, gapSeconds: 5 });
  });

  it("every rule names its key and line, all of a file's problems in one error", async () => {
    const text = [
      "Pdus:",
      "  rack-a1:",
      "    Connection: { Host: 127.0.0.1 }",
      "    Feed: C", // 4: not a configured feed
      '    OutletCircuits: { "0-11": breaker0, "5-7": breaker1 }', // 5: overlapping
      FEEDS, // 6-8
      "Assets:", // 9
      "  db-01:", // 10
      "    Cords:", // 11
      "      - { Instance: rack-zz, Outlet: 3 }", // 12: unknown instance
      "      - { Instance: rack-a1, Outlet: 1 }", // 13
      "  db-02:", // 14
      '    Label: "two\\u202eowt"', // 15: changes how text is displayed
      "    Cords:", // 16
      "      - { Instance: rack-a1, Outlet: 1 }", // 17: the same outlet as db-01's
      "",
    ].join("\n");
    const problems = await problemsOf(text);
    const found = problems.map((p) => [p.key, p.line]);
    for (const [key, line] of [
      ["Pdus.rack-a1.Feed", 4],
      ["Pdus.rack-a1.OutletCircuits.5-7", 5],
      ["Assets.db-01.Cords.0.Instance", 11],
      ["Assets.db-02.Label", 15],
      ["Assets.db-02.Cords.0", 16],
    ] as const)
      assert.ok(
        found.some(([k, l]) => k === key && l === line),
        `${key} at line ${line} in ${JSON.stringify(found)}`,
      );
    const same = problems.find((p) => p.key === "Assets.db-02.Cords.0")!;
    assert.match(same.problem, /same outlet as Assets\.db-01\.Cords\.1/);
    const feed = problems.find((p) => p.key === "Pdus.rack-a1.Feed")!;
    assert.match(feed.problem, /names feed C, which is not configured \(Feeds has A, B\)/);
  });

  it("the schema's bounds: at most 8 cords, ids that can be topic levels", async () => {
    const nine = Array.from({ length: 9 }, (_, i) => `      - { Instance: rack-a1, Outlet: ${i} }`);
    const big = await problemsOf([PDUS, FEEDS, "Assets:", "  big:", "    Cords:", ...nine, ""].join("\n"));
    assert.deepEqual(
      big.map((p) => [p.key, p.line]),
      [["Assets.big.Cords", 14]],
    );
    assert.match(big[0]!.problem, /more than 8 items/);
    for (const id of ["bad/id", "a.b", "x".repeat(65)]) {
      const bad = await problemsOf(
        [PDUS, FEEDS, "Assets:", `  ${id}:`, "    Cords: [{ Instance: rack-a1, Outlet: 0 }]", ""].join("\n"),
      );
      assert.deepEqual(
        bad.map((p) => [p.key, p.line, p.problem]),
        [[`Assets.${id}`, 13, "must be 1-64 characters of A-Za-z0-9_-"]],
      );
    }
  });

  it("check-config exits 2 naming the keys", async () => {
    const file = join(dir, "config.yaml");
    await writeFile(
      file,
      [PDUS, "Assets:", "  x:", "    Cords: [{ Instance: nowhere, Outlet: 0 }]", ""].join("\n"),
    );
    const cli = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [MAIN, "check-config", "--config", file],
        { env: {} },
        (error, _out, stderr) =>
          resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr }),
      );
    });
    assert.equal(cli.code, 2, cli.stderr);
    assert.match(cli.stderr, /config error: Pdus\.rack-a1\.Feed: names feed A, which is not configured/);
    assert.match(cli.stderr, /Assets\.x\.Cords\.0\.Instance: names instance nowhere, which is not in Pdus/);
  });

  it("assets, feeds, sequences and an instance's Feed, DeviceFeeds and OutletCircuits apply live", async () => {
    const before = await parseConfigText(GOOD, "assets.yaml", {});
    const changed = GOOD.replace("Feed A", "Feed A (UPS 1)")
      .replace("Outlet: 3 }\n      - { Instance: rack-b1", "Outlet: 4 }\n      - { Instance: rack-b1")
      .replace('"12-23": breaker1', '"12-23": breaker2')
      .replace("MaxConcurrentStarts: 2", "MaxConcurrentStarts: 3");
    const diff = diffConfig(before, await parseConfigText(changed, "assets.yaml", {}));
    assert.deepEqual(diff.restart, []);
    assert.equal(diff.live.assets, true);
    assert.deepEqual(
      [...diff.live.overrides],
      ["rack-b1"],
      "the circuits re-derive the instance's snapshots",
    );
    const none = diffConfig(before, await parseConfigText(GOOD, "assets.yaml", {}));
    assert.equal(none.live.assets, undefined);
  });
});
