/** The PromQL of the shipped Grafana dashboard and alert rules, for tests. */
import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { REPO_ROOT } from "./repo.js";

export const DASHBOARD = `${REPO_ROOT}deploy/grafana/pdu-bridge.json`;
export const RULES_DIR = `${REPO_ROOT}deploy/prometheus`;

interface Panel {
  readonly title?: string;
  readonly targets?: readonly { readonly expr?: string }[];
  readonly panels?: readonly Panel[];
}

/** Every query of the dashboard (panel targets and the templating queries), with where it is. */
export async function dashboardQueries(): Promise<{ where: string; expr: string }[]> {
  const dashboard = JSON.parse(await readFile(DASHBOARD, "utf8")) as {
    panels: Panel[];
    templating: { list: { name: string; query?: string | { query?: string } }[] };
  };
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: readonly Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? [])
        if (target.expr !== undefined) out.push({ where: `panel ${panel.title}`, expr: target.expr });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const variable of dashboard.templating.list) {
    const query = typeof variable.query === "string" ? variable.query : variable.query?.query;
    if (query !== undefined && variable.name !== "datasource")
      out.push({ where: `variable ${variable.name}`, expr: query });
  }
  return out;
}

/** Every alert rule's expression. */
export async function ruleQueries(): Promise<{ where: string; expr: string }[]> {
  const rules = parse(await readFile(`${RULES_DIR}/alerts.yaml`, "utf8")) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
}

/** Metric names in a query: this service's names all start with pdu_, process_ or nodejs_. */
export function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(?:pdu|process|nodejs)_[A-Za-z0-9_:]*/g)].map((m) => m[0]);
}

/** A dashboard query as Prometheus can run it: Grafana's variables replaced. */
export function runnable(expr: string): string {
  return expr
    .replace(/label_values\(([^,]+), *\w+\)/, "$1")
    .replace(/\$__rate_interval|\$__range/g, "1m")
    .replace(/\$instance/g, ".*");
}
