/**
 * The protocol between replicas (docs/cluster.md, "REST on any replica"): where a replica takes the
 * requests other replicas hand it, the headers, the limits, the messages and answers as schemas,
 * and how both sides sign and check them. The client (./client.ts) and the route (./route.ts) are
 * its two ends; nothing else speaks it.
 */
import Type, { type Static } from "typebox";
import { Value } from "typebox/value";
import { WAIT_LIMIT_MS } from "../../control/outlet-turns.js";
import type { ControlOutcome, ControlRequest, SettingsOutcome } from "../../control/types.js";
import { sha256 } from "./signing.js";

/** Where a replica takes the control requests other replicas hand it (hidden from the OpenAPI document). */
export const FORWARD_PATH = "/api/v1/replica/forward";
/** Where a replica answers another's read of one instance's readings (hidden likewise). */
export const READ_PATH = "/api/v1/replica/readings";
/**
 * Where a replica answers another's ask for what its web console shows of the instances it holds
 * (hidden likewise): their statuses, the snapshots asked for, and the control events it carried out.
 */
export const CONSOLE_PATH = "/api/v1/replica/console";
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
  // An asset command taken from MQTT by one replica, its cords written by their holders.
  Type.Object({ surface: Type.Literal("mqtt"), topic: short(1024) }, { additionalProperties: false }),
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
      // An asset's cord (asset control, sequences): once-only ids for on/off, the asset named.
      once: Type.Optional(Type.Boolean()),
      asset: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" })),
      assetCycle: Type.Optional(Type.Boolean()),
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
export const ForwardAnswer = Type.Object({
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
            "relay-protection",
          ].map((p) => Type.Literal(p)),
        ),
      ),
    }),
  ]),
});

/** Snapshots one console ask names at most (the instances open in PDU views on the asking replica). */
export const CONSOLE_SNAPSHOTS_MAX = 64;

/**
 * What one replica asks another's console for: the statuses of the instances it holds (when a
 * console is open on the asking replica), the snapshots of some of them, and the control events
 * it carried out after the asking replica's cursor (-1: all it keeps).
 */
export const ConsoleAsk = Type.Object(
  {
    statuses: Type.Boolean(),
    snapshots: Type.Array(short(64), { maxItems: CONSOLE_SNAPSHOTS_MAX }),
    eventsAfter: Type.Integer({ minimum: -1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
export type ConsoleAsk = Static<typeof ConsoleAsk>;

/** A console ask's body, or null when it is not one. */
export function parseConsoleAsk(body: string): ConsoleAsk | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  return Value.Check(ConsoleAsk, value) ? value : null;
}

/** What one replica asks another for: one instance's readings. */
export const ReadMessage = Type.Object({ instanceId: short(64) }, { additionalProperties: false });
export type ReadMessage = Static<typeof ReadMessage>;

/** A read's body, or null when it is not one. */
export function parseRead(body: string): ReadMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  return Value.Check(ReadMessage, value) ? value : null;
}

/**
 * The user a forward claims, as its signature covers it: `api-key` (REST with the key),
 * `console:<SHA-256 of the subject>` (a console user), `-` (nobody: a read, or no key).
 */
export function claimedUser(source: ForwardMessage["source"] | null): string {
  if (source === null) return "-";
  if (source.surface === "console") return `console:${sha256(source.user.sub)}`;
  return source.surface === "rest" && source.key === true ? "api-key" : "-";
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

/** The source as it travels: only what the audit line needs (REST, console, or an asset's MQTT command). */
export function restSource(source: ControlRequest["source"]): ForwardMessage["source"] {
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
  // An outlet's MQTT command is taken by its holder only; an asset's is taken by one replica, which
  // hands each cord to its holder.
  return { surface: "mqtt", topic: source.topic.slice(0, 1024) };
}

/** The outcome in a holder's answer, or null when it is not one (checked against its schema). */
export function parseAnswer(text: string): ControlOutcome | SettingsOutcome | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Value.Check(ForwardAnswer, value)) return null;
  return (value as { outcome: ControlOutcome | SettingsOutcome }).outcome;
}
