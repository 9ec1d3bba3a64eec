/**
 * `GET /api/v1/energy`: the energy of a period from `Energy.ReportSource` (src/energy/report.ts,
 * docs/energy.md "Reports"), as JSON or CSV; 409 naming the key when it is not set.
 */
import {
  energyReport,
  MAX_PERIOD_S,
  ReportSourceError,
  reportCsv,
  type EnergyReport,
  type Span,
} from "../../energy/report.js";
import { problem, sendProblem } from "../problem.js";
import type { HttpApp, HttpDeps } from "../types.js";
import { API_ROUTES } from "./paths.js";
import { API_ROUTE_SCHEMAS } from "./route-schemas.js";

const iso = (s: number): string => new Date(s * 1000).toISOString().replace(".000Z", "Z");
const span = (s: Span) => ({ from: iso(s.from), to: iso(s.to) });

/** The report as its JSON answer: times in RFC 3339. */
function reportJson(report: EnergyReport, source: string) {
  return {
    from: iso(report.from),
    to: iso(report.to),
    groupBy: report.groupBy,
    source,
    stepSeconds: report.stepSeconds,
    covered: report.covered === null ? null : span(report.covered),
    gaps: report.gaps.map(span),
    totalWh: report.totalWh,
    rows: report.rows.map((r) => ({
      ...r.labels,
      energyWh: r.energyWh,
      covered: r.covered === null ? null : span(r.covered),
      gaps: r.gaps.map(span),
    })),
  };
}

export function registerEnergyRoute(app: HttpApp, deps: HttpDeps): void {
  app.route({
    ...API_ROUTES.energy,
    schema: API_ROUTE_SCHEMAS.energy,
    handler: async (request, reply) => {
      const source = deps.config.Energy.ReportSource;
      if (source === null) {
        return sendProblem(
          reply,
          problem(
            409,
            "Energy.ReportSource is not set: name the Prometheus that scrapes the bridge (docs/energy.md, Reports)",
          ),
        );
      }
      const { from, to, groupBy = "outlet", format = "json" } = request.query;
      const start = Date.parse(from) / 1000;
      const end = Date.parse(to) / 1000;
      if (!Number.isInteger(start) || !Number.isInteger(end))
        return sendProblem(
          reply,
          problem(400, "from and to must be real times (RFC 3339, UTC, whole seconds)"),
        );
      if (end <= start || end - start > MAX_PERIOD_S)
        return sendProblem(
          reply,
          problem(400, `to must be after from, and at most ${MAX_PERIOD_S / 86_400} days later`),
        );
      let report: EnergyReport;
      try {
        report = await energyReport(source, start, end, groupBy);
      } catch (error) {
        if (!(error instanceof ReportSourceError)) throw error;
        return sendProblem(reply, problem(502, error.message));
      }
      if (format === "csv") {
        const name = `energy-${groupBy}-${iso(start)}-${iso(end)}.csv`.replace(/:/g, "");
        return reply
          .type("text/csv; charset=utf-8")
          .header("content-disposition", `attachment; filename="${name}"`)
          .send(reportCsv(report));
      }
      return reportJson(report, new URL(source).origin);
    },
  });
}
