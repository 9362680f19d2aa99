/**
 * metrics.md: every metric a node exports, from the declarations instruments are made from (actors/metrics.ts). Each
 * is created on a meter provider with the Prometheus exporter the node serves `/metrics` with, given one data point
 * with all its labels, and read back as Prometheus text: the page shows the name and type `/metrics` shows, and
 * generation fails when the exporter would rename a metric or leave one out.
 */
import type { Attributes } from "@opentelemetry/api";
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { allMetrics, METRICS, type MetricDef, type MetricInfo } from "../../actors/metrics.ts";
import { banner, code, page, prose, table } from "./markdown.ts";

interface Recordable {
  add?(v: number, a: Attributes): void;
  record?(v: number, a: Attributes): void;
  addCallback?(cb: (r: { observe(v: number, a: Attributes): void }) => void): void;
}

/** Every metric with one data point, in Prometheus' text format as the node's exporter writes it. */
async function prometheusText(): Promise<string> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  try {
    const meter = provider.getMeter("natslake");
    for (const m of Object.values(METRICS) as MetricDef<Recordable>[]) {
      const attrs = Object.fromEntries([...m.labels, ...m.optionalLabels].map((l) => [l, "x"]));
      const instrument = m.create(meter);
      if (m.kind === "counter") instrument.add!(1, attrs);
      else if (m.kind === "histogram") instrument.record!(1, attrs);
      else instrument.addCallback!((r) => r.observe(1, attrs));
    }
    const { resourceMetrics } = await exporter.collect();
    return new PrometheusSerializer().serialize(resourceMetrics);
  } finally {
    await provider.shutdown();
  }
}

function labelsOf(m: MetricInfo): string {
  return [...m.labels.map(code), ...m.optionalLabels.map((l) => `${code(l)} (some points)`)].join(", ");
}

export async function metricsPage(): Promise<string> {
  const text = await prometheusText();
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  // A histogram's bucket boundaries as exported (the `le` of its `_bucket` series; +Inf is every histogram's last).
  const boundaries = (name: string): string[] => [...text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"`, "gm"))].map((m) => m[1]!).filter((le) => le !== "+Inf");
  const metrics = allMetrics();
  const rows = metrics.map((m) => {
    const type = types.get(m.name);
    if (type === undefined) throw new Error(`metrics: ${m.name} is not in the Prometheus exporter's output under that name`);
    return [code(m.name), type, m.unit === undefined ? "" : code(m.unit), labelsOf(m), prose(m.description)];
  });
  const histograms = metrics.filter((m) => m.kind === "histogram");
  return page(
    banner("Metrics", ["the metric declarations (actors/metrics.ts), exported through the Prometheus exporter a node serves"]),
    "A node started with `--metrics-port` serves them at `/metrics` in Prometheus' text format (see [node-config.md](node-config.md)); they are OpenTelemetry instruments, so another reader of the node's meter provider sees the same names. A metric is reported by the nodes that do its work: writers count what they write, a table's leader what it commits and maintains, reader nodes what they serve; sum a table's metrics over nodes unless the description says otherwise. Besides these, the exporter writes `target_info` (the node's resource attributes).",
    `## All metrics (${metrics.length})`,
    table(["Metric", "Type", "Unit", "Labels", "Description"], rows),
    "## Histograms",
    prose("A histogram is exported as its `_bucket` (with the `le` label: the upper bounds below, then `+Inf`), `_sum` and `_count` series."),
    table(
      ["Metric", "Bucket upper bounds"],
      histograms.map((m) => [code(m.name), boundaries(m.name).join(", ") + (m.buckets === undefined ? " (the SDK's default)" : "")]),
    ),
  );
}
