/**
 * The schemas of the asset control route and the sequence routes (docs/http.md
 * "Assets and sequences"): path parameters, bodies and answers, inline (the route table,
 * ../route-schemas.ts, gives them to the plugins).
 */
import Type from "typebox";
import { ASSET_ACTIONS } from "../../../control/asset-control.js";
import { INTERNAL_ERROR, problemResponse, RetryAfterHeader } from "../schemas.js";

const ASSET_ID = "^[A-Za-z0-9_-]{1,64}$";
const SEQUENCE_ID = "^[a-z0-9]{1,24}$";

export const AssetParams = Type.Object({
  id: Type.String({ pattern: ASSET_ID, description: "The asset's id (`Assets.<id>`)" }),
});

export const AssetControlBody = Type.Object(
  {
    action: Type.Enum([...ASSET_ACTIONS], { description: "What to do with every cord of the asset" }),
    confirm: Type.Optional(
      Type.Boolean({ description: "Needed (true) for the reboot of a protected asset" }),
    ),
  },
  { additionalProperties: false, description: "The action" },
);

const CordWrite = Type.Object({
  action: Type.Enum(["on", "off"]),
  result: Type.Enum(["done", "refused", "failed", "unknown"], {
    description: "refused: nothing was sent; unknown: it may or may not have acted",
  }),
  status: Type.Integer({ description: "What the outlet's own command would have answered" }),
  detail: Type.Optional(Type.String()),
  problem: Type.Optional(Type.String()),
});

const CordOutcome = Type.Object({
  cord: Type.Integer({ minimum: 0, description: "The cord's position in `Cords` (0-based)" }),
  instanceId: Type.String(),
  deviceId: Type.String(),
  index: Type.Integer({ minimum: 0 }),
  result: Type.Enum(["done", "refused", "failed", "unknown"]),
  writes: Type.Array(CordWrite, { description: "The off and the on of a reboot; one write otherwise" }),
});

const Cords = Type.Array(CordOutcome, { description: "Each cord's writes (empty: refused before any)" });

const AssetControlResult = Type.Object({
  ok: Type.Literal(true),
  asset: Type.String(),
  action: Type.Enum([...ASSET_ACTIONS]),
  outcome: Type.Literal("executed"),
  cords: Cords,
});

const AssetControlProblem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  asset: Type.String(),
  outcome: Type.Enum(["partial", "refused"]),
  cords: Cords,
});

const assetProblem = (description: string, retry = false) => ({
  description,
  ...(retry ? { headers: { "Retry-After": RetryAfterHeader } } : {}),
  content: { "application/problem+json": { schema: AssetControlProblem } },
});

/** `POST /api/v1/assets/:id/control`. */
export const ASSET_CONTROL_SCHEMA = {
  summary: "Switch on, switch off or reboot an asset, cord by cord",
  description:
    "Needs `X-Api-Key`. Each cord is written through the outlet's control path (its instance's " +
    "`ActionsEnabled`, relay protection, fencing among replicas). `reboot` switches every cord off, " +
    "waits the longest of the cords' reboot delays, their RelayProtection and 5 s, and switches " +
    'them on; a protected asset\'s reboot needs `"confirm": true`, and an `off` that would leave a ' +
    "protected asset with no live cord is refused. The answer lists each cord's writes.",
  operationId: "controlAsset",
  tags: ["Assets"],
  security: [{ ApiKey: [] }],
  params: AssetParams,
  body: AssetControlBody,
  response: {
    200: {
      description: "Every cord done (`executed`)",
      content: { "application/json": { schema: AssetControlResult } },
    },
    400: problemResponse("Body not valid JSON, action missing or not allowed, or a bad asset id"),
    401: problemResponse("X-Api-Key missing or wrong"),
    403: problemResponse("Control is disabled: no API key is configured"),
    404: assetProblem("Unknown asset, or a cord on an instance not configured"),
    409: assetProblem(
      "Refused, nothing sent: a cord's instance has ActionsEnabled: false; an off that would leave a protected asset with no live cord (type ending `protected`); a protected asset's reboot without confirm (`confirm-required`); a command already running for the asset (`asset-busy`); every cord refused by its outlet's checks",
    ),
    413: problemResponse("Body larger than 64 KiB"),
    415: problemResponse("Body not application/json"),
    429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
    500: INTERNAL_ERROR,
    502: assetProblem(
      "`partial`: some cords failed (each cord says why); type ending `outcome-unknown` when a cord's outcome is not known",
    ),
    503: assetProblem(
      "A cord not resolved yet (not polled), the service stopping, or control not available",
      true,
    ),
  },
};

export const SequenceParams = Type.Object({
  id: Type.String({ pattern: SEQUENCE_ID, description: "The sequence's id, as the 202 answered it" }),
});

export const SequenceBody = Type.Object(
  {
    action: Type.Enum(["on", "off"], { description: "Power the assets on, or off" }),
    assets: Type.Union(
      [
        Type.Literal("all"),
        Type.Array(Type.String({ pattern: ASSET_ID }), { minItems: 1, maxItems: 10_000 }),
      ],
      { description: "The asset ids, or `all`" },
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ pattern: ASSET_ID }), {
        maxItems: 100,
        description: "Only assets with at least one of these tags",
      }),
    ),
    dryRun: Type.Optional(Type.Boolean({ description: "Answer the plan only" })),
  },
  { additionalProperties: false },
);

const PlannedAsset = Type.Object({
  id: Type.String(),
  label: Type.String(),
  priority: Type.Integer(),
  startSeconds: Type.Number(),
  cords: Type.Integer(),
});

const Plan = Type.Object({
  action: Type.Enum(["on", "off"]),
  waves: Type.Array(
    Type.Object({
      index: Type.Integer(),
      priority: Type.Integer(),
      assets: Type.Array(PlannedAsset),
      startsAt: Type.Number({ description: "Seconds from the start, as planned" }),
      waitSeconds: Type.Number({ description: "What the next wave waits after this one is sent" }),
    }),
  ),
  refused: Type.Array(Type.Object({ id: Type.String(), reason: Type.String() })),
  assets: Type.Integer(),
  totalSeconds: Type.Number(),
});

const Step = Type.Object({
  asset: Type.String(),
  cord: Type.Integer({ minimum: 0 }),
  status: Type.Enum(["pending", "intent", "done", "refused", "failed", "unknown"]),
  detail: Type.Union([Type.String(), Type.Null()]),
});

const Progress = Type.Object({
  id: Type.String(),
  action: Type.Enum(["on", "off"]),
  state: Type.Enum(["running", "stopping", "done", "stopped"]),
  runner: Type.String({ description: "The replica running it (`<member>/<incarnation>`), or `local`" }),
  waves: Type.Integer(),
  wave: Type.Integer({ description: "The wave in progress (`waves` once every wave is done)" }),
  assets: Type.Array(
    Type.Object({
      id: Type.String(),
      wave: Type.Integer(),
      step: Type.Enum(["waiting", "running", "done", "skipped"], {
        description: "skipped: the sequence was stopped (or ended) before its wave",
      }),
      outcome: Type.Union([Type.Enum(["executed", "partial", "refused"]), Type.Null()]),
      detail: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  steps: Type.Array(Step, { description: "The cords of the wave in progress" }),
  executed: Type.Integer(),
  failed: Type.Integer(),
});

/** `POST /api/v1/sequences`. */
export const SEQUENCE_START_SCHEMA = {
  summary: "Plan, or start, a power sequence",
  description:
    "Needs `X-Api-Key`. Plans waves by priority (ties by id), at most `Sequences.MaxConcurrentStarts` " +
    "assets a wave, each wave waiting its slowest asset's `StartSeconds` plus `Sequences.GapSeconds`. " +
    "A dry run answers the plan; otherwise 202 with the sequence's id, and the waves are written " +
    "through asset control. A protected asset is never in an `off` sequence.",
  operationId: "startSequence",
  tags: ["Assets"],
  security: [{ ApiKey: [] }],
  body: SequenceBody,
  response: {
    200: { description: "The plan (a dry run)", content: { "application/json": { schema: Plan } } },
    202: {
      description: "Started",
      content: {
        "application/json": { schema: Type.Object({ id: Type.String(), plan: Plan }) },
      },
    },
    400: problemResponse("Body not valid, or the plan too large for the journal"),
    401: problemResponse("X-Api-Key missing or wrong"),
    403: problemResponse("Control is disabled: no API key is configured"),
    404: problemResponse("An asset id that is not configured (the whole plan is refused)"),
    409: problemResponse("A cord's instance has ActionsEnabled: false"),
    429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
    500: INTERNAL_ERROR,
    503: problemResponse("Sequences are not available now (the coordination engine cannot be reached)", {
      "Retry-After": RetryAfterHeader,
    }),
  },
};

/** `GET /api/v1/sequences/:id`. */
export const SEQUENCE_GET_SCHEMA = {
  summary: "A sequence's progress",
  description: "Each asset's step and outcome, and the cords of the wave in progress.",
  operationId: "getSequence",
  tags: ["Assets"],
  params: SequenceParams,
  response: {
    200: { description: "Its progress", content: { "application/json": { schema: Progress } } },
    400: problemResponse("A bad sequence id"),
    404: problemResponse("No such sequence (or its records are gone)"),
    500: INTERNAL_ERROR,
    502: problemResponse("Its records cannot be read back"),
    503: problemResponse("The coordination engine cannot be reached", { "Retry-After": RetryAfterHeader }),
  },
};

/** `DELETE /api/v1/sequences/:id`. */
export const SEQUENCE_STOP_SCHEMA = {
  summary: "Stop a sequence after the wave in progress",
  description:
    "Needs `X-Api-Key`. The wave in progress finishes (no asset is left half written); no later wave starts.",
  operationId: "stopSequence",
  tags: ["Assets"],
  security: [{ ApiKey: [] }],
  params: SequenceParams,
  response: {
    202: { description: "Stop asked", content: { "application/json": { schema: Progress } } },
    400: problemResponse("A bad sequence id"),
    401: problemResponse("X-Api-Key missing or wrong"),
    403: problemResponse("Control is disabled: no API key is configured"),
    404: problemResponse("No such sequence"),
    429: problemResponse("Too many wrong keys from this address", { "Retry-After": RetryAfterHeader }),
    500: INTERNAL_ERROR,
    503: problemResponse("The coordination engine cannot be reached", { "Retry-After": RetryAfterHeader }),
  },
};
