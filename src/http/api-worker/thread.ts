/**
 * The API worker thread (`Api.Worker`): owns the REST API's listening socket, answers the plain
 * `GET /api/v1/health` and `GET /api/v1/readings[?instance=]` from its mirror of the snapshot store
 * (fed by the main thread, store-mirror.ts), and passes every other request, as it came, to the main
 * thread's fastify app over a private unix socket. Its requests and collections stay off the
 * polling loop and out of the main thread's large heap (why and what it measured: host.ts).
 */
import {
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { parentPort, workerData } from "node:worker_threads";
import { API_JSON_HEADERS, clientErrorHandler, serverFactory } from "../listener.js";
import { BODY_LIMIT, problem, PROBLEM_CONTENT_TYPE } from "../problem.js";
import {
  createFastReads,
  createReadBodies,
  EMPTY_ARRAY,
  INSTANCE_QUERY,
  READINGS_PATH,
  type ReadSource,
} from "../api/cached-reads.js";
import {
  PEER_HEADER,
  type FromWorker,
  type MirrorStatus,
  type ToWorker,
  type WorkerSetup,
} from "./store-mirror.js";

/** One snapshot's readings: asked of the main thread when a request first needs them. */
interface Readings {
  json: string | undefined;
  body?: Buffer;
}

interface Entry {
  readonly id: string;
  readonly lastPollUtc: number | null;
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
  readonly readings: Readings;
}

/** Headers that belong to one connection, not to the request or answer passed on. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);

const port = parentPort!;
const setup = workerData as WorkerSetup;
const send = (message: FromWorker): void => port.postMessage(message);

/** Lines the worker logs (through the main thread) per minute; past that, they are counted. */
const LOG_LINES_PER_MINUTE = 20;
/** An error's text is cut to this many characters in a log line. */
const LOG_ERROR_CHARS = 2000;
let logWindow = 0;
let logged = 0;
let unlogged = 0;

/**
 * Logs a line through the main thread's logger, at most {@link LOG_LINES_PER_MINUTE} a minute (the
 * first line after a full minute says how many were left out), so that a flood of failing requests
 * cannot flood the log.
 */
function log(level: "warn" | "error", msg: string, error: unknown): void {
  const now = Date.now();
  if (now - logWindow >= 60_000) {
    logWindow = now;
    logged = 0;
  }
  if (logged >= LOG_LINES_PER_MINUTE) {
    unlogged++;
    return;
  }
  logged++;
  let err = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (err.length > LOG_ERROR_CHARS) err = `${err.slice(0, LOG_ERROR_CHARS)}…`;
  const note = unlogged > 0 ? ` (${unlogged} earlier lines of the API worker left out)` : "";
  unlogged = 0;
  send({ kind: "log", level, msg: `${msg}${note}`, err });
}

/** The mirror: a new entry object per change and a new list per batch, as the store does. */
const entries = new Map<string, Entry>();
let list: readonly Entry[] = [];
let mqttConnected = setup.mqttConnected;
const NO_READINGS: Readings = { json: "" };

function apply(statuses: readonly MirrorStatus[]): void {
  for (const s of statuses) {
    const readings =
      s.snapshot === "new"
        ? { json: undefined }
        : s.snapshot === "none"
          ? NO_READINGS
          : (entries.get(s.id)?.readings ?? { json: undefined });
    entries.set(s.id, {
      id: s.id,
      lastPollUtc: s.lastPollUtc,
      lastError: s.lastError,
      consecutiveFailures: s.consecutiveFailures,
      readings,
    });
  }
  if (statuses.length > 0) list = Object.freeze([...entries.values()]);
}
apply(setup.statuses);

const source: ReadSource<Entry> = {
  list: () => list,
  get: (id) => entries.get(id),
  readingsJson: (e) => e.readings.json ?? "",
  readingsBody: (e) =>
    !e.readings.json ? EMPTY_ARRAY : (e.readings.body ??= Buffer.from(`[${e.readings.json}]`)),
  startedAt: setup.startedAt,
  mqttConnected: () => mqttConnected,
  now: Date.now,
};

/** What the worker answered itself, reported to the main thread's metrics once per turn. */
const served = new Map<string, number>();
let reportScheduled = false;
function count(path: string): void {
  served.set(path, (served.get(path) ?? 0) + 1);
  if (reportScheduled) return;
  reportScheduled = true;
  setImmediate(() => {
    reportScheduled = false;
    send({ kind: "served", counts: [...served].map(([p, n]) => [p, 200, n]) });
    served.clear();
  });
}

/** Requests waiting for readings, by instance id (bounded by the open connections). */
const waiting = new Map<string, (() => void)[]>();

function fetchReadings(ids: readonly string[]): Promise<void> {
  const asked = ids.filter((id) => !waiting.has(id));
  const all = ids.map((id) => {
    const queue = waiting.get(id) ?? [];
    waiting.set(id, queue);
    return new Promise<void>((resolve) => queue.push(resolve));
  });
  if (asked.length > 0) send({ kind: "readings", ids: asked });
  return Promise.all(all).then(() => undefined);
}

/** Readings asked of the main thread have come (or `failed`: their requests go to fastify, which answers 500). */
function receiveReadings(readings: readonly [string, string][], failed: readonly string[]): void {
  for (const [id, json] of readings) {
    const entry = entries.get(id);
    if (entry !== undefined && entry.readings.json === undefined) entry.readings.json = json;
    release(id);
  }
  for (const id of failed) release(id);
}

function release(id: string): void {
  for (const resolve of waiting.get(id) ?? []) resolve();
  waiting.delete(id);
}

/** The entries whose readings this request needs and the mirror does not hold yet. */
function missingReadings(request: IncomingMessage): string[] {
  if (request.method !== "GET") return [];
  const url = request.url ?? "";
  if (url === READINGS_PATH) return list.filter((e) => e.readings.json === undefined).map((e) => e.id);
  if (!setup.instanceReads || !url.startsWith(INSTANCE_QUERY)) return [];
  const entry = entries.get(url.slice(INSTANCE_QUERY.length));
  return entry !== undefined && entry.readings.json === undefined ? [entry.id] : [];
}

const fastReads = createFastReads(source, createReadBodies(source), setup.instanceReads);
const answer = (request: IncomingMessage, response: ServerResponse): boolean => {
  const answered = fastReads(request, response);
  if (answered) count((request.url ?? "").split("?", 1)[0]!);
  return answered;
};

/**
 * The fast path of the worker: answers at once from the mirror, or once the readings it needs have
 * come from the main thread; should they have changed again meanwhile, fastify answers instead.
 */
const fastPath = (request: IncomingMessage, response: ServerResponse): boolean => {
  const missing = missingReadings(request);
  if (missing.length === 0) return answer(request, response);
  void fetchReadings(missing).then(() => {
    let answered = false;
    if (missingReadings(request).length === 0) {
      try {
        answered = answer(request, response);
      } catch (error) {
        // fastify's route answers it (a 500 problem, logged there too)
        log("error", "API worker: answering a read failed", error);
      }
    }
    if (!answered) forwardSafely(request, response);
  });
  return true;
};

/**
 * Passes a request to fastify in the main thread: the same method, path, headers and body, and the
 * client's address and HTTP version in {@link PEER_HEADER} (one a client sent is dropped); the answer
 * comes back as it is, streamed (the console's event stream too).
 */
function forward(request: IncomingMessage, response: ServerResponse): void {
  const raw = request.rawHeaders;
  const headers: string[] = [];
  let framed = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === "content-length" || name === "transfer-encoding") framed = true;
    if (name === PEER_HEADER || (HOP_BY_HOP.has(name) && name !== "transfer-encoding")) continue;
    headers.push(raw[i]!, raw[i + 1]!);
  }
  // Without either header the request has no body; said so, or node would send it chunked.
  if (!framed) headers.push("content-length", "0");
  headers.push(PEER_HEADER, `${request.httpVersion} ${request.socket.remoteAddress ?? ""}`);
  // Keep-alive, so that fastify reads and drops a body it answered without (a 401 before a large
  // body) instead of closing the socket while the body is still being written. The connection is
  // still used for this one request only (no agent): the peer address is per connection.
  headers.push("connection", "keep-alive");
  const upstream = httpRequest({
    socketPath: setup.upstream,
    method: request.method,
    path: request.url,
    headers,
    setHost: false,
    agent: false,
  });
  let answer: IncomingMessage | undefined;
  upstream.on("response", (received) => {
    answer = received;
    const back: string[] = [];
    const rawBack = received.rawHeaders;
    for (let i = 0; i < rawBack.length; i += 2)
      if (!HOP_BY_HOP.has(rawBack[i]!.toLowerCase())) back.push(rawBack[i]!, rawBack[i + 1]!);
    // fastify closes the connection after an answer to a body it would not read to the end (a body
    // it cannot parse, one over the limit): so does the worker, rather than read the rest for nothing.
    if (/\bclose\b/i.test(received.headers.connection ?? "")) back.push("connection", "close");
    response.sendDate = false; // fastify's answer has its Date
    response.writeHead(received.statusCode ?? 502, received.statusMessage, back);
    received.pipe(response);
    // An answer fastify cut short (an event stream it dropped: a client that stopped reading) ends
    // the client's connection too; pipe() alone would leave it open, holding a connection for good.
    received.on("close", () => {
      if (!received.complete) response.destroy();
    });
    // The request may still be unfinished (its body cut at the limit): the answer is all it gets.
    received.on("end", () => upstream.destroy());
  });
  upstream.on("error", (error) => {
    // After a whole answer (a body fastify did not want), nothing is lost; a cut answer cuts the client's.
    if (answer !== undefined || response.headersSent) {
      if (answer?.complete !== true) response.destroy();
      return;
    }
    log("warn", "API worker: passing a request on failed", error);
    unavailable(response);
  });
  // A client that leaves (an event stream closed) ends the request to fastify too.
  response.on("close", () => {
    if (!response.writableFinished) upstream.destroy();
  });
  // Answered: whatever is left of a body no longer read (cut at the limit) is read and dropped, to
  // keep the connection, unless the answer closes it (as fastify's does after refusing a body).
  response.on("finish", () => request.resume());
  passBody(request, upstream);
}

/** The worker's own answer when fastify cannot be reached: 503, to be retried. */
function unavailable(response: ServerResponse): void {
  const body = JSON.stringify(problem(503, "the service is not ready to answer this request; retry"));
  response.writeHead(503, {
    ...API_JSON_HEADERS,
    "content-type": PROBLEM_CONTENT_TYPE,
    "retry-after": "1",
  });
  response.end(body);
}

/** {@link forward}, whose failure is an answer (503, or the connection cut) and a log line, never thrown. */
function forwardSafely(request: IncomingMessage, response: ServerResponse): void {
  try {
    forward(request, response);
  } catch (error) {
    log("error", "API worker: passing a request on failed", error);
    if (response.headersSent) response.destroy();
    else unavailable(response);
  }
}

/**
 * Writes the client's body to the request to fastify, with back-pressure, and ends that request only
 * once every byte written has been flushed: ending a request whose writes are still queued makes
 * node write one more (empty) chunk, and should fastify have answered and closed the connection in
 * between (it closes after refusing a body), that write fails with EPIPE and fastify's answer is
 * lost. No more than {@link BODY_LIMIT} + 1 bytes are passed: that is all fastify needs to answer
 * 413, so nothing is still being written when it closes.
 */
function passBody(request: IncomingMessage, upstream: ClientRequest): void {
  let passed = 0;
  let inFlight = 0;
  let ended = false;
  // A body cut at the limit is never ended: fastify has answered 413 (and closed) by then.
  const finish = () => {
    if (ended && inFlight === 0 && passed <= BODY_LIMIT && !upstream.destroyed) upstream.end();
  };
  // The head goes at once: fastify may answer from it alone (a declared length over the limit).
  upstream.flushHeaders();
  request.on("data", (chunk: Buffer) => {
    if (passed > BODY_LIMIT || upstream.destroyed) return;
    const part = chunk.length > BODY_LIMIT + 1 - passed ? chunk.subarray(0, BODY_LIMIT + 1 - passed) : chunk;
    passed += part.length;
    inFlight++;
    const more = upstream.write(part, () => {
      inFlight--;
      finish();
    });
    // Over the limit, nothing more is read until the answer is out (see forward).
    if (passed > BODY_LIMIT) request.pause();
    else if (!more) {
      request.pause();
      upstream.once("drain", () => request.resume());
    }
  });
  // Gone (answered, failed, the client left) with the body still wanted: the rest is read and dropped.
  upstream.once("close", () => {
    if (passed <= BODY_LIMIT) request.resume();
  });
  request.on("end", () => {
    ended = true;
    finish();
  });
}

const server = serverFactory(
  setup.limits,
  // The gate logs at most a line a minute of its own.
  (fields, msg) => send({ kind: "log", level: "warn", msg, fields: { listener: "api", ...fields } }),
  setup.fastReads ? fastPath : undefined,
  setup.tls,
)(forwardSafely, {
  http: { requireHostHeader: false },
});
server.on("clientError", clientErrorHandler);
server.on("error", (error: Error & { code?: string }) => {
  // Before listening: the main thread reports the failed start; after: it logs the error.
  send({ kind: "listen-failed", code: error.code, message: error.message });
});
server.listen({ host: setup.bind, port: setup.port }, () => {
  const address = server.address();
  send({
    kind: "listening",
    port: typeof address === "object" && address !== null ? address.port : setup.port,
  });
});

function onMessage(message: ToWorker): void {
  switch (message.kind) {
    case "statuses":
      mqttConnected = message.mqttConnected;
      apply(message.statuses);
      break;
    case "readings":
      receiveReadings(message.readings, message.failed);
      break;
    case "beat":
      send({ kind: "beat" });
      break;
    case "close":
      server.close(() => send({ kind: "closed" }));
      server.closeIdleConnections();
      break;
  }
}

port.on("message", (message: ToWorker) => {
  try {
    onMessage(message);
  } catch (error) {
    log("error", "API worker: handling a message from the main thread failed", error);
  }
});

// A rejection nothing handled: logged, the worker keeps serving (the request it was for has failed).
process.on("unhandledRejection", (reason) => {
  log("error", "API worker: unhandled rejection", reason);
});

// An exception nothing caught may have left the worker half updated: it is logged and the thread
// ends; the main thread starts a new one with a full mirror (host.ts).
process.on("uncaughtException", (error) => {
  send({
    kind: "log",
    level: "error",
    msg: "API worker: uncaught exception; the worker ends and is started again",
    err: (error.stack ?? String(error)).slice(0, LOG_ERROR_CHARS),
  });
  process.exit(1);
});
