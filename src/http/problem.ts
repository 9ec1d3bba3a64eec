/**
 * The error model of both listeners (docs/http.md, "Errors"): every error is an RFC 9457
 * `application/problem+json` object `{type, title, status, detail}` whose `detail` tells the caller
 * what to fix. Internal failures are logged and answered with a generic 500: never a stack trace,
 * never an exception message that was not written for the caller.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import Type from "typebox";
import type { HttpApp } from "./types.js";
import { RULE_WORDS } from "./api/params.js";
import { DUPLICATE_KEY_CODE } from "./json-body.js";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Largest request body accepted (docs/http.md, "Errors": 413 over 64 KiB). */
export const BODY_LIMIT = 65536;

/** Prefix of every problem `type`: a tag URI (RFC 4151), stable and deliberately not a URL. */
export const PROBLEM_TYPE_PREFIX = "tag:pdu-bridge,2025:problem:";

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** Extension members (e.g. `outlets` of a partially failed group action). */
  readonly [extension: string]: unknown;
}

/** Shared schema of every problem body; appears as `#/components/schemas/Problem`. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: "Identifies the kind of problem (a tag URI)" }),
    title: Type.String({ description: "Short summary of the kind of problem" }),
    status: Type.Integer({ description: "HTTP status code" }),
    detail: Type.String({ description: "What went wrong and what to change" }),
  },
  { $id: "Problem", description: "RFC 9457 problem details" },
);

const KINDS: Readonly<Record<number, readonly [slug: string, title: string]>> = {
  400: ["invalid-request", "Bad Request"],
  401: ["unauthorized", "Unauthorized"],
  403: ["forbidden", "Forbidden"],
  404: ["not-found", "Not Found"],
  405: ["method-not-allowed", "Method Not Allowed"],
  409: ["conflict", "Conflict"],
  413: ["body-too-large", "Content Too Large"],
  414: ["uri-too-long", "URI Too Long"],
  415: ["unsupported-media-type", "Unsupported Media Type"],
  429: ["too-many-requests", "Too Many Requests"],
  431: ["headers-too-large", "Request Header Fields Too Large"],
  500: ["internal-error", "Internal Server Error"],
  502: ["pdu-failed", "Bad Gateway"],
  503: ["unavailable", "Service Unavailable"],
  504: ["pdu-timeout", "Gateway Timeout"],
};

export function problem(
  status: number,
  detail: string,
  title?: string,
  extensions: Record<string, unknown> = {},
): Problem {
  const [slug, defaultTitle] = KINDS[status] ?? [`status-${status}`, `HTTP ${status}`];
  return { ...extensions, type: PROBLEM_TYPE_PREFIX + slug, title: title ?? defaultTitle, status, detail };
}

const sent = new WeakMap<FastifyReply, Problem>();

export function sendProblem(
  reply: FastifyReply,
  body: Problem,
  headers: Record<string, string> = {},
): FastifyReply {
  sent.set(reply, body);
  return reply.code(body.status).headers(headers).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** The problem this reply was answered with, if any (for the audit line). */
export function problemSentWith(reply: FastifyReply): Problem | undefined {
  return sent.get(reply);
}

export const tooLarge = (): Problem =>
  problem(413, `the request body is larger than ${BODY_LIMIT} bytes (64 KiB); send a smaller body`);

export const INTERNAL_ERROR_DETAIL =
  "the service failed while answering; the error is logged, try again later";

/** A validation issue as both fastify's ajv and the TypeBox compiler report it. */
interface ValidationIssue {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly message?: string;
}

function subject(context: string, path: string): string {
  const name = path.replace(/^\//, "").replaceAll("/", ".");
  if (context === "params") return `path parameter "${name}"`;
  if (context === "querystring") return name === "" ? "the query string" : `query parameter "${name}"`;
  if (context === "body") return name === "" ? "the body" : `"${name}" in the body`;
  return name === "" ? context : `${context} "${name}"`;
}

const list = (values: unknown): string =>
  Array.isArray(values) ? values.map(String).join(", ") : String(values);

function describeIssue(context: string, issue: ValidationIssue): string | null {
  const where = subject(context, issue.instancePath);
  switch (issue.keyword) {
    case "additionalProperties": {
      const extra = list(issue.params.additionalProperties ?? issue.params.additionalProperty);
      if (context === "querystring") return `unknown query parameter ${JSON.stringify(extra)}`;
      return `${where} has unknown properties: ${extra}`;
    }
    case "boolean":
      // TypeBox reports each extra property a second time against `false`: covered above.
      return null;
    case "required":
      return `${where} is missing the required property ${JSON.stringify(list(issue.params.requiredProperties ?? issue.params.missingProperty))}`;
    case "enum":
      return `${where} must be one of: ${list(issue.params.allowedValues)}`;
    case "type":
      return `${where} must be ${issue.params.type === "object" ? "a JSON object" : `of type ${list(issue.params.type)}`}`;
    case "pattern":
    case "format": {
      const rule = RULE_WORDS[String(issue.params.pattern ?? issue.params.format)];
      return rule === undefined ? `${where} ${issue.message ?? "is invalid"}` : `${where} ${rule}`;
    }
    default:
      return `${where} ${issue.message ?? "is invalid"}`;
  }
}

export function describeValidation(context: string, issues: readonly ValidationIssue[]): string {
  const parts = [...new Set(issues.map((i) => describeIssue(context, i)).filter((m) => m !== null))];
  return parts.length === 0 ? `${subject(context, "")} is invalid` : parts.join("; ");
}

/** The problem for an error fastify raised (parsing, validation, limits), or null when it is internal. */
export function problemForError(error: FastifyError): Problem | null {
  if (error.validation)
    return problem(400, describeValidation(error.validationContext ?? "request", error.validation));
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return tooLarge();
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return problem(415, "the Content-Type of the body is not supported; send application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return problem(400, "the body is empty; send a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return problem(400, "the body is not valid JSON; send a JSON object");
    case DUPLICATE_KEY_CODE: {
      const key = (error as FastifyError & { key?: unknown }).key;
      const name =
        typeof key === "string" ? JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key) : "a key";
      return problem(400, `the body has ${name} more than once; send each key once`);
    }
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return problem(400, "Content-Length does not match the length of the body");
    case "FST_ERR_BAD_URL":
      return problem(400, "the path is not a valid URL (bad percent-encoding); fix the URL");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return problem(414, "a path segment is longer than 400 characters; use a shorter identifier");
  }
  const status = error.statusCode ?? 500;
  // JSON.parse errors (e.g. forbidden __proto__ keys) carry 400 without a specific code.
  if (status === 400) return problem(400, "the body could not be read as a JSON object; send a JSON object");
  if (status > 400 && status < 500)
    return problem(status, "the request could not be processed; check it against /openapi/v1.json");
  return null;
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** Methods registered for a concrete path (for `Allow`). */
export function allowedMethods(app: HttpApp, path: string): string[] {
  return METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
}

const shorten = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/** 405 with `Allow` when the path exists for other methods, else 404. */
export function replyNotFound(
  app: HttpApp,
  request: FastifyRequest,
  reply: FastifyReply,
  hint: string,
): FastifyReply {
  const path = request.url.split("?", 1)[0] ?? "/";
  const allowed = allowedMethods(app, path);
  if (allowed.length > 0 && !allowed.includes(request.method)) {
    const detail = `${request.method} is not supported on ${shorten(path)}; use ${allowed.join(", ")}`;
    return sendProblem(reply, problem(405, detail), { allow: allowed.join(", ") });
  }
  return sendProblem(reply, problem(404, `nothing is served at ${shorten(path)}; ${hint}`));
}

/**
 * Installs the error model on a listener: the not-found handler (404/405), the error handler, and an
 * `onRequest` hook that refuses an HTTP/1.1 request without Host, a declared oversize body and
 * unknown paths before any body is read.
 */
export function installProblemHandling(app: HttpApp, hint: string): void {
  app.setNotFoundHandler((request, reply) => replyNotFound(app, request, reply, hint));

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = problemForError(error);
    if (known) return sendProblem(reply, known);
    request.log.error({ err: error, method: request.method, url: request.url }, "request failed");
    return sendProblem(reply, problem(500, INTERNAL_ERROR_DETAIL));
  });

  app.addHook("onRequest", (request, reply, done) => {
    if (request.headers.host === undefined && request.raw.httpVersion === "1.1") {
      sendProblem(reply, problem(400, "the Host header is missing; HTTP/1.1 requests must send one"));
      return;
    }
    const length = Number(request.headers["content-length"] ?? 0);
    if (length > BODY_LIMIT) {
      sendProblem(reply, tooLarge());
      return;
    }
    if (request.is404) {
      replyNotFound(app, request, reply, hint);
      return;
    }
    done();
  });
}
