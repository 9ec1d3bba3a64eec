/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function and per origin
 * (our code by file, dependencies by package, node internals, GC, idle).
 *
 * As a command: `node dist/bench/lib/profile-summary.js <file.cpuprofile> [top] [fromMs] [toMs]`
 * (fromMs/toMs: only the samples in that span after the profile started).
 */
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly hitCount?: number;
}
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

export interface SelfTime {
  /** `name (origin:line)` */
  readonly name: string;
  readonly origin: string;
  readonly selfMs: number;
  /** Share of the non-idle time. */
  readonly percent: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly idleMs: number;
  readonly busyMs: number;
  readonly functions: readonly SelfTime[];
  readonly origins: readonly SelfTime[];
}

/** Where a frame comes from: `src/pdu/parse.ts`-like for ours, the package name for dependencies. */
export function originOf(url: string): string {
  if (url === "") return "(native / V8)";
  if (url.startsWith("node:")) return "node:internal";
  const path = url.startsWith("file://") ? url.slice("file://".length) : url;
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = path.slice(nm + "/node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? path);
  }
  const dist = path.indexOf("/dist/");
  if (dist >= 0) return path.slice(dist + "/dist/".length).replace(/\.js$/, ".ts");
  return path;
}

/** Only the samples between these times (ms after the profile started); default: all. */
export interface ProfileWindow {
  readonly fromMs?: number;
  readonly toMs?: number;
}

const sourceMaps = new Map<string, SourceMap | null>();

/**
 * Where a frame of our compiled files is in the source (via their .js.map): the origin of the
 * original file (`src/pdu/geist/wire.ts`, or a dependency's package name for code the bundle took in,
 * dist/src/main.js and its chunks being one bundle) and its 1-based line; else the frame's own.
 */
function sourcePlace(url: string, line: number, column: number): { origin: string; line: number } {
  const own = { origin: originOf(url), line: line + 1 };
  if (!url.startsWith("file://") || url.includes("/node_modules/") || !url.includes("/dist/")) return own;
  const file = fileURLToPath(url);
  let map = sourceMaps.get(file);
  if (map === undefined) {
    try {
      map = existsSync(`${file}.map`)
        ? new SourceMap(
            JSON.parse(readFileSync(`${file}.map`, "utf8")) as ConstructorParameters<typeof SourceMap>[0],
          )
        : null;
    } catch {
      map = null;
    }
    sourceMaps.set(file, map);
  }
  const entry: { originalLine?: number; originalSource?: string } | undefined = map?.findEntry(line, column);
  if (entry?.originalLine === undefined) return own;
  const source = entry.originalSource;
  if (source === undefined || source === "") return { origin: own.origin, line: entry.originalLine + 1 };
  const original = source.startsWith("file://") ? fileURLToPath(source) : resolve(dirname(file), source);
  const repo = file.slice(0, file.lastIndexOf("/dist/"));
  return {
    origin: original.includes("/node_modules/") ? originOf(original) : relative(repo, original),
    line: entry.originalLine + 1,
  };
}

export function summariseProfile(profile: CpuProfile, top = 25, window: ProfileWindow = {}): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const fromUs = (window.fromMs ?? 0) * 1000;
  const toUs = (window.toMs ?? Infinity) * 1000;
  if (samples.length > 0 && deltas.length === samples.length) {
    // The time until the next sample is attributed to the sampled node.
    let at = 0;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i]!;
      if (at < fromUs || at > toUs) continue;
      const next = deltas[i + 1] ?? 0;
      selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, next));
    }
  } else {
    const total = profile.endTime - profile.startTime;
    const hits = profile.nodes.reduce((n, node) => n + (node.hitCount ?? 0), 0) || 1;
    for (const node of profile.nodes) selfUs.set(node.id, ((node.hitCount ?? 0) * total) / hits);
  }
  let idleUs = 0;
  let totalUs = 0;
  const fn = new Map<string, { origin: string; us: number }>();
  const origins = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    totalUs += us;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    const at = sourcePlace(url, lineNumber, columnNumber);
    const origin =
      functionName === "(garbage collector)" || functionName === "(program)" ? functionName : at.origin;
    const name =
      url === ""
        ? functionName || "(anonymous)"
        : `${functionName || "(anonymous)"} (${at.origin}:${at.line})`;
    const entry = fn.get(name) ?? { origin, us: 0 };
    entry.us += us;
    fn.set(name, entry);
    origins.set(origin, (origins.get(origin) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const pct = (us: number) => (busyUs > 0 ? (100 * us) / busyUs : 0);
  const functions = [...fn.entries()]
    .sort((a, b) => b[1].us - a[1].us)
    .slice(0, top)
    .map(([name, e]) => ({ name, origin: e.origin, selfMs: e.us / 1000, percent: pct(e.us) }));
  const originList = [...origins.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([origin, us]) => ({ name: origin, origin, selfMs: us / 1000, percent: pct(us) }));
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    busyMs: busyUs / 1000,
    functions,
    origins: originList,
  };
}

export function summariseProfileFile(file: string, top = 25, window: ProfileWindow = {}): ProfileSummary {
  return summariseProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, top, window);
}

export function formatSummary(s: ProfileSummary, top = 20): string {
  const lines = [
    `profile: ${(s.totalMs / 1000).toFixed(1)} s sampled, busy ${(s.busyMs / 1000).toFixed(1)} s (idle ${(s.idleMs / 1000).toFixed(1)} s)`,
    "",
    "self time by function (share of busy time):",
  ];
  for (const f of s.functions.slice(0, top))
    lines.push(`  ${f.percent.toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.name}`);
  lines.push("", "self time by origin:");
  for (const o of s.origins.slice(0, top))
    lines.push(`  ${o.percent.toFixed(1).padStart(5)}%  ${o.selfMs.toFixed(0).padStart(7)} ms  ${o.name}`);
  return lines.join("\n");
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write(
      "usage: node dist/bench/lib/profile-summary.js <file.cpuprofile> [top] [fromMs] [toMs]\n",
    );
    process.exit(2);
  }
  const top = Number(process.argv[3] ?? 25);
  const fromMs = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
  const toMs = process.argv[5] === undefined ? undefined : Number(process.argv[5]);
  process.stdout.write(`${formatSummary(summariseProfileFile(file, top, { fromMs, toMs }), top)}\n`);
}
