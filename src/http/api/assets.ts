/**
 * `GET /api/v1/assets`, `/api/v1/assets/{assetId}` and `/api/v1/feeds` (docs/assets.md, section
 * 16): read from the assets part's view (src/assets/view.ts) at each request, so they show the
 * book and the projection in force. Among several replicas a replica answers what it sees: cords on
 * instances another replica polls are `unknown` (`not-held`), never stale.
 */
import { fleetAlarmJson } from "../../assets/alarms.js";
import type { AssetState, CordReading } from "../../assets/state.js";
import type { AssetDef } from "../../assets/types.js";
import type { AssetsView } from "../../assets/view.js";
import type { FeedProjection } from "../../assets/feed-loss.js";
import type { FeedTotal } from "../../assets/feeds.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

/** The three routes (answering empty, or 404, without an assets view). */
export function registerAssetRoutes(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.assets,
    schema: API_ROUTE_SCHEMAS.assets,
    handler: (request) => {
      const view = deps.assets;
      if (view === undefined) return [];
      const { tenant, tag, state, redundancy } = request.query;
      const out: ReturnType<typeof assetJson>[] = [];
      for (const s of view.book.states()) {
        const def = view.model.assets.get(s.id);
        if (def === undefined) continue;
        if (tenant !== undefined && def.tenant !== tenant) continue;
        if (tag !== undefined && !def.tags.includes(tag)) continue;
        if (
          (state !== undefined && s.state !== state) ||
          (redundancy !== undefined && s.redundancy !== redundancy)
        )
          continue;
        out.push(assetJson(def, s));
      }
      return out;
    },
  });
  app.route({
    ...API_ROUTES.asset,
    schema: API_ROUTE_SCHEMAS.asset,
    handler: (request, reply) => {
      const view = deps.assets;
      const id = request.params.assetId;
      const def = view?.model.assets.get(id);
      const state = view?.book.get(id);
      if (def === undefined || state === undefined) {
        const known = view === undefined ? 0 : view.model.assets.size;
        return sendProblem(reply, problem(404, `unknown asset ${JSON.stringify(id)} (${known} configured)`));
      }
      return assetJson(def, state);
    },
  });
  app.route({
    ...API_ROUTES.feeds,
    schema: API_ROUTE_SCHEMAS.feeds,
    handler: () => (deps.assets === undefined ? [] : feedsJson(deps.assets)),
  });
}

/** An asset as the routes answer it (schema `Asset`). */
export function assetJson(def: AssetDef, s: AssetState) {
  return {
    id: def.id,
    label: def.label,
    protected: def.protected,
    priority: def.priority,
    tenant: def.tenant,
    tags: def.tags,
    startSeconds: def.startSeconds,
    state: s.state,
    power: s.power,
    current: s.current,
    energy: s.energy,
    cordsLive: s.cordsLive,
    cords: s.cords,
    redundancy: s.redundancy,
    readings: s.readings.map(cordJson),
  };
}

function cordJson(r: CordReading) {
  return {
    cord: r.cord,
    instanceId: r.instance,
    deviceId: r.deviceId,
    index: r.index,
    status: r.status,
    outletState: r.outletState,
    problem: r.problem,
    detail: r.detail,
    power: r.power,
    current: r.current,
    energy: r.energy,
    feedsFrom: r.feedsFrom,
    feed: r.feed,
  };
}

/** Every feed with its totals, its projection and its alarms (schema `Feed`). */
function feedsJson(view: AssetsView) {
  const projections = new Map(view.projections().map((p) => [p.feed, p]));
  const alarms = view.feedAlarms();
  return view.feedTotals().map((total: FeedTotal) => ({
    id: total.feed,
    label: total.label,
    power: total.power,
    current: total.current,
    devices: total.devices,
    unseen: total.unseen,
    ifLost: projectionJson(projections.get(total.feed), view.projectedAt()),
    alarms: alarms.filter((a) => a.feed === total.feed).map((a) => ({ ...fleetAlarmJson(a), stale: false })),
  }));
}

function projectionJson(p: FeedProjection | undefined, at: number | null) {
  if (p === undefined) return { entities: [], dark: [], atRisk: [], unplaced: [], unseen: [], madeUtc: null };
  return {
    entities: p.entities.map((e) => ({
      instanceId: e.instance,
      deviceId: e.deviceId,
      key: e.key,
      name: e.name,
      measured: e.measured,
      added: e.added,
      projected: e.projected,
      rating: e.rating,
      ratio: e.ratio,
      exact: e.exact,
    })),
    dark: [...p.dark],
    atRisk: [...p.atRisk],
    unplaced: p.unplaced.map((u) => ({ instanceId: u.instance, deviceId: u.deviceId, amps: u.amps })),
    unseen: [...p.unseen],
    madeUtc: at === null ? null : new Date(at).toISOString(),
  };
}
