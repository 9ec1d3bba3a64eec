/**
 * `GET /api/v1/alarms`: the active alarms of every instance (or of one), worst first, from each
 * instance's load report (src/pdu/load.ts; docs/alarms.md). An instance whose last poll failed keeps
 * the alarms of its last good snapshot, marked `stale`.
 */
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
      let statuses = all;
      if (wanted !== undefined) {
        const one = findInstance(all, wanted);
        if (one === undefined) {
          const detail = `unknown instance ${JSON.stringify(wanted)}; configured instances: ${all.map((s) => s.id).join(", ")}`;
          return sendProblem(reply, problem(404, detail));
        }
        statuses = [one];
      }
      const alarms = statuses.flatMap((s) =>
        s.load.alarms.map((a) => ({
          ...alarmJson(s.id, a),
          stale: s.consecutiveFailures > 0,
          ...(a.hidden === true ? { hidden: true as const } : {}),
        })),
      );
      // Stable: instances keep configuration order within a severity.
      return alarms.sort((a, b) => (a.severity === b.severity ? 0 : a.severity === "critical" ? -1 : 1));
    },
  });
}
