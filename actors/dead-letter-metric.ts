/**
 * `natslake_dlq_total{table, stage}`: rows (or unreadable messages) sent to the dead-letter subject, by the stage that
 * rejected them — `router` (raw rows) or `writer` (routed batches; with a `bucket` label). One definition for both,
 * so the instrument is registered with the same description wherever it is created.
 */
import type { Counter, Meter } from "@opentelemetry/api";

export function deadLetterCounter(meter: Meter): Counter {
  return meter.createCounter("natslake_dlq_total", { description: "rows (or unreadable messages) sent to the dead-letter subject, by stage (router, writer)" });
}
