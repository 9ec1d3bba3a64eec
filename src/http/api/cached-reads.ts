/**
 * The bodies of the read endpoints that monitoring polls hardest (`GET /api/v1/health` and
 * `GET /api/v1/readings`), kept as bytes until what they show changes, and the fast path that
 * serves the plainest of those requests without fastify.
 *
 * Why: building and serialising these answers per request, then fastify's per-request work, held
 * the REST API far below what a bare node:http server does on the same machine
 * (docs/performance.md, "Measurements behind the code"). Cached, an answer is a lookup and one socket write.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Snapshot } from "../../pdu/model.js";
import { compareOrdinal, readingsJson } from "../../pdu/readings.js";
import type { InstanceStatus } from "../../poller/store.js";
import { API_JSON_HEADERS } from "../listener.js";
import type { FastPath, HttpDeps } from "../types.js";
import { API_PATHS } from "./paths.js";

export const HEALTH_PATH = API_PATHS.health;
export const READINGS_PATH = API_PATHS.readings;
export const INSTANCE_QUERY = `${READINGS_PATH}?instance=`;

/** Instance ids the fast path serves: only characters a query string carries as they are. */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;

export const EMPTY_ARRAY = Buffer.from("[]");

/** API_JSON_HEADERS as a flat name, value list (writeHead takes it as it is; no object per answer). */
const HEADER_LIST: readonly string[] = Object.entries(API_JSON_HEADERS).flat();

export const iso = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

/** What a health entry shows of an instance's status. */
export type HealthStatus = Pick<InstanceStatus, "id" | "lastPollUtc" | "lastError" | "consecutiveFailures">;

/**
 * Where the read bodies come from: the snapshot store in the main thread (storeReadSource), or its
 * mirror in the API worker (api-worker/thread.ts). `list()` returns a new array whenever a status changes, and
 * a status is a new object whenever it changes: the bodies are cached on those identities.
 */
export interface ReadSource<S extends HealthStatus> {
  list(): readonly S[];
  get(id: string): S | undefined;
  /** The status's readings as the members of a JSON array ("" when there are none). */
  readingsJson(status: S): string;
  /** The status's readings as a whole body (`[...]`), cached with its snapshot. */
  readingsBody(status: S): Buffer;
  readonly startedAt: number;
  mqttConnected(): boolean;
  now(): number;
}

/** The snapshot store as a {@link ReadSource}. */
export function storeReadSource(deps: HttpDeps): ReadSource<InstanceStatus> {
  return {
    list: () => deps.store.list(),
    get: (id) => deps.store.get(id),
    readingsJson: (s) => (s.snapshot ? readingsJson(s.snapshot) : ""),
    readingsBody: (s) => (s.snapshot === null ? EMPTY_ARRAY : instanceReadings(s.snapshot)),
    startedAt: deps.startedAt,
    mqttConnected: () => deps.mqttStatus().connected,
    now: deps.now ?? Date.now,
  };
}

export interface ReadBodies<S extends HealthStatus = InstanceStatus> {
  /** The body of `GET /api/v1/health`. */
  health(): Buffer;
  /** The body of `GET /api/v1/readings` (every instance). */
  allReadings(): Buffer;
  /** The readings of these instances (one: cached with its snapshot). */
  readingsFor(statuses: readonly S[]): Buffer;
}

export function createReadBodies<S extends HealthStatus>(source: ReadSource<S>): ReadBodies<S> {
  // Keyed by the source's list (replaced on every status change), the second of uptime and the
  // MQTT state: everything the body shows.
  let health:
    { statuses: readonly S[]; uptimeSeconds: number; mqttConnected: boolean; body: Buffer } | undefined;
  const entries = new HealthEntries<S>();
  let all: { statuses: readonly S[]; body: Buffer } | undefined;
  return {
    health() {
      const statuses = source.list();
      const uptimeSeconds = Math.max(0, Math.floor((source.now() - source.startedAt) / 1000));
      const mqttConnected = source.mqttConnected();
      if (
        health?.statuses !== statuses ||
        health.uptimeSeconds !== uptimeSeconds ||
        health.mqttConnected !== mqttConnected
      ) {
        const head = { startedUtc: iso(source.startedAt), uptimeSeconds, mqttConnected };
        health = { statuses, uptimeSeconds, mqttConnected, body: healthBody(head, statuses, entries) };
      }
      return health.body;
    },
    allReadings() {
      const statuses = source.list();
      if (all?.statuses !== statuses) all = { statuses, body: joinReadings(source, statuses) };
      return all.body;
    },
    readingsFor(statuses) {
      return statuses.length === 1 ? source.readingsBody(statuses[0]!) : joinReadings(source, statuses);
    },
  };
}

/**
 * Answers `GET /api/v1/health` and `GET /api/v1/readings[?instance=<exact id>]` when the request
 * is as plain as a monitoring probe's (Host present, no body, no other query); anything else goes
 * to fastify's routes, which answer the same bytes (test/http/fast-path.test.ts compares them).
 */
export function createFastReads<S extends HealthStatus>(
  source: ReadSource<S>,
  bodies: ReadBodies<S>,
  /** Answer `?instance=` here; false among several replicas (the route asks the holder). */
  instanceReads = true,
): FastPath {
  return (request: IncomingMessage, response: ServerResponse): boolean => {
    if (request.method !== "GET" || !plainHeaders(request.rawHeaders)) return false;
    const url = request.url ?? "";
    let body: Buffer;
    if (url === HEALTH_PATH) body = bodies.health();
    else if (url === READINGS_PATH) body = bodies.allReadings();
    else if (instanceReads && url.startsWith(INSTANCE_QUERY)) {
      const id = url.slice(INSTANCE_QUERY.length);
      const status = PLAIN_ID.test(id) ? source.get(id) : undefined;
      if (status === undefined) return false;
      body = bodies.readingsFor([status]);
    } else return false;
    response.writeHead(200, [...HEADER_LIST, "content-length", String(body.length)]);
    response.end(body);
    return true;
  };
}

/**
 * A Host header and no body (neither Content-Length nor Transfer-Encoding). Read from the raw list:
 * `request.headers` builds an object per request, a measurable share of a bare server's rate
 * (docs/performance.md, "Measurements behind the code").
 */
function plainHeaders(raw: readonly string[]): boolean {
  let host = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") host = true;
    else if (name.length === 14 && name.toLowerCase() === "content-length") return false;
    else if (name.length === 17 && name.toLowerCase() === "transfer-encoding") return false;
  }
  return host;
}

/**
 * The readings of these instances as one JSON array. Each instance's readings are already in order,
 * so ordering the instances orders them all; they are serialised once per snapshot (the schema of
 * the route still documents them, and the contract tests check every answer against it).
 */
function joinReadings<S extends HealthStatus>(source: ReadSource<S>, statuses: readonly S[]): Buffer {
  const parts = [...statuses]
    .sort((a, b) => compareOrdinal(a.id, b.id))
    .map((s) => source.readingsJson(s))
    .filter((json) => json !== "");
  return Buffer.from(`[${parts.join(",")}]`);
}

/** One instance's readings, as bytes, once per snapshot. */
const readingsBodies = new WeakMap<Snapshot, Buffer>();
function instanceReadings(snapshot: Snapshot): Buffer {
  let body = readingsBodies.get(snapshot);
  if (body === undefined) {
    body = Buffer.from(`[${readingsJson(snapshot)}]`);
    readingsBodies.set(snapshot, body);
  }
  return body;
}

function healthBody<S extends HealthStatus>(
  head: { startedUtc: string; uptimeSeconds: number; mqttConnected: boolean },
  statuses: readonly S[],
  entries: HealthEntries<S>,
): Buffer {
  let lastPoll: number | null = null;
  for (const s of statuses)
    if (s.lastPollUtc !== null && (lastPoll ?? -1) < s.lastPollUtc) lastPoll = s.lastPollUtc;
  const start = JSON.stringify({ ...head, lastPollUtc: isoOrNull(lastPoll) });
  return Buffer.concat([
    Buffer.from(`${start.slice(0, -1)},"instances":[`),
    ...entries.blocks(statuses),
    HEALTH_END,
  ]);
}

const HEALTH_END = Buffer.from("]}");

/** Instances per block of the health body's `instances` array. */
const HEALTH_BLOCK = 32;

/**
 * The `instances` of the health body as bytes, in blocks of {@link HEALTH_BLOCK} instances. With
 * 1000 PDUs polled every 10 s an instance's status changes 100 times a second, each time a new
 * body: only the block holding the changed status is serialised again, the others are copied as
 * they are, since joining and encoding every entry per change is most of a rebuild's time
 * (docs/performance.md, "Measurements behind the code"). Bounded by the configured instances: one
 * block per 32 of them.
 */
class HealthEntries<S extends HealthStatus> {
  #blocks: { statuses: readonly S[]; bytes: Buffer }[] = [];

  blocks(statuses: readonly S[]): Buffer[] {
    const count = Math.ceil(statuses.length / HEALTH_BLOCK);
    this.#blocks.length = Math.min(this.#blocks.length, count);
    const out: Buffer[] = [];
    for (let b = 0; b < count; b++) {
      const part = statuses.slice(b * HEALTH_BLOCK, (b + 1) * HEALTH_BLOCK);
      let block = this.#blocks[b];
      if (block === undefined || !sameStatuses(block.statuses, part)) {
        const json = part.map(instanceHealthJson).join(",");
        block = { statuses: part, bytes: Buffer.from(b === 0 ? json : `,${json}`) };
        this.#blocks[b] = block;
      }
      out.push(block.bytes);
    }
    return out;
  }
}

const sameStatuses = (a: readonly HealthStatus[], b: readonly HealthStatus[]): boolean =>
  a.length === b.length && a.every((s, i) => s === b[i]);

/**
 * One instance's entry of /api/v1/health, serialised once per status: the store replaces an
 * instance's status object on every change, so an unchanged instance costs a lookup.
 */
const healthEntries = new WeakMap<HealthStatus, string>();
function instanceHealthJson(status: HealthStatus): string {
  let json = healthEntries.get(status);
  if (json === undefined) {
    json = JSON.stringify({
      id: status.id,
      lastPollUtc: isoOrNull(status.lastPollUtc),
      lastError: status.lastError,
      consecutiveFailures: status.consecutiveFailures,
    });
    healthEntries.set(status, json);
  }
  return json;
}
