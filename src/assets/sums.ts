/**
 * Sums over groups of assets: per tenant (an asset's `Tenant`, the tenant energy of docs/energy.md) or
 * per tag. Read at a scrape or a report, not per poll: one pass over the assets' states.
 */
import type { AssetState } from "./state.js";
import type { AssetDef, AssetModel } from "./types.js";

export interface GroupTotal {
  readonly key: string;
  /** The assets in the group, in id order. */
  readonly assets: readonly string[];
  /** W: the sum of the assets' power, or null when an asset's is not known. */
  readonly power: number | null;
  /** kWh: the sum of the assets' lifetime counters, or null when an asset has none. */
  readonly energyLifetime: number | null;
  /** The assets whose power or lifetime counter is not known now. */
  readonly unknown: readonly string[];
}

/** What groups an asset is in. */
export type GroupOf = (asset: AssetDef) => readonly string[];

export const byTenant: GroupOf = (asset) => (asset.tenant === null ? [] : [asset.tenant]);
export const byTag: GroupOf = (asset) => asset.tags;

/** The totals of every group, in key order. */
export function groupTotals(
  model: AssetModel,
  states: Iterable<AssetState>,
  groupOf: GroupOf,
): readonly GroupTotal[] {
  const groups = new Map<
    string,
    {
      assets: string[];
      power: number;
      energy: number;
      unknown: string[];
      noPower: boolean;
      noEnergy: boolean;
    }
  >();
  for (const state of states) {
    const asset = model.assets.get(state.id);
    if (asset === undefined) continue;
    for (const key of groupOf(asset)) {
      let g = groups.get(key);
      if (g === undefined)
        groups.set(
          key,
          (g = { assets: [], power: 0, energy: 0, unknown: [], noPower: false, noEnergy: false }),
        );
      g.assets.push(state.id);
      if (state.power === null) g.noPower = true;
      else g.power += state.power;
      if (state.energyLifetime === null) g.noEnergy = true;
      else g.energy += state.energyLifetime;
      if (state.power === null || state.energyLifetime === null) g.unknown.push(state.id);
    }
  }
  return [...groups.keys()].sort().map((key) => {
    const g = groups.get(key)!;
    return Object.freeze({
      key,
      assets: Object.freeze(g.assets.sort()),
      power: g.noPower ? null : g.power,
      energyLifetime: g.noEnergy ? null : g.energy,
      unknown: Object.freeze(g.unknown.sort()),
    });
  });
}
