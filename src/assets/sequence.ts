/**
 * Power sequences (docs/assets.md), planned: which assets, in which waves, waiting how long. Pure; the
 * journal that lets another replica resume a sequence is ./journal.ts.
 *
 * - `on`: by priority (lower first), ties by id. A wave holds assets of one priority only (an asset
 *   of a later priority never starts before every asset of an earlier one has), at most
 *   `MaxConcurrentStarts` of them; it waits the `StartSeconds` of its slowest asset plus
 *   `GapSeconds` before the next wave starts.
 * - `off`: by priority the other way round (higher first, so what depends on a database stops
 *   before it), ties by id, at most `MaxConcurrentStarts` per wave, each wave waiting `GapSeconds`
 *   (nothing starts, so there is no start-up current to wait for). A protected asset is never in an
 *   `off` sequence: it is listed as refused (an operator powers a protected asset off on its own,
 *   through the asset's command and its rule).
 * - The selection: the ids asked for (or every asset), and when tags are given, only those with
 *   at least one of them. An id that is not configured refuses the whole plan.
 */
import type { AssetDef, AssetModel } from "./types.js";

export type SequenceAction = "on" | "off";

/** What a sequence is asked for (`POST /api/v1/sequences`). */
export interface SequenceRequest {
  readonly action: SequenceAction;
  readonly assets: readonly string[] | "all";
  readonly tags?: readonly string[];
}

export interface PlannedAsset {
  readonly id: string;
  readonly label: string;
  readonly priority: number;
  readonly startSeconds: number;
  readonly cords: number;
}

export interface Wave {
  /** From 0. */
  readonly index: number;
  readonly priority: number;
  readonly assets: readonly PlannedAsset[];
  /** Seconds from the sequence's start when the wave is sent (as planned: writes take time too). */
  readonly startsAt: number;
  /** Seconds the next wave waits after this one is sent (the last wave: its start-up time only). */
  readonly waitSeconds: number;
}

/** A plan, and what a dry run answers. */
export interface SequencePlan {
  readonly action: SequenceAction;
  readonly waves: readonly Wave[];
  /** Selected assets left out, with why (a protected asset in an `off`). */
  readonly refused: readonly { readonly id: string; readonly reason: string }[];
  /** Assets in the waves. */
  readonly assets: number;
  /** Seconds from the start until the last wave's assets have started, as planned. */
  readonly totalSeconds: number;
}

export type PlanResult =
  | { readonly ok: true; readonly plan: SequencePlan }
  | { readonly ok: false; readonly unknown: readonly string[] };

/** The plan of a request over the configured assets, or the ids it names that are not configured. */
export function planSequence(model: AssetModel, request: SequenceRequest): PlanResult {
  const picked = select(model, request);
  if (!Array.isArray(picked)) return picked;
  const refused: { id: string; reason: string }[] = [];
  const chosen: AssetDef[] = [];
  for (const asset of picked) {
    if (request.action === "off" && asset.protected)
      refused.push({ id: asset.id, reason: "protected: an off sequence never cuts a protected asset" });
    else chosen.push(asset);
  }
  const on = request.action === "on";
  chosen.sort((a, b) =>
    a.priority !== b.priority
      ? on
        ? a.priority - b.priority
        : b.priority - a.priority
      : a.id < b.id
        ? -1
        : 1,
  );
  const waves = buildWaves(chosen, on, model.sequences.maxConcurrentStarts, model.sequences.gapSeconds);
  const last = waves[waves.length - 1];
  return {
    ok: true,
    plan: Object.freeze({
      action: request.action,
      waves: Object.freeze(waves),
      refused: Object.freeze(refused),
      assets: chosen.length,
      totalSeconds: last === undefined ? 0 : last.startsAt + last.waitSeconds,
    }),
  };
}

function select(model: AssetModel, request: SequenceRequest): AssetDef[] | { ok: false; unknown: string[] } {
  let picked: AssetDef[];
  if (request.assets === "all") picked = [...model.assets.values()];
  else {
    const unknown = request.assets.filter((id) => !model.assets.has(id));
    if (unknown.length > 0) return { ok: false, unknown: [...new Set(unknown)] };
    picked = [...new Set(request.assets)].map((id) => model.assets.get(id)!);
  }
  const tags = request.tags;
  if (tags !== undefined && tags.length > 0)
    picked = picked.filter((a) => a.tags.some((t) => tags.includes(t)));
  return picked;
}

function buildWaves(sorted: readonly AssetDef[], on: boolean, max: number, gap: number): Wave[] {
  const waves: Wave[] = [];
  let startsAt = 0;
  let i = 0;
  while (i < sorted.length) {
    const priority = sorted[i]!.priority;
    const members: PlannedAsset[] = [];
    while (i < sorted.length && members.length < max && sorted[i]!.priority === priority) {
      const a = sorted[i++]!;
      members.push(
        Object.freeze({
          id: a.id,
          label: a.label,
          priority,
          startSeconds: a.startSeconds,
          cords: a.cords.length,
        }),
      );
    }
    const slowest = on ? Math.max(...members.map((m) => m.startSeconds)) : 0;
    const isLast = i >= sorted.length;
    const waitSeconds = isLast ? slowest : slowest + gap;
    waves.push(
      Object.freeze({ index: waves.length, priority, assets: Object.freeze(members), startsAt, waitSeconds }),
    );
    startsAt += waitSeconds;
  }
  return waves;
}
