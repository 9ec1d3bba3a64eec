/**
 * What a reader of the repository's documentation follows must be there, and what it cites must be
 * in the repository. Over README.md, docs/ and deploy/:
 * - every relative link names a file (or folder) of the repository, and a `#fragment` a heading
 *   (or an `id`) of the Markdown file it points at;
 * - no text cites documents a reader does not have: "the contract" (or "the service contract",
 *   its "section 16"), "the issue", the project's specification files by name;
 * - docs/README.md, the index, links every page of docs/ and the history.
 * And every PDU family the drivers support is named where a reader first meets the project: the
 * README's first paragraph, package.json, the chart's Chart.yaml and README, and the OpenAPI
 * document's description.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { after, before, describe, it } from "node:test";
import { startApiServer } from "../../src/http/api/server.js";
import type { RunningListener } from "../../src/http/listener.js";
import { PROFILES } from "../../src/pdu/snmp/profiles.js";
import { configFrom, harness } from "../../testkit/http-harness.js";
import { REPO_ROOT } from "../../testkit/repo.js";

/** Files of the repository, relative to its root with `/`: tracked, or new and not ignored. */
function repositoryFiles(): Set<string> {
  try {
    const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    return new Set(out.split("\0").filter((f) => f !== ""));
  } catch {
    // No git (a copied tree): every file outside what .gitignore keeps out.
    const kept = (f: string) => !/^(node_modules|dist|coverage|\.git|\.prebuilt|artifacts)(\/|$)/.test(f);
    return new Set(walk(REPO_ROOT).filter(kept));
  }
}

function walk(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (/^(node_modules|dist|\.git)$/.test(name)) return [];
    return statSync(path).isDirectory() ? walk(path, base) : [relative(base, path).split(sep).join("/")];
  });
}

const FILES = repositoryFiles();
const TEXT = /\.(md|ya?ml|txt|tpl|json)$/;
/** What a reader of the documentation reads: README.md, docs/ and deploy/. */
const READ = [...FILES]
  .filter((f) => f === "README.md" || /^(docs|deploy)\//.test(f))
  .filter((f) => TEXT.test(f))
  .sort();
const MARKDOWN = READ.filter((f) => f.endsWith(".md"));

const read = (file: string): string => readFileSync(join(REPO_ROOT, file), "utf8");

/** The text with fenced code blocks and inline code blanked out, lines kept where they were. */
function prose(text: string): string {
  let fenced = false;
  return text
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return "";
      }
      return fenced ? "" : line.replace(/`[^`]*`/g, (code) => " ".repeat(code.length));
    })
    .join("\n");
}

interface Link {
  readonly line: number;
  readonly target: string;
}

/** Inline links and images (`[text](target "title")`) and reference definitions (`[x]: target`). */
function linksOf(text: string): Link[] {
  const links: Link[] = [];
  prose(text)
    .split("\n")
    .forEach((line, i) => {
      for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
        links.push({ line: i + 1, target: m[1]!.replace(/^<|>$/g, "") });
      }
      const definition = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(line);
      if (definition !== null) links.push({ line: i + 1, target: definition[1]! });
    });
  return links;
}

/** GitHub's anchors of a Markdown file: its headings' slugs (numbered when repeated) and its ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      const slug = heading[1]!
        .replace(/`/g, "")
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, "")
        .replace(/\s/g, "-");
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

const isExternal = (target: string): boolean =>
  /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");

/** What is wrong with a relative link of `file`, or null when it leads somewhere. */
function brokenLink(file: string, target: string): string | null {
  const hash = target.indexOf("#");
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const fragment = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const resolved =
    path === ""
      ? file
      : normalize(join(dirname(file), path))
          .split(sep)
          .join("/");
  if (resolved.startsWith("../") || resolved === "..") return "leads out of the repository";
  const folder = resolved.replace(/\/$/, "") + "/";
  const exists = FILES.has(resolved) || [...FILES].some((f) => f.startsWith(folder));
  if (!exists) return `${resolved} is not in the repository`;
  if (fragment === null || fragment === "" || !resolved.endsWith(".md")) return null;
  return anchorsOf(read(resolved)).has(fragment) ? null : `${resolved} has no heading #${fragment}`;
}

/**
 * Citations of documents that are not in the repository. The project's specification (its service
 * contract, the PDU protocol notes, the issues) lives elsewhere: a page says what they say instead.
 */
const CITATIONS: readonly RegExp[] = [
  /\bthe (?:service )?contract\b/i,
  /\bcontract(?:'s)?\s*§/i,
  /\bsection \d+\b/i,
  /\bthe issue\b/i,
  /\bpdu-protocol\.md\b/i,
  /\bservice-contract\.md\b/i,
  /\bsnmp-pdus\.md\b/i,
  /\/work\/shared\b/i,
];

describe("the documentation's links and citations", () => {
  it("reads README.md, docs/ and deploy/", () => {
    for (const f of [
      "README.md",
      "docs/README.md",
      "docs/operations.md",
      "deploy/helm/pdu-bridge/README.md",
    ]) {
      assert.ok(READ.includes(f), `${f} is read`);
    }
  });

  it("finds a missing file, a missing heading and a citation where they are (the checks are not vacuous)", () => {
    const sample = [
      "See [the guide](configuration.md#secrets), [a page](no-such-page.md) and [a part](cluster.md#no-such-part).",
      "In code it is not a link: `[x](gone.md)`. Nor in a block:",
      "```",
      "[y](gone-too.md)",
      "```",
      "[ref]: ../deploy/helm/pdu-bridge/values.yaml",
    ].join("\n");
    const found = linksOf(sample).map(
      (l) => `${l.line}:${l.target}:${brokenLink("docs/sample.md", l.target) ?? "ok"}`,
    );
    assert.deepEqual(found, [
      "1:configuration.md#secrets:ok",
      "1:no-such-page.md:docs/no-such-page.md is not in the repository",
      "1:cluster.md#no-such-part:docs/cluster.md has no heading #no-such-part",
      "6:../deploy/helm/pdu-bridge/values.yaml:ok",
    ]);
    const cited = ["as the contract says", "see the service contract", "per the issue"];
    assert.ok(
      cited.every((line) => CITATIONS.some((pattern) => pattern.test(line))),
      "citations are found",
    );
    assert.ok(
      !CITATIONS.some((pattern) => pattern.test("a contract between replicas")),
      "a contract is not the contract",
    );
    const relative = MARKDOWN.flatMap((file) =>
      linksOf(read(file)).filter((link) => !isExternal(link.target)),
    );
    assert.ok(relative.length > 100, `${relative.length} relative links read`);
  });

  it("links only files of the repository, and headings that exist", () => {
    const broken = MARKDOWN.flatMap((file) =>
      linksOf(read(file))
        .filter((link) => !isExternal(link.target))
        .flatMap((link) => {
          const why = brokenLink(file, link.target);
          return why === null ? [] : [`${file}:${link.line}: (${link.target}) ${why}`];
        }),
    );
    assert.deepEqual(broken, [], `broken links:\n${broken.join("\n")}`);
  });

  it("cites no document a reader does not have", () => {
    const found = READ.flatMap((file) =>
      read(file)
        .split("\n")
        .flatMap((line, i) =>
          CITATIONS.filter((pattern) => pattern.test(line)).map(
            (pattern) => `${file}:${i + 1}: ${pattern.exec(line)![0]}: ${line.trim().slice(0, 100)}`,
          ),
        ),
    );
    assert.deepEqual(found, [], `say what the cited text says instead:\n${found.join("\n")}`);
  });

  it("indexes every page of docs/ in docs/README.md, and the history once", () => {
    const index = linksOf(read("docs/README.md")).map((l) => l.target.split("#")[0]!);
    const pages = MARKDOWN.filter((f) => /^docs\/[^/]+\.md$/.test(f) && f !== "docs/README.md");
    const missing = pages.map((f) => f.slice("docs/".length)).filter((page) => !index.includes(page));
    assert.deepEqual(missing, [], `pages of docs/ the index does not link: ${missing.join(", ")}`);
    const history = index.filter((target) => target.startsWith("history/"));
    assert.equal(history.length, 1, "the index links the history once");
  });
});

describe("the PDU families, where a reader first meets the project", () => {
  /** Every family the drivers support: Geist (its own driver) and each SNMP profile's maker. */
  const FAMILIES = ["Geist", ...new Set(PROFILES.map((p) => p.manufacturer))];
  let api: RunningListener;

  before(async () => {
    const config = await configFrom(
      "Pdus:\n  default:\n    Connection: { Host: 127.0.0.1 }\nApi: { Enabled: true, Bind: 127.0.0.1, Port: 0 }\n",
    );
    api = await startApiServer(harness(config).deps);
  });
  after(async () => api?.close());

  const firstParagraph = (text: string): string =>
    text.split(/\n\s*\n/).find((p) => !p.startsWith("#")) ?? "";
  const unnamed = (text: string): string[] => FAMILIES.filter((family) => !text.includes(family));

  it("names each in the README's first paragraph, package.json and the chart", () => {
    const manifest = JSON.parse(read("package.json")) as { description: string };
    const chart = /^description:\s*(.*)$/m.exec(read("deploy/helm/pdu-bridge/Chart.yaml"))?.[1] ?? "";
    const places: Record<string, string> = {
      "README.md": firstParagraph(read("README.md")),
      "package.json description": manifest.description,
      "Chart.yaml description": chart,
      "deploy/helm/pdu-bridge/README.md": firstParagraph(read("deploy/helm/pdu-bridge/README.md")),
    };
    const missing = Object.entries(places).flatMap(([place, text]) =>
      unnamed(text).map((family) => `${place}: ${family}`),
    );
    assert.deepEqual(missing, [], `families not named: ${missing.join(", ")}`);
  });

  it("names each in the OpenAPI document's description", async () => {
    const response = await fetch(`http://127.0.0.1:${api.port}/openapi/v1.json`);
    assert.equal(response.status, 200);
    const document = (await response.json()) as { info: { description: string } };
    assert.deepEqual(unnamed(document.info.description), [], document.info.description);
  });
});
