/** `GET <Metrics.Path>` on the health listener (contract §8). */
import type { HttpApp } from "../http/common.js";
import { wantsOpenMetrics, type BridgeMetrics } from "./bridge.js";

export function registerMetricsRoute(app: HttpApp, metrics: BridgeMetrics, path: string): void {
  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    const accept = request.headers.accept;
    const { contentType, body } = await metrics.render(
      wantsOpenMetrics(typeof accept === "string" ? accept : undefined),
    );
    return reply.type(contentType).send(body);
  });
}
