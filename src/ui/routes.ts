/**
 * The web console on the API listener (contract §9): the page at `/ui/`, its bundled script and
 * stylesheet (built by esbuild into dist/src/ui/assets/ with content hashes in their names, so they
 * are cached for good while the page itself is revalidated), the event stream `GET /api/v1/events`
 * and the outlet power history. Control uses the existing control endpoints.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Type from "typebox";
import { API_CSP, API_JSON_HEADERS, CONSOLE_PREFIX, type HttpApp } from "../http/common.js";
import { problem, sendProblem } from "../http/problem.js";
import { clientAddressResolver } from "../http/api/key-guard.js";
import { INTERNAL_ERROR, problemResponse, RetryAfterHeader } from "../http/api/schemas.js";
import type { HttpDeps } from "../http/types.js";
import { distSrcUrl } from "../paths.js";
import { consoleBootstrap } from "./alarms.js";
import type { ConsoleFeed } from "./feed.js";
import type { ConsoleBootstrap, OutletHistory } from "./wire.js";

export const EVENTS_PATH = "/api/v1/events";
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

const INDEX_PATTERN = "^(0|[1-9][0-9]{0,5})$";

export function registerConsole(app: HttpApp, deps: HttpDeps, feed: ConsoleFeed): void {
  const assets = loadAssets();
  // The page's buttons come from the command table; served with the page (no request of its own).
  const bootstrap = consoleBootstrap(deps.config);
  const html = assets.script && assets.stylesheet ? Buffer.from(indexHtml(assets, bootstrap)) : null;
  // Streams are counted per client, as the key guard's lock-out counts: behind a trusted proxy, per
  // the client it names. Behind the API worker the request carries the client's own address.
  const resolveClient = clientAddressResolver(deps.config.Api.TrustedProxies);

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

  app.get(
    EVENTS_PATH,
    {
      schema: {
        summary: "Live updates for the web console (server-sent events)",
        description:
          "A `text/event-stream` that stays open. Events: `status` (`{instances:[…]}`: every instance on " +
          "connect, then each one whose poll status changed: online/failing/pending, last poll, error, " +
          "consecutive failures, device count, total power, label, model, alarm counts, most loaded phase), " +
          "`snapshot` (the latest snapshot of an instance with each load against its rating and its active " +
          "alarms, on connect and after every poll or commanded state change), `control` (the outcome of every " +
          "control request, REST or MQTT), `alarm` (an alarm raised, changed or cleared), and on connect " +
          "`alarms` (every active alarm) and `recent` (the latest alarm and control events). " +
          "`?instance=` limits the snapshot events to one instance, " +
          "`?snapshots=false` leaves them out. A stream is ended after at most 15 minutes, after a " +
          "`reconnect` event: open a new one (browsers reconnect by themselves). At most 8 streams per " +
          "client address (429 beyond) and 64 in all (503 beyond, unless another client holds more than " +
          "its share: its oldest stream is ended to make room); a client that stops reading is disconnected.",
        operationId: "streamEvents",
        tags: ["Status"],
        querystring: Type.Object(
          {
            instance: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 64,
                description: "Snapshot events of this instance only",
              }),
            ),
            snapshots: Type.Optional(
              Type.Enum(["true", "false"], { description: "`false`: no snapshot events (default `true`)" }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            description: "The event stream",
            content: { "text/event-stream": { schema: Type.String({ description: "Server-sent events" }) } },
          },
          400: problemResponse("Unknown query parameter or bad value"),
          404: problemResponse("No such instance"),
          429: problemResponse("Too many open event streams from this client address", {
            "Retry-After": RetryAfterHeader,
          }),
          503: problemResponse("Too many open event streams", { "Retry-After": RetryAfterHeader }),
          500: INTERNAL_ERROR,
        },
      },
    },
    (request, reply) => {
      const { instance, snapshots } = request.query;
      if (instance !== undefined && !deps.store.get(instance)) {
        const detail = `unknown instance ${JSON.stringify(instance)}; configured instances: ${deps.store.ids().join(", ")}`;
        return sendProblem(reply, problem(404, detail));
      }
      const client = resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
      const refused = feed.admit(client);
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
      );
      if (!opened) reply.raw.destroy();
      return reply;
    },
  );

  app.get(
    "/api/v1/instances/:id/outlets/:deviceId/:index/history",
    {
      schema: {
        summary: "Real power of one outlet over the last hour",
        description:
          "Every poll of the last hour (kept in memory by the service, lost on restart): `times` in epoch " +
          "milliseconds and `values` in watts (null where the outlet reported no number), oldest first.",
        operationId: "getOutletHistory",
        tags: ["Readings"],
        params: Type.Object({
          id: Type.String({ minLength: 1, description: "Instance id" }),
          deviceId: Type.String({ minLength: 1, maxLength: 128, description: "The PDU's device id" }),
          index: Type.String({ pattern: INDEX_PATTERN, description: "0-based outlet index" }),
        }),
        response: {
          200: {
            description: "The outlet's power samples",
            content: {
              "application/json": {
                schema: Type.Object({
                  instanceId: Type.String(),
                  deviceId: Type.String(),
                  index: Type.Integer({ minimum: 0 }),
                  type: Type.Literal("realPower"),
                  units: Type.Literal("W"),
                  times: Type.Array(Type.Number()),
                  values: Type.Array(Type.Union([Type.Number(), Type.Null()])),
                }),
              },
            },
          },
          400: problemResponse("Bad path parameter"),
          404: problemResponse("Unknown instance, or an outlet the service has not seen in the last hour"),
          500: INTERNAL_ERROR,
        },
      },
    },
    (request, reply) => {
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
  );
}
