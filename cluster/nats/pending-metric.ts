/**
 * `natslake_bucket_pending_messages{table, bucket}`: the messages in each bucket's ingest subject, read from the
 * stream at each collection (one `stream info` per table, with a subject filter), reported by the table's leader
 * only, so a sum over nodes is the table's. Committed messages are purged, so these are the ones not committed yet
 * (as `natslake status` shows them): a bucket whose count keeps growing is stalled or behind.
 *
 * Reading the stream at scrape time, not caching: a stalled writer stops reporting anything itself, and the value
 * must still move. A collection that cannot reach JetStream reports nothing for the table (no stale value).
 */
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "../../actors/metrics.ts";
import type { Table } from "../../src/table/table.ts";
import type { Subjects } from "./subjects.ts";

/** Per bucket, the messages in its subject: every bucket of a fixed-bucket table, 0 included. */
export async function bucketPending(jsm: JetStreamManager, subjects: Subjects, t: Table): Promise<Map<number, number>> {
  const id = t.identifier;
  const info = await jsm.streams.info(subjects.ingestStream(id), { subjects_filter: subjects.ingestAllBuckets(id) });
  const out = new Map<number, number>();
  for (let b = 0; b < t.bucket; b++) out.set(b, 0);
  for (const [subject, n] of Object.entries(info.state.subjects ?? {})) {
    const bucket = subject.slice(subject.lastIndexOf(".") + 1);
    // The stream's identity marker shares the filter; only bucket numbers are buckets.
    if (/^\d+$/.test(bucket)) out.set(Number(bucket), n);
  }
  return out;
}

export function registerBucketPendingMetric(meter: Meter, nc: NatsConnection, subjects: Subjects, leading: () => Table[]): void {
  let jsm: Promise<JetStreamManager> | undefined;
  METRICS.bucketPending.create(meter).addCallback(async (r) => {
      jsm ??= jetstreamManager(nc);
      const m = await jsm.catch(() => undefined);
      if (m === undefined) {
        jsm = undefined;
        return;
      }
      await Promise.all(
        leading().map(async (t) => {
          const pending = await bucketPending(m, subjects, t).catch(() => null);
          for (const [bucket, n] of pending ?? []) r.observe(n, { table: t.name, bucket: String(bucket) });
        }),
      );
    });
}
