/**
 * `GET /api/v1/alarms`: the active alarms of every instance (or of one), worst first, from each
 * instance's load report (src/pdu/load.ts; docs/alarms.md). An instance whose last poll failed keeps
 * the alarms of its last good snapshot, marked `stale`.
 */
import Type from "typebox";
import { alarmJson } from "../../pdu/load.js";
import type { HttpApp } from "../types.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpDeps } from "../types.js";
import { API_PATHS, API_ROUTES } from "./paths.js";
import { INTERNAL_ERROR, jsonArray, problemResponse } from "./schemas.js";

export const ALARMS_PATH = API_PATHS.alarms;

export function registerAlarmsRoute(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.alarms,
    schema: {
      summary: "Active alarms: loads against ratings, tripped breakers and what the PDUs report",
      description:
        "Every active alarm, critical first, then by instance (configuration order), device and place. " +
        "`?instance=` limits it to one instance (matched case-insensitively). Thresholds: `Alarms` in the " +
        "configuration; ratings: the PDU's, else `Pdus.<id>.Ratings`.",
      operationId: "listAlarms",
      tags: ["Alarms"],
      querystring: Type.Object(
        {
          instance: Type.Optional(
            Type.String({ minLength: 1, maxLength: 64, description: "Only this instance" }),
          ),
        },
        { additionalProperties: false },
      ),
      response: {
        200: jsonArray("Alarm", "The active alarms; [] when there are none"),
        400: problemResponse("Unknown query parameter or empty instance"),
        404: problemResponse("No such instance"),
        500: INTERNAL_ERROR,
      },
    },
    handler: (request, reply) => {
      const wanted = request.query.instance;
      const all = deps.store.list();
      let statuses = all;
      if (wanted !== undefined) {
        const lower = wanted.toLowerCase();
        const exact = deps.store.get(wanted);
        statuses = exact ? [exact] : all.filter((s) => s.id.toLowerCase() === lower);
        if (statuses.length === 0) {
          const detail = `unknown instance ${JSON.stringify(wanted)}; configured instances: ${all.map((s) => s.id).join(", ")}`;
          return sendProblem(reply, problem(404, detail));
        }
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
