/**
 * The Grafana dashboard of compose/ as the tests see it: every PromQL expression it runs (panel targets, template
 * variable queries) and the metric names each one selects, read with Prometheus's own PromQL grammar
 * (@prometheus-io/lezer-promql), and the metric names a node's /metrics text holds.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { COMPOSE_DIR } from "./compose.ts";

export const DASHBOARD_FILE = join(COMPOSE_DIR, "grafana", "dashboards", "natslake.json");

export interface DashboardQuery {
  /** Where in the dashboard: the panel's title and the target's refId, or the template variable. */
  where: string;
  /** The expression as Prometheus receives it: Grafana's interval variables replaced by a duration. */
  expr: string;
}

interface Panel {
  title?: string;
  panels?: Panel[];
  targets?: Array<{ refId?: string; expr?: string }>;
}

interface Dashboard {
  panels?: Panel[];
  templating?: { list?: Array<{ name: string; type: string; query?: string | { query?: string } }> };
}

/**
 * Grafana replaces these before a query reaches Prometheus; a dashboard variable used as a label value stays inside
 * its quotes and needs nothing. Any other `$` outside a string is left in place, so the query fails to parse.
 */
const INTERVALS: Array<[RegExp, string]> = [
  [/\$__rate_interval\b/g, "1m"],
  [/\$__interval\b/g, "1m"],
  [/\$__range\b/g, "1h"],
];

export function substituteGrafanaVariables(expr: string): string {
  return INTERVALS.reduce((e, [re, v]) => e.replace(re, v), expr);
}

/** Every PromQL expression of the dashboard: panel targets (also inside collapsed rows) and `label_values(...)` variables. */
export function dashboardQueries(file = DASHBOARD_FILE): DashboardQuery[] {
  const d = JSON.parse(readFileSync(file, "utf8")) as Dashboard;
  const out: DashboardQuery[] = [];
  const visit = (panels: Panel[] | undefined): void => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) {
        if (t.expr === undefined) throw new Error(`panel '${p.title}' target ${t.refId} has no PromQL expression`);
        out.push({ where: `panel '${p.title}' ${t.refId}`, expr: substituteGrafanaVariables(t.expr) });
      }
      visit(p.panels);
    }
  };
  visit(d.panels);
  for (const v of d.templating?.list ?? []) {
    if (v.type !== "query") continue;
    const q = typeof v.query === "string" ? v.query : v.query?.query;
    if (q === undefined) throw new Error(`variable ${v.name} has no query`);
    // Grafana's label_values(<selector>, <label>): the selector is PromQL.
    const m = /^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$/.exec(q);
    if (m === null) throw new Error(`variable ${v.name}: only label_values(<selector>, <label>) queries are understood, got ${q}`);
    out.push({ where: `variable ${v.name}`, expr: substituteGrafanaVariables(m[1]!) });
  }
  return out;
}

export interface ParsedQuery {
  /** Metric names of the expression's vector selectors. */
  metrics: string[];
  /** Parse errors (positions), empty for valid PromQL. */
  errors: string[];
  /** Vector selectors without a metric name (`{__name__=~"…"}`): which metrics they read cannot be checked. */
  unnamedSelectors: number;
}

export function parsePromQL(expr: string): ParsedQuery {
  const metrics: string[] = [];
  const errors: string[] = [];
  let unnamedSelectors = 0;
  parser.parse(expr).iterate({
    enter: (n) => {
      if (n.type.isError) errors.push(`error at ${n.from}: …${expr.slice(Math.max(0, n.from - 20), n.from + 20)}…`);
      if (n.name === "VectorSelector") {
        const name = n.node.getChild("Identifier");
        if (name === null) unnamedSelectors++;
        else metrics.push(expr.slice(name.from, name.to));
      }
    },
  });
  return { metrics, errors, unnamedSelectors };
}

/** The metric names of the samples in a Prometheus text exposition (histograms as their _bucket, _sum, _count). */
export function exposedMetricNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{|\s)/.exec(line);
    if (m !== null) names.add(m[1]!);
  }
  return names;
}
