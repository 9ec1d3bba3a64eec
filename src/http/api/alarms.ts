/**
 * `GET /api/v1/alarms`: the active alarms of every instance (or of one), worst first, from each
 * instance's load report (src/pdu/load.ts; docs/alarms.md), and the alarms about several PDUs under
 * `$assets` (an asset's redundancy) and `$feeds` (a feed's loss; docs/assets.md). An instance whose
 * last poll failed keeps the alarms of its last good snapshot, marked `stale`.
 */
import { ASSETS_SCOPE, FEEDS_SCOPE, fleetAlarmJson, type FleetAlarm } from "../../assets/alarms.js";
import { findInstance } from "../../config/instance-lookup.js";
import { alarmJson } from "../../pdu/load.js";
import type { HttpApp } from "../types.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { API_PATHS, API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

export const ALARMS_PATH = API_PATHS.alarms;

export function registerAlarmsRoute(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.alarms,
    schema: API_ROUTE_SCHEMAS.alarms,
    handler: (request, reply) => {
      const wanted = request.query.instance;
      const all = deps.store.list();
      const fleet = fleetAlarms(deps, wanted);
      let statuses = all;
      if (wanted !== undefined) {
        const one = fleet === null ? findInstance(all, wanted) : undefined;
        if (one === undefined && fleet === null) {
          const detail = `unknown instance ${JSON.stringify(wanted)}; configured instances: ${all.map((s) => s.id).join(", ")} (and ${ASSETS_SCOPE}, ${FEEDS_SCOPE})`;
          return sendProblem(reply, problem(404, detail));
        }
        statuses = one === undefined ? [] : [one];
      }
      const alarms = [
        ...statuses.flatMap((s) =>
          s.load.alarms.map((a) => ({
            ...alarmJson(s.id, a),
            stale: s.consecutiveFailures > 0,
            ...(a.hidden === true ? { hidden: true as const } : {}),
          })),
        ),
        ...(fleet ?? []).map((a) => ({ ...fleetAlarmJson(a), stale: false })),
      ];
      // Stable: instances keep configuration order within a severity, the fleet's come after.
      return alarms.sort((a, b) => (a.severity === b.severity ? 0 : a.severity === "critical" ? -1 : 1));
    },
  });
}

/**
 * The alarms about several PDUs to list: all of them without `?instance=`, one scope's when it names
 * `$assets` or `$feeds`, else null (and none listed).
 */
function fleetAlarms(deps: HttpDeps, wanted: string | undefined): readonly FleetAlarm[] | null {
  const view = deps.assets;
  if (wanted === ASSETS_SCOPE) return view?.assetAlarms() ?? [];
  if (wanted === FEEDS_SCOPE) return view?.feedAlarms() ?? [];
  if (wanted !== undefined || view === undefined) return wanted === undefined ? [] : null;
  return [...view.assetAlarms(), ...view.feedAlarms()];
}
