/**
 * A node's HTTP endpoint for operators: `/metrics` (Prometheus text format, through the OpenTelemetry SDK's
 * Prometheus exporter: every instrument the node records through `@opentelemetry/api`), `/healthz` (the process
 * is alive and its event loop answers) and `/readyz` (connected to NATS and serving its roles; 503 with the
 * reasons otherwise).
 *
 * It must start before the node creates its instruments: the API hands out no-op meters until a provider is set.
 */
import { createServer, type Server } from "node:http";
import { metrics } from "@opentelemetry/api";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";

export interface Readiness {
  ready: boolean;
  /** Why not, when not (for the 503 body). */
  reasons: string[];
}

export interface MetricsServer {
  readonly port: number;
  /** What `/readyz` asks (until set: not ready, "starting"). */
  setReadiness(check: () => Readiness): void;
  close(): Promise<void>;
}

export async function startMetricsServer(o: { port: number; host: string; nodeId: string }): Promise<MetricsServer> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(provider);
  let readiness: () => Readiness = () => ({ ready: false, reasons: ["starting"] });
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/metrics") {
      exporter.getMetricsRequestHandler(req, res);
      return;
    }
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end(`ok ${o.nodeId}\n`);
      return;
    }
    if (path === "/readyz") {
      let r: Readiness;
      try {
        r = readiness();
      } catch (e) {
        r = { ready: false, reasons: [`readiness check failed: ${(e as Error).message}`] };
      }
      res.writeHead(r.ready ? 200 : 503, { "content-type": "text/plain" }).end(r.ready ? `ready ${o.nodeId}\n` : `not ready: ${r.reasons.join("; ")}\n`);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found: /metrics, /healthz, /readyz\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : o.port;
  return {
    port,
    setReadiness: (check) => (readiness = check),
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await provider.shutdown().catch(() => undefined);
    },
  };
}
