/**
 * What both listeners share: the fastify instance with its limits and error model, the security
 * headers on every response, and listening with a clear configuration error when a port is taken.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaCompiler,
  type FastifySchemaValidationError,
  type RawServerDefault,
} from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { ConfigError } from "../config/errors.js";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log.js";
import type { FastPath, HttpApp } from "./types.js";
import { ConnectionGate, type GateLog } from "./connection-gate.js";
import { installJsonBodyParser } from "./json-body.js";
import {
  BODY_LIMIT,
  INTERNAL_ERROR_DETAIL,
  installProblemHandling,
  PROBLEM_CONTENT_TYPE,
  problem,
  problemForError,
  sendProblem,
} from "./problem.js";

/** Paths of the docs UI: the only HTML the service serves, with its own CSP. */
export const DOCS_PREFIX = "/docs/v1";

/** For JSON and text: nothing may be loaded or framed. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * For the docs UI: everything from the service itself. `img-src data:` is for the SVG icons that
 * swagger-ui's stylesheet inlines as data: URLs; no inline script or style, no other origin (the
 * browser test in test/http/docs-ui.test.ts fails on any violation of this policy).
 */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** Paths of the web console (src/ui/). */
export const CONSOLE_PREFIX = "/ui";

/** For the web console: its own page, script, stylesheet and API only; nothing from elsewhere. */
export const CONSOLE_CSP =
  "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The path pattern of the route fastify chose for a request (`/api/v1/instances/:id/...`), or null
 * when none matched (a 404). Every rule that guards paths decides on this, never on `request.url`:
 * the router decodes percent-encodings (`/%61pi/` is `/api/`) and routes an absolute-form target
 * (`http://host/api/...`) by its path, so the request line as written and the route it reaches can
 * differ.
 */
export function routedPath(request: FastifyRequest): string | null {
  return request.is404 ? null : (request.routeOptions.url ?? null);
}

export function isConsolePath(url: string): boolean {
  return (
    url === CONSOLE_PREFIX || url.startsWith(`${CONSOLE_PREFIX}/`) || url.startsWith(`${CONSOLE_PREFIX}?`)
  );
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
} as const;

/** Every header of a JSON answer outside the docs UI, but its length. */
export const API_JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "application/json; charset=utf-8",
  ...SECURITY_HEADERS,
  "content-security-policy": API_CSP,
  "cache-control": "no-store",
});

export function isDocsPath(url: string): boolean {
  return url === DOCS_PREFIX || url.startsWith(`${DOCS_PREFIX}/`) || url.startsWith(`${DOCS_PREFIX}?`);
}

/**
 * The headers every response carries; static docs assets keep their own Cache-Control. The policy
 * follows the route that answers (a request no route took gets the strictest).
 */
function applySecurityHeaders(reply: FastifyReply, route: string | null): void {
  reply.headers(SECURITY_HEADERS);
  reply.header(
    "content-security-policy",
    route === null ? API_CSP : isDocsPath(route) ? DOCS_CSP : isConsolePath(route) ? CONSOLE_CSP : API_CSP,
  );
  if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
}

/**
 * Checks request values exactly as they arrived. The type provider's own compiler converts path,
 * query and header values first (`"1e0"` becomes 1, `"false"` becomes 0), so a malformed outlet
 * index would switch a real outlet; here a string stays a string and must match its rule.
 */
export const strictValidator: FastifySchemaCompiler<TSchema> = ({ schema }) => {
  const check = Compile(schema);
  return (value: unknown) =>
    check.Check(value)
      ? { value }
      : { error: check.Errors(value) as unknown as FastifySchemaValidationError[] };
};

/**
 * Limits against slow and idle clients. Without them a connection dripping its headers or body, or
 * sending nothing, stays open for good (fastify's own request timeout is 0), and enough of them
 * would exhaust the process's sockets.
 */
export interface HttpLimits {
  /** Milliseconds to receive a whole request. */
  readonly requestTimeoutMs: number;
  /** Milliseconds to receive a request's headers (from the connection or the previous request). */
  readonly headersTimeoutMs: number;
  /** Milliseconds an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections at most; further ones are closed at once (connection-gate.ts). */
  readonly maxConnections: number;
  /** Open connections one client (an address, an IPv6 /64) may hold at most. */
  readonly maxConnectionsPerClient: number;
  /** Addresses not held to `maxConnectionsPerClient`: the API's trusted proxies. */
  readonly exemptClients?: readonly string[];
  /** Largest request head in bytes; absent: node's (`http.maxHeaderSize`, 16 KiB by default). */
  readonly maxHeaderBytes?: number;
}

/** The defaults of `Http.*`, for apps built without a configuration. */
export const DEFAULT_LIMITS: HttpLimits = {
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1024,
  maxConnectionsPerClient: 32,
};

/**
 * The limits of `Http.*` (seconds in the file) for one listener: the API's trusted proxies carry
 * many clients, so they are not held to the per-client limit there.
 */
export function httpLimits(config: Config, listener: "api" | "health"): HttpLimits {
  const http = config.Http;
  return {
    requestTimeoutMs: Math.round(http.RequestTimeout * 1000),
    headersTimeoutMs: Math.round(http.HeadersTimeout * 1000),
    keepAliveTimeoutMs: Math.round(http.KeepAliveTimeout * 1000),
    maxConnections: http.MaxConnections,
    maxConnectionsPerClient: http.MaxConnectionsPerClient,
    ...(listener === "api" ? { exemptClients: config.Api.TrustedProxies } : {}),
  };
}

/** The certificate (with its chain) and private key of an HTTPS listener, PEM text (`Api.Tls`). */
export interface TlsPair {
  readonly cert: string;
  readonly key: string;
}

/**
 * The node:http server (node:https with `tls`) with the limits, the connection gate in front of it
 * (`log` takes its refusal lines), and `fastPath` (if any) in front of fastify's handler. Node checks
 * the request and header timeouts every `connectionsCheckingInterval` (30 s by default, which would
 * let a 10 s timeout run 40 s), so it is checked at least every second.
 */
export function serverFactory(limits: HttpLimits, log: GateLog, fastPath?: FastPath, tls?: TlsPair | null) {
  return (
    handler: (request: IncomingMessage, response: ServerResponse) => void,
    options: { http?: object; maxRequestsPerSocket?: number },
  ) => {
    const settings = {
      ...(options.http ?? {}),
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
      ...(limits.maxHeaderBytes === undefined ? {} : { maxHeaderSize: limits.maxHeaderBytes }),
    };
    const listener =
      fastPath === undefined
        ? handler
        : (request: IncomingMessage, response: ServerResponse) => {
            let answered = false;
            try {
              answered = fastPath(request, response);
            } catch {
              // The route fails the same way and answers (and logs) it as a problem.
            }
            if (!answered) handler(request, response);
          };
    const server =
      tls === undefined || tls === null
        ? createServer(settings, listener)
        : createTlsServer({ ...settings, cert: tls.cert, key: tls.key }, listener);
    const gate = new ConnectionGate(
      {
        maxConnections: limits.maxConnections,
        maxPerClient: limits.maxConnectionsPerClient,
        exempt: limits.exemptClients ?? [],
      },
      log,
    );
    gate.attach(server);
    server.once("close", () => gate.close());
    if ((options.maxRequestsPerSocket ?? 0) > 0) server.maxRequestsPerSocket = options.maxRequestsPerSocket!;
    return server;
  };
}

/** Answers malformed HTTP (before fastify sees a request) in the same problem format. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
  const status = tooLarge ? 431 : 400;
  const body = JSON.stringify(
    problem(
      status,
      tooLarge
        ? "the request headers are too large; send fewer or shorter headers"
        : "the request is not valid HTTP",
    ),
  );
  if (socket.writable) {
    const headers = Object.entries(SECURITY_HEADERS)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    socket.write(
      `HTTP/1.1 ${status} ${tooLarge ? "Request Header Fields Too Large" : "Bad Request"}\r\n` +
        `content-type: ${PROBLEM_CONTENT_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `cache-control: no-store\r\n${headers}connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * A fastify instance with the shared limits, error model and headers. `hint` ends the detail of a
 * 404 (where to find the listener's paths); `fastPath` sees every request first.
 */
export function createHttpApp(
  logger: Logger,
  listener: "api" | "health",
  hint: string,
  fastPath?: FastPath,
  limits: HttpLimits = DEFAULT_LIMITS,
  tls: TlsPair | null = null,
): HttpApp {
  const log = logger.child({ listener });
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: log,
    // Per-request lines would be noise (probes every few seconds); errors and control are logged
    // with the method and URL they concern. No child logger per request: with the redaction
    // configured, creating one cost more than routing the request (npm run bench, scenario api).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (parent) => parent,
    serverFactory: serverFactory(limits, (fields, message) => log.warn(fields, message), fastPath, tls),
    bodyLimit: BODY_LIMIT,
    // Never converts a value, should a route ever fall back to fastify's own ajv (see strictValidator).
    ajv: { customOptions: { coerceTypes: false } },
    // A 128-byte id is up to 384 characters percent-encoded; the id rules check the decoded length.
    routerOptions: { maxParamLength: 400 },
    // Node answers an HTTP/1.1 request without Host with a bare 400 of its own (no body, no
    // headers); the onRequest hook of installProblemHandling answers it as a problem instead.
    http: { requireHostHeader: false },
    // Requests that arrive while closing are answered normally (the close takes milliseconds).
    return503OnClosing: false,
    clientErrorHandler,
    frameworkErrors: (error, request, reply) => {
      request.log.debug({ code: error.code, url: request.url }, "request refused by the router");
      applySecurityHeaders(reply, null);
      void sendProblem(reply, problemForError(error) ?? problem(500, INTERNAL_ERROR_DETAIL));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(strictValidator);
  installJsonBodyParser(app);

  app.addHook("onSend", (request, reply, payload, done) => {
    applySecurityHeaders(reply, routedPath(request));
    done(null, payload);
  });
  installProblemHandling(app, hint);
  return app;
}

export interface RunningListener {
  readonly port: number;
  close(): Promise<void>;
}

/** A failed listen as a ConfigError naming the key, when the configuration is the cause. */
export function listenError(error: unknown, section: "Api" | "Health", host: string, port: number): Error {
  const code = (error as { code?: unknown }).code;
  if (code === "EADDRINUSE")
    return new ConfigError(`${section}.Port`, `port ${port} on ${host} is already in use`);
  if (code === "EACCES")
    return new ConfigError(`${section}.Port`, `port ${port} on ${host} may not be used by this user`);
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN")
    return new ConfigError(`${section}.Bind`, `cannot listen on ${host}: no such local address`);
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Listens on `host:port`. A port in use (or not permitted) or an address that cannot be bound is a
 * configuration error naming the key (`Api.Port`, `Health.Bind`, ...); the app exits 2 on it.
 */
export async function listen(
  app: HttpApp,
  section: "Api" | "Health",
  host: string,
  port: number,
): Promise<RunningListener> {
  try {
    await app.listen({
      host,
      port,
      listenTextResolver: (address) =>
        `${section === "Api" ? "REST API" : "health endpoints and metrics"} listening at ${address}`,
    });
  } catch (error) {
    await app.close();
    throw listenError(error, section, host, port);
  }
  const address = app.server.address();
  return {
    port: typeof address === "object" && address !== null ? address.port : port,
    close: () => app.close(),
  };
}
