/**
 * A sequence's journal: what the replica running a sequence writes to the coordination engine, step
 * by step, so that another replica resumes it when that one dies, and no cord is written twice.
 * Pure: the records, their changes and the resume rule; the engine calls (conditional writes on the
 * record's version, through the lease seam) are the wiring's.
 *
 * Records (one sequence, id `s`):
 * - `sequence-s`: the head ({@link JournalHead}): the plan's wave sizes and waits, the wave in
 *   progress and its steps (one per cord of its assets), the counts and the failures of the waves
 *   done, who runs it, whether a stop was asked. Small whatever the plan's size.
 * - `sequence-s-plan-<n>`: the plan's asset ids in order, {@link PLAN_CHUNK} a record
 *   ({@link JournalChunk}), written once at the start.
 *
 * The rules, for a runner:
 * 1. Before writing cords, mark at most {@link STEPS_IN_FLIGHT} steps `intent` and write the head
 *    (conditionally: a runner that lost the head's version stops at once, it is no longer the runner).
 * 2. Write each cord through the control path with the step's once-only id ({@link onceIdOf}): the
 *    cluster's fencing records it in the bucket lease before the write and refuses it ever after
 *    (src/cluster/elector.ts, ONCE_IDS_KEPT a bucket).
 * 3. Record each outcome (`done`, `refused`: nothing sent, `failed`, `unknown`) and write the head.
 * 4. When every step of the wave has an outcome, finish the wave and wait its `waits` seconds (on
 *    the runner's own clock; times in records are never compared across replicas), then the next.
 *
 * Resuming ({@link resumeStep}): a step with an outcome is never sent again; a `pending` one is sent
 * as usual; an `intent` one (the runner died between 1 and 3) is done when the outlet already shows
 * the action's state, else sent again with the same once-only id, which the fencing refuses when the
 * dead runner's write had been recorded (then its outcome is `unknown`). Keeping intents to
 * {@link STEPS_IN_FLIGHT} keeps them well inside the once-only ids a bucket keeps. The wave in
 * progress waits its full time again after a resume.
 */
import type { OutletState } from "../pdu/model.js";
import type { SequenceAction, SequencePlan } from "./sequence.js";

export const JOURNAL_VERSION = 1;
/** A sequence id: short, so that a once-only id made from it fits the fencing's 64 characters. */
export const SEQUENCE_ID_PATTERN = /^[A-Za-z0-9]{1,24}$/;
/** Asset ids per plan record. */
export const PLAN_CHUNK = 256;
/** Steps marked `intent` at most before their outcomes are recorded. */
export const STEPS_IN_FLIGHT = 32;
/** Failed assets listed in the head (the count goes on). */
export const FAILURES_KEPT = 100;

export type StepStatus = "pending" | "intent" | "done" | "refused" | "failed" | "unknown";
export type AssetOutcome = "executed" | "partial" | "refused";

export interface JournalStep {
  readonly asset: string;
  /** The cord's position in the asset's cords. */
  readonly cord: number;
  readonly onceId: string;
  readonly status: StepStatus;
  readonly detail: string | null;
}

export interface JournalHead {
  readonly v: typeof JOURNAL_VERSION;
  readonly id: string;
  readonly action: SequenceAction;
  /** The identity of the replica running it (`<member>/<incarnation>`). */
  readonly runner: string;
  /** Epoch ms on the starting replica's clock (shown, never compared). */
  readonly createdAt: number;
  readonly state: "running" | "stopping" | "done" | "stopped";
  /** Assets per wave. */
  readonly sizes: readonly number[];
  /** Seconds each wave waits after it is sent. */
  readonly waits: readonly number[];
  readonly chunks: number;
  /** The wave in progress; `sizes.length` once every wave is done. */
  readonly wave: number;
  /** The wave in progress's steps, in asset then cord order. */
  readonly steps: readonly JournalStep[];
  /** Assets executed in the waves done. */
  readonly executed: number;
  /** Assets of the waves done that were not executed (the first {@link FAILURES_KEPT}). */
  readonly failures: readonly {
    readonly asset: string;
    readonly outcome: AssetOutcome;
    readonly detail: string;
  }[];
  readonly failedCount: number;
}

export interface JournalChunk {
  readonly v: typeof JOURNAL_VERSION;
  readonly id: string;
  readonly n: number;
  readonly assets: readonly string[];
}

/** The once-only id of one cord's write in a sequence: the same on every replica that sends it. */
export function onceIdOf(sequenceId: string, wave: number, position: number, cord: number): string {
  return `q${sequenceId}-${wave}-${position}-${cord}`;
}

/** The records of a sequence about to start: the head (wave 0 not begun) and the plan's chunks. */
export function newJournal(
  id: string,
  plan: SequencePlan,
  runner: string,
  at: number,
): { readonly head: JournalHead; readonly chunks: readonly JournalChunk[] } {
  if (!SEQUENCE_ID_PATTERN.test(id)) throw new Error("a sequence id is 1-24 characters of A-Za-z0-9");
  const ids = plan.waves.flatMap((w) => w.assets.map((a) => a.id));
  const chunks: JournalChunk[] = [];
  for (let n = 0; n * PLAN_CHUNK < ids.length; n++)
    chunks.push({ v: JOURNAL_VERSION, id, n, assets: ids.slice(n * PLAN_CHUNK, (n + 1) * PLAN_CHUNK) });
  const head: JournalHead = {
    v: JOURNAL_VERSION,
    id,
    action: plan.action,
    runner,
    createdAt: at,
    state: plan.waves.length === 0 ? "done" : "running",
    sizes: plan.waves.map((w) => w.assets.length),
    waits: plan.waves.map((w) => w.waitSeconds),
    chunks: chunks.length,
    wave: 0,
    steps: [],
    executed: 0,
    failures: [],
    failedCount: 0,
  };
  return { head, chunks };
}

/** The asset ids of wave `k`, read from the plan's chunks (in order). */
export function waveAssets(head: JournalHead, chunks: readonly JournalChunk[], k: number): readonly string[] {
  let from = 0;
  for (let i = 0; i < k; i++) from += head.sizes[i] ?? 0;
  const to = from + (head.sizes[k] ?? 0);
  const ids: string[] = [];
  for (let n = Math.floor(from / PLAN_CHUNK); n * PLAN_CHUNK < to && n < chunks.length; n++) {
    const chunk = chunks.find((c) => c.n === n);
    if (chunk === undefined) throw new Error(`sequence ${head.id}: plan record ${n} is missing`);
    const base = n * PLAN_CHUNK;
    for (let i = Math.max(from, base); i < Math.min(to, base + chunk.assets.length); i++)
      ids.push(chunk.assets[i - base]!);
  }
  if (ids.length !== to - from) throw new Error(`sequence ${head.id}: plan records hold too few assets`);
  return ids;
}

/** The head with wave `head.wave` begun: a `pending` step per cord of its assets. */
export function beginWave(
  head: JournalHead,
  assets: readonly { readonly id: string; readonly cords: number }[],
): JournalHead {
  const steps: JournalStep[] = [];
  assets.forEach((a, position) => {
    for (let cord = 0; cord < a.cords; cord++)
      steps.push({
        asset: a.id,
        cord,
        onceId: onceIdOf(head.id, head.wave, position, cord),
        status: "pending",
        detail: null,
      });
  });
  return { ...head, steps };
}

/** The head with the next steps marked `intent` (at most {@link STEPS_IN_FLIGHT} in all), and those steps. */
export function nextBatch(head: JournalHead): {
  readonly head: JournalHead;
  readonly batch: readonly JournalStep[];
} {
  let room = STEPS_IN_FLIGHT - head.steps.filter((s) => s.status === "intent").length;
  // A stop asked lets the wave in progress finish: an asset is never left with some cords written.
  if (room <= 0 || (head.state !== "running" && head.state !== "stopping")) return { head, batch: [] };
  const batch: JournalStep[] = [];
  const steps = head.steps.map((s) => {
    if (room <= 0 || s.status !== "pending") return s;
    room--;
    const next = { ...s, status: "intent" as const };
    batch.push(next);
    return next;
  });
  return { head: batch.length === 0 ? head : { ...head, steps }, batch };
}

/** The head with one step's outcome. */
export function recordOutcome(
  head: JournalHead,
  onceId: string,
  status: Exclude<StepStatus, "pending" | "intent">,
  detail: string | null,
): JournalHead {
  return { ...head, steps: head.steps.map((s) => (s.onceId === onceId ? { ...s, status, detail } : s)) };
}

/** What a resuming runner does with a step of the wave in progress. */
export type ResumeDecision =
  { readonly do: "keep" } | { readonly do: "send"; readonly onceId: string } | { readonly do: "done" };

/** See the file's comment: `observed` is the outlet's state now as its PDU reports it, or null. */
export function resumeStep(
  step: JournalStep,
  action: SequenceAction,
  observed: OutletState | null,
): ResumeDecision {
  if (step.status === "pending") return { do: "send", onceId: step.onceId };
  if (step.status !== "intent") return { do: "keep" };
  if (observed === action) return { do: "done" };
  return { do: "send", onceId: step.onceId };
}

/** An asset's outcome from its steps: every cord done, none sent, or anything else. */
function assetOutcome(steps: readonly JournalStep[]): AssetOutcome {
  if (steps.every((s) => s.status === "done")) return "executed";
  if (steps.every((s) => s.status === "refused")) return "refused";
  return "partial";
}

/** Whether every step of the wave in progress has an outcome. */
export function waveComplete(head: JournalHead): boolean {
  return head.steps.every((s) => s.status !== "pending" && s.status !== "intent");
}

/**
 * The head with the wave in progress done (every step has an outcome): its assets counted, the next
 * wave in progress, or the sequence done (or stopped, when a stop was asked).
 */
export function finishWave(head: JournalHead): JournalHead {
  if (!waveComplete(head))
    throw new Error(`sequence ${head.id}: wave ${head.wave} has steps without an outcome`);
  const byAsset = new Map<string, JournalStep[]>();
  for (const s of head.steps) {
    const list = byAsset.get(s.asset);
    if (list === undefined) byAsset.set(s.asset, [s]);
    else list.push(s);
  }
  let executed = head.executed;
  let failedCount = head.failedCount;
  const failures = [...head.failures];
  for (const [asset, steps] of byAsset) {
    const outcome = assetOutcome(steps);
    if (outcome === "executed") executed++;
    else {
      failedCount++;
      const detail = steps
        .map((s) => `cord ${s.cord + 1}: ${s.status}${s.detail === null ? "" : ` (${s.detail})`}`)
        .join("; ");
      if (failures.length < FAILURES_KEPT) failures.push({ asset, outcome, detail });
    }
  }
  const wave = head.wave + 1;
  const state = wave >= head.sizes.length ? "done" : head.state === "stopping" ? "stopped" : head.state;
  return {
    ...head,
    wave: state === "stopped" ? head.sizes.length : wave,
    steps: [],
    executed,
    failures,
    failedCount,
    state,
  };
}

/** The head with a stop asked: the wave in progress is finished, no later wave starts. */
export function requestStop(head: JournalHead): JournalHead {
  return head.state === "running" ? { ...head, state: "stopping" } : head;
}

/** The head taken over by another runner (written conditionally on the version it read). */
export function takeOver(head: JournalHead, runner: string): JournalHead {
  return { ...head, runner };
}

/*
 * Reading the records back: another replica wrote them, so nothing is taken on trust. A record that
 * does not check is refused whole, with why; the wiring then reports the sequence as not resumable
 * rather than guess at what was written.
 */

const STEP_STATUSES: readonly StepStatus[] = ["pending", "intent", "done", "refused", "failed", "unknown"];
const HEAD_STATES: readonly JournalHead["state"][] = ["running", "stopping", "done", "stopped"];
const ASSET_ID = /^[A-Za-z0-9_-]{1,64}$/;
const ONCE_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Longest detail kept from a record. */
const DETAIL_MAX = 500;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isSeconds = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isDetail = (v: unknown): v is string | null =>
  v === null || (typeof v === "string" && v.length <= DETAIL_MAX);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseStep(v: unknown): JournalStep | null {
  if (!isRecord(v)) return null;
  const { asset, cord, onceId, status, detail } = v;
  if (typeof asset !== "string" || !ASSET_ID.test(asset) || !isCount(cord) || cord >= 8) return null;
  if (typeof onceId !== "string" || !ONCE_ID.test(onceId) || !STEP_STATUSES.includes(status as StepStatus))
    return null;
  if (!isDetail(detail)) return null;
  return { asset, cord, onceId, status: status as StepStatus, detail };
}

function parseFailure(v: unknown): JournalHead["failures"][number] | null {
  if (!isRecord(v)) return null;
  const { asset, outcome, detail } = v;
  if (typeof asset !== "string" || !ASSET_ID.test(asset)) return null;
  if (outcome !== "partial" && outcome !== "refused") return null;
  if (typeof detail !== "string" || detail.length > DETAIL_MAX * 8) return null;
  return { asset, outcome, detail };
}

function parseList<T>(v: unknown, max: number, each: (x: unknown) => T | null): T[] | null {
  if (!Array.isArray(v) || v.length > max) return null;
  const out: T[] = [];
  for (const x of v) {
    const parsed = each(x);
    if (parsed === null) return null;
    out.push(parsed);
  }
  return out;
}

/** Most waves a plan may have (10,000 assets one a wave). */
const MAX_WAVES = 10_000;

/** A head record's text as a head, or why it is refused. */
export function parseHead(text: string): JournalHead | { readonly problem: string } {
  const v = parseJson(text);
  if (!isRecord(v) || v.v !== JOURNAL_VERSION)
    return { problem: `not a version ${JOURNAL_VERSION} sequence head` };
  const { id, action, runner, createdAt, state, chunks, wave, executed, failedCount } = v;
  if (typeof id !== "string" || !SEQUENCE_ID_PATTERN.test(id)) return { problem: "bad id" };
  if (action !== "on" && action !== "off") return { problem: "bad action" };
  if (typeof runner !== "string" || runner.length > 200) return { problem: "bad runner" };
  if (!HEAD_STATES.includes(state as JournalHead["state"])) return { problem: "bad state" };
  if (
    !isCount(createdAt) ||
    !isCount(chunks) ||
    !isCount(wave) ||
    !isCount(executed) ||
    !isCount(failedCount)
  )
    return { problem: "bad counts" };
  const sizes = parseList(v.sizes, MAX_WAVES, (x) => (isCount(x) && x > 0 ? x : null));
  const waits = parseList(v.waits, MAX_WAVES, (x) => (isSeconds(x) ? x : null));
  const steps = parseList(v.steps, 1000 * 8, parseStep);
  const failures = parseList(v.failures, FAILURES_KEPT, parseFailure);
  if (sizes === null || waits === null || waits.length !== sizes.length || wave > sizes.length)
    return { problem: "bad waves" };
  if (steps === null || failures === null) return { problem: "bad steps or failures" };
  const total = sizes.reduce((s, n) => s + n, 0);
  if (chunks !== Math.ceil(total / PLAN_CHUNK)) return { problem: "chunk count does not match the waves" };
  return {
    v: JOURNAL_VERSION,
    id,
    action,
    runner,
    createdAt,
    state: state as JournalHead["state"],
    sizes,
    waits,
    chunks,
    wave,
    steps,
    executed,
    failures,
    failedCount,
  };
}

/** A plan record's text as a chunk of sequence `id`, or why it is refused. */
export function parseChunk(text: string, id: string): JournalChunk | { readonly problem: string } {
  const v = parseJson(text);
  if (!isRecord(v) || v.v !== JOURNAL_VERSION || v.id !== id || !isCount(v.n))
    return { problem: "not a plan record of this sequence" };
  const assets = parseList(v.assets, PLAN_CHUNK, (x) =>
    typeof x === "string" && ASSET_ID.test(x) ? x : null,
  );
  if (assets === null || assets.length === 0) return { problem: "bad asset ids" };
  return { v: JOURNAL_VERSION, id, n: v.n, assets };
}
