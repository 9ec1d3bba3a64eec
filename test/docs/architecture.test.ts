/**
 * docs/architecture.md is held to the code, as test/http/paths.test.ts holds the routes: its folder
 * map names every file under src/ (in the entry of the file's own folder) and every file of
 * testkit/, and its events table lists the bus's events. The parts table is held by
 * test/app/parts.test.ts against a running App. A file added without its line fails here, named.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { BUS_EVENT_NAMES } from "../../src/bus.js";
import { REPO_ROOT } from "../../testkit/repo.js";

const DOC = readFileSync(join(REPO_ROOT, "docs", "architecture.md"), "utf8");

/** The first fenced block of the document: the folder map. */
function folderMap(): string[] {
  const start = DOC.indexOf("\n```\n");
  const end = DOC.indexOf("\n```\n", start + 5);
  assert.ok(start >= 0 && end > start, "docs/architecture.md begins with its folder map in a fenced block");
  return DOC.slice(start + 5, end).split("\n");
}

/**
 * The map's entries by their name: a block at the left edge (`src/`, `testkit/`, ...) and, inside
 * `src/`, an entry per line indented by two spaces (`config/`, `pdu/snmp/`, `app.ts`), each with
 * the text of its continuation lines.
 */
function entries(): { top: Map<string, string>; src: Map<string, string> } {
  const top = new Map<string, string>();
  const src = new Map<string, string>();
  let topName = "";
  let srcName = "";
  for (const line of folderMap()) {
    const head = /^(\S+)(.*)$/.exec(line);
    if (head !== null) {
      topName = head[1]!;
      srcName = "";
      top.set(topName, head[2]!);
      continue;
    }
    const entry = topName === "src/" ? /^ {2}(\S+)(.*)$/.exec(line) : null;
    if (entry !== null) {
      srcName = entry[1]!;
      src.set(srcName, entry[2]!);
    } else if (srcName !== "") src.set(srcName, `${src.get(srcName)!}\n${line}`);
    else top.set(topName, `${top.get(topName)!}\n${line}`);
  }
  return { top, src };
}

/** Every file under `dir`, relative to it, with `/` between folders. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => statSync(join(dir, f)).isFile())
    .map((f) => f.split("\\").join("/"))
    .sort();
}

/** Whether `text` names `file` as a word of its own (not the tail of another path or name). */
const names = (text: string, file: string): boolean =>
  new RegExp(`(^|[^\\w./-])${file.replace(/[.]/g, "\\.")}($|[^\\w-])`).test(text);

/** The files (relative to src/) that the map's `src/` entries do not name in the entry of their folder. */
function unlisted(files: readonly string[], src: ReadonlyMap<string, string>): string[] {
  return files.filter((file) => {
    const slash = file.lastIndexOf("/");
    if (slash < 0) return !src.has(file);
    const text = src.get(file.slice(0, slash + 1));
    return text === undefined || !names(text, file.slice(slash + 1));
  });
}

describe("docs/architecture.md", () => {
  const { top, src } = entries();

  it("names every file under src/ in the entry of its folder", () => {
    const missing = unlisted(filesUnder(join(REPO_ROOT, "src")), src);
    assert.deepEqual(
      missing,
      [],
      "files under src/ without their line in docs/architecture.md's folder map (a file at the top " +
        "of src/ gets an entry of its own; another one is named in the entry of its folder, " +
        `which the map must have): ${missing.map((f) => `src/${f}`).join(", ")}`,
    );
  });

  it("would name a file added without its line: at the top of src/, in a folder, in a folder of its own", () => {
    const planted = ["zz-planted.ts", "assets/zz-planted.ts", "pdu/snmp/zz-planted.ts", "zz-folder/index.ts"];
    assert.deepEqual(unlisted([...filesUnder(join(REPO_ROOT, "src")), ...planted], src), planted);
  });

  it("names no folder or top-level file of src/ that does not exist", () => {
    const stale = [...src.keys()].filter((name) => {
      try {
        statSync(join(REPO_ROOT, "src", name));
        return false;
      } catch {
        return true;
      }
    });
    assert.deepEqual(stale, [], `entries of the folder map with nothing under src/: ${stale.join(", ")}`);
  });

  it("names every file of testkit/", () => {
    const text = top.get("testkit/") ?? "";
    const missing = filesUnder(join(REPO_ROOT, "testkit"))
      .filter((f) => !f.includes("/"))
      .filter((f) => !names(text, f));
    assert.deepEqual(
      missing,
      [],
      `testkit files without their name in docs/architecture.md's folder map: ${missing.map((f) => `testkit/${f}`).join(", ")}`,
    );
  });

  it("lists the bus's events in its events table, in the bus's order", () => {
    const at = DOC.indexOf("\n### The event bus\n");
    assert.ok(at >= 0, "docs/architecture.md has ### The event bus");
    const lines = DOC.slice(at).split("\n");
    const first = lines.findIndex((line) => line.startsWith("|"));
    const end = lines.findIndex((line, i) => i > first && !line.startsWith("|"));
    const table = lines.slice(first + 2, end).map((row) => row.split("|")[1]!.trim().replaceAll("`", ""));
    assert.deepEqual(table, [...BUS_EVENT_NAMES]);
  });
});
