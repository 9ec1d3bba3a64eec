/**
 * Control and settings requests among several replicas (docs/cluster.md, "REST on any replica"):
 * a request that reaches a replica not holding the instance is carried out by the replica that
 * holds it, over HTTP between the replicas, and answered with the holder's outcome.
 *
 * - {@link ForwardingControl} is the control service the REST surface (and the console, which uses
 *   its routes) calls on every replica: it runs a request here when this replica holds the
 *   instance (or when the request concerns no instance this replica could hand on: unknown, or
 *   control disabled: the local core refuses it exactly as one process does), answers 503
 *   `not-held` with Retry-After while nobody holds it, and else sends it to the holder's
 *   {@link FORWARD_PATH}, which carries it out with its own core (src/http/api/control/replica-route.ts)
 *   and never forwards it again.
 * - The request keeps its command id (`ControlRequest.commandId`, made here when absent): a reboot or
 *   resetStats is recorded under that id with the bucket's lease by the replica that writes it, so it
 *   runs at most once whatever happens to the forward. Nothing is retried: an answer lost after the
 *   request may have reached the holder is 502 `outcome-unknown`, whatever the action.
 * - Authentication: replicas share the configuration, so they share `Api.ApiKey`. The key never
 *   travels: a forward carries the HMAC-SHA256 of its body under a key derived from the API key,
 *   checked in constant time by the receiver. A captured forward can only replay itself (same command
 *   id, so a reboot is refused as used; on/off are absolute states).
 * - Bounds: a forward's body is at most {@link FORWARD_BODY_LIMIT} bytes, its answer at most
 *   {@link FORWARD_ANSWER_LIMIT}, and it ends within {@link FORWARD_TIMEOUT_MS}. Everything the
 *   holder answers is checked before it becomes an answer to the client.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import Type, { type Static } from "typebox";
import { Value } from "typebox/value";
import { Agent, request as httpRequest } from "undici";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log.js";
import { WAIT_LIMIT_MS } from "./outlet-turns.js";
import { NOT_HELD_RETRY_AFTER, refuse, type Refusal } from "./outcomes.js";
import type {
  ControlOutcome,
  ControlRequest,
  ControlService,
  SettingsOutcome,
  SettingsRequest,
} from "./types.js";

/** Where a replica takes the requests other replicas hand it (hidden from the OpenAPI document). */
export const FORWARD_PATH = "/api/v1/replica/forward";
/** The header carrying the forward's signature (hex HMAC-SHA256 of the body). */
export const FORWARD_SIGNATURE_HEADER = "x-pdu-bridge-forward";
/** The header naming the replica a forward comes from (for the logs; the signature is what counts). */
export const FORWARD_FROM_HEADER = "x-pdu-bridge-member";
/** Largest forward body accepted, in bytes (a settings write with every field is far smaller). */
export const FORWARD_BODY_LIMIT = 16 * 1024;
/** Largest answer read from a holder, in bytes (a group's outcome lists each outlet). */
export const FORWARD_ANSWER_LIMIT = 256 * 1024;
/**
 * How long a forward may take: a command waits at most {@link WAIT_LIMIT_MS} for its outlet's turn,
 * and its write is then cut at its grant's deadline (RenewDeadline) or the PDU's timeout.
 */
export const FORWARD_TIMEOUT_MS = WAIT_LIMIT_MS + 60_000;

const short = (max: number) => Type.String({ maxLength: max });
const Target = Type.Union([
  Type.Object(
    { kind: Type.Literal("outlet"), deviceId: short(256), index: Type.Integer({ minimum: 0 }) },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal("group"), groupKey: short(256) }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal("device"), deviceId: short(256) }, { additionalProperties: false }),
  Type.Object(
    { kind: Type.Literal("entity"), deviceId: short(256), entityKey: short(256) },
    { additionalProperties: false },
  ),
]);
const Source = Type.Union([
  Type.Object(
    { surface: Type.Literal("rest"), client: short(256), key: Type.Optional(Type.Boolean()) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      surface: Type.Literal("console"),
      client: short(256),
      user: Type.Object({ sub: short(512), name: short(512) }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  ),
]);

/** What one replica hands another: a command or a settings write, with who asked. */
export const ForwardMessage = Type.Union([
  Type.Object(
    {
      kind: Type.Literal("command"),
      instanceId: short(64),
      target: Target,
      action: short(64),
      source: Source,
      commandId: Type.String({ pattern: "^[A-Za-z0-9_-]{1,48}$" }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      kind: Type.Literal("settings"),
      instanceId: short(64),
      target: Target,
      settings: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown()),
      source: Source,
    },
    { additionalProperties: false },
  ),
]);
export type ForwardMessage = Static<typeof ForwardMessage>;

const OutletResult = Type.Object({
  deviceId: short(256),
  index: Type.Integer({ minimum: 0 }),
  ok: Type.Boolean(),
  error: Type.Optional(short(2048)),
});

/** What a holder answers: the outcome of its core (checked here before it reaches the client). */
const ForwardAnswer = Type.Object({
  outcome: Type.Union([
    Type.Object({
      ok: Type.Literal(true),
      status: Type.Literal(200),
      instanceId: short(64),
      target: Target,
      action: Type.Optional(short(64)),
      outlets: Type.Optional(Type.Array(OutletResult, { maxItems: 1024 })),
      settings: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown())),
    }),
    Type.Object({
      ok: Type.Literal(false),
      status: Type.Union([400, 404, 409, 502, 503, 504].map((s) => Type.Literal(s))),
      title: short(256),
      detail: short(4096),
      retryAfter: Type.Optional(Type.Number({ minimum: 0, maximum: 3600 })),
      outlets: Type.Optional(Type.Array(OutletResult, { maxItems: 1024 })),
      problem: Type.Optional(
        Type.Union(
          [
            "outcome-unknown",
            "superseded",
            "outlet-busy",
            "expired",
            "unsafe-name",
            "protected",
            "not-held",
          ].map((p) => Type.Literal(p)),
        ),
      ),
    }),
  ]),
});

/** The key forwards are signed with: derived from the API key, so the API key itself never travels. */
function forwardKey(apiKey: string): Buffer {
  return createHmac("sha256", apiKey).update("pdu-bridge replica forward v1").digest();
}

/** The signature of a forward's body under the installation's API key (hex). */
export function signForward(apiKey: string, body: string): string {
  return createHmac("sha256", forwardKey(apiKey)).update(body).digest("hex");
}

/** Whether `signature` is the body's signature under the API key (constant time; false without a key). */
export function forwardSigned(apiKey: string, body: string, signature: unknown): boolean {
  if (apiKey === "" || typeof signature !== "string") return false;
  const expected = Buffer.from(signForward(apiKey, body), "utf8");
  const given = Buffer.from(signature, "utf8");
  // Equal lengths first (timingSafeEqual needs them); the expected length is public.
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The message in a forward's body, or null when it is not one. */
export function parseForward(body: string): ForwardMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  return Value.Check(ForwardMessage, value) ? value : null;
}

/** An outcome another replica carried out: the member that did, for the surface's log. */
export type Forwarded<O> = O & { readonly carriedOutBy?: string };

/** What a replica needs to carry out the requests other replicas hand it. */
export interface ReplicaControl {
  readonly member: string;
  /** Whether this replica holds the instance now. */
  holds(instanceId: string): boolean;
  /** This replica's own control core (never the forwarding one: a forward is never forwarded again). */
  readonly local: ControlService;
  /** The member holding the instance as last seen, or null; the API URL a member advertises, or null. */
  holderOf(instanceId: string): string | null;
  urlOf(member: string): string | null;
}

/** What the forwarding needs of the cluster. */
export interface ForwardingCluster {
  readonly member: string;
  holds(instanceId: string): boolean;
  holderOf(instanceId: string): string | null;
  urlOf(member: string): string | null;
}

export interface ForwardingDeps {
  /** Read on every request (live configuration changes). */
  readonly config: () => Config;
  /** This replica's control core: requests for instances it holds. */
  readonly local: ControlService;
  readonly cluster: ForwardingCluster;
  readonly logger: Logger;
  /** Overrides {@link FORWARD_TIMEOUT_MS} (tests). */
  readonly timeoutMs?: number;
}

/** Network errors raised before a request could reach the other side: nothing was carried out. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** The control service of the REST surface among several replicas (see the file's comment). */
export class ForwardingControl implements ControlService {
  readonly #deps: ForwardingDeps;
  readonly #logger: Logger;
  readonly #agent: Agent;

  constructor(deps: ForwardingDeps) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ component: "forward" });
    const timeout = deps.timeoutMs ?? FORWARD_TIMEOUT_MS;
    this.#agent = new Agent({
      connectTimeout: 5000,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      connections: 64,
    });
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  execute(request: ControlRequest): Promise<Forwarded<ControlOutcome>> {
    const where = this.#where(request.instanceId);
    if (where === "here") return this.#deps.local.execute(request);
    const commandId = request.commandId ?? randomBytes(12).toString("base64url");
    const message: ForwardMessage = {
      kind: "command",
      instanceId: request.instanceId,
      target: request.target,
      action: request.action,
      source: restSource(request.source),
      commandId,
    };
    return this.#forward(where, message, `${request.action} on instance ${request.instanceId}`) as Promise<
      Forwarded<ControlOutcome>
    >;
  }

  applySettings(request: SettingsRequest): Promise<Forwarded<SettingsOutcome>> {
    const where = this.#where(request.instanceId);
    if (where === "here") {
      const { local } = this.#deps;
      return local.applySettings === undefined
        ? Promise.resolve(refuse(503, "Settings unavailable", "settings writes are not available"))
        : local.applySettings(request);
    }
    const message: ForwardMessage = {
      kind: "settings",
      instanceId: request.instanceId,
      target: request.target,
      settings: request.settings,
      source: restSource(request.source),
    };
    return this.#forward(where, message, `the settings write to instance ${request.instanceId}`) as Promise<
      Forwarded<SettingsOutcome>
    >;
  }

  /**
   * "here" when the local core answers (this replica holds the instance, or the request concerns
   * no instance another replica could carry out); else the configured id to forward.
   */
  #where(requested: string): "here" | { id: string } {
    const instances = this.#deps.config().instances;
    const lower = requested.toLowerCase();
    const instance =
      instances.find((i) => i.id === requested) ?? instances.find((i) => i.id.toLowerCase() === lower);
    if (instance === undefined || !instance.ActionsEnabled) return "here";
    return this.#deps.cluster.holds(instance.id) ? "here" : { id: instance.id };
  }

  async #forward(
    where: { id: string },
    message: ForwardMessage,
    what: string,
  ): Promise<Forwarded<ControlOutcome | SettingsOutcome>> {
    const { cluster } = this.#deps;
    const holder = cluster.holderOf(where.id);
    if (holder === null) {
      return refuse(
        503,
        "Instance not held",
        `no replica holds instance ${where.id} now (it is changing hands): ${what} was not sent; try again shortly`,
        { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
      );
    }
    const url = cluster.urlOf(holder);
    if (url === null) {
      return refuse(
        503,
        "Instance not reachable",
        `instance ${where.id} is held by replica ${holder}, which advertises no API address (Cluster.AdvertiseUrl, Api.Enabled): ${what} was not sent`,
        { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
      );
    }
    const apiKey = this.#deps.config().Api.ApiKey;
    if (apiKey === "") {
      // The API key is the replicas' shared secret: without it no replica would take the forward.
      return refuse(
        503,
        "Instance held elsewhere",
        `instance ${where.id} is held by replica ${holder}; handing requests to another replica needs Api.ApiKey (the replicas' shared secret): ${what} was not sent`,
        { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
      );
    }
    const body = JSON.stringify(message);
    const log = { instance: where.id, holder, kind: message.kind };
    let status: number;
    let text: string;
    try {
      const answer = await httpRequest(new URL(FORWARD_PATH, url), {
        method: "POST",
        dispatcher: this.#agent,
        headers: {
          "content-type": "application/json",
          [FORWARD_SIGNATURE_HEADER]: signForward(apiKey, body),
          [FORWARD_FROM_HEADER]: cluster.member,
        },
        body,
        signal: AbortSignal.timeout(this.#deps.timeoutMs ?? FORWARD_TIMEOUT_MS),
      });
      status = answer.statusCode;
      text = await readLimited(answer.body, FORWARD_ANSWER_LIMIT);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && NOT_SENT.has(code)) {
        this.#logger.warn({ ...log, error: code }, "forward: the holder did not take the connection");
        return refuse(
          503,
          "Instance not reachable",
          `replica ${holder} holding instance ${where.id} could not be reached: ${what} was not sent; try again shortly`,
          { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
        );
      }
      this.#logger.warn({ ...log, error: describe(error) }, "forward: the holder's answer was lost");
      return lost(holder, where.id, what);
    }
    if (status !== 200) {
      // 401 (the replicas' API keys differ) or 400 (the replicas' versions differ): refused there.
      this.#logger.error({ ...log, status }, "forward: refused by the holder");
      return refuse(
        502,
        "Forward refused",
        `replica ${holder} holding instance ${where.id} refused to carry out ${what} (HTTP ${status}): nothing was done; check that every replica runs the same version with the same Api.ApiKey`,
      );
    }
    const outcome = parseAnswer(text);
    if (outcome === null) {
      this.#logger.error(log, "forward: the holder's answer is not an outcome");
      return lost(holder, where.id, what);
    }
    return { ...outcome, carriedOutBy: holder };
  }
}

/** 502 outcome-unknown: the request may have been carried out by the holder. Never retried. */
function lost(holder: string, id: string, what: string): Refusal {
  return refuse(
    502,
    "Outcome unknown",
    `the answer of replica ${holder} holding instance ${id} was lost: ${what} may or may not have been carried out; check the outlet before trying again`,
    { problem: "outcome-unknown" },
  );
}

/** The source as it travels: only what the audit line needs (REST or console). */
function restSource(source: ControlRequest["source"]): ForwardMessage["source"] {
  if (source.surface === "console") {
    return {
      surface: "console",
      client: source.client,
      user: { sub: source.user.sub, name: source.user.name },
    };
  }
  // A REST request reaches the control service only once the key guard accepted its API key (a
  // console user's has a session instead), so the holder's audit line says `api-key`.
  if (source.surface === "rest") return { surface: "rest", client: source.client, key: true };
  // MQTT commands are taken by the holder only and never forwarded.
  return { surface: "rest", client: source.topic };
}

function parseAnswer(text: string): ControlOutcome | SettingsOutcome | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Value.Check(ForwardAnswer, value)) return null;
  return (value as { outcome: ControlOutcome | SettingsOutcome }).outcome;
}

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new Error(`the answer exceeds ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
