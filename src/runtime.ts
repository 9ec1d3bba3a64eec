/**
 * Memory sizing of the Node.js process (docs/deployment.md, "Memory").
 *
 * V8 sizes its heap from the machine's memory. On a host with plenty of it the limit is about 4 GB,
 * and V8 then lets garbage grow to up to four times the live heap before a full collection (a
 * 1000-PDU bridge, about 130 MB live, peaks above 500 MB). Under a limit below 512 MB V8 grows the
 * heap by at most about twice the live size instead. The image and the Helm chart therefore run the
 * service with `--max-old-space-size=480` (enough for about 1800 24-outlet PDUs) and a 32 MB young
 * generation, and the service warns at start when the limit it runs with looks too small for the
 * configured fleet.
 */
import { getHeapStatistics } from "node:v8";

/** The heap cap the container image, the Helm chart and `npm run bench` run the service with. */
export const DEFAULT_MAX_OLD_SPACE_MB = 480;

/**
 * Young generation (each semi-space, MB; Node's default is 16). Every request and poll allocates
 * short-lived objects; a small young generation promotes the ones still in flight at each scavenge,
 * which under the heap cap means more full collections. 32 keeps the REST API near a bare node:http
 * server's rate (docs/performance.md, scenario api) for about 30 MB more RSS at 1000 PDUs.
 */
export const DEFAULT_MAX_SEMI_SPACE_MB = 32;

/** `NODE_OPTIONS` of the image and the chart. */
export const DEFAULT_NODE_OPTIONS = `--max-old-space-size=${DEFAULT_MAX_OLD_SPACE_MB} --max-semi-space-size=${DEFAULT_MAX_SEMI_SPACE_MB}`;

/** Live heap measured with 24-outlet PDUs (npm run bench): a base plus a share per instance. */
const BASE_HEAP_MB = 40;
const HEAP_PER_INSTANCE_MB = 0.15;
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
