/**
 * The import graph of src/ as `npm run lint` holds it (scripts/lint/check-cycles.mjs and the folder
 * table of scripts/lint/boundaries.mjs): no cycle between files, no loop between folders, and a
 * table that allows each import one way only. The check is run on planted trees to show it fails.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "../../testkit/repo.js";

const SCRIPT = join(REPO_ROOT, "scripts/lint/check-cycles.mjs");
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A tree of .ts files laid out as src/, from relative paths to their text. */
function plant(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-graph-"));
  dirs.push(dir);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

function check(dir?: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, dir === undefined ? [SCRIPT] : [SCRIPT, dir], { encoding: "utf8" });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe("the import graph check", () => {
  it("passes on src/", () => {
    const { status, out } = check();
    assert.equal(status, 0, out);
    assert.match(out, /no import cycles in src\/ .* and no loops between its \d+ areas/);
  });

  it("fails on a loop between two folders that no two files close", () => {
    const dir = plant({
      "alpha/one.ts": 'import { two } from "../beta/two.js";\nexport const one = two;\n',
      "alpha/three.ts": "export const three = 3;\n",
      "beta/two.ts": 'import { three } from "../alpha/three.js";\nexport const two = three;\n',
    });
    const { status, out } = check(dir);
    assert.equal(status, 1, out);
    assert.doesNotMatch(out, /import cycle:/);
    assert.match(
      out,
      /folder loop: alpha -> beta -> alpha \(alpha\/one\.ts imports beta\/two\.ts; beta\/two\.ts imports alpha\/three\.ts\)/,
    );
  });

  it("fails on a loop through a file at the top of the tree, a type-only import included", () => {
    const dir = plant({
      "seam.ts": 'import type { Thing } from "./part/thing.js";\nexport type Seam = Thing;\n',
      "part/thing.ts": "export interface Thing { readonly id: string }\n",
      "part/user.ts": 'import type { Seam } from "../seam.js";\nexport const use = (s: Seam) => s.id;\n',
    });
    const { status, out } = check(dir);
    assert.equal(status, 1, out);
    assert.match(out, /folder loop: part -> seam\.ts -> part/);
  });

  it("fails on a cycle between two files", () => {
    const dir = plant({
      "alpha/a.ts": 'import { b } from "./b.js";\nexport const a = () => b;\n',
      "alpha/b.ts": 'import { a } from "./a.js";\nexport const b = () => a;\n',
    });
    const { status, out } = check(dir);
    assert.equal(status, 1, out);
    assert.match(out, /import cycle: alpha\/a\.ts -> alpha\/b\.ts -> alpha\/a\.ts/);
  });

  it("fails when src/ gains one import from config/ back into pdu/", () => {
    const dir = mkdtempSync(join(tmpdir(), "pdu-bridge-graph-"));
    dirs.push(dir);
    cpSync(join(REPO_ROOT, "src"), dir, { recursive: true });
    const file = join(dir, "config/errors.ts");
    writeFileSync(
      file,
      `import type { Snapshot } from "../pdu/model.js";\nexport type S = Snapshot;\n${readFileSync(file, "utf8")}`,
    );
    const { status, out } = check(dir);
    assert.equal(status, 1, out);
    assert.match(
      out,
      /folder loop: config -> pdu -> config \(config\/errors\.ts imports pdu\/model\.ts; pdu\/\S+ imports config\/\S+\)/,
    );
  });
});

describe("the folder table", () => {
  it("allows every import between two areas in one direction only", async () => {
    const url = pathToFileURL(join(REPO_ROOT, "scripts/lint/boundaries.mjs")).href;
    const { ALLOWED } = (await import(url)) as { ALLOWED: Record<string, readonly string[]> };
    const both = Object.entries(ALLOWED).flatMap(([from, to]) =>
      to.filter((t) => t !== from && (ALLOWED[t] ?? []).includes(from)).map((t) => `${from} <-> ${t}`),
    );
    assert.deepEqual(both, []);
  });
});
