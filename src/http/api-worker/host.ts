/**
 * The REST API's worker thread (`Api.Worker`, on by default). It exists because the main thread's
 * one event loop and large heap are shared with polling, MQTT and control: requests answered there
 * wait behind a fleet's polls, and their allocations feed the main thread's collections. With a
 * large fleet polling and the API hammered, the worker keeps both the polls' lateness and the API's
 * lower, and the CPU per request nearer a bare node:http server's (docs/performance.md, "Measurements behind the code").
 * The worker owns the listening socket and answers the plain health and readings GETs from a mirror
 * of the store (thread.ts); the main thread feeds the mirror only the statuses that changed, once per
 * event-loop turn (a small message per poll), and a snapshot's readings cross only when a request
 * needs them (store-mirror.ts). Every other
 * request reaches the main thread's fastify app as it came, over a unix socket in a directory only
 * this user may enter, so control, the console, the documents and the errors are those of the app.
 *
 * This file is the main thread's side: the app behind the socket, the thread's start, heartbeat,
 * restarts and close.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { maxHeaderSize as httpMaxHeaderSize, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { httpLimits, listenError, type RunningListener, type TlsPair } from "../listener.js";
import { distSrcUrl } from "../../paths.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { MirrorFeed, PEER_HEADER, type FromWorker, type ToWorker, type WorkerSetup } from "./store-mirror.js";
import { buildApiServer, startApiServer } from "../api/server.js";

/** Bytes the worker may add to a request head it passes on (the peer and connection lines). */
const UPSTREAM_HEAD_ROOM = 1024;

/** How long the worker gets to finish its open requests on close before it is terminated. */
const CLOSE_BUDGET_MS = 2000;

/**
 * A request passed on by the worker carries the client's HTTP version and address: fastify's
 * routes (the key guard's lock-out, the audit log, Api.TrustedProxies, the Host rule of HTTP/1.1)
 * then see the client, not the unix socket. The worker opens one connection per request.
 */
function adoptPeer(request: IncomingMessage): void {
  const peer = request.headers[PEER_HEADER];
  if (typeof peer !== "string") return;
  delete request.headers[PEER_HEADER];
  const space = peer.indexOf(" ");
  const version = peer.slice(0, space);
  const address = peer.slice(space + 1);
  const [major, minor] = version.split(".").map(Number);
  request.httpVersion = version;
  request.httpVersionMajor = major ?? 1;
  request.httpVersionMinor = minor ?? 1;
  if (address !== "")
    Object.defineProperty(request.socket, "remoteAddress", { value: address, configurable: true });
}

/** How the start-up log names the socket behind the worker (followed by its path). */
export const SOCKET_LINE = "REST API: main-thread socket for the worker thread at ";

/** The REST API's listener as the main thread holds it: on the worker thread, or on the main thread. */
export interface ApiListener extends RunningListener {
  /** Why the REST API does not answer now (its worker thread died and is being started again), else null. */
  outage(): string | null;
  /** The worker thread that listens or is being started; null on the main thread and between restarts. */
  thread(): Worker | null;
}

/** A worker that died is started again after 1 s, then after 2, 4, … up to 60 s while it keeps dying. */
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 60_000;
/** A worker that stayed up this long has its successor start again at the first delay. */
const STAYED_UP_MS = 60_000;

/**
 * The heartbeat: the main thread asks the listening worker for an answer this often, and a worker
 * that has answered nothing for HUNG_AFTER_MS is hung (its event loop blocked): it is reported
 * (readiness, /health/integrations, the log), ended and started again.
 */
const HEARTBEAT_MS = 2000;
const HUNG_AFTER_MS = 10_000;

/** What a thread's start came to. */
type Start = { readonly port: number } | { readonly error: Error };

/** A worker thread as the main thread follows it. */
interface ThreadState {
  readonly thread: Worker;
  listening: boolean;
  /** When it last answered a heartbeat (or was started). */
  lastBeat: number;
  /** Found not answering; it is being ended. */
  hung: boolean;
}

/** The worker thread as the main thread runs it: starts, feeds, watches, restarts and ends it. */
class WorkerSupervisor {
  readonly #deps: HttpDeps;
  /** The fastify app behind the worker, on its unix socket. */
  readonly #app: HttpApp;
  readonly #dir: string;
  readonly #upstream: string;
  readonly #tls: TlsPair | null;
  readonly #bind: string;
  readonly #feed: MirrorFeed;
  readonly #heartbeat: NodeJS.Timeout;
  /** The port every thread listens on: `Api.Port`, then the one the first worker got. */
  port: number;
  /** The thread that listens or is being started, and whether it listens. */
  #current: ThreadState | null = null;
  #stopping = false;
  #closed: (() => void) | null = null;
  #outage: string | null = null;
  #upSince = 0;
  /** Restarts since the last worker that stayed up STAYED_UP_MS. */
  #attempts = 0;
  #restarting: Promise<void> = Promise.resolve();
  /** Ends the back-off wait at once (on close). */
  #wake: (() => void) | null = null;

  constructor(deps: HttpDeps, app: HttpApp, dir: string, upstream: string, tls: TlsPair | null) {
    this.#deps = deps;
    this.#app = app;
    this.#dir = dir;
    this.#upstream = upstream;
    this.#tls = tls;
    this.#bind = deps.config.Api.Bind;
    this.port = deps.config.Api.Port;
    this.#feed = new MirrorFeed(deps, (message) => this.#post(message));
    this.#heartbeat = setInterval(() => this.#beat(), HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  outage(): string | null {
    return this.#outage;
  }

  thread(): Worker | null {
    return this.#current?.thread ?? null;
  }

  /** Starts the first thread; a failed start ends everything and is a ConfigError naming the key. */
  async start(): Promise<void> {
    const configuredPort = this.port;
    const start = await this.#spawn(configuredPort);
    if ("error" in start) {
      await this.#cleanup();
      throw listenError(start.error, "Api", this.#bind, configuredPort);
    }
    // Restarts listen on the port the first worker got (`Api.Port: 0` picks one once).
    this.port = start.port;
    const shownHost = this.#bind.includes(":") ? `[${this.#bind}]` : this.#bind;
    this.#deps.logger.info(
      { listener: "api", port: this.port },
      `REST API listening at ${this.#tls === null ? "http" : "https"}://${shownHost}:${this.port} (worker thread)`,
    );
    this.#upSince = Date.now();
  }

  async close(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#heartbeat);
    this.#wake?.();
    if (this.#current?.listening === true) {
      const done = new Promise<void>((resolve) => {
        this.#closed = resolve;
        setTimeout(resolve, CLOSE_BUDGET_MS).unref();
      });
      this.#post({ kind: "close" });
      await this.#app.close();
      await done;
    }
    await this.#cleanup();
  }

  /** Posts to the current thread; a message that cannot be posted is logged, never thrown. */
  #post(message: ToWorker, to = this.#current?.thread): void {
    try {
      to?.postMessage(message);
    } catch (error) {
      this.#deps.logger.error(
        { err: error, kind: message.kind },
        "API worker: a message to the worker failed",
      );
    }
  }

  /** Starts a thread on `listenPort` with the mirror as it is now; one that exits after it listened is restarted. */
  #spawn(listenPort: number): Promise<Start> {
    const deps = this.#deps;
    const setup: WorkerSetup = {
      bind: this.#bind,
      port: listenPort,
      limits: httpLimits(deps.config, "api"),
      startedAt: deps.startedAt,
      upstream: this.#upstream,
      tls: this.#tls,
      fastReads: !deps.config.Api.Oidc.ProtectReads,
      instanceReads: deps.replica === undefined,
      ...this.#feed.initial(),
    };
    let thread: Worker;
    try {
      thread = new Worker(distSrcUrl("./http/api-worker/thread.js"), { workerData: setup });
    } catch (error) {
      return Promise.resolve({ error: error instanceof Error ? error : new Error(String(error)) });
    }
    const state: ThreadState = { thread, listening: false, lastBeat: Date.now(), hung: false };
    this.#current = state;
    return new Promise<Start>((resolve) => this.#follow(state, resolve));
  }

  /** Follows a thread's messages, errors and exit; `resolve` gets what its start came to. */
  #follow(state: ThreadState, resolve: (start: Start) => void): void {
    const { thread } = state;
    const logger = this.#deps.logger;
    // Nothing the worker sends can throw out of here (into the main thread's event loop).
    thread.on("message", (message: FromWorker) => {
      try {
        this.#handle(state, message, resolve);
      } catch (error) {
        logger.error({ err: error }, "API worker: handling a message from the worker failed");
      }
    });
    thread.on("error", (error) => {
      if (!this.#stopping) logger.error({ err: error }, "API worker failed");
      resolve({ error });
    });
    thread.on("exit", (code) => {
      if (this.#current === state) this.#current = null;
      if (this.#stopping) this.#closed?.();
      else if (state.listening)
        this.#died(state.hung ? "it stopped answering its heartbeat" : `exit code ${code}`, code);
      resolve({ error: new Error(`the API worker exited (${code}) before listening`) });
    });
  }

  /** One message of a thread. */
  #handle(state: ThreadState, message: FromWorker, resolve: (start: Start) => void): void {
    const deps = this.#deps;
    switch (message.kind) {
      case "listening":
        state.listening = true;
        state.lastBeat = Date.now();
        resolve({ port: message.port });
        break;
      case "listen-failed":
        if (state.listening) deps.logger.error({ err: message.message }, "API worker: its listener failed");
        resolve({ error: Object.assign(new Error(message.message), { code: message.code }) });
        break;
      case "served":
        for (const [path, status, n] of message.counts) deps.metrics?.observeHttp("api", path, status, n);
        break;
      case "log":
        deps.logger[message.level](
          { ...message.fields, ...(message.err === undefined ? {} : { err: message.err }) },
          message.msg,
        );
        break;
      case "readings":
        this.#post(this.#feed.readings(message.ids), state.thread);
        break;
      case "beat":
        state.lastBeat = Date.now();
        break;
      case "closed":
        this.#closed?.();
        break;
    }
  }

  /** Ends the current thread (one that did not listen, or on close) and waits until it is gone. */
  async #endThread(): Promise<void> {
    const thread = this.#current?.thread;
    this.#current = null;
    await thread?.terminate();
  }

  #died(cause: string, code: number): void {
    this.#deps.logger.error(
      { code },
      "API worker exited; the REST API is down until the worker is started again",
    );
    this.#restarting = this.#restart(cause);
  }

  /** Waits `ms`, or less when woken (on close). */
  async #backOff(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = null;
  }

  /** Logged, never fatal: polling and MQTT go on without the REST API while it starts again. */
  async #restart(cause: string): Promise<void> {
    const deps = this.#deps;
    if (Date.now() - this.#upSince >= STAYED_UP_MS) this.#attempts = 0;
    let failed = "";
    while (!this.#stopping) {
      const attempt = ++this.#attempts;
      this.#outage = `API worker restarting (attempt ${attempt}) after ${cause}${failed}`;
      await this.#backOff(Math.min(RESTART_FIRST_MS * 2 ** (attempt - 1), RESTART_MAX_MS));
      if (this.#stopping) return;
      deps.metrics?.observeApiWorkerRestart();
      const start = await this.#spawn(this.port);
      if ("port" in start && !this.#stopping) {
        this.#outage = null;
        this.#upSince = Date.now();
        deps.logger.info({ port: this.port, attempt }, "API worker listening again; the REST API is back");
        return;
      }
      await this.#endThread();
      if ("error" in start && !this.#stopping) {
        failed = `; attempt ${attempt} failed: ${start.error.message}`;
        deps.logger.error(
          { err: start.error, attempt },
          "API worker restart failed; the REST API stays down until a later attempt listens",
        );
      }
    }
  }

  /** Asks the listening worker for a beat; one silent for HUNG_AFTER_MS is ended (and started again). */
  #beat(): void {
    const state = this.#current;
    if (this.#stopping || state === null || !state.listening || state.hung) return;
    const silent = Date.now() - state.lastBeat;
    if (silent < HUNG_AFTER_MS) {
      this.#post({ kind: "beat" }, state.thread);
      return;
    }
    state.hung = true;
    this.#outage = `API worker not answering (no heartbeat for ${Math.round(silent / 1000)} s); it is being started again`;
    this.#deps.logger.error(
      { silentMs: silent },
      "API worker not answering its heartbeat; the REST API is down until a new worker listens",
    );
    void state.thread.terminate().catch((error: unknown) => {
      this.#deps.logger.error({ err: error }, "API worker: ending the hung worker failed");
    });
  }

  async #cleanup(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#heartbeat);
    this.#wake?.();
    this.#feed.stop();
    await this.#app.close();
    await this.#endThread();
    await this.#restarting;
    await this.#endThread();
    await rm(this.#dir, { recursive: true, force: true });
  }
}

/**
 * The fastify app behind the worker, listening on `upstream`. The worker adds a few header lines to
 * every request it passes on (UPSTREAM_HEAD_ROOM): a request head its listener accepted must not be
 * too large for fastify's.
 */
async function startUpstream(deps: HttpDeps, upstream: string): Promise<HttpApp> {
  const app = await buildApiServer(deps, {
    limits: { ...httpLimits(deps.config, "api"), maxHeaderBytes: httpMaxHeaderSize + UPSTREAM_HEAD_ROOM },
  });
  app.server.prependListener("request", adoptPeer);
  // Not the API's address: requests reach this socket only through the worker (logged when it listens).
  await app.listen({
    path: upstream,
    listenTextResolver: (address) => `${SOCKET_LINE}${address}`,
  });
  return app;
}

/**
 * Starts the worker and the fastify app behind it; a taken port is a ConfigError (`Api.Port`). Where
 * no private directory can be made for the socket (a read-only root without a writable temporary
 * directory), the REST API runs on the main thread instead, with a warning. A worker that exits
 * later (not on close) is started again on the same address, with back-off (RESTART_FIRST_MS).
 */
export async function startApiWorker(deps: HttpDeps, tls: TlsPair | null = null): Promise<ApiListener> {
  let dir: string;
  try {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-api-")); // mode 0700
  } catch (error) {
    deps.logger.warn(
      { err: error, tmpdir: tmpdir() },
      "the API worker needs a private directory for its socket and none could be made; the REST API runs on the main thread",
    );
    const listener = await startApiServer(deps, tls);
    return { ...listener, outage: () => null, thread: () => null };
  }
  const upstream = join(dir, "api.sock");
  const app = await startUpstream(deps, upstream);
  const supervisor = new WorkerSupervisor(deps, app, dir, upstream, tls);
  await supervisor.start();
  return {
    port: supervisor.port,
    outage: () => supervisor.outage(),
    thread: () => supervisor.thread(),
    close: () => supervisor.close(),
  };
}
