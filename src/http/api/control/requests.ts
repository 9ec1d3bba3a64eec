/** What the control routes read from a request: its target, its action, its media type. */
import type { FastifyRequest } from "fastify";
import { COMMAND_NAMES } from "../../../control/commands.js";
import { SETTINGS_ACTION } from "../../../control/settings.js";
import type { SettingsTarget } from "../../../control/types.js";
import { isOutletIndex } from "../params.js";
import { API_PATHS } from "../paths.js";

export type Params = Readonly<Record<string, string | undefined>>;

/** The target named by a route's path parameters, or null when they name none. */
export function targetOf(params: Params): SettingsTarget | null {
  if (params.groupKey !== undefined) return { kind: "group", groupKey: params.groupKey };
  if (params.deviceId === undefined) return null;
  if (params.entityKey !== undefined)
    return { kind: "entity", deviceId: params.deviceId, entityKey: params.entityKey };
  if (params.index === undefined) return { kind: "device", deviceId: params.deviceId };
  if (!isOutletIndex(params.index)) return null;
  return { kind: "outlet", deviceId: params.deviceId, index: Number(params.index) };
}

/**
 * What a control route's request is about, for its audit line: an instance and its target, an
 * asset (the asset control route), or neither (the sequence routes).
 */
export function scopeOf(request: FastifyRequest): {
  readonly instanceId: string | null;
  readonly target: SettingsTarget | null;
  readonly asset?: string;
} {
  const params = request.params as Params;
  const route = request.routeOptions.url;
  if (route === API_PATHS.assetControl)
    return { instanceId: null, target: null, ...(params.id === undefined ? {} : { asset: params.id }) };
  if (route === API_PATHS.sequenceStart || route === API_PATHS.sequenceStop)
    return { instanceId: null, target: null };
  return { instanceId: params.id ?? null, target: targetOf(params) };
}

const knownCommand = (action: unknown): string | null =>
  typeof action === "string" && COMMAND_NAMES.includes(action) ? action : null;

/** The action of a request: `set` for a settings write, else the body's, if this API knows it. */
export function actionOf(request: FastifyRequest): string | null {
  if (request.method === "PATCH") return SETTINGS_ACTION;
  const body = request.body;
  if (typeof body !== "object" || body === null || !("action" in body)) return null;
  return knownCommand(body.action);
}

export const isJson = (contentType: string | undefined): boolean =>
  (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() === "application/json";

/** The largest body read from a request refused before its body, to name its action in the audit. */
const REFUSED_BODY_LIMIT = 1024;
/** How long a refused request's body is waited for. */
const REFUSED_BODY_WAIT_MS = 1000;

/** The command a small JSON body names, or null (not JSON, no action, an unknown one). */
function commandIn(chunks: readonly Buffer[]): string | null {
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    return typeof body === "object" && body !== null && "action" in body ? knownCommand(body.action) : null;
  } catch {
    return null;
  }
}

/**
 * The action a request refused by the key guard (403, 429, 401) asks for, read from its body for the
 * audit line only: a JSON body of at most {@link REFUSED_BODY_LIMIT} bytes with a known command's
 * name; anything else (larger, late, not JSON, another action) is null. Never throws.
 */
export function refusedAction(request: FastifyRequest): Promise<string | null> {
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
    const onEnd = () => finish(commandIn(chunks));
    const onFail = () => finish(null);
    const timer = setTimeout(onFail, REFUSED_BODY_WAIT_MS);
    raw.on("data", onData);
    raw.on("end", onEnd);
    raw.on("error", onFail);
    raw.on("close", onFail);
  });
}
