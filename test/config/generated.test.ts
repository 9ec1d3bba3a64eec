/**
 * config.schema.json and docs/configuration.md are generated from the schema: the committed files
 * must match what `node dist/scripts/gen-config-schema.js` writes, and the example must be valid.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { Value } from "typebox/value";
import { parse } from "yaml";
import { generatedFiles, REPO_ROOT, EXAMPLE_FILE, SCHEMA_FILE } from "../../scripts/gen-config-schema.js";
import { parseConfigText } from "../../src/config/load.js";
import { configJsonSchema, JSON_SCHEMA_DIALECT, referenceRows } from "../../src/config/reference.js";

test("the committed generated files are up to date", async () => {
  for (const file of await generatedFiles()) {
    const committed = await readFile(join(REPO_ROOT, file.path), "utf8");
    assert.ok(
      committed === file.text,
      `${file.path} is out of date: run node dist/scripts/gen-config-schema.js`,
    );
  }
});

test("config.schema.json is a draft 2020-12 schema that accepts what the loader accepts", async () => {
  const schema = JSON.parse(await readFile(join(REPO_ROOT, SCHEMA_FILE), "utf8")) as Record<string, unknown>;
  assert.deepEqual(schema, configJsonSchema());
  assert.equal(schema.$schema, JSON_SCHEMA_DIALECT);
  assert.equal(typeof schema.title, "string");
  // Minimal: everything with a default may be left out.
  assert.ok(Value.Check(schema, { Pdus: { a: { Connection: { Host: "x" } } } }));
  assert.ok(
    !Value.Check(schema, { Pdus: { a: { Connection: { Host: "x" }, PolInterval: 3 } } }),
    "unknown key",
  );
  assert.ok(!Value.Check(schema, { Pdus: { "rack a": { Connection: { Host: "x" } } } }), "bad instance id");
  assert.ok(!Value.Check(schema, { Pdus: { a: { Connection: { Host: "x", Scheme: "ftp" } } } }), "bad enum");
  assert.ok(!Value.Check(schema, {}), "Pdus is required");
});

test("every key in the reference has a type and a meaning", () => {
  const rows = referenceRows();
  assert.ok(rows.some((r) => r.key === "Pdus.<id>.PollInterval" && r.default === "`5`"));
  assert.ok(rows.some((r) => r.key === "Pdus.<id>.Connection.Host" && r.default === "**required**"));
  for (const row of rows) {
    assert.notEqual(row.type, "", row.key);
    assert.notEqual(row.description, "", row.key);
  }
});

test("the example file is valid for the loader and for editors", async () => {
  const text = await readFile(join(REPO_ROOT, EXAMPLE_FILE), "utf8");
  const config = await parseConfigText(text, EXAMPLE_FILE, {});
  assert.deepEqual(
    config.instances.map((i) => [i.id, i.primary, i.Connection.Scheme]),
    [
      ["default", true, "http"],
      ["rack-b", false, "https"],
    ],
  );
  const schema = JSON.parse(await readFile(join(REPO_ROOT, SCHEMA_FILE), "utf8")) as Record<string, unknown>;
  assert.ok(Value.Check(schema, parse(text)));
  assert.match(text, /^# yaml-language-server: \$schema=\.\/config\.schema\.json$/m);
});
