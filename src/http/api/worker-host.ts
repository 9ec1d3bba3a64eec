/**
 * The main thread's side of the API worker (`Api.Worker`, worker.ts): the fastify app of the REST
 * API listens on a unix socket in a directory only this user may enter, the worker listens on
 * `Api.Bind:Api.Port` and passes it every request it does not answer from its mirror, and the
 * mirror is fed from the snapshot store (mirror.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { maxHeaderSize as httpMaxHeaderSize, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { httpLimits, listenError, type RunningListener, type TlsPair } from "../common.js";
import { distSrcUrl } from "../../paths.js";
import type { HttpDeps } from "../types.js";
import { MirrorFeed, PEER_HEADER, type FromWorker, type ToWorker, type WorkerSetup } from "./mirror.js";
import { buildApiServer, startApiServer } from "./server.js";

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
  // The worker adds a few header lines to every request it passes on (UPSTREAM_HEAD_ROOM): a request
  // head its listener accepted must not be too large for fastify's.
  const app = await buildApiServer(deps, {
    limits: { ...httpLimits(deps.config), maxHeaderBytes: httpMaxHeaderSize + UPSTREAM_HEAD_ROOM },
  });
  app.server.prependListener("request", adoptPeer);
  // Not the API's address: requests reach this socket only through the worker (logged when it listens).
  await app.listen({
    path: upstream,
    listenTextResolver: (address) => `${SOCKET_LINE}${address}`,
  });

  const { Bind: bind, Port: configuredPort } = deps.config.Api;
  /** The thread that listens or is being started, and whether it listens. */
  let current: ThreadState | null = null;
  let stopping = false;
  let closed: (() => void) | null = null;
  /** Posts to the current thread; a message that cannot be posted is logged, never thrown. */
  const post = (message: ToWorker, to = current?.thread): void => {
    try {
      to?.postMessage(message);
    } catch (error) {
      deps.logger.error({ err: error, kind: message.kind }, "API worker: a message to the worker failed");
    }
  };
  const feed = new MirrorFeed(deps, (message) => post(message));

  /** Starts a thread on `listenPort` with the mirror as it is now; one that exits after it listened is restarted. */
  const spawn = (listenPort: number): Promise<Start> => {
    const setup: WorkerSetup = {
      bind,
      port: listenPort,
      limits: httpLimits(deps.config),
      startedAt: deps.startedAt,
      upstream,
      tls,
      fastReads: !deps.config.Api.Oidc.ProtectReads,
      ...feed.initial(),
    };
    let thread: Worker;
    try {
      thread = new Worker(distSrcUrl("./http/api/worker.js"), { workerData: setup });
    } catch (error) {
      return Promise.resolve({ error: error instanceof Error ? error : new Error(String(error)) });
    }
    const state: ThreadState = { thread, listening: false, lastBeat: Date.now(), hung: false };
    current = state;
    return new Promise<Start>((resolve) => {
      const handle = (message: FromWorker): void => {
        switch (message.kind) {
          case "listening":
            state.listening = true;
            state.lastBeat = Date.now();
            resolve({ port: message.port });
            break;
          case "listen-failed":
            if (state.listening)
              deps.logger.error({ err: message.message }, "API worker: its listener failed");
            resolve({ error: Object.assign(new Error(message.message), { code: message.code }) });
            break;
          case "served":
            for (const [path, status, n] of message.counts) deps.metrics?.observeHttp("api", path, status, n);
            break;
          case "log":
            deps.logger[message.level]({ err: message.err }, message.msg);
            break;
          case "readings":
            post(feed.readings(message.ids), thread);
            break;
          case "beat":
            state.lastBeat = Date.now();
            break;
          case "closed":
            closed?.();
            break;
        }
      };
      // Nothing the worker sends can throw out of here (into the main thread's event loop).
      thread.on("message", (message: FromWorker) => {
        try {
          handle(message);
        } catch (error) {
          deps.logger.error({ err: error }, "API worker: handling a message from the worker failed");
        }
      });
      thread.on("error", (error) => {
        if (!stopping) deps.logger.error({ err: error }, "API worker failed");
        resolve({ error });
      });
      thread.on("exit", (code) => {
        if (current === state) current = null;
        if (stopping) closed?.();
        else if (state.listening)
          died(state.hung ? "it stopped answering its heartbeat" : `exit code ${code}`, code);
        resolve({ error: new Error(`the API worker exited (${code}) before listening`) });
      });
    });
  };

  /** Ends the current thread (one that did not listen, or on close) and waits until it is gone. */
  const endThread = async (): Promise<void> => {
    const thread = current?.thread;
    current = null;
    await thread?.terminate();
  };

  let port = configuredPort;
  let outage: string | null = null;
  let upSince = 0;
  /** Restarts since the last worker that stayed up STAYED_UP_MS. */
  let attempts = 0;
  let restarting: Promise<void> = Promise.resolve();
  /** Ends the back-off wait at once (on close). */
  let wake: (() => void) | null = null;

  /** Logged, never fatal: polling and MQTT go on without the REST API while it starts again. */
  const restart = async (cause: string): Promise<void> => {
    if (Date.now() - upSince >= STAYED_UP_MS) attempts = 0;
    let failed = "";
    while (!stopping) {
      attempts++;
      const delay = Math.min(RESTART_FIRST_MS * 2 ** (attempts - 1), RESTART_MAX_MS);
      outage = `API worker restarting (attempt ${attempts}) after ${cause}${failed}`;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
      if (stopping) return;
      deps.metrics?.observeApiWorkerRestart();
      const start = await spawn(port);
      if ("port" in start && !stopping) {
        outage = null;
        upSince = Date.now();
        deps.logger.info({ port, attempt: attempts }, "API worker listening again; the REST API is back");
        return;
      }
      await endThread();
      if ("error" in start && !stopping) {
        failed = `; attempt ${attempts} failed: ${start.error.message}`;
        deps.logger.error(
          { err: start.error, attempt: attempts },
          "API worker restart failed; the REST API stays down until a later attempt listens",
        );
      }
    }
  };
  const died = (cause: string, code: number): void => {
    deps.logger.error({ code }, "API worker exited; the REST API is down until the worker is started again");
    restarting = restart(cause);
  };

  /** Asks the listening worker for a beat; one silent for HUNG_AFTER_MS is ended (and started again). */
  const heartbeat = setInterval(() => {
    const state = current;
    if (stopping || state === null || !state.listening || state.hung) return;
    const silent = Date.now() - state.lastBeat;
    if (silent < HUNG_AFTER_MS) {
      post({ kind: "beat" }, state.thread);
      return;
    }
    state.hung = true;
    outage = `API worker not answering (no heartbeat for ${Math.round(silent / 1000)} s); it is being started again`;
    deps.logger.error(
      { silentMs: silent },
      "API worker not answering its heartbeat; the REST API is down until a new worker listens",
    );
    void state.thread.terminate().catch((error: unknown) => {
      deps.logger.error({ err: error }, "API worker: ending the hung worker failed");
    });
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const cleanup = async () => {
    stopping = true;
    clearInterval(heartbeat);
    wake?.();
    feed.stop();
    await app.close();
    await endThread();
    await restarting;
    await endThread();
    await rm(dir, { recursive: true, force: true });
  };
  const start = await spawn(configuredPort);
  if ("error" in start) {
    await cleanup();
    throw listenError(start.error, "Api", bind, configuredPort);
  }
  // Restarts listen on the port the first worker got (`Api.Port: 0` picks one once).
  port = start.port;
  const shownHost = bind.includes(":") ? `[${bind}]` : bind;
  deps.logger.info(
    { listener: "api", port },
    `REST API listening at ${tls === null ? "http" : "https"}://${shownHost}:${port} (worker thread)`,
  );
  upSince = Date.now();
  return {
    port,
    outage: () => outage,
    thread: () => current?.thread ?? null,
    close: async () => {
      stopping = true;
      clearInterval(heartbeat);
      wake?.();
      if (current?.listening === true) {
        const done = new Promise<void>((resolve) => {
          closed = resolve;
          setTimeout(resolve, CLOSE_BUDGET_MS).unref();
        });
        post({ kind: "close" });
        await app.close();
        await done;
      }
      await cleanup();
    },
  };
}
