// Which src/ folder may import which, as an eslint rule (eslint.config.js turns it on for src/).
// Plain JavaScript so that `npm run lint` needs no build. docs/architecture.md describes the layers.
import path from "node:path";

const SRC = path.join(import.meta.dirname, "..", "..", "src");

/**
 * Files at the top of src/ that every folder may import: logging, the fold of lines driven from
 * outside, the install paths, the rules of text from outside (safe names, characters that
 * change how text is displayed), which the configuration's rules and every surface apply alike, and
 * the atomic write of a `State.Dir` file.
 * They import nothing of src/ but each other.
 */
const LEAVES = ["log.ts", "log-limit.ts", "paths.ts", "names.ts", "display.ts", "state-file.ts"];

/**
 * The parts' shared seams at the top of src/: the event bus (the events' types and the bus), the
 * part lifecycle, the ownership seam (which instances this process owns), the fencing seam's
 * error, the cluster's status and the energy seam (what the surfaces read of the lifetime energy
 * counters). Every part of the service may import them; the domain (pdu/,
 * config/) and the simulator do not.
 */
const SEAMS = [
  "bus.ts",
  "lifecycle.ts",
  "ownership.ts",
  "fencing.ts",
  "cluster-status.ts",
  "energy-reader.ts",
];

/**
 * An area is a folder directly under src/ (its sub-folders belong to it), src/ui/page (the
 * browser's page, a bundle of its own), src/cluster/forward (replica-to-replica traffic, above the
 * lease library it sits in), or a file at the top of src/. An area may always import
 * its own files; the composition files (app.ts, main.ts, demo.ts, runtime.ts) may import any area.
 * The vendor folders under src/pdu/ have their own rule (no-restricted-imports in eslint.config.js).
 */
export const ALLOWED = {
  "log.ts": [],
  "log-limit.ts": ["log.ts"],
  "paths.ts": [],
  "state-file.ts": [],
  "names.ts": [],
  "display.ts": ["names.ts"],
  "bus.ts": ["config", "pdu", ...LEAVES],
  "ownership.ts": [],
  "fencing.ts": [],
  "cluster-status.ts": [],
  "energy-reader.ts": [],
  "lifecycle.ts": ["bus.ts", ...LEAVES],
  config: [...LEAVES],
  pdu: ["config", ...LEAVES],
  poller: ["pdu", "config", ...SEAMS, ...LEAVES],
  cluster: ["config", ...SEAMS, ...LEAVES],
  // Replica-to-replica traffic (src/cluster/forward/) is an area of its own, so that the lease
  // library stays free of control and HTTP: it carries control requests (control/), speaks HTTP as
  // the REST surface does (http/'s problems and types; http/ never imports it, the composition root
  // hands it in) and reads answers with the lease library's bounded body reader.
  "cluster/forward": ["config", "control", "http", "cluster/bounded-body.ts", ...SEAMS, ...LEAVES],
  control: ["pdu", "config", "poller", "assets", ...SEAMS, ...LEAVES],
  // Assets, feeds and sequences: a domain core over the model (docs/assets.md), whose model is the
  // configuration's (the loader judges it); the parts that wire it in (the App, control, the
  // surfaces) import it, not the other way round.
  assets: ["pdu", "config", ...SEAMS, ...LEAVES],
  // The lifetime energy counters and their checkpoints (docs/energy.md): a part fed by the store's
  // events; the surfaces read it through the energy seam, the REST report imports its report.
  energy: ["pdu", "config", ...SEAMS, ...LEAVES],
  // Signed webhooks of the bus's events (docs/events.md): a part fed by the bus; the surfaces read
  // its status through the functions the composition root hands them.
  webhooks: ["pdu", "config", ...SEAMS, ...LEAVES],
  mqtt: ["pdu", "config", "control", "poller", "assets", ...SEAMS, ...LEAVES],
  http: ["pdu", "config", "control", "poller", "mqtt", "assets", "energy", ...SEAMS, ...LEAVES],
  metrics: ["pdu", "config", "control", "poller", "http", "assets", ...SEAMS, ...LEAVES],
  ui: ["pdu", "config", "control", "poller", "http", ...SEAMS, ...LEAVES],
  // The page runs in the browser: it shares the wire types and the REST paths with the service and
  // nothing else (neither file imports anything).
  "ui/page": ["ui/wire.ts", "http/api/paths.ts"],
  simulator: ["pdu", ...LEAVES],
  // The SNMP trap receiver (docs/events.md): a part that reads the configuration, reaches the
  // profiles' trap tables through the driver seam and tells the bus; metrics read its counts as
  // the composition root hands them over.
  traps: ["pdu", "config", ...SEAMS, ...LEAVES],
};

/** Imports that cross a boundary with a reason; none today. Each entry: `{ from, to }` under src/. */
export const EXCEPTIONS = [];

const COMPOSITION = new Set(["app.ts", "main.ts", "demo.ts", "runtime.ts"]);

/** The area of a file under src/ (or under `src`, another tree laid out the same), or undefined outside it. */
export function areaOf(file, src = SRC) {
  const rel = path.relative(src, file);
  if (rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
  const parts = rel.split(path.sep);
  if (parts.length === 1) return parts[0];
  if (parts[0] === "ui" && parts[1] === "page") return "ui/page";
  if (parts[0] === "cluster" && parts[1] === "forward") return "cluster/forward";
  return parts[0];
}

/** Whether an import from `from` to `to` (absolute .ts paths under src/) is allowed. */
export function allowed(from, to) {
  const a = areaOf(from);
  const b = areaOf(to);
  if (a === undefined || b === undefined || a === b || COMPOSITION.has(a)) return true;
  const relTo = path.relative(SRC, to).split(path.sep).join("/");
  const relFrom = path.relative(SRC, from).split(path.sep).join("/");
  if ((ALLOWED[a] ?? []).some((x) => x === b || x === relTo)) return true;
  return EXCEPTIONS.some((e) => e.from === relFrom && e.to === relTo);
}

/** The .ts file a relative specifier names, or undefined for a package. */
export function resolveSpecifier(fromFile, specifier) {
  if (!specifier.startsWith(".")) return undefined;
  return path.resolve(path.dirname(fromFile), specifier).replace(/\.js$/, ".ts");
}

export const folderBoundaries = {
  meta: {
    type: "problem",
    docs: {
      description:
        "Each src/ folder imports only the folders its row of the table names (docs/architecture.md).",
    },
    schema: [],
    messages: {
      crossed:
        "{{from}} may not import {{to}}: see the folder table in scripts/lint/boundaries.mjs and docs/architecture.md.",
    },
  },
  create(context) {
    const file = context.filename;
    if (areaOf(file) === undefined) return {};
    const check = (source) => {
      if (source === null || source === undefined || typeof source.value !== "string") return;
      const target = resolveSpecifier(file, source.value);
      if (target === undefined || allowed(file, target)) return;
      context.report({
        node: source,
        messageId: "crossed",
        data: { from: areaOf(file), to: areaOf(target) },
      });
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => (node.source.type === "Literal" ? check(node.source) : undefined),
    };
  },
};
