// Fails when the import graph of src/ has a cycle, between files or between folders, and prints
// each as a path. Every import counts, `import type` too: a type-only cycle still ties two files
// together. A folder here is an area of the boundary table (scripts/lint/boundaries.mjs: a folder
// directly under src/, or a file at its top): a loop between two areas is a loop even when no two
// files form one, and the table itself must allow imports in one direction only.
// Plain JavaScript on the TypeScript compiler's own scanner, so that `npm run lint` needs no build.
// `node scripts/lint/check-cycles.mjs [dir]` checks another tree laid out as src/ (the tests do).
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { ALLOWED, areaOf, resolveSpecifier } from "./boundaries.mjs";

const ROOT = path.join(import.meta.dirname, "..", "..");
const SRC = process.argv[2] === undefined ? path.join(ROOT, "src") : path.resolve(process.argv[2]);

/**
 * Cycles allowed with a reason, each listed by its files (a listed cycle passes only while its
 * files are exactly these); none today.
 */
const KNOWN = [];

/** Every .ts file under src/ and the files under src/ each imports. */
function importGraph() {
  const files = fs
    .readdirSync(SRC, { recursive: true })
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .map((f) => path.join(SRC, f))
    .sort();
  const graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
    const targets = new Set();
    for (const { fileName } of importedFiles) {
      const target = resolveSpecifier(file, fileName);
      if (target !== undefined && fs.existsSync(target)) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * The areas' graph: for each area, the areas its files import (its own left out), each with the
 * first import that makes the edge, `from` and `to` as files.
 */
function areaGraph(graph) {
  const areas = new Map();
  for (const [file, targets] of graph) {
    const from = areaOf(file, SRC);
    if (!areas.has(from)) areas.set(from, new Map());
    for (const target of targets) {
      const to = areaOf(target, SRC);
      if (to !== from && !areas.get(from).has(to)) areas.get(from).set(to, { from: file, to: target });
    }
  }
  return areas;
}

/** The strongly connected components with more than one node, or one node importing itself (Tarjan). */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** One closed path through a component, from its first node back to it (breadth-first, shortest). */
function pathThrough(graph, component) {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map();
  const queue = [...(graph.get(start) ?? [])].filter((w) => members.has(w));
  for (const w of queue) previous.set(w, start);
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    if (v === start) break;
    for (const w of graph.get(v) ?? []) {
      if (members.has(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  const steps = [start];
  for (let v = previous.get(start); v !== undefined && v !== start; v = previous.get(v)) steps.unshift(v);
  steps.unshift(start);
  return steps;
}

const relative = (file) => path.relative(SRC, file).split(path.sep).join("/");
const graph = importGraph();
let failed = false;
let knownSeen = 0;
for (const component of cycles(graph)) {
  const files = component.map(relative);
  const shown = pathThrough(graph, component).map(relative).join(" -> ");
  const known = KNOWN.some((k) => k.length === files.length && k.every((f) => files.includes(f)));
  const all = files.length > 2 ? ` (files in the cycle: ${files.join(", ")})` : "";
  console.log(
    `import cycle${known ? " (known, listed in scripts/lint/check-cycles.mjs)" : ""}: ${shown}${all}`,
  );
  if (known) knownSeen++;
  else failed = true;
}

const areas = areaGraph(graph);
const areaEdges = new Map([...areas].map(([area, targets]) => [area, [...targets.keys()].sort()]));
for (const component of cycles(areaEdges)) {
  const steps = pathThrough(areaEdges, component);
  const because = steps
    .slice(0, -1)
    .map((area, i) => areas.get(area).get(steps[i + 1]))
    .map((edge) => `${relative(edge.from)} imports ${relative(edge.to)}`);
  console.log(`folder loop: ${steps.join(" -> ")} (${because.join("; ")})`);
  failed = true;
}

// The table of scripts/lint/boundaries.mjs allows each import one way only: a loop in it would let
// a folder loop back in without a line of this script failing first.
const table = new Map(Object.entries(ALLOWED).map(([area, to]) => [area, to.filter((t) => t !== area)]));
for (const component of cycles(table)) {
  console.log(
    `boundary table loop: ${pathThrough(table, component).join(" -> ")} (scripts/lint/boundaries.mjs)`,
  );
  failed = true;
}

if (failed) {
  console.error(
    "src/ has import cycles or folder loops: move what both sides need into a file of its own, " +
      "on the side that is imported.",
  );
  process.exit(1);
}
console.log(
  `no ${knownSeen > 0 ? "other " : ""}import cycles in src/ (${graph.size} files) and no loops between its ${areas.size} areas (folders and top-level files)`,
);
