/**
 * The web console on the API listener (docs/console.md): the page at `/ui/`, its bundled script and
 * stylesheet (built by esbuild into dist/src/ui/assets/ with content hashes in their names, so they
 * are cached for good while the page itself is revalidated), the event stream `GET /api/v1/events`
 * and the outlet power history. Control uses the existing control endpoints.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { API_CSP, API_JSON_HEADERS, CONSOLE_PREFIX } from "../http/listener.js";
import { problem, sendProblem } from "../http/problem.js";
import { clientAddressResolver } from "../http/api/key-guard.js";
import { isSignedIn } from "../http/auth/principal.js";
import { API_PATHS, API_ROUTES } from "../http/api/paths.js";
import { API_ROUTE_SCHEMAS } from "../http/api/route-schemas.js";
import type { HttpApp, HttpDeps, ListenerRoutes } from "../http/types.js";
import { distSrcUrl } from "../paths.js";
import { consoleBootstrap } from "./alarms.js";
import { ConsoleFeed } from "./feed.js";
import type { ConsoleBootstrap, OutletHistory } from "./wire.js";

export const EVENTS_PATH = API_PATHS.events;
const ASSET_CACHE = "public, max-age=31536000, immutable";
const ASSETS_DIR = fileURLToPath(distSrcUrl("./ui/assets/"));

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d4ed8"/>' +
  '<path d="M6 3v4M10 3v4M4 7h8v2a4 4 0 0 1-8 0zM8 13v2" stroke="#fff" stroke-width="1.5" fill="none"/></svg>';

interface Assets {
  readonly files: ReadonlyMap<string, Buffer>;
  readonly script: string | null;
  readonly stylesheet: string | null;
}

/** The built bundle (names with hashes); empty when the console was not built. */
function loadAssets(): Assets {
  const files = new Map<string, Buffer>();
  if (existsSync(ASSETS_DIR)) {
    for (const name of readdirSync(ASSETS_DIR)) {
      const ext = name.slice(name.lastIndexOf("."));
      if (CONTENT_TYPES[ext] !== undefined) files.set(name, readFileSync(join(ASSETS_DIR, name)));
    }
  }
  const find = (ext: string) =>
    [...files.keys()].find((n) => n.startsWith("console-") && n.endsWith(ext)) ?? null;
  return { files, script: find(".js"), stylesheet: find(".css") };
}

/** JSON that can sit in an HTML script element (no `</script>`, no comment openers). */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");

function indexHtml(assets: Assets, bootstrap: ConsoleBootstrap): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>pdu-bridge console</title>
<link rel="icon" href="${CONSOLE_PREFIX}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${CONSOLE_PREFIX}/assets/${assets.stylesheet}">
<script type="module" src="${CONSOLE_PREFIX}/assets/${assets.script}"></script>
</head>
<body>
<noscript><p>The pdu-bridge console needs JavaScript. The REST API is described at <a href="/docs/v1">/docs/v1</a>.</p></noscript>
<div id="app"></div>
<script id="bootstrap" type="application/json">${scriptJson(bootstrap)}</script>
</body>
</html>
`;
}

/** Headers of an event stream (written by hand: the reply is hijacked, fastify's hooks do not run). */
const STREAM_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": API_CSP,
  // Proxies (nginx) must pass events on at once.
  "x-accel-buffering": "no",
};

/** The page, its favicon and its assets. */
function registerPageRoutes(app: HttpApp, deps: HttpDeps): void {
  const assets = loadAssets();
  // The page's buttons come from the command table; served with the page (no request of its own).
  const bootstrap = consoleBootstrap(deps.config);
  const html = assets.script && assets.stylesheet ? Buffer.from(indexHtml(assets, bootstrap)) : null;

  app.get(CONSOLE_PREFIX, { schema: { hide: true } }, (_request, reply) =>
    reply.redirect(`${CONSOLE_PREFIX}/`, 302),
  );
  app.get(`${CONSOLE_PREFIX}/`, { schema: { hide: true } }, (_request, reply) => {
    if (!html) {
      const detail = "the web console was not built into this installation; run npm run build";
      return sendProblem(reply, problem(503, detail), { "retry-after": "60" });
    }
    return reply.header("cache-control", "no-cache").type("text/html; charset=utf-8").send(html);
  });
  app.get(`${CONSOLE_PREFIX}/favicon.svg`, { schema: { hide: true } }, (_request, reply) =>
    reply.header("cache-control", "public, max-age=86400").type("image/svg+xml").send(FAVICON),
  );
  app.get<{ Params: { name: string } }>(
    `${CONSOLE_PREFIX}/assets/:name`,
    { schema: { hide: true } },
    (request, reply) => {
      const name = request.params.name;
      const body = assets.files.get(name);
      if (!body) {
        const detail = `no console asset ${JSON.stringify(name.slice(0, 80))}; reload ${CONSOLE_PREFIX}/ for the current names`;
        return sendProblem(reply, problem(404, detail));
      }
      const type = CONTENT_TYPES[name.slice(name.lastIndexOf("."))]!;
      return reply.header("cache-control", ASSET_CACHE).type(type).send(body);
    },
  );
}

/** The event stream of the console. */
function registerEventsRoute(app: HttpApp, deps: HttpDeps, feed: ConsoleFeed): void {
  // Streams are counted per client, as the key guard's lock-out counts: behind a trusted proxy, per
  // the client it names. Behind the API worker the request carries the client's own address.
  const resolveClient = clientAddressResolver(deps.config.Api.TrustedProxies);
  app.route({
    ...API_ROUTES.events,
    schema: API_ROUTE_SCHEMAS.events,
    handler: (request, reply) => {
      const { instance, snapshots } = request.query;
      if (instance !== undefined && !deps.store.get(instance)) {
        const detail = `unknown instance ${JSON.stringify(instance)}; configured instances: ${deps.store.ids().join(", ")}`;
        return sendProblem(reply, problem(404, detail));
      }
      const client = resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
      // A signed-in console keeps its place against anonymous streams (src/ui/feed.ts).
      const signedIn = isSignedIn(request);
      const refused = feed.admit(client, signedIn);
      if (refused !== null) {
        return sendProblem(reply, problem(refused.status, refused.detail), {
          "retry-after": String(refused.retryAfter),
        });
      }
      reply.hijack();
      request.raw.socket.setNoDelay(true);
      const opened = feed.open(
        reply.raw,
        STREAM_HEADERS,
        { instanceId: instance ?? null, snapshots: snapshots !== "false" },
        client,
        signedIn,
      );
      if (!opened) reply.raw.destroy();
      return reply;
    },
  });
}

/** An outlet's power over the last hour. */
function registerHistoryRoute(app: HttpApp, deps: HttpDeps, feed: ConsoleFeed): void {
  app.route({
    ...API_ROUTES.outletHistory,
    schema: API_ROUTE_SCHEMAS.outletHistory,
    handler: (request, reply) => {
      const { id, deviceId } = request.params;
      const index = Number(request.params.index);
      if (!deps.store.get(id)) {
        return sendProblem(reply, problem(404, `unknown instance ${JSON.stringify(id)}`));
      }
      const found = feed.history.query(id, deviceId, index, feed.now);
      if (!found) {
        const detail = `instance ${id} has no outlet ${index} on device ${JSON.stringify(deviceId)} in the last hour`;
        return sendProblem(reply, problem(404, detail));
      }
      const body: OutletHistory = {
        instanceId: id,
        deviceId,
        index,
        type: "realPower",
        units: "W",
        ...found,
      };
      return reply.headers(API_JSON_HEADERS).send(JSON.stringify(body));
    },
  });
}

export function registerConsole(app: HttpApp, deps: HttpDeps, feed: ConsoleFeed): void {
  registerPageRoutes(app, deps);
  registerEventsRoute(app, deps, feed);
  registerHistoryRoute(app, deps, feed);
}

/**
 * The console as the API listener adds it: with `feed` (the service's), or with a feed of its own
 * that closes with the listener. Open event streams would hold the listener's close: they end first.
 */
export function consoleRoutes(feed?: ConsoleFeed): ListenerRoutes {
  return (app, deps) => {
    const live = feed ?? ownConsoleFeed(deps);
    registerConsole(app, deps, live);
    app.addHook("preClose", (done) => {
      live.closeStreams();
      done();
    });
    if (feed === undefined)
      app.addHook("onClose", (_app, done) => {
        live.close();
        done();
      });
  };
}

/** The console feed of a listener built without the service's (it follows the bus until the listener closes). */
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
