/**
 * When tracing is on (cluster/tracing.ts: the standard OTEL_* variables or the node's --otlp-endpoint), and that with
 * nothing registered the trace helpers write no `traceparent` and make no links (off by default, nearly free).
 * This file never registers the SDK: the second test depends on the process having none.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { trace } from "@opentelemetry/api";
import { samplerOf, tracingSettings } from "../../../cluster/tracing.ts";
import { TraceLinks, spanContextOf, traceparentOf, MAX_TRACE_LINKS } from "../../../actors/wire/trace-context.ts";

test("tracing settings - off by default, on with an OTLP endpoint or an exporter name, refused settings named", async () => {
  assert.equal(tracingSettings({}), null, "nothing configured: off");
  assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "100" }), null, "settings without an endpoint or exporter: still off");
  const env = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" });
  assert.deepEqual(env?.exporters, ["otlp"]);
  assert.equal(env?.url, "http://127.0.0.1:4318/v1/traces", "a base URL: the traces path is appended");
  assert.equal(env?.samplerName, "parentbased_always_on");
  assert.equal(env?.scheduleDelayMs, 5000);
  const signal = tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/custom", OTEL_EXPORTER_OTLP_ENDPOINT: "http://d:4318" });
  assert.deepEqual(signal?.exporters, ["otlp"]);
  assert.equal(signal?.url, "http://c:4318/custom", "the traces endpoint is used as is, and wins over the base one");
  assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: "otlp" })?.url, undefined, "no endpoint: the exporter's default");
  assert.deepEqual(tracingSettings({ OTEL_TRACES_EXPORTER: "console" })?.exporters, ["console"]);
  assert.deepEqual(tracingSettings({ OTEL_TRACES_EXPORTER: "otlp, console" })?.exporters, ["otlp", "console"]);
  const flag = tracingSettings({}, "http://127.0.0.1:4318/");
  assert.equal(flag?.url, "http://127.0.0.1:4318/v1/traces", "the flag is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT");
  assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://d:4318" }, "http://f:4318")?.url, "http://f:4318/v1/traces", "the flag wins");
  assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost" }), /OTEL_EXPORTER_OTLP_ENDPOINT=localhost: not a URL/);
  assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: "none" }, "http://127.0.0.1:4318"), null, "none wins over an endpoint");
  assert.equal(tracingSettings({ OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318" }), null);
  const ratio = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318", OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01", OTEL_BSP_SCHEDULE_DELAY: "250" });
  assert.equal(ratio?.samplerName, "parentbased_traceidratio");
  assert.equal(ratio?.ratio, 0.01);
  assert.equal(String(await samplerOf(ratio!)), "ParentBased{root=TraceIdRatioBased{0.01}, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}");
  assert.equal(String(await samplerOf(env!)), "ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}");
  assert.equal(String(await samplerOf({ samplerName: "always_off", ratio: 1 })), "AlwaysOffSampler");
  assert.equal(ratio?.scheduleDelayMs, 250);
  assert.throws(() => tracingSettings({ OTEL_TRACES_EXPORTER: "zipkin" }), /OTEL_TRACES_EXPORTER=zipkin: natslake exports traces with otlp or console/);
  assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }), /OTLP over HTTP with JSON only/);
  assert.throws(() => tracingSettings({}, "127.0.0.1:4318"), /--otlp-endpoint 127\.0\.0\.1:4318: not a URL/);
  assert.throws(() => tracingSettings({}, "grpc://127.0.0.1:4317"), /--otlp-endpoint grpc:\/\/127\.0\.0\.1:4317: expected an http/);
  assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318", OTEL_TRACES_SAMPLER: "sometimes" }), /OTEL_TRACES_SAMPLER=sometimes/);
  assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318", OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }), /OTEL_TRACES_SAMPLER_ARG=2/);
  assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318", OTEL_BSP_SCHEDULE_DELAY: "soon" }), /OTEL_BSP_SCHEDULE_DELAY=soon/);
});

test("trace context - with no SDK registered, spans do not record, no traceparent is written and none is read", () => {
  const span = trace.getTracer("natslake").startSpan("natslake.flush");
  assert.equal(span.isRecording(), false);
  assert.equal(traceparentOf(span), undefined, "nothing to put on the wire");
  span.end();
  // A valid traceparent from a producer that does trace: without a propagator this process reads nothing from it.
  const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  assert.equal(spanContextOf(tp), undefined);
  const links = new TraceLinks();
  for (let i = 0; i < MAX_TRACE_LINKS + 10; i++) links.add(`00-0af7651916cd43dd8448eb211c80319c-${i.toString(16).padStart(16, "0")}-01`);
  links.add(undefined);
  assert.equal(links.total, MAX_TRACE_LINKS + 10, "every traceparent offered is counted");
  assert.equal(links.size, MAX_TRACE_LINKS, "at most MAX_TRACE_LINKS kept");
  assert.deepEqual(links.links(), [], "and none becomes a link without a propagator");
});
