/**
 * The control endpoints (contract §4 "Control endpoints"). Checks run in the contract's order:
 *
 *   403 no API key configured → 401 key missing/wrong (429 once an address is locked out)
 *   → 415 not application/json → 400 bad JSON / bad action / extra property → the control core.
 *
 * The routes are a fastify plugin ({@link controlRoutes}): its encapsulated context holds the key
 * guard and the audit as hooks that apply to these routes only. The key checks and the media type
 * run in its `onRequest` hook, before the body is parsed, so a request with a wrong key is refused
 * with 401 whatever its body; a small JSON body of such a request is still read, only to name its
 * action in the audit line. Everything else (instance,
 * ActionsEnabled, snapshot, target, the PDU's answer) is decided by the control core; this file
 * only translates its outcome. Every request is audited exactly once, never with the key.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import Type from "typebox";
import { auditControl } from "../../control/audit.js";
import { COMMAND_NAMES } from "../../control/commands.js";
import { SETTINGS_ACTION } from "../../control/settings.js";
import {
  GROUP_ACTIONS,
  OUTLET_ACTIONS,
  type ControlOutcome,
  type ControlService,
  type ControlSource,
  type ControlTarget,
  type OutletResult,
  type SettingsOutcome,
  type SettingsTarget,
} from "../../control/types.js";
import { consolePrincipal } from "../auth/principal.js";
import { problem, PROBLEM_TYPE_PREFIX, problemSentWith, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { clientAddressResolver, FailedKeyLimiter, keyMatcher } from "./key-guard.js";
import {
  DeviceIdParam,
  EntityKeyParam,
  GroupKeyParam,
  InstanceIdParam,
  isOutletIndex,
  OutletIndexParam,
} from "./params.js";
import { INTERNAL_ERROR, json, problemResponse, RetryAfterHeader, SettingsBody } from "./schemas.js";

/** Retry-After of a 503 when the core gives none (seconds). */
const DEFAULT_RETRY_AFTER = 5;

const OutletParams = Type.Object({
  id: InstanceIdParam,
  deviceId: DeviceIdParam,
  index: OutletIndexParam,
});

const GroupParams = Type.Object({ id: InstanceIdParam, groupKey: GroupKeyParam });
const DeviceParams = Type.Object({ id: InstanceIdParam, deviceId: DeviceIdParam });
const EntityParams = Type.Object({ id: InstanceIdParam, deviceId: DeviceIdParam, entityKey: EntityKeyParam });

const OutletBody = Type.Object(
  { action: Type.Enum([...OUTLET_ACTIONS], { description: "What to do with the outlet" }) },
  { additionalProperties: false, description: "The action" },
);

const GroupBody = Type.Object(
  { action: Type.Enum([...GROUP_ACTIONS], { description: "What to do with every outlet of the group" }) },
  { additionalProperties: false, description: "The action (resetStats is outlet-only)" },
);

const controlResponses = (success: ReturnType<typeof json>, failureSchema: string) => ({
  200: success,
  400: problemResponse(
    "Body not valid JSON, action missing or not allowed, an extra property, or a bad path parameter",
  ),
  401: problemResponse("X-Api-Key missing or wrong"),
  403: problemResponse("Control is disabled: no API key is configured"),
  404: problemResponse("Unknown instance, device, outlet or group, or a group without outlets"),
  409: problemResponse(
    "The instance has ActionsEnabled: false; off or reboot of a Protected outlet or group (type ending `protected`), or a group action that includes a protected outlet; superseded by a later on/off for the outlet; a reboot of the outlet is running or within its reboot delay",
  ),
  413: problemResponse("Body larger than 64 KiB"),
  415: problemResponse("Body not application/json"),
  429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
  500: INTERNAL_ERROR,
  502: problemResponse(
    "The PDU refused the command or failed; or (type ending `outcome-unknown`) the outcome is not known: check the outlet before retrying",
    undefined,
    failureSchema,
  ),
  503: problemResponse(
    "The instance has not been polled yet, the service is stopping (or control is not available), or the command waited over 30 s behind others for the outlet (expired; not sent)",
    { "Retry-After": RetryAfterHeader },
    failureSchema,
  ),
  504: problemResponse("The PDU did not answer in time", undefined, failureSchema),
});

type Params = Readonly<Record<string, string | undefined>>;

function targetOf(params: Params): SettingsTarget | null {
  if (params.groupKey !== undefined) return { kind: "group", groupKey: params.groupKey };
  if (params.deviceId === undefined) return null;
  if (params.entityKey !== undefined)
    return { kind: "entity", deviceId: params.deviceId, entityKey: params.entityKey };
  if (params.index === undefined) return { kind: "device", deviceId: params.deviceId };
  if (!isOutletIndex(params.index)) return null;
  return { kind: "outlet", deviceId: params.deviceId, index: Number(params.index) };
}

/** The action of a request: `set` for a settings write, else the body's, if this API knows it. */
function actionOf(request: FastifyRequest): string | null {
  if (request.method === "PATCH") return SETTINGS_ACTION;
  const body = request.body;
  if (typeof body !== "object" || body === null || !("action" in body)) return null;
  const action = body.action;
  return typeof action === "string" && COMMAND_NAMES.includes(action) ? action : null;
}

const isJson = (contentType: string | undefined): boolean =>
  (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() === "application/json";

/** The largest body read from a request refused before its body, to name its action in the audit. */
const REFUSED_BODY_LIMIT = 1024;
/** How long a refused request's body is waited for. */
const REFUSED_BODY_WAIT_MS = 1000;

/**
 * The action a request refused by the key guard (403, 429, 401) asks for, read from its body for the
 * audit line only: a JSON body of at most {@link REFUSED_BODY_LIMIT} bytes with a known command's
 * name; anything else (larger, late, not JSON, another action) is null. Never throws.
 */
function refusedAction(request: FastifyRequest): Promise<string | null> {
  const length = Number(request.headers["content-length"]);
  if (!isJson(request.headers["content-type"]) || !(length > 0 && length <= REFUSED_BODY_LIMIT))
    return Promise.resolve(null);
  return new Promise((resolve) => {
    const raw = request.raw;
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (action: string | null) => {
      clearTimeout(timer);
      raw.off("data", onData);
      raw.off("end", onEnd);
      raw.off("error", onFail);
      raw.off("close", onFail);
      resolve(action);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > REFUSED_BODY_LIMIT) finish(null);
      else chunks.push(chunk);
    };
    const onEnd = () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
        const action = typeof body === "object" && body !== null && "action" in body ? body.action : null;
        finish(typeof action === "string" && COMMAND_NAMES.includes(action) ? action : null);
      } catch {
        finish(null);
      }
    };
    const onFail = () => finish(null);
    const timer = setTimeout(onFail, REFUSED_BODY_WAIT_MS);
    raw.on("data", onData);
    raw.on("end", onEnd);
    raw.on("error", onFail);
    raw.on("close", onFail);
  });
}

function outletResults(outlets: readonly OutletResult[]) {
  return outlets.map((o) => ({
    deviceId: o.deviceId,
    index: o.index,
    ok: o.ok,
    ...(o.error === undefined ? {} : { error: o.error }),
  }));
}

export interface ControlRoutesOptions {
  readonly deps: HttpDeps;
  /** The lock-out of wrong keys, when shared with other key checks of the listener; default its own. */
  readonly limiter?: FailedKeyLimiter;
}

/**
 * The control endpoints as a fastify plugin: register it (not wrapped in fastify-plugin) so that its
 * key guard and audit hooks stay in its own context and never run for other routes.
 */
export const controlRoutes: FastifyPluginCallbackTypebox<ControlRoutesOptions> = (
  app,
  { deps, limiter = new FailedKeyLimiter(deps.now) },
  done,
) => {
  const configuredKey = deps.config.Api.ApiKey;
  const matches = keyMatcher(configuredKey);
  const audited = new WeakSet<FastifyRequest>();
  /** The action of a request the key guard refused, read from its body for the audit line. */
  const refused = new WeakMap<FastifyRequest, string>();
  /** Sends a refusal of the key guard once the request's action (for the audit) is known. */
  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    body: ReturnType<typeof problem>,
    headers?: Record<string, string>,
  ): void => {
    void refusedAction(request).then((action) => {
      if (action !== null) refused.set(request, action);
      sendProblem(reply, body, headers);
    });
  };
  /** Requests whose API key matched (their audit line says `api-key`). */
  const keyed = new WeakSet<FastifyRequest>();
  const resolveClient = clientAddressResolver(deps.config.Api.TrustedProxies);
  const clientOf = (request: FastifyRequest): string =>
    resolveClient(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
  /**
   * A signed-in console user (web console sessions), else a machine with the API key; `audited`
   * adds whether the key matched, for the audit line.
   */
  const sourceOf = (request: FastifyRequest, audited = false): ControlSource => {
    const principal = consolePrincipal(request);
    if (principal !== null) return { surface: "console", client: clientOf(request), user: principal.user };
    const key = audited && keyed.has(request) ? { key: true } : {};
    return { surface: "rest", client: clientOf(request), ...key };
  };

  const audit = (
    request: FastifyRequest,
    status: number,
    action: string | null,
    detail?: string,
    problemKind?: string,
    fromCore = false,
  ): void => {
    if (audited.has(request)) return;
    audited.add(request);
    const params = request.params as Params;
    auditControl(deps, {
      source: sourceOf(request, true),
      instanceId: params.id ?? null,
      target: targetOf(params),
      action,
      status,
      ...(detail === undefined ? {} : { detail }),
      ...(problemKind === undefined ? {} : { problem: problemKind }),
      fromCore,
    });
  };

  /**
   * Runs before the body is read: 403, 429, 401, 415 in the contract's order. A signed-in console
   * user (no X-Api-Key sent; the sign-in plugin has checked the session and the cross-site defence)
   * may control as an operator only.
   */
  const guard = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const principal = consolePrincipal(request);
    if (principal !== null) {
      if (principal.role !== "operator") {
        const detail = `${principal.user.name} is signed in as a viewer: viewers see everything and control nothing; ask for an operator group`;
        sendProblem(reply, problem(403, detail));
        return;
      }
      if (!isJson(request.headers["content-type"])) {
        sendProblem(reply, problem(415, 'send the body as JSON with "Content-Type: application/json"'));
        return;
      }
      done();
      return;
    }
    if (configuredKey === "") {
      const detail =
        "control is disabled because no API key is configured; set Api.ApiKey (or SERVICE_API_KEY / " +
        "SERVICE_API_KEY_FILE) to enable the control endpoints";
      refuse(request, reply, problem(403, detail));
      return;
    }
    const client = clientOf(request);
    const lockedFor = limiter.retryAfter(client);
    if (lockedFor > 0) {
      const detail = `too many wrong API keys from ${client}; try again in ${lockedFor} s with the right X-Api-Key`;
      refuse(request, reply, problem(429, detail), { "retry-after": String(lockedFor) });
      return;
    }
    const presented = request.headers["x-api-key"];
    if (typeof presented !== "string" || presented === "" || !matches(presented)) {
      if (!limiter.recordFailure(client)) {
        // Every remembered address is locked out: no room to count this one, so refuse it.
        const wait = limiter.fullRetryAfter();
        const detail = `too many clients are sending wrong API keys; try again in ${wait} s with the right X-Api-Key`;
        refuse(request, reply, problem(429, detail), { "retry-after": String(wait) });
        return;
      }
      const retry = limiter.retryAfter(client);
      if (retry > 0) {
        const detail = `too many wrong API keys from ${client}; try again in ${retry} s with the right X-Api-Key`;
        refuse(request, reply, problem(429, detail), { "retry-after": String(retry) });
        return;
      }
      const detail =
        presented === undefined || presented === ""
          ? "the X-Api-Key header is missing; send the configured API key in X-Api-Key"
          : "the X-Api-Key header does not match the configured API key";
      refuse(request, reply, problem(401, detail), { "www-authenticate": 'ApiKey header="X-Api-Key"' });
      return;
    }
    keyed.add(request);
    if (!isJson(request.headers["content-type"])) {
      sendProblem(reply, problem(415, 'send the body as JSON with "Content-Type: application/json"'));
      return;
    }
    done();
  };

  /** Refused or failed before the handler (4xx from checks, parsing, validation, limits): audit here. */
  const auditOnResponse = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const action = actionOf(request) ?? refused.get(request) ?? null;
    audit(request, reply.statusCode, action, problemSentWith(reply)?.detail);
    done();
  };

  /** A refusal or failure of the core as a problem (503 with Retry-After). */
  const sendRefusal = (reply: FastifyReply, outcome: Extract<ControlOutcome, { ok: false }>) => {
    const headers: Record<string, string> =
      outcome.status === 503
        ? { "retry-after": String(Math.max(1, Math.ceil(outcome.retryAfter ?? DEFAULT_RETRY_AFTER))) }
        : {};
    const extensions = outcome.outlets ? { outlets: outletResults(outcome.outlets) } : {};
    const body = problem(outcome.status, outcome.detail, outcome.title, extensions);
    // A specific kind (outcome-unknown, superseded, ...) names the problem type.
    const typed =
      outcome.problem === undefined ? body : { ...body, type: PROBLEM_TYPE_PREFIX + outcome.problem };
    return sendProblem(reply, typed, headers);
  };

  /** 503 (audited) when no control service is attached to this process. */
  const unavailable = (request: FastifyRequest, reply: FastifyReply, action: string, what: string) => {
    const detail = `${what} is not available in this process; try again later or check the service's log`;
    audit(request, 503, action, detail);
    return sendProblem(reply, problem(503, detail), { "retry-after": String(DEFAULT_RETRY_AFTER) });
  };

  const auditOutcome = (request: FastifyRequest, action: string, outcome: SettingsOutcome | ControlOutcome) =>
    audit(
      request,
      outcome.status,
      action,
      outcome.ok ? undefined : outcome.detail,
      outcome.ok ? undefined : outcome.problem,
      true,
    );

  /**
   * One request through the control core, the same for commands and settings writes: 503 (audited)
   * when this process has no core or `call` finds nothing to call there (it returns undefined);
   * else the outcome is audited, a refusal answered as a problem and a success as `answer` builds it.
   */
  const throughCore = async <O extends ControlOutcome | SettingsOutcome>(
    request: FastifyRequest,
    reply: FastifyReply,
    action: string,
    what: string,
    call: (control: ControlService, source: ControlSource) => Promise<O> | undefined,
    answer: (done: Extract<O, { ok: true }>) => object,
  ): Promise<FastifyReply | object> => {
    const source = sourceOf(request);
    const pending = deps.control === undefined ? undefined : call(deps.control, source);
    if (pending === undefined) return unavailable(request, reply, action, what);
    const outcome = await pending;
    auditOutcome(request, action, outcome);
    if (!outcome.ok) return sendRefusal(reply, outcome);
    // Narrowing on `ok` does not reach the type parameter, so the success is named here.
    return answer(outcome as Extract<O, { ok: true }>);
  };

  /** A settings write (contract §10) through the core; 200 echoes the settings written. */
  const applySettings = async (
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply | object> => {
    // The route's schema has checked the parameters (so there is a target) and the body.
    const params = request.params as Params;
    const target = targetOf(params);
    const instanceId = params.id ?? "";
    const settings = request.body as Readonly<Record<string, unknown>>;
    if (target === null) throw new Error("settings route without a target");
    return throughCore(
      request,
      reply,
      SETTINGS_ACTION,
      "writing settings",
      (control, source) => control.applySettings?.({ instanceId, target, settings, source }),
      (done) => {
        const { kind: _kind, ...where } = done.target;
        return { ok: true, instanceId: done.instanceId, ...where, settings: done.settings };
      },
    );
  };

  const execute = (
    request: FastifyRequest,
    reply: FastifyReply,
    instanceId: string,
    target: ControlTarget,
    action: string,
  ): Promise<FastifyReply | object> =>
    throughCore(
      request,
      reply,
      action,
      "control",
      (control, source) => control.execute({ instanceId, target, action, source }),
      (done) =>
        done.target.kind === "outlet"
          ? {
              ok: true,
              instanceId: done.instanceId,
              deviceId: done.target.deviceId,
              index: done.target.index,
              action: done.action,
            }
          : {
              ok: true,
              instanceId: done.instanceId,
              groupKey: done.target.groupKey,
              action: done.action,
              outlets: done.outlets.map((o) => ({ deviceId: o.deviceId, index: o.index })),
            },
    );

  // Scoped to this plugin's context: the read routes and the docs never see them.
  app.addHook("onRequest", guard);
  app.addHook("onResponse", auditOnResponse);

  app.post(
    "/api/v1/instances/:id/outlets/:deviceId/:index/control",
    {
      schema: {
        summary: "Switch, reboot or reset the statistics of one outlet",
        description:
          "Needs `X-Api-Key` and an instance with `ActionsEnabled: true`. `on`/`off` are reported as the " +
          "outlet's state at once (latched until a poll agrees); `reboot` power-cycles; `resetStats` resets energy.",
        operationId: "controlOutlet",
        tags: ["Control"],
        security: [{ ApiKey: [] }],
        params: OutletParams,
        body: OutletBody,
        response: controlResponses(json("OutletControlResult", "Done"), "Problem"),
      },
    },
    (request, reply) =>
      execute(
        request,
        reply,
        request.params.id,
        // The pattern admits plain decimal only, so Number() reads it exactly.
        { kind: "outlet", deviceId: request.params.deviceId, index: Number(request.params.index) },
        request.body.action,
      ),
  );

  app.post(
    "/api/v1/instances/:id/groups/:groupKey/control",
    {
      schema: {
        summary: "Switch or reboot every outlet of a OneView group",
        description:
          "Needs `X-Api-Key` and an instance with `ActionsEnabled: true`. A partial failure answers 502 with " +
          "the result of every outlet in `outlets`.",
        operationId: "controlGroup",
        tags: ["Control"],
        security: [{ ApiKey: [] }],
        params: GroupParams,
        body: GroupBody,
        response: controlResponses(
          json("GroupControlResult", "Done on every member outlet"),
          "ControlProblem",
        ),
      },
    },
    (request, reply) =>
      execute(
        request,
        reply,
        request.params.id,
        { kind: "group", groupKey: request.params.groupKey },
        request.body.action,
      ),
  );

  const settingsSchema = (summary: string, description: string, operationId: string) => ({
    summary,
    description:
      `${description} Needs \`X-Api-Key\` and an instance with \`ActionsEnabled: true\`; ` +
      "values are never converted (a delay sent as a string is 400) and nothing is written unless all are valid.",
    operationId,
    tags: ["Settings"],
    security: [{ ApiKey: [] }],
    body: SettingsBody,
    response: controlResponses(json("SettingsResult", "Written; the settings as sent"), "Problem"),
  });

  /** The settings routes: path, what it does, operation id, path parameters (the target follows from them). */
  const settingsRoutes = [
    [
      "/api/v1/instances/:id/outlets/:deviceId/:index",
      "Change an outlet's label, delays or power-on action",
      "Any of `label`, `onDelay`, `offDelay`, `rebootDelay`, `poaAction`, written to the PDU in one `set`.",
      "setOutletSettings",
      OutletParams,
    ],
    [
      "/api/v1/instances/:id/devices/:deviceId",
      "Rename a device",
      "`label` only.",
      "setDeviceLabel",
      DeviceParams,
    ],
    [
      "/api/v1/instances/:id/entities/:deviceId/:entityKey",
      "Rename an entity (a breaker, a phase)",
      "`label` only.",
      "setEntityLabel",
      EntityParams,
    ],
    [
      "/api/v1/instances/:id/groups/:groupKey",
      "Rename a OneView group",
      "`label` only; written on the master.",
      "setGroupLabel",
      GroupParams,
    ],
  ] as const;
  for (const [path, summary, description, operationId, params] of settingsRoutes) {
    app.patch(
      path,
      { schema: { ...settingsSchema(summary, description, operationId), params } },
      (request, reply) => applySettings(request, reply),
    );
  }
  done();
};
