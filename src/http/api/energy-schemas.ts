/**
 * The schema of `GET /api/v1/energy` (docs/energy.md, "Reports"): the energy of a period per
 * outlet, asset, tenant or instance, with the data's coverage, as JSON or CSV.
 */
import Type from "typebox";
import { GROUP_BYS } from "../../energy/report.js";
import { INTERNAL_ERROR, problemResponse } from "./schemas.js";

/** A time as the report takes and gives it: RFC 3339 in UTC to the second (`2026-11-01T00:00:00Z`). */
export const REPORT_TIME_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$";

const time = (description: string) => Type.String({ pattern: REPORT_TIME_PATTERN, description });

const SpanSchema = Type.Object(
  { from: Type.String({ format: "date-time" }), to: Type.String({ format: "date-time" }) },
  { additionalProperties: false },
);

const RowSchema = Type.Object(
  {
    instance: Type.Optional(Type.String()),
    device: Type.Optional(Type.String()),
    outlet: Type.Optional(Type.String()),
    asset: Type.Optional(Type.String()),
    tenant: Type.Optional(Type.String()),
    energyWh: Type.Number({ minimum: 0, description: "Energy in the period (Wh)" }),
    covered: Type.Union([SpanSchema, Type.Null()], {
      description:
        "When the row's data existed within the period (its instance's, for an outlet); null: never",
    }),
    gaps: Type.Array(SpanSchema, { description: "Stretches within `covered` without data" }),
  },
  { additionalProperties: false },
);

export const EnergyReportSchema = Type.Object(
  {
    from: Type.String({ format: "date-time", description: "The period's start, as asked" }),
    to: Type.String({ format: "date-time", description: "The period's end, as asked" }),
    groupBy: Type.Enum(GROUP_BYS),
    source: Type.String({ description: "Energy.ReportSource" }),
    stepSeconds: Type.Integer({ minimum: 1, description: "Gaps shorter than this are not seen" }),
    covered: Type.Union([SpanSchema, Type.Null()], {
      description: "When any lifetime counter had data within the period; null: none at all",
    }),
    gaps: Type.Array(SpanSchema, { description: "Stretches within `covered` when no counter had data" }),
    totalWh: Type.Number({ minimum: 0 }),
    rows: Type.Array(RowSchema),
  },
  { additionalProperties: false },
);

/** `GET /api/v1/energy`. */
export const ENERGY_SCHEMA = {
  summary: "Energy of a period per outlet, asset, tenant or instance",
  description:
    "From the Prometheus that scrapes the bridge (`Energy.ReportSource`): increase() of the lifetime " +
    "energy counters over [from, to], with the data's coverage (gaps in scraping are listed). " +
    "`format=csv` answers text/csv, one line per row with the period and its coverage.",
  operationId: "getEnergyReport",
  tags: ["Energy"],
  querystring: Type.Object(
    {
      from: time("The period's start (RFC 3339, UTC, whole seconds)"),
      to: time("The period's end (RFC 3339, UTC, whole seconds); after from, at most 400 days later"),
      groupBy: Type.Optional(Type.Enum(GROUP_BYS, { default: "outlet" })),
      format: Type.Optional(Type.Enum(["json", "csv"], { default: "json" })),
    },
    { additionalProperties: false },
  ),
  response: {
    200: {
      description: "The report",
      content: {
        "application/json": { schema: EnergyReportSchema },
        "text/csv": { schema: Type.String() },
      },
    },
    400: problemResponse("A bad period or parameter"),
    409: problemResponse("Energy.ReportSource is not set"),
    502: problemResponse("Energy.ReportSource could not be asked, or answered something unusable"),
    500: INTERNAL_ERROR,
  },
};
