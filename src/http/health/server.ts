/**
 * The health listener (docs/http.md, "Health listener"): liveness, readiness and the integrations report. It reads
 * state only, so it keeps answering when the API is off and when MQTT or every PDU is down.
 */
import Type from "typebox";
import { createHttpApp, httpLimits, listen, type RunningListener } from "../listener.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { integrations, readiness } from "./status.js";

const TEXT = "text/plain; charset=utf-8";

const IntegrationSchema = Type.Object({
  status: Type.Enum(["healthy", "degraded", "unhealthy"]),
  detail: Type.String(),
  /** A PDU's malformed optional parts dropped from its latest snapshot (absent when none). */
  warnings: Type.Optional(Type.Array(Type.Object({ path: Type.String(), problem: Type.String() }))),
  /** A PDU whose login (checked at start, for control) was refused: why, and what to fix. */
  login: Type.Optional(Type.String()),
  /** The `cluster` entry only (`Cluster.Enabled`): this replica's part of the cluster. */
  member: Type.Optional(Type.String()),
  backend: Type.Optional(Type.String()),
  engine: Type.Optional(Type.String()),
  buckets: Type.Optional(Type.Array(Type.Integer())),
  instances: Type.Optional(Type.Array(Type.String())),
  members: Type.Optional(Type.Array(Type.Object({ name: Type.String(), ready: Type.Boolean() }))),
  transitions: Type.Optional(Type.Integer()),
  lastError: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  stoppedRenewing: Type.Optional(
    Type.Array(Type.Object({ member: Type.String(), secondsAgo: Type.Integer() })),
  ),
  unpolled: Type.Optional(
    Type.Array(Type.Object({ instance: Type.String(), holder: Type.Union([Type.String(), Type.Null()]) })),
  ),
});

const IntegrationsSchema = Type.Object({
  status: Type.Enum(["healthy", "degraded", "unhealthy"]),
  integrations: Type.Record(Type.String(), IntegrationSchema),
});

/** The health listener, ready to listen (or to `inject`). */
export async function buildHealthServer(deps: HttpDeps): Promise<HttpApp> {
  const now = deps.now ?? Date.now;
  const app = createHttpApp(
    deps.logger,
    "health",
    deps.metrics
      ? `the health listener serves GET /healthz, /readyz, /health/integrations and ${deps.config.Metrics.Path}`
      : "the health listener serves GET /healthz, /readyz and /health/integrations",
    undefined,
    httpLimits(deps.config, "health"),
  );

  deps.metrics?.instrument(app, "health");
  deps.metricsRoute?.(app, deps);

  app.get("/healthz", (_request, reply) => reply.type(TEXT).send("OK"));

  app.get("/readyz", (_request, reply) => {
    const state = readiness(deps, now());
    return state.ready
      ? reply.type(TEXT).send("READY")
      : reply.code(503).type(TEXT).send(`NOT READY: ${state.reason}`);
  });

  app.get(
    "/health/integrations",
    { schema: { response: { 200: IntegrationsSchema, 503: IntegrationsSchema } } },
    (_request, reply) => {
      const report = integrations(deps, now());
      reply.code(report.status === "unhealthy" ? 503 : 200);
      return report;
    },
  );

  await app.ready();
  return app;
}

/** Builds the health listener and listens on `Health.Bind:Health.Port`; a taken port is a ConfigError. */
export async function startHealthServer(deps: HttpDeps): Promise<RunningListener> {
  const app = await buildHealthServer(deps);
  return listen(app, "Health", deps.config.Health.Bind, deps.config.Health.Port);
}
