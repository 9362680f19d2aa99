/**
 * Traces, exported by OTLP over HTTP (JSON) — only when configured: off by default.
 *
 * On when `OTEL_TRACES_EXPORTER` names an exporter (`otlp`, `console`), or — with `OTEL_TRACES_EXPORTER` unset — when
 * an OTLP endpoint is given (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`, or the node's
 * `--otlp-endpoint`). Off with `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`. (The OpenTelemetry
 * specification's default exporter is `otlp` to localhost; natslake does not export anything nobody asked for.)
 *
 * When off nothing is registered: `@opentelemetry/api` hands out non-recording spans, no propagator writes or reads
 * `traceparent`, and the spans natslake starts cost a few allocations each (one per batch, flush and commit).
 *
 * The standard variables the exporter reads itself (`OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `…_TIMEOUT`,
 * `…_COMPRESSION`, certificates) apply; natslake reads `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_TRACES_SAMPLER` and
 * `OTEL_TRACES_SAMPLER_ARG`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`.
 */
import { propagation, trace } from "@opentelemetry/api";
import type { Sampler, SpanExporter } from "@opentelemetry/sdk-trace";

export type TraceExporterName = "otlp" | "console";

export interface TracingSettings {
  exporters: TraceExporterName[];
  /** The full traces URL (`…/v1/traces`); undefined: the exporter's default (localhost:4318). */
  url?: string;
  /** `OTEL_TRACES_SAMPLER` (lower case) and its ratio (`OTEL_TRACES_SAMPLER_ARG`, for the traceidratio ones). */
  samplerName: string;
  ratio: number;
  /** How long finished spans wait to be sent in one batch (ms). */
  scheduleDelayMs: number;
}

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

/**
 * What to export, from the environment and the node's `--otlp-endpoint` (a base URL like
 * `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces` is appended). Null: tracing off. Throws on a setting it cannot honour.
 */
export function tracingSettings(env: NodeJS.ProcessEnv, otlpEndpoint?: string): TracingSettings | null {
  const get = (k: string): string | undefined => {
    const v = env[k]?.trim();
    return v === undefined || v === "" ? undefined : v;
  };
  if (get("OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const named = get("OTEL_TRACES_EXPORTER")?.toLowerCase();
  let exporters: TraceExporterName[];
  if (named !== undefined) {
    const list = named.split(",").map((s) => s.trim()).filter((s) => s !== "");
    if (list.includes("none")) return null;
    for (const e of list) if (e !== "otlp" && e !== "console") throw new Error(`OTEL_TRACES_EXPORTER=${named}: natslake exports traces with otlp or console (or none)`);
    exporters = list as TraceExporterName[];
  } else if (otlpEndpoint !== undefined || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== undefined || get("OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined) {
    exporters = ["otlp"];
  } else return null;
  const protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? get("OTEL_EXPORTER_OTLP_PROTOCOL");
  if (exporters.includes("otlp") && protocol !== undefined && protocol !== "http/json")
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: natslake exports OTLP over HTTP with JSON only (http/json)`);
  // The traces URL: the flag (a base URL), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is), else
  // OTEL_EXPORTER_OTLP_ENDPOINT (a base URL), else the exporter's default (http://localhost:4318/v1/traces).
  const checked = (setting: string, v: string): string => {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw new Error(`${setting}: not a URL (e.g. http://127.0.0.1:4318)`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`${setting}: expected an http:// or https:// URL`);
    return v;
  };
  const base = (v: string): string => `${v.replace(/\/+$/, "")}/v1/traces`;
  const tracesEnv = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const baseEnv = get("OTEL_EXPORTER_OTLP_ENDPOINT");
  const url =
    otlpEndpoint !== undefined
      ? base(checked(`--otlp-endpoint ${otlpEndpoint}`, otlpEndpoint))
      : tracesEnv !== undefined
        ? checked(`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${tracesEnv}`, tracesEnv)
        : baseEnv !== undefined
          ? base(checked(`OTEL_EXPORTER_OTLP_ENDPOINT=${baseEnv}`, baseEnv))
          : undefined;
  const delayText = get("OTEL_BSP_SCHEDULE_DELAY");
  const scheduleDelayMs = delayText === undefined ? 5000 : Number(delayText);
  if (!Number.isInteger(scheduleDelayMs) || scheduleDelayMs < 0) throw new Error(`OTEL_BSP_SCHEDULE_DELAY=${delayText}: expected milliseconds`);
  const samplerName = (get("OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  if (!SAMPLERS.includes(samplerName)) throw new Error(`OTEL_TRACES_SAMPLER=${samplerName}: expected one of ${SAMPLERS.join(", ")}`);
  const argText = get("OTEL_TRACES_SAMPLER_ARG");
  const ratio = argText === undefined ? 1 : Number(argText);
  if (samplerName.endsWith("traceidratio") && !(ratio >= 0 && ratio <= 1)) throw new Error(`OTEL_TRACES_SAMPLER_ARG=${argText}: expected a ratio between 0 and 1`);
  return { exporters, ...(url !== undefined ? { url } : {}), samplerName, ratio, scheduleDelayMs };
}

/** The sampler `OTEL_TRACES_SAMPLER` names (the SDK's samplers; `parentbased_always_on` by default). */
export async function samplerOf(s: Pick<TracingSettings, "samplerName" | "ratio">): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import("@opentelemetry/sdk-trace");
  const root: Sampler = s.samplerName.endsWith("always_off") ? new AlwaysOffSampler() : s.samplerName.endsWith("traceidratio") ? new TraceIdRatioBasedSampler(s.ratio) : new AlwaysOnSampler();
  return s.samplerName.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

export interface Tracing {
  /** Sends the spans still queued, then stops (bounded: a collector that does not answer does not hold the exit). */
  shutdown(): Promise<void>;
}

/**
 * Registers the trace SDK globally (tracer provider and the W3C trace-context propagator) for this process. Call it
 * before creating producers or a node: they take their tracer from the global API. The SDK is loaded only here, so a
 * process that does not trace (a service importing `natslake/producer`) never loads it.
 */
export async function startTracing(s: TracingSettings, o: { serviceName: string; instanceId?: string; version?: string }): Promise<Tracing> {
  const [{ W3CTraceContextPropagator }, { OTLPTraceExporter }, { detectResources, envDetector, resourceFromAttributes }, sdk] = await Promise.all([
    import("@opentelemetry/core"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
  ]);
  const { BatchSpanProcessor, ConsoleSpanExporter, TracerProvider } = sdk;
  const sampler = await samplerOf(s);
  const exporters: SpanExporter[] = s.exporters.map((e) => (e === "console" ? new ConsoleSpanExporter() : new OTLPTraceExporter(s.url !== undefined ? { url: s.url } : {})));
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over natslake's own names (the later merge wins).
  const resource = resourceFromAttributes({
    "service.name": o.serviceName,
    ...(o.instanceId !== undefined ? { "service.instance.id": o.instanceId } : {}),
    ...(o.version !== undefined ? { "service.version": o.version } : {}),
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: exporters.map((e) => new BatchSpanProcessor({ exporter: e, scheduledDelayMillis: s.scheduleDelayMs })),
  });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  active = true;
  return {
    async shutdown() {
      await Promise.race([provider.shutdown().catch(() => undefined), new Promise<void>((r) => setTimeout(r, 5000).unref())]);
    },
  };
}

/** Whether this process registered tracing (adapters read trace headers only then). */
export function tracingActive(): boolean {
  return active;
}
let active = false;

/** `startTracing` when the settings say so; null otherwise (settings it cannot honour throw before anything starts). */
export async function startTracingIfConfigured(env: NodeJS.ProcessEnv, o: { serviceName: string; instanceId?: string; version?: string; otlpEndpoint?: string }): Promise<Tracing | null> {
  const s = tracingSettings(env, o.otlpEndpoint);
  if (s === null) return null;
  return startTracing(s, o);
}
