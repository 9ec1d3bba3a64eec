/** The read endpoints of the REST API: instances, health, snapshot ages, readings, alarms and energy reports. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { findInstance } from "../../config/instance-lookup.js";
import { API_JSON_HEADERS } from "../listener.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { registerAlarmsRoute } from "./alarms.js";
import { registerAssetRoutes } from "./assets.js";
import { iso, type ReadBodies } from "./cached-reads.js";
import { registerEnergyRoute } from "./energy.js";
import { API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

export interface ReadRoutesOptions {
  readonly deps: HttpDeps;
  /** The cached bodies of health and readings (shared with the fast path). */
  readonly bodies: ReadBodies;
}

/** The read endpoints as a fastify plugin: instances, health, snapshot ages, readings, alarms, assets and feeds. */
export const readRoutes: FastifyPluginCallbackTypebox<ReadRoutesOptions> = (app, { deps, bodies }, done) => {
  registerInstancesRoute(app, deps);
  registerHealthRoute(app, bodies);
  registerSnapshotsRoute(app, deps);
  registerReadingsRoute(app, deps, bodies);
  registerAlarmsRoute(app, deps);
  registerAssetRoutes(app, deps);
  registerEnergyRoute(app, deps);
  done();
};

function registerInstancesRoute(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.instances,
    schema: API_ROUTE_SCHEMAS.instances,
    handler: () =>
      deps.config.instances.map((i) => ({
        id: i.id,
        primary: i.primary,
        host: i.Connection.Host,
        port: i.Connection.Port,
        scheme: i.Connection.Scheme,
        pollInterval: i.PollInterval,
        actionsEnabled: i.ActionsEnabled,
      })),
  });
}

function registerHealthRoute(app: HttpApp, bodies: ReadBodies): void {
  app.route({
    ...API_ROUTES.health,
    schema: API_ROUTE_SCHEMAS.health,
    handler: (_request, reply) => reply.headers(API_JSON_HEADERS).send(bodies.health()),
  });
}

function registerSnapshotsRoute(app: HttpApp, deps: HttpDeps): void {
  const now = deps.now ?? Date.now;
  app.route({
    ...API_ROUTES.snapshots,
    schema: API_ROUTE_SCHEMAS.snapshots,
    handler: () => {
      const at = now();
      return deps.store.list().map((s) => ({
        instanceId: s.id,
        timestampUtc: s.snapshot ? iso(s.snapshot.timestamp) : null,
        ageSeconds: s.snapshot ? Math.max(0, at - s.snapshot.timestamp) / 1000 : null,
      }));
    },
  });
}

/** `?instance=` matches exactly, else ignoring case; an unknown one is a 404 naming the known ones. */
function registerReadingsRoute(app: HttpApp, deps: HttpDeps, bodies: ReadBodies): void {
  app.route({
    ...API_ROUTES.readings,
    schema: API_ROUTE_SCHEMAS.readings,
    handler: (request, reply) => {
      const wanted = request.query.instance;
      if (wanted === undefined) return reply.headers(API_JSON_HEADERS).send(bodies.allReadings());
      const all = deps.store.list();
      const one = findInstance(all, wanted);
      // Among several replicas one instance's readings come from the replica that polls it.
      const replica = deps.replica;
      if (one !== undefined && replica !== undefined && !replica.holds(one.id))
        return replica.readFromHolder(one.id, reply);
      if (one === undefined) {
        const known = all.map((s) => s.id).join(", ");
        const detail = `unknown instance ${JSON.stringify(wanted.slice(0, 64))}; configured instances: ${known}`;
        return sendProblem(reply, problem(404, detail));
      }
      return reply.headers(API_JSON_HEADERS).send(bodies.readingsFor([one]));
    },
  });
}
