/**
 * The REST API listener: the read and control plugins, the key check, the OpenAPI 3.1 document
 * generated from the route schemas, the docs UI, and the console's routes when they are passed in.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import {
  CONSOLE_PREFIX,
  createHttpApp,
  DOCS_PREFIX,
  httpLimits,
  listen,
  routedPath,
  type HttpLimits,
  type RunningListener,
  type TlsPair,
} from "../listener.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { createFastReads, createReadBodies, storeReadSource } from "./cached-reads.js";
import { controlRoutes } from "./control/plugin.js";
import { registerKeyCheck } from "./key-check.js";
import { readRoutes } from "./reads.js";
import { sequenceReads } from "./sequence-reads.js";
import { FailedKeyLimiter } from "./key-guard.js";
import { API_PATHS, API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";
import { SHARED_SCHEMAS } from "./schemas.js";
import { ASSET_SHARED_SCHEMAS } from "./asset-schemas.js";

export const OPENAPI_PATH = API_PATHS.openApi;

async function registerDocs(app: HttpApp): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "pdu-bridge REST API",
        version: "1.0.0",
        description:
          "Configured PDU instances, service health, snapshots, readings, loads and alarms of rack PDUs " +
          "(Vertiv/Geist units and OneView clusters over their HTTP API; APC, Raritan, ServerTech, " +
          "CyberPower and Eaton units over SNMP), and outlet and group control (enabled by an API key). " +
          "The web console, which shows the same live in a browser, is at [/ui/](/ui/).",
      },
      tags: [
        { name: "Status", description: "Instances, health and snapshot ages" },
        { name: "Readings", description: "Measurements of the latest snapshots" },
        { name: "Alarms", description: "Loads against ratings and active alarms" },
        {
          name: "Energy",
          description: "Energy of a period from the lifetime counters (Energy.ReportSource)",
        },
        { name: "Control", description: "Switch, reboot or reset outlets and groups (needs X-Api-Key)" },
        { name: "Assets", description: "Servers with cords on any PDU, feeds and power sequences" },
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
      // anchored at its end, so with a query string (or a fragment), or with the name spelt with a
      // percent-encoding, it redirected to itself, forever. Decided on the routed, decoded name.
      onRequest: (request, reply, done) => {
        if (routedPath(request) === `${DOCS_PREFIX}/static/index.html`) {
          void reply.redirect(`${DOCS_PREFIX}/`, 302);
          return;
        }
        done();
      },
    },
  });
}

/** The OpenAPI document, and `/`: to the web console where the listener serves it, else the API docs. */
function registerDocumentRoutes(app: HttpApp, withConsole: boolean): void {
  app.route({
    ...API_ROUTES.openApi,
    schema: API_ROUTE_SCHEMAS.openApi,
    handler: () => app.swagger(),
  });
  const home = withConsole ? `${CONSOLE_PREFIX}/` : DOCS_PREFIX;
  app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect(home, 302));
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
  const fastReads = deps.config.Api.Oidc.ProtectReads
    ? undefined
    : createFastReads(source, bodies, deps.replica === undefined);
  const app = createHttpApp(
    deps.logger,
    "api",
    `the endpoints are listed in ${OPENAPI_PATH} and at ${DOCS_PREFIX}`,
    fastReads === undefined ? undefined : (deps.metrics?.wrapFastPath("api", fastReads) ?? fastReads),
    options.limits ?? httpLimits(deps.config, "api"),
    options.tls ?? null,
  );
  deps.metrics?.instrument(app, "api");
  for (const schema of [...SHARED_SCHEMAS, ...ASSET_SHARED_SCHEMAS]) app.addSchema(schema);
  // One lock-out of wrong keys for the listener: control, and reads under Api.Oidc.ProtectReads.
  const limiter = new FailedKeyLimiter(deps.now);
  if (deps.config.Api.Oidc.Enabled) {
    // Loaded only with sign-in on: the OpenID client stays out of the heap of every other bridge.
    const { consoleAuth } = await import("../auth/plugin.js");
    await app.register(consoleAuth, { deps, limiter });
  }
  await registerDocs(app);
  await app.register(readRoutes, { deps, bodies });
  await app.register(sequenceReads, { deps });
  // Awaited, so its routes are added here and the OpenAPI document keeps its order.
  await app.register(controlRoutes, { deps, limiter });
  // Among several replicas: the requests other replicas hand this one, in a context of their own.
  if (deps.replica !== undefined) {
    await deps.replica.routes(app, deps, {
      readingsOf: (id) => {
        const status = deps.store.get(id);
        return status === undefined ? null : bodies.readingsFor([status]);
      },
    });
  }
  registerKeyCheck(app, deps, limiter);
  registerDocumentRoutes(app, deps.consoleRoutes !== undefined);
  deps.consoleRoutes?.(app, deps);
  await app.ready();
  return app;
}

/**
 * Builds the REST API and listens on `Api.Bind:Api.Port` (HTTPS with `tls`); a taken port is a
 * ConfigError (`Api.Port`).
 */
export async function startApiServer(deps: HttpDeps, tls: TlsPair | null = null): Promise<RunningListener> {
  const app = await buildApiServer(deps, { tls });
  return listen(app, "Api", deps.config.Api.Bind, deps.config.Api.Port);
}
