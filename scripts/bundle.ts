/**
 * Bundles the service (src/main.ts and everything it imports) into dist/src/main.js, with the parts
 * it imports only on demand (the REST API, the embedded broker, the simulator, check-config) as
 * chunks beside it, replacing the module tsc wrote there. `npm run build` runs it after tsc.
 *
 * Why: the service loads about 1,400 modules (typebox alone is about 700 files), and every module's
 * source text and records stay in the heap for the life of the process, live heap a bundle does not
 * have (docs/heap-breakdown.md). The other modules under dist/src stay
 * as tsc wrote them: the tests import them, and the API's worker thread runs from them.
 *
 * Not bundled: @fastify/swagger-ui, which serves its files from its own directory, and net-snmp,
 * whose agent side needs sloppy-mode semantics a strict ES module does not have.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";

const OUT = "dist/src";
const CHUNK_PREFIX = "bundle-";

for (const name of readdirSync(OUT)) {
  if (name.startsWith(CHUNK_PREFIX)) rmSync(join(OUT, name));
}

await build({
  entryPoints: { main: "src/main.ts" },
  outdir: OUT,
  chunkNames: `${CHUNK_PREFIX}[hash]`,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Shorter source, names kept: stack traces and logged class names read as in the modules.
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  sourcemap: true,
  // net-snmp stays a CommonJS module of its own: its agent-side Mib relies on sloppy-mode
  // semantics (a Proxy `set` trap that returns nothing), which throw inside a strict ES module.
  external: ["@fastify/swagger-ui", "net-snmp"],
  // CommonJS dependencies require Node's built-in modules; an ES module has no `require` of its own.
  banner: {
    js: 'import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);',
  },
  allowOverwrite: true,
  logLevel: "warning",
});
