/** `GET <Metrics.Path>` on the health listener (docs/metrics.md). */
import { Readable } from "node:stream";
import type { HttpApp, ListenerRoutes } from "../http/types.js";
import { wantsOpenMetrics, type BridgeMetrics } from "./bridge.js";

export function registerMetricsRoute(app: HttpApp, metrics: BridgeMetrics, path: string): void {
  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    const accept = request.headers.accept;
    const { contentType, chunks } = await metrics.stream(
      wantsOpenMetrics(typeof accept === "string" ? accept : undefined),
    );
    // Streamed chunk by chunk (about 64 KB each, built as the response drains): a large fleet's
    // exposition is never held in memory whole.
    return reply.type(contentType).send(Readable.from(chunks, { objectMode: true, highWaterMark: 1 }));
  });
}

/** The route as the health listener adds it (`Metrics.Path` read when the listener is built). */
export function metricsRoute(metrics: BridgeMetrics): ListenerRoutes {
  return (app, deps) => registerMetricsRoute(app, metrics, deps.config.Metrics.Path);
}
