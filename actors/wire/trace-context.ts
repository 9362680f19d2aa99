/**
 * W3C trace context on natslake's messages (https://www.w3.org/TR/trace-context/): a batch's journey from the
 * producer's publish through the writer's flush, the leader's commit and the snapshot notification.
 *
 * - Ingest row batches carry `traceparent` as a NATS header (set by the producer client).
 * - A flush covers many batches, so the flush span *links* to their spans (at most MAX_TRACE_LINKS of them), and
 *   the committable carries the flush span's `traceparent` in its body (committables sent by reference too).
 * - The commit span links to the flush spans of the committables it decided; the notify span is its child, and the
 *   snapshot notification carries the notify span's `traceparent` (body and header) so a subscriber can continue it.
 *
 * Everything goes through `@opentelemetry/api`'s global propagator: until a process registers one (cluster/tracing.ts
 * does when tracing is configured) injecting yields nothing and extracting finds nothing, so with tracing off no
 * header is written or read and no link is made.
 */
import { propagation, ROOT_CONTEXT, trace, type Context, type Link, type Span, type SpanContext } from "@opentelemetry/api";

/** The header (and body field) name of the W3C trace context. */
export const H_TRACEPARENT = "traceparent";

/**
 * Links per span at most: the OpenTelemetry SDK's default link limit. A flush of a busy bucket covers thousands of
 * batches; the first ones linked stand for the rest (the span counts them all in `natslake.traced_batches`).
 */
export const MAX_TRACE_LINKS = 128;

/** The `traceparent` that continues `span`, or undefined when the span is not recorded or no propagator is set. */
export function traceparentOf(span: Span): string | undefined {
  if (!span.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier[H_TRACEPARENT];
}

/** The context a `traceparent` names (ROOT_CONTEXT when absent, malformed, or no propagator is set). */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  if (traceparent === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { [H_TRACEPARENT]: traceparent });
}

/** The span context a `traceparent` names, when it names a valid one. */
export function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  if (traceparent === undefined) return undefined;
  const sc = trace.getSpanContext(contextOfTraceparent(traceparent));
  return sc !== undefined && trace.isSpanContextValid(sc) ? sc : undefined;
}

/** Distinct traceparents collected for one span's links, at most MAX_TRACE_LINKS, with a count of all seen. */
export class TraceLinks {
  private readonly seen = new Set<string>();
  /** Every traceparent offered (distinct ones beyond the limit included). */
  total = 0;

  add(traceparent: string | undefined): void {
    if (traceparent === undefined) return;
    this.total++;
    if (this.seen.size < MAX_TRACE_LINKS) this.seen.add(traceparent);
  }

  get size(): number {
    return this.seen.size;
  }

  /** The links (traceparents that do not parse, or that no propagator reads, are left out). */
  links(): Link[] {
    const out: Link[] = [];
    for (const tp of this.seen) {
      const sc = spanContextOf(tp);
      if (sc !== undefined) out.push({ context: sc });
    }
    return out;
  }
}
