/** The read endpoints of the REST API: instances, health, snapshot ages, readings and alarms. */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import Type from "typebox";
import { API_JSON_HEADERS } from "../listener.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { registerAlarmsRoute } from "./alarms.js";
import { iso, type ReadBodies } from "./cached-reads.js";
import { API_ROUTES } from "./paths.js";
import { fromReplica, readFromHolder } from "./replica-reads.js";
import { INTERNAL_ERROR, json, jsonArray, problemResponse } from "./schemas.js";

/**
 * The documented 200 answers of the two cached read routes. Their bodies are sent as cached bytes
 * (cached-reads.ts), not serialised through these; test/http/read-bodies.test.ts proves the bytes are what
 * fastify's serialisation of these schemas gives.
 */
export const HEALTH_RESPONSE = json("Health", "Service health");
export const READINGS_RESPONSE = jsonArray("Reading", "The readings; [] for an instance not polled yet");

export interface ReadRoutesOptions {
  readonly deps: HttpDeps;
  /** The cached bodies of health and readings (shared with the fast path). */
  readonly bodies: ReadBodies;
}

/** The read endpoints as a fastify plugin: instances, health, snapshot ages, readings and alarms. */
export const readRoutes: FastifyPluginCallbackTypebox<ReadRoutesOptions> = (app, { deps, bodies }, done) => {
  registerInstancesRoute(app, deps);
  registerHealthRoute(app, bodies);
  registerSnapshotsRoute(app, deps);
  registerReadingsRoute(app, deps, bodies);
  registerAlarmsRoute(app, deps);
  done();
};

function registerInstancesRoute(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.instances,
    schema: {
      summary: "List the configured PDU instances",
      description: "In the order of the configuration file.",
      operationId: "listInstances",
      tags: ["Status"],
      response: { 200: jsonArray("Instance", "The configured instances"), 500: INTERNAL_ERROR },
    },
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
    schema: {
      summary: "Service health: uptime, MQTT connection and polls",
      operationId: "getHealth",
      tags: ["Status"],
      response: { 200: HEALTH_RESPONSE, 500: INTERNAL_ERROR },
    },
    handler: (_request, reply) => reply.headers(API_JSON_HEADERS).send(bodies.health()),
  });
}

function registerSnapshotsRoute(app: HttpApp, deps: HttpDeps): void {
  const now = deps.now ?? Date.now;
  app.route({
    ...API_ROUTES.snapshots,
    schema: {
      summary: "Time and age of the latest snapshot of every instance",
      description:
        "One entry per configured instance, in configuration order; both null before its first poll.",
      operationId: "listSnapshots",
      tags: ["Status"],
      response: {
        200: jsonArray("SnapshotInfo", "One entry per configured instance"),
        500: INTERNAL_ERROR,
      },
    },
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
    schema: {
      summary: "Numeric measurements of every outlet and entity",
      description:
        "One reading per numeric measurement in the latest snapshot of each instance (group rollups are not " +
        "readings). Sorted by instance, device id, outlets before entities, outlet index, entity key, type.",
      operationId: "listReadings",
      tags: ["Readings"],
      querystring: Type.Object(
        {
          instance: Type.Optional(
            Type.String({ minLength: 1, description: "Only this instance (matched case-insensitively)" }),
          ),
        },
        { additionalProperties: false },
      ),
      response: {
        200: READINGS_RESPONSE,
        400: problemResponse("Unknown query parameter or empty instance"),
        404: problemResponse("No such instance"),
        500: INTERNAL_ERROR,
      },
    },
    handler: (request, reply) => {
      const wanted = request.query.instance;
      if (wanted === undefined) return reply.headers(API_JSON_HEADERS).send(bodies.allReadings());
      const exact = deps.store.get(wanted);
      const lower = wanted.toLowerCase();
      const all = deps.store.list();
      const matches = exact ? [exact] : all.filter((s) => s.id.toLowerCase() === lower);
      const one = matches[0];
      // Among several replicas one instance's readings come from the replica that polls it.
      const replica = deps.replica;
      if (
        one !== undefined &&
        replica !== undefined &&
        !replica.holds(one.id) &&
        !fromReplica(request.headers)
      )
        return readFromHolder(replica, one.id, request.headers, reply);
      if (matches.length === 0) {
        const known = all.map((s) => s.id).join(", ");
        const detail = `unknown instance ${JSON.stringify(wanted.slice(0, 64))}; configured instances: ${known}`;
        return sendProblem(reply, problem(404, detail));
      }
      return reply.headers(API_JSON_HEADERS).send(bodies.readingsFor(matches));
    },
  });
}
