/** `GET <Metrics.Path>` on the health listener (docs/metrics.md). */
import { Readable } from "node:stream";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { HttpApp, ListenerRoutes } from "../http/types.js";
import { wantsOpenMetrics, type BridgeMetrics } from "./bridge.js";

export function registerMetricsRoute(app: HttpApp, metrics: BridgeMetrics, path: string): void {
  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    const accept = request.headers.accept;
    const { contentType, chunks } = await metrics.stream(
      wantsOpenMetrics(typeof accept === "string" ? accept : undefined),
    );
    // Streamed chunk by chunk (about 64 KB each, built as the response drains): a large fleet's
    // exposition is never held in memory whole, and the polls go on between its chunks.
    return reply
      .type(contentType)
      .send(Readable.from(turnByTurn(chunks), { objectMode: true, highWaterMark: 1 }));
  });
}

/**
 * The chunks, one per turn of the event loop. A client that reads as fast as the exposition is
 * written (a scraper on the same host) would otherwise have the whole of it built in one turn: at a
 * thousand PDUs, tens of megabytes of text while every poll due waits.
 */
export async function* turnByTurn(chunks: Iterable<string>): AsyncGenerator<string> {
  for (const chunk of chunks) {
    yield chunk;
    await nextTurn();
  }
}

/** The route as the health listener adds it (`Metrics.Path` read when the listener is built). */
export function metricsRoute(metrics: BridgeMetrics): ListenerRoutes {
  return (app, deps) => registerMetricsRoute(app, metrics, deps.config.Metrics.Path);
}
