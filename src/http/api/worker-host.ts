/**
 * The main thread's side of the API worker (`Api.Worker`, worker.ts): the fastify app of the REST
 * API listens on a unix socket in a directory only this user may enter, the worker listens on
 * `Api.Bind:Api.Port` and passes it every request it does not answer from its mirror, and the
 * mirror is fed from the snapshot store (mirror.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { httpLimits, listenError, type RunningListener } from "../common.js";
import type { HttpDeps } from "../types.js";
import { MirrorFeed, PEER_HEADER, type FromWorker, type ToWorker, type WorkerSetup } from "./mirror.js";
import { buildApiServer, startApiServer } from "./server.js";

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

/**
 * Starts the worker and the fastify app behind it; a taken port is a ConfigError (`Api.Port`). Where
 * no private directory can be made for the socket (a read-only root without a writable temporary
 * directory), the REST API runs on the main thread instead, with a warning.
 */
export async function startApiWorker(deps: HttpDeps): Promise<RunningListener> {
  let dir: string;
  try {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-api-")); // mode 0700
  } catch (error) {
    deps.logger.warn(
      { err: error, tmpdir: tmpdir() },
      "the API worker needs a private directory for its socket and none could be made; the REST API runs on the main thread",
    );
    return startApiServer(deps);
  }
  const upstream = join(dir, "api.sock");
  const app = await buildApiServer(deps);
  app.server.prependListener("request", adoptPeer);
  await app.listen({ path: upstream });
  // Batches are posted from a later turn of the event loop, when the worker exists.
  const feed = new MirrorFeed(deps, (message) => thread.postMessage(message));
  const { Bind: bind, Port: configuredPort } = deps.config.Api;
  const setup: WorkerSetup = {
    bind,
    port: configuredPort,
    limits: httpLimits(deps.config),
    startedAt: deps.startedAt,
    upstream,
    ...feed.initial(),
  };
  const thread = new Worker(new URL("./worker.js", import.meta.url), { workerData: setup });
  let stopping = false;
  let closed: (() => void) | null = null;
  const cleanup = async () => {
    stopping = true;
    feed.stop();
    await app.close();
    await thread.terminate();
    await rm(dir, { recursive: true, force: true });
  };
  const port = await new Promise<number>((resolve, reject) => {
    thread.on("message", (message: FromWorker) => {
      switch (message.kind) {
        case "listening":
          resolve(message.port);
          break;
        case "listen-failed":
          reject(
            listenError(
              Object.assign(new Error(message.message), { code: message.code }),
              "Api",
              bind,
              configuredPort,
            ),
          );
          break;
        case "served":
          for (const [path, status, n] of message.counts) deps.metrics?.observeHttp("api", path, status, n);
          break;
        case "log":
          deps.logger[message.level]({ err: message.err }, message.msg);
          break;
        case "readings":
          thread.postMessage(feed.readings(message.ids));
          break;
        case "closed":
          closed?.();
          break;
      }
    });
    // Logged, never fatal: polling and MQTT go on without the REST API.
    thread.on("error", (error) => {
      deps.logger.error({ err: error }, "API worker failed; the REST API is down until a restart");
      reject(error);
    });
    thread.on("exit", (code) => {
      if (!stopping) deps.logger.error({ code }, "API worker exited; the REST API is down until a restart");
      reject(new Error(`the API worker exited (${code}) before listening`));
    });
  }).catch(async (error: unknown) => {
    await cleanup();
    throw error;
  });
  return {
    port,
    close: async () => {
      const done = new Promise<void>((resolve) => {
        closed = resolve;
        setTimeout(resolve, CLOSE_BUDGET_MS).unref();
      });
      const message: ToWorker = { kind: "close" };
      thread.postMessage(message);
      await app.close();
      await done;
      await cleanup();
    },
  };
}
