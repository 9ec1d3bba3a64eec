/**
 * The REST API listener (contract §4): read endpoints, control endpoints, the OpenAPI 3.1 document
 * generated from the route schemas, and the docs UI, all served from this process.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Type from "typebox";
import {
  API_JSON_HEADERS,
  createHttpApp,
  DOCS_PREFIX,
  httpLimits,
  listen,
  type HttpApp,
  type HttpLimits,
  type RunningListener,
  type TlsPair,
} from "../common.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { registerAlarmsRoute } from "./alarms.js";
import { createFastReads, createReadBodies, iso, storeReadSource, type ReadBodies } from "./bodies.js";
import { controlRoutes } from "./control.js";
import { registerKeyCheck } from "./key-check.js";
import { FailedKeyLimiter } from "./key-guard.js";
import { INTERNAL_ERROR, json, jsonArray, problemResponse, SHARED_SCHEMAS } from "./schemas.js";
import { ConsoleFeed } from "../../ui/feed.js";
import { registerConsole } from "../../ui/routes.js";

export const OPENAPI_PATH = "/openapi/v1.json";

/**
 * The documented 200 answers of the two cached read routes. Their bodies are sent as cached bytes
 * (bodies.ts), not serialised through these; test/http/read-bodies.test.ts proves the bytes are what
 * fastify's serialisation of these schemas gives.
 */
export const HEALTH_RESPONSE = json("Health", "Service health");
export const READINGS_RESPONSE = jsonArray("Reading", "The readings; [] for an instance not polled yet");

async function registerDocs(app: HttpApp): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "pdu-bridge REST API",
        version: "1.0.0",
        description:
          "Configured PDU instances, service health, snapshots and readings of Vertiv/Geist rack PDUs, " +
          "and outlet and group control (enabled by an API key). The web console, which shows the same " +
          "live in a browser, is at [/ui/](/ui/).",
      },
      tags: [
        { name: "Status", description: "Instances, health and snapshot ages" },
        { name: "Readings", description: "Measurements of the latest snapshots" },
        { name: "Alarms", description: "Loads against ratings and active alarms" },
        { name: "Control", description: "Switch, reboot or reset outlets and groups (needs X-Api-Key)" },
        { name: "Documentation", description: "This document" },
      ],
      components: { securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
    },
    // Keep the `$id` names of shared schemas (`#/components/schemas/Problem`, not `def-0`).
    refResolver: {
      buildLocalReference: (schema, _baseUri, _fragment, i) =>
        typeof schema.$id === "string" ? schema.$id : `schema-${i}`,
    },
  });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    // No badge asking validator.swagger.io: the page makes no request outside the service.
    validatorUrl: false, // rendered as `validatorUrl: null` in the page
    // BaseLayout: no top bar, so no "explore any URL" box and no logo SVG with an inline <style>;
    // the page then runs under a CSP of 'self' only (plus data: images from swagger-ui's CSS).
    uiConfig: {
      layout: "BaseLayout",
      deepLinking: true,
      displayOperationId: true,
      defaultModelsExpandDepth: 1,
    },
    theme: { title: "pdu-bridge API" },
    uiHooks: {
      // swagger-ui redirects static/index.html to the page by rewriting the URL with a pattern
      // anchored at its end, so with a query string (or a fragment) it redirected to itself, forever.
      onRequest: (request, reply, done) => {
        if (request.url.split(/[?#]/, 1)[0] === `${DOCS_PREFIX}/static/index.html`) {
          void reply.redirect(`${DOCS_PREFIX}/`, 302);
          return;
        }
        done();
      },
    },
  });
}

/** The read endpoints: instances, health, snapshot ages and readings. */
function registerReadRoutes(app: HttpApp, deps: HttpDeps, bodies: ReadBodies): void {
  registerInstancesRoute(app, deps);
  registerHealthRoute(app, bodies);
  registerSnapshotsRoute(app, deps);
  registerReadingsRoute(app, deps, bodies);
  registerAlarmsRoute(app, deps);
}

function registerInstancesRoute(app: HttpApp, deps: HttpDeps): void {
  app.get(
    "/api/v1/instances",
    {
      schema: {
        summary: "List the configured PDU instances",
        description: "In the order of the configuration file.",
        operationId: "listInstances",
        tags: ["Status"],
        response: { 200: jsonArray("Instance", "The configured instances"), 500: INTERNAL_ERROR },
      },
    },
    () =>
      deps.config.instances.map((i) => ({
        id: i.id,
        primary: i.primary,
        host: i.Connection.Host,
        port: i.Connection.Port,
        scheme: i.Connection.Scheme,
        pollInterval: i.PollInterval,
        actionsEnabled: i.ActionsEnabled,
      })),
  );
}

function registerHealthRoute(app: HttpApp, bodies: ReadBodies): void {
  app.get(
    "/api/v1/health",
    {
      schema: {
        summary: "Service health: uptime, MQTT connection and polls",
        operationId: "getHealth",
        tags: ["Status"],
        response: { 200: HEALTH_RESPONSE, 500: INTERNAL_ERROR },
      },
    },
    (_request, reply) => reply.headers(API_JSON_HEADERS).send(bodies.health()),
  );
}

function registerSnapshotsRoute(app: HttpApp, deps: HttpDeps): void {
  const now = deps.now ?? Date.now;
  app.get(
    "/api/v1/snapshots",
    {
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
    },
    () => {
      const at = now();
      return deps.store.list().map((s) => ({
        instanceId: s.id,
        timestampUtc: s.snapshot ? iso(s.snapshot.timestamp) : null,
        ageSeconds: s.snapshot ? Math.max(0, at - s.snapshot.timestamp) / 1000 : null,
      }));
    },
  );
}

/** `?instance=` matches exactly, else ignoring case; an unknown one is a 404 naming the known ones. */
function registerReadingsRoute(app: HttpApp, deps: HttpDeps, bodies: ReadBodies): void {
  app.get(
    "/api/v1/readings",
    {
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
    },
    (request, reply) => {
      const wanted = request.query.instance;
      if (wanted === undefined) return reply.headers(API_JSON_HEADERS).send(bodies.allReadings());
      const exact = deps.store.get(wanted);
      const lower = wanted.toLowerCase();
      const all = deps.store.list();
      const matches = exact ? [exact] : all.filter((s) => s.id.toLowerCase() === lower);
      if (matches.length === 0) {
        const known = all.map((s) => s.id).join(", ");
        const detail = `unknown instance ${JSON.stringify(wanted.slice(0, 64))}; configured instances: ${known}`;
        return sendProblem(reply, problem(404, detail));
      }
      return reply.headers(API_JSON_HEADERS).send(bodies.readingsFor(matches));
    },
  );
}

function registerDocumentRoutes(app: HttpApp): void {
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        summary: "This OpenAPI 3.1 document",
        operationId: "getOpenApiDocument",
        tags: ["Documentation"],
        response: {
          200: {
            description: "The OpenAPI document",
            content: { "application/json": { schema: Type.Object({}, { additionalProperties: true }) } },
          },
        },
      },
    },
    () => app.swagger(),
  );
  app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect(DOCS_PREFIX, 302));
}

export interface ApiServerOptions {
  /** HTTPS (`Api.Tls`) on the listener this app serves; none for the app behind the API worker. */
  readonly tls?: TlsPair | null;
  /** The listener's limits; the config's (`httpLimits`) when not given. */
  readonly limits?: HttpLimits;
}

/** The REST API, ready to listen (or to `inject`). */
export async function buildApiServer(deps: HttpDeps, options: ApiServerOptions = {}): Promise<HttpApp> {
  const source = storeReadSource(deps);
  const bodies = createReadBodies(source);
  // With Api.Oidc.ProtectReads every read passes the sign-in's check, so none is answered before routing.
  const fastReads = deps.config.Api.Oidc.ProtectReads ? undefined : createFastReads(source, bodies);
  const app = createHttpApp(
    deps.logger,
    "api",
    `the endpoints are listed in ${OPENAPI_PATH} and at ${DOCS_PREFIX}`,
    fastReads === undefined ? undefined : (deps.metrics?.wrapFastPath("api", fastReads) ?? fastReads),
    options.limits ?? httpLimits(deps.config),
    options.tls ?? null,
  );
  deps.metrics?.instrument(app, "api");
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  // One lock-out of wrong keys for the listener: control, and reads under Api.Oidc.ProtectReads.
  const limiter = new FailedKeyLimiter(deps.now);
  if (deps.config.Api.Oidc.Enabled) {
    // Loaded only with sign-in on: the OpenID client stays out of the heap of every other bridge.
    const { consoleAuth } = await import("../auth/plugin.js");
    await app.register(consoleAuth, { deps, limiter });
  }
  await registerDocs(app);
  registerReadRoutes(app, deps, bodies);
  // Awaited, so its routes are added here and the OpenAPI document keeps its order.
  await app.register(controlRoutes, { deps, limiter });
  registerKeyCheck(app, deps, limiter);
  registerDocumentRoutes(app);
  const feed = deps.console ?? ownConsoleFeed(deps);
  registerConsole(app, deps, feed);
  // Open event streams would hold the listener's close: end them first.
  app.addHook("preClose", (done) => {
    feed.closeStreams();
    done();
  });
  if (!deps.console)
    app.addHook("onClose", (_app, done) => {
      feed.close();
      done();
    });
  await app.ready();
  return app;
}

/** The console feed of an API built without the service's (it follows the bus until the app closes). */
function ownConsoleFeed(deps: HttpDeps): ConsoleFeed {
  const feed = new ConsoleFeed({
    bus: deps.bus,
    store: deps.store,
    config: () => deps.config,
    logger: deps.logger,
    now: deps.now,
  });
  feed.start();
  return feed;
}

/**
 * Builds the REST API and listens on `Api.Bind:Api.Port` (HTTPS with `tls`); a taken port is a
 * ConfigError (`Api.Port`).
 */
export async function startApiServer(deps: HttpDeps, tls: TlsPair | null = null): Promise<RunningListener> {
  const app = await buildApiServer(deps, { tls });
  return listen(app, "Api", deps.config.Api.Bind, deps.config.Api.Port);
}
