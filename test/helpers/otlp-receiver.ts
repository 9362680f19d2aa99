/**
 * An OpenTelemetry collector for tests: a loopback HTTP server that takes OTLP/HTTP JSON trace exports
 * (`POST /v1/traces`) and keeps every span it received.
 */
import { createServer, type Server } from "node:http";

export interface OtlpSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
}

/** OTLP/JSON carries ids as hex (the spec); base64 is accepted too, in case an encoder chose it. */
const hexId = (v: unknown): string => {
  if (typeof v !== "string" || v === "") return "";
  return /^[0-9a-f]+$/i.test(v) && (v.length === 32 || v.length === 16) ? v.toLowerCase() : Buffer.from(v, "base64").toString("hex");
};

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const valueOf = (v: AnyValue): unknown => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));

export interface OtlpReceiver {
  /** The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  spans: OtlpSpan[];
  contentTypes: Set<string>;
  close(): Promise<void>;
}

/** A collector on loopback: every span of every `POST /v1/traces` (JSON), with its resource's service.name. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      contentTypes.add(String(req.headers["content-type"]));
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans?: Array<{ resource?: { attributes?: Array<{ key: string; value: AnyValue }> }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>;
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(valueOf(rs.resource?.attributes?.find((a) => a.key === "service.name")?.value ?? {}) ?? "");
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            const attributes: Record<string, unknown> = {};
            for (const a of (s["attributes"] as Array<{ key: string; value: AnyValue }> | undefined) ?? []) attributes[a.key] = valueOf(a.value);
            spans.push({
              service,
              traceId: hexId(s["traceId"]),
              spanId: hexId(s["spanId"]),
              parentSpanId: hexId(s["parentSpanId"]),
              name: String(s["name"]),
              kind: Number(s["kind"]),
              links: ((s["links"] as Array<Record<string, unknown>> | undefined) ?? []).map((l) => ({ traceId: hexId(l["traceId"]), spanId: hexId(l["spanId"]) })),
              attributes,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, spans, contentTypes, close: () => new Promise<void>((r) => server.close(() => r())) };
}
