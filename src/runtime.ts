/**
 * Memory sizing of the Node.js process (docs/deployment.md, "Memory"; the figures in docs/heap-breakdown.md).
 *
 * After a full collection V8 lets the old generation grow by a factor of the live heap before the
 * next one. It picks the factor from the heap limit, which it sizes from the machine's memory: with
 * plenty of memory the factor may reach four, under a small limit it is about 1.5. What a poll
 * replaces (each PDU's snapshot, every 10 s) lives long enough to reach the old generation and dies
 * there, so that factor, not the live data, decides the peak.
 *
 * The service sets the factor itself at start ({@link applyHeapFlags}), `--heap-growing-percent=50`
 * (1.5 times the live heap), or 30 (1.3 times) when the process runs under a heap cap
 * (`--max-old-space-size` or `--max-heap-size`, as the image and the chart set): a cap says that
 * memory is what is limited, and the lower factor trades a little CPU per poll for a lower peak. It
 * does so however it is started: V8 reads the flag whenever it recomputes the limit, so a flag set at
 * run time works, and the plain command needs no heap cap (which only a restart of the process could
 * set).
 * The image and the Helm chart set a cap all the same, 480 MB: in a container V8 sizes its limit from
 * the memory limit, which may be below what the fleet needs. They also set the young generation to
 * 4 MB per semi-space, a quarter of Node 20's default (Node 24's is larger): a semi-space costs its
 * size in RSS twice over, and smaller ones lower the peak for a little more CPU per poll; the plain
 * command keeps Node's default. Flags the user set on the command line or in NODE_OPTIONS are kept,
 * and the start-up log says which flags the service applied and why; it warns when a heap limit the
 * user set looks too small for the fleet.
 */
import { getHeapStatistics, setFlagsFromString } from "node:v8";

/** The old generation's growth between full collections, in percent of the live heap. */
export const HEAP_GROWING_PERCENT = 50;

/** The same under a heap cap (the image, the chart, anyone who sets one): less memory, more CPU. */
export const CAPPED_HEAP_GROWING_PERCENT = 30;

/** The heap cap of the container image and the Helm chart (room for 4000 24-outlet PDUs: docs/deployment.md). */
export const DEFAULT_MAX_OLD_SPACE_MB = 480;

/** Young generation (each semi-space, MB) of the image and the chart: a quarter of Node 20's default. */
export const DEFAULT_MAX_SEMI_SPACE_MB = 4;

/** `NODE_OPTIONS` of the image and the chart (V8 refuses --heap-growing-percent there). */
export const DEFAULT_NODE_OPTIONS = `--max-old-space-size=${DEFAULT_MAX_OLD_SPACE_MB} --max-semi-space-size=${DEFAULT_MAX_SEMI_SPACE_MB}`;

/**
 * Live heap with 24-outlet PDUs, with a margin: a base plus a share per instance, as measured after
 * a full collection (docs/heap-breakdown.md).
 */
const BASE_HEAP_MB = 24;
const HEAP_PER_INSTANCE_MB = 0.04;
/** Room for garbage between full collections. */
const HEADROOM = 1.5;

/** About how much heap (MB) a fleet of `instances` needs, headroom included. */
export function heapNeededMb(instances: number): number {
  return Math.ceil((BASE_HEAP_MB + HEAP_PER_INSTANCE_MB * instances) * HEADROOM);
}

/** The V8 heap limit of this process, in MB. */
export function heapLimitMb(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 1024 / 1024);
}

/** The flags the service sets on itself, by V8 option name; the value: without and with a heap cap. */
const RUNTIME_FLAGS: readonly (readonly [string, number, number])[] = [
  ["heap-growing-percent", HEAP_GROWING_PERCENT, CAPPED_HEAP_GROWING_PERCENT],
];

/** The flags that cap the heap. */
const HEAP_CAP_NAMES = ["max-old-space-size", "max-heap-size"];

/** The heap flags a user may set that the start-up log reports as kept. */
const HEAP_FLAG_NAMES = [
  "heap-growing-percent",
  "max-old-space-size",
  "max-semi-space-size",
  "max-heap-size",
];

const WHY_GROWTH = "V8 would let garbage grow to up to four times the live heap before a full collection";

/** Why the flags are applied, for the start-up log. */
export const HEAP_FLAGS_WHY = `${WHY_GROWTH}; 1.5 times keeps the peak near the live heap`;

/** ... and under a heap cap. */
export const CAPPED_HEAP_FLAGS_WHY = `${WHY_GROWTH}; under a heap cap memory is what is limited, and 1.3 times keeps the peak closer to the live heap`;

/** Node options given on the command line and in NODE_OPTIONS, as separate words. */
function nodeOptionWords(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].filter((w) => w.startsWith("--"));
}

/** `--name` or `--name=…`, with V8's `_` spelling too. */
function isFlag(word: string, name: string): boolean {
  const normal = word.replaceAll("_", "-");
  return normal === `--${name}` || normal.startsWith(`--${name}=`);
}

/** The heap flags already set by whoever started the process (kept as they are). */
export function userHeapFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return nodeOptionWords(execArgv, nodeOptions).filter((w) =>
    HEAP_FLAG_NAMES.some((name) => isFlag(w, name)),
  );
}

/** The service's runtime flags that neither the command line nor NODE_OPTIONS sets. */
export function missingHeapFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const words = nodeOptionWords(execArgv, nodeOptions);
  const capped = isCapped(words);
  return RUNTIME_FLAGS.filter(([name]) => !words.some((w) => isFlag(w, name))).map(
    ([name, value, cappedValue]) => `--${name}=${capped ? cappedValue : value}`,
  );
}

/** Whether one of the words caps the heap. */
function isCapped(words: readonly string[]): boolean {
  return words.some((w) => HEAP_CAP_NAMES.some((name) => isFlag(w, name)));
}

/** The flags {@link applyHeapFlags} set in this process. */
let applied: readonly string[] = [];

/**
 * Sets the service's runtime flags the user did not set (`run`, before the service starts), and
 * returns them.
 */
export function applyHeapFlags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): readonly string[] {
  const flags = missingHeapFlags(execArgv, nodeOptions);
  for (const flag of flags) setFlagsFromString(flag);
  applied = [...applied, ...flags.filter((f) => !applied.includes(f))];
  return flags;
}

/** The start-up log line of the heap flags: which ones the service applied, which ones it kept. */
export function heapFlagsReport(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): { readonly applied: string[]; readonly kept: string[]; readonly why: string | null } {
  return {
    applied: [...applied],
    kept: userHeapFlags(execArgv, nodeOptions),
    why:
      applied.length === 0
        ? null
        : isCapped(nodeOptionWords(execArgv, nodeOptions))
          ? CAPPED_HEAP_FLAGS_WHY
          : HEAP_FLAGS_WHY,
  };
}
