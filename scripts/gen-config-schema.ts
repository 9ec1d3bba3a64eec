/**
 * Writes `config.schema.json` and the generated parts of `docs/configuration.md` (the key reference
 * and the example file) from the typebox schema. Run after changing `src/config/schema.ts` or
 * `config.example.yaml`:
 *
 *   npx tsc -p . && node dist/scripts/gen-config-schema.js          # write
 *   node dist/scripts/gen-config-schema.js --check                  # exit 1 when out of date
 *
 * test/config/generated.test.ts fails when the committed files differ from what this produces.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as prettier from "prettier";
import { configJsonSchema, referenceMarkdown } from "../src/config/reference.js";
import { REPO_ROOT } from "../testkit/repo.js";

export const SCHEMA_FILE = "config.schema.json";
export const DOCS_FILE = "docs/configuration.md";
export const EXAMPLE_FILE = "config.example.yaml";

export { REPO_ROOT };

export interface GeneratedFile {
  /** Relative to the repository root. */
  readonly path: string;
  readonly text: string;
}

/** Replaces the text between `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`. */
export function replaceRegion(document: string, name: string, content: string): string {
  const begin = `<!-- BEGIN GENERATED: ${name} -->`;
  const end = `<!-- END GENERATED: ${name} -->`;
  const start = document.indexOf(begin);
  const stop = document.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`${DOCS_FILE}: markers for "${name}" not found`);
  return `${document.slice(0, start + begin.length)}\n${content.trimEnd()}\n${document.slice(stop)}`;
}

/** What the generated files should contain, given the hand-written parts in `root`. */
export async function generatedFiles(root: string = REPO_ROOT): Promise<GeneratedFile[]> {
  const schemaPath = join(root, SCHEMA_FILE);
  const options = (await prettier.resolveConfig(schemaPath)) ?? {};
  const schemaText = await prettier.format(JSON.stringify(configJsonSchema(), null, 2), {
    ...options,
    filepath: schemaPath,
  });

  const example = await readFile(join(root, EXAMPLE_FILE), "utf8");
  let docs = await readFile(join(root, DOCS_FILE), "utf8");
  docs = replaceRegion(docs, "reference", referenceMarkdown());
  docs = replaceRegion(docs, "example", ["```yaml", example.trimEnd(), "```"].join("\n"));

  return [
    { path: SCHEMA_FILE, text: schemaText },
    { path: DOCS_FILE, text: docs },
  ];
}

async function main(args: string[]): Promise<number> {
  const check = args.includes("--check");
  let stale = 0;
  for (const file of await generatedFiles()) {
    const target = join(REPO_ROOT, file.path);
    const current = await readFile(target, "utf8").catch(() => "");
    if (current === file.text) continue;
    stale++;
    if (check)
      process.stderr.write(`${file.path} is out of date: run node dist/scripts/gen-config-schema.js\n`);
    else {
      await writeFile(target, file.text);
      process.stdout.write(`wrote ${file.path}\n`);
    }
  }
  return check && stale > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
