/**
 * The operations metrics the issue lists, read from two nodes' `/metrics` (Prometheus, through the OpenTelemetry
 * SDK): a committer/reader node (the table's leader) and a writer node that starts later.
 * - leader: `natslake_bucket_pending_messages` per bucket — the producer's batches while no writer runs, 0 once they
 *   are committed; `natslake_dlq_total{stage="router"}` for a raw row that does not fit; a stale committable counted
 *   in `natslake_committables_rejected_total`; `natslake_leader_changes_total`; the compaction backlog
 *   (`natslake_compaction_backlog_files`, small files per bucket while compaction waits for more);
 * - writer: `natslake_bucket_assignments` (both buckets active), `natslake_writer_memory_limit_bytes` (its
 *   `--writer-memory`) and `natslake_writer_memory_bytes`, `natslake_rows_in_total` and
 *   `natslake_dlq_total{stage="writer"}` for a routed row that does not fit.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { encodeMsg } from "../../actors/wire/codec.ts";
import { encodeRowBatch } from "../../actors/wire/row-batch.ts";
import { freePort } from "../../cluster/local/servers.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";
import type { SnapshotNotification } from "../../actors/wire/messages.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";

const TABLE = "ops.t";

async function metrics(port: number): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  return r.text();
}

/** The value of the series of `name` whose labels include every one of `labels`; undefined when there is none. */
function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Polls `/metrics` of `port` until `check` returns something (the text passed in), for up to `ms`. */
const until = <T>(what: string, port: number, check: (text: string) => T | undefined, ms = 45_000): Promise<T> => waitFor(what, async () => check(await metrics(port)), ms, 300);

test("operations metrics - pending messages per bucket, dead letters by stage, stale committables, leader changes, compaction backlog, bucket assignments, writer memory", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const leaderPort = await freePort();
      c.startNode("n1", ["--roles", "committer,reader", "--metrics-port", String(leaderPort)]);
      // No compaction before 50 files: the backlog of small files stays to be seen.
      await new Catalog(c.warehouse).createTable(parseIdentifier(TABLE), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id", "compaction.min.file-num": "50" } });
      const producer = await producerWhenRegistered(c.nc, TABLE);

      // No writer yet: the producer's batches (one per bucket) wait in the bucket subjects.
      for (let i = 0; i < 40; i++) void producer.write({ id: i, s: `row-${i}` });
      await producer.flush();
      const js = jetstream(c.nc);
      await js.publish(`lake.in.${TABLE}`, new TextEncoder().encode(JSON.stringify({ id: "not a number" })));
      const leader = await until("the leader reports both buckets' pending batches and the router's dead letter", leaderPort, (m) => {
        const p0 = value(m, "natslake_bucket_pending_messages", { table: TABLE, bucket: "0" });
        const p1 = value(m, "natslake_bucket_pending_messages", { table: TABLE, bucket: "1" });
        return p0 === 1 && p1 === 1 && value(m, "natslake_dlq_total", { table: TABLE, stage: "router" }) === 1 ? m : undefined;
      });
      assert.ok((value(leader, "natslake_leader_changes_total", { table: TABLE }) ?? 0) >= 1, "the leadership it gained is counted");
      assert.match(leader, /# TYPE natslake_lease_renew_lag_ms gauge/);

      // A writer node joins: it takes both buckets and commits what waited.
      const writerPort = await freePort();
      c.startNode("n2", ["--roles", "writer", "--metrics-port", String(writerPort), "--writer-memory", "64mb"]);
      await producer.waitVisible(producer.token(), 60_000);
      const notifications: SnapshotNotification[] = [];
      const sub = await subscribeSnapshots(c.nc, TABLE, (n) => void notifications.push(n));
      // Small commits: one file per bucket each.
      for (let round = 0; round < 5; round++) {
        for (let k = 0; k < 10; k++) void producer.write({ id: 1000 + round * 10 + k, s: "more" });
        await producer.flush();
        await producer.waitVisible(producer.token(), 30_000);
      }
      await producer.close();
      // A routed batch with a row that does not fit (the writer's dead letter), and a stale committable.
      await js.publish(`lake.in.${TABLE}.0`, encodeRowBatch({ v: 1, schema: 0, cols: ["id", "s"], rows: [["nope", "bad"]] }), { msgID: "ops-bad-batch" });
      const stream = notifications.at(-1)?.stream;
      assert.ok(stream !== undefined);
      await js.publish(`lake.commit.${TABLE}`, encodeMsg({ type: "committable", v: 1, table: TABLE, stream, bucket: 1, ownerEpoch: 0, writerId: "ops-forger", prevOffset: 0, lastOffset: 1_000_000_000, flushId: 1, rowCount: 0, files: [], firstArrivalMillis: 0 }), { msgID: "ops-forged" });
      sub.stop();

      const writer = await until("the writer's gauges and its dead letter", writerPort, (m) =>
        value(m, "natslake_bucket_assignments", { table: TABLE, state: "active" }) === 2 && value(m, "natslake_dlq_total", { table: TABLE, stage: "writer" }) === 1 ? m : undefined,
      );
      assert.equal(value(writer, "natslake_bucket_assignments", { table: TABLE, state: "revoking" }), 0);
      assert.equal(value(writer, "natslake_writer_memory_limit_bytes", {}), 64 * 1024 * 1024);
      const used = value(writer, "natslake_writer_memory_bytes", {});
      assert.ok(used !== undefined && used >= 0 && used <= 64 * 1024 * 1024, `writer memory in use: ${used}`);
      // (A writer that re-reads its bucket after a failure counts the rows it buffers again.)
      const rowsIn = [0, 1].reduce((n, b) => n + (value(writer, "natslake_rows_in_total", { table: TABLE, bucket: String(b) }) ?? 0), 0);
      assert.ok(rowsIn >= 90, `rows in over both buckets: ${rowsIn} of 90`);

      const after = await until("pending back to 0, the stale committable rejected, the compaction backlog measured", leaderPort, (m) => {
        const pending = [0, 1].map((b) => value(m, "natslake_bucket_pending_messages", { table: TABLE, bucket: String(b) }));
        const backlog = [0, 1].map((b) => value(m, "natslake_compaction_backlog_files", { table: TABLE, bucket: String(b) }) ?? 0);
        return pending.every((p) => p === 0) && backlog.every((n) => n >= 5) && (value(m, "natslake_committables_rejected_total", { table: TABLE, reason: "stale-owner-epoch" }) ?? 0) === 1 ? m : undefined;
      });
      assert.ok((value(after, "natslake_table_live_files", { table: TABLE }) ?? 0) >= 12, "the backlog's files are live files");
    });
  } finally {
    await c.stop();
  }
});
