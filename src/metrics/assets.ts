/**
 * The asset and feed families of `/metrics` (docs/metrics.md, "Assets and feeds"), read at scrape
 * time from the assets part's view (src/assets/view.ts):
 *
 * - `pdu_asset_power_watts{asset}`: the sum over its cords (left out while it is not known);
 * - `pdu_asset_cords_live{asset}` and `pdu_asset_cords{asset}`: its cords live now, and configured;
 * - `pdu_asset_redundancy_lost{asset}`: 1 while its redundancy is lost, else 0;
 * - `pdu_asset_energy_lifetime_wh_total{asset,tenant}`: the sum of its cords' lifetime energy
 *   counters (a counter: they never decrease), what the energy reports by asset and tenant read;
 * - `pdu_feed_loss_projected_ratio{feed,instance,device,entity}`: what an entity on another feed
 *   would carry if `feed` failed, divided by its rating (rated entities only).
 *
 * The families are declared whether or not assets are configured. Among several replicas an asset's
 * series come from the replica that polls its first cord's instance, the feeds' from the one that
 * polls the first instance (`AssetsView.publishes`, `publishesFleet`). Asset and feed ids are safe
 * names (the configuration's rule); device and entity ids that are not are left out.
 */
import { ASSETS_SCOPE, FEEDS_SCOPE } from "../assets/alarms.js";
import type { AssetsView } from "../assets/view.js";
import { EMPTY_REPORT } from "../pdu/load.js";
import { nameProblem } from "../names.js";
import type { LoadSource } from "./alarms.js";
import { escapeLabel } from "./readings.js";

interface AssetFamily {
  readonly name: string;
  readonly help: string;
  readonly type: "gauge" | "counter";
  write(view: AssetsView): string;
}

const safe = (id: string): boolean => nameProblem(id) === null;

/** `name{asset="id"} value` for every asset published here whose `value` is not null. */
function perAsset(view: AssetsView, name: string, value: (id: string) => number | null): string {
  let out = "";
  for (const def of view.model.assets.values()) {
    if (!view.publishes(def)) continue;
    const v = value(def.id);
    if (v !== null) out += `${name}{asset="${escapeLabel(def.id)}"} ${v}\n`;
  }
  return out;
}

const FAMILIES: readonly AssetFamily[] = [
  {
    name: "pdu_asset_power_watts",
    type: "gauge",
    help: "Real power of an asset: the sum over its cords (absent while a cord's is not known)",
    write: (view) => perAsset(view, "pdu_asset_power_watts", (id) => view.book.get(id)?.power ?? null),
  },
  {
    name: "pdu_asset_cords_live",
    type: "gauge",
    help: "Cords of an asset live now (its PDU online and the outlet on)",
    write: (view) => perAsset(view, "pdu_asset_cords_live", (id) => view.book.get(id)?.cordsLive ?? null),
  },
  {
    name: "pdu_asset_cords",
    type: "gauge",
    help: "Cords of an asset configured",
    write: (view) => perAsset(view, "pdu_asset_cords", (id) => view.book.get(id)?.cords ?? null),
  },
  {
    name: "pdu_asset_redundancy_lost",
    type: "gauge",
    help: "1 while an asset's redundancy is lost (a cord off, unknown or idle for 2 polls in a row), else 0",
    write: (view) =>
      perAsset(view, "pdu_asset_redundancy_lost", (id) => {
        const s = view.book.get(id);
        return s === undefined ? null : s.redundancy === "lost" ? 1 : 0;
      }),
  },
  {
    name: "pdu_asset_energy_lifetime_wh_total",
    type: "counter",
    help: "Lifetime energy of an asset (Wh): the sum of its cords' lifetime counters, which never decrease (absent while a cord has none)",
    write(view) {
      let out = "";
      for (const def of view.model.assets.values()) {
        const kwh = view.publishes(def) ? (view.book.get(def.id)?.energyLifetime ?? null) : null;
        if (kwh === null) continue;
        const tenant = def.tenant === null ? "" : `,tenant="${escapeLabel(def.tenant)}"`;
        out += `pdu_asset_energy_lifetime_wh_total{asset="${escapeLabel(def.id)}"${tenant}} ${Math.round(kwh * 1000 * 1000) / 1000}\n`;
      }
      return out;
    },
  },
  {
    name: "pdu_feed_loss_projected_ratio",
    type: "gauge",
    help: "What an entity on another feed would carry if the feed failed, divided by its rating (1 is the rating); rated entities only",
    write(view) {
      if (!view.publishesFleet()) return "";
      let out = "";
      for (const p of view.projections()) {
        for (const e of p.entities) {
          if (e.ratio === null || !safe(e.deviceId) || !safe(e.key)) continue;
          out += `pdu_feed_loss_projected_ratio{feed="${escapeLabel(p.feed)}",instance="${escapeLabel(e.instance)}",device="${escapeLabel(e.deviceId)}",entity="${escapeLabel(e.key)}"} ${e.ratio}\n`;
        }
      }
      return out;
    },
  },
];

/** The family names (for documentation and tests). */
export const ASSET_METRICS: readonly string[] = FAMILIES.map((f) => f.name);

/** The asset and feed families, each one group; declared without a view too. */
export function* assetChunks(view: AssetsView | undefined): Generator<string> {
  for (const f of FAMILIES) {
    const head = `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n`;
    yield view === undefined ? head : head + f.write(view);
  }
}

/**
 * The alarms about several PDUs as sources of `pdu_alarm_active` (./alarms.ts), under `$assets` and
 * `$feeds` in the place of the instance; the assets' redundancy where each asset is published, the
 * feeds' where the fleet is.
 */
export function fleetLoadSources(view: AssetsView | undefined): LoadSource[] {
  if (view === undefined) return [];
  const published = view.assetAlarms().filter((a) => {
    const def = view.model.assets.get(a.deviceId);
    return def !== undefined && view.publishes(def);
  });
  const sources: LoadSource[] = [{ instanceId: ASSETS_SCOPE, load: { ...EMPTY_REPORT, alarms: published } }];
  if (view.publishesFleet())
    sources.push({ instanceId: FEEDS_SCOPE, load: { ...EMPTY_REPORT, alarms: view.feedAlarms() } });
  return sources;
}
