/**
 * Primary-key tables through the cluster: upserts and deletes published to a table's bucket subjects (RowBatches
 * whose rows carry `_row_kind`) land as Paimon LSM files, and the table equals the model of every change applied in
 * stream order — read by natslake, pypaimon and Java Paimon. Unpartitioned (rows kept and sorted in the bucket's
 * worker thread) and partitioned (rows routed on the writer's thread); a partial-update table (each key's columns
 * arriving in different rows) equals the model of non-null fields overwriting. A bad row kind, a delete without its
 * key and a delete the partial-update table refuses are dead letters with the reason; the rest of their batch lands.
 * Snapshots record each bucket's sequence number.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPaimonRead } from "../helpers/java.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { createBucketFunction } from "../../src/format/bucket.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import { packValue } from "../../actors/wire/row-batch.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import type { Table } from "../../src/table/table.ts";

type Change = { kind: "+I" | "-U" | "+U" | "-D"; row: Record<string, unknown> };

/** A deterministic history of changes over few keys: inserts, updates (as +U or -U/+U pairs), deletes (by key or whole row). */
function history(n: number, keys: number, partitioned: boolean): Change[] {
  let x = 12345;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
  const out: Change[] = [];
  for (let i = 0; i < n; i++) {
    const id = rnd(keys);
    const key = partitioned ? { dt: id % 2 === 0 ? "2026-12-01" : "2026-12-02", id } : { id };
    const r = rnd(10);
    if (r < 5) out.push({ kind: "+I", row: { ...key, name: `v${i}`, n: i } });
    else if (r < 7) out.push({ kind: "+U", row: { ...key, name: `u${i}`, n: i } });
    else if (r < 8) out.push({ kind: "-U", row: { ...key, name: "before", n: 0 } }, { kind: "+U", row: { ...key, name: `p${i}`, n: i } });
    else if (r < 9) out.push({ kind: "-D", row: key });
    else out.push({ kind: "-D", row: { ...key, name: "whole", n: -1 } });
  }
  return out;
}

/** Partial rows over few keys: each carries its key and some of the other columns (a null never overwrites). */
function partialHistory(n: number, keys: number): Change[] {
  let x = 777;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
  return Array.from({ length: n }, (_, i) => {
    const r = rnd(3);
    return { kind: "+I" as const, row: { id: rnd(keys), name: r === 1 ? null : `p${i}`, n: r === 2 ? null : i } };
  });
}

/** The partial-update model: per key, each non-null column of a later row overwrites. */
function partialModel(changes: readonly Change[]): Array<Record<string, unknown>> {
  const m = new Map<unknown, Record<string, unknown>>();
  for (const { row } of changes) {
    const cur = m.get(row["id"]) ?? { id: row["id"], name: null, n: null };
    for (const [k, v] of Object.entries(row)) if (v !== null) cur[k] = v;
    m.set(row["id"], cur);
  }
  return [...m.values()];
}

function model(changes: readonly Change[], keyOf: (r: Record<string, unknown>) => string): Array<Record<string, unknown>> {
  const m = new Map<string, Record<string, unknown>>();
  for (const c of changes) {
    if (c.kind === "-U" || c.kind === "-D") m.delete(keyOf(c.row));
    else m.set(keyOf(c.row), c.row);
  }
  return [...m.values()];
}

/** Publishes the changes to their buckets' subjects; resolves with the last stream sequence each bucket got. */
async function publishChanges(c: { nc: Parameters<typeof jetstream>[0] }, t: Table, changes: readonly Change[], columns: string[], batchRows: number): Promise<Map<number, number>> {
  const js = jetstream(c.nc);
  const subjects = new Subjects();
  const bucketOf = createBucketFunction(t.bucketKeys.map((k) => t.typeOf(k)), t.bucket);
  const byBucket = new Map<number, Change[]>();
  for (const ch of changes) {
    const b = bucketOf(t.bucketKeys.map((k) => ch.row[k] as never));
    byBucket.set(b, [...(byBucket.get(b) ?? []), ch]);
  }
  const acks: Array<Promise<{ bucket: number; seq: number }>> = [];
  for (const [b, list] of byBucket) {
    for (let i = 0; i < list.length; i += batchRows) {
      const rows = list.slice(i, i + batchRows).map((ch) => ["_row_kind", ...columns].map((col) => (col === "_row_kind" ? ch.kind : (ch.row[col] ?? null))));
      acks.push(js.publish(subjects.ingestBucket(t.identifier, b), packValue({ v: 1, schema: t.schema.id, cols: ["_row_kind", ...columns], rows }), { msgID: `pk-test-${t.name}-${b}-${i}` }).then((a) => ({ bucket: b, seq: a.seq })));
    }
  }
  const last = new Map<number, number>();
  for (const { bucket, seq } of await Promise.all(acks)) last.set(bucket, Math.max(seq, last.get(bucket) ?? 0));
  return last;
}

/** Waits until the table's snapshots cover, for every bucket, the last message published to it. */
async function waitCommitted(catalog: Catalog, name: string, published: ReadonlyMap<number, number>): Promise<Table> {
  return waitFor(`${name} committed through ${JSON.stringify([...published])}`, async () => {
    const t = await catalog.getTable(parseIdentifier(name));
    const latest = await t.snapshots.latest();
    const st = latest === null ? null : natslakeState(latest);
    if (st === null) return undefined;
    for (const [b, seq] of published) if (Number(st.buckets.get(b)?.offset ?? 0n) < seq) return undefined;
    return t;
  }, 120_000, 250);
}

test("cluster PK - upserts and deletes land as the model of the changes; natslake, pypaimon and Java agree; bad kinds, keyless deletes and deletes a partial-update table refuses are dead letters", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "200 ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier("pk.users"), { columns: parseColumnList("id BIGINT NOT NULL, name STRING, n INT NOT NULL"), primaryKeys: ["id"], options: { bucket: "3" } });
      await catalog.createTable(parseIdentifier("pk.daily"), { columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, name STRING, n INT NOT NULL"), partitionKeys: ["dt"], primaryKeys: ["dt", "id"], options: { bucket: "2", "changelog-producer": "input" } });
      await catalog.createTable(parseIdentifier("pk.partial"), { columns: parseColumnList("id BIGINT NOT NULL, name STRING, n INT"), primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "partial-update" } });
      const producers = [await producerWhenRegistered(c.nc, "pk.users"), await producerWhenRegistered(c.nc, "pk.daily"), await producerWhenRegistered(c.nc, "pk.partial")];
      for (const p of producers) await p.close();

      const users = history(3000, 200, false);
      const daily = history(2000, 100, true);
      const tUsers = await catalog.getTable(parseIdentifier("pk.users"));
      const tDaily = await catalog.getTable(parseIdentifier("pk.daily"));
      const usersPublished = await publishChanges(c, tUsers, users, ["id", "name", "n"], 37);
      const dailyPublished = await publishChanges(c, tDaily, daily, ["dt", "id", "name", "n"], 41);
      const partial = partialHistory(1500, 60);
      const tPartial = await catalog.getTable(parseIdentifier("pk.partial"));
      const partialPublished = await publishChanges(c, tPartial, partial, ["id", "name", "n"], 29);
      // Bad input in a batch of good rows: a kind that is not one of the four, a delete without its key.
      const js = jetstream(c.nc);
      const bucketOf = createBucketFunction([tUsers.typeOf("id")], 3);
      const badBucket = bucketOf([5000n]);
      const badAck = await js.publish(new Subjects().ingestBucket(tUsers.identifier, badBucket), packValue({ v: 1, schema: 0, cols: ["_row_kind", "id", "name", "n"], rows: [["+X", 5000, "bad kind", 1], ["-D", null, null, null], ["+I", 5000, "good", 2]] }), { msgID: "pk-bad-1" });
      usersPublished.set(badBucket, Math.max(badAck.seq, usersPublished.get(badBucket) ?? 0));
      // A delete the partial-update table refuses (Paimon fails any merge that meets it), among rows that land.
      const partialBucket = createBucketFunction([tPartial.typeOf("id")], 2)([6000n]);
      const refusedAck = await js.publish(new Subjects().ingestBucket(tPartial.identifier, partialBucket), packValue({ v: 1, schema: 0, cols: ["_row_kind", "id", "name", "n"], rows: [["+I", 6000, "kept", null], ["-D", 6000, null, null], ["+I", 6000, null, 3]] }), { msgID: "pk-partial-refused-1" });
      partialPublished.set(partialBucket, Math.max(refusedAck.seq, partialPublished.get(partialBucket) ?? 0));

      const byId = (r: Record<string, unknown>): string => String(r["id"]);
      const byDtId = (r: Record<string, unknown>): string => `${String(r["dt"])}/${String(r["id"])}`;
      const expectUsers = sortRows([...model(users, byId), { id: 5000, name: "good", n: 2 }]);
      const expectDaily = sortRows(model(daily, byDtId));
      const t1 = await waitCommitted(catalog, "pk.users", usersPublished);
      const t2 = await waitCommitted(catalog, "pk.daily", dailyPublished);
      const t3 = await waitCommitted(catalog, "pk.partial", partialPublished);
      const norm = (rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> => sortRows(rows.map((r) => ({ ...r, id: Number(r["id"]) })));
      assert.deepEqual(norm(await readJson(t1)), expectUsers, "natslake reads the model (unpartitioned)");
      const gotDaily = norm(await readJson(t2));
      assert.deepEqual(gotDaily, expectDaily, "natslake reads the model (partitioned)");
      assert.deepEqual(norm(await paimonRead(c.warehouse, "pk.users")), expectUsers, "pypaimon agrees");
      assert.deepEqual(norm(await paimonRead(c.warehouse, "pk.daily")), expectDaily, "pypaimon agrees (partitioned)");
      const java = await javaPaimonRead(c.warehouse, [t1, t2], [{ table: "pk.users" }, { table: "pk.daily" }]);
      assert.deepEqual(norm(java[0]!.rows ?? []), expectUsers, java[0]!.error);
      assert.deepEqual(norm(java[1]!.rows ?? []), expectDaily, java[1]!.error);
      const expectPartial = sortRows([...partialModel(partial), { id: 6000, name: "kept", n: 3 }]);
      assert.deepEqual(norm(await readJson(t3)), expectPartial, "natslake reads the partial-update model");
      const [javaPartial] = await javaPaimonRead(c.warehouse, [t3], [{ table: "pk.partial" }]);
      assert.deepEqual(norm(javaPartial!.rows ?? []), expectPartial, javaPartial!.error);

      // Each bucket's sequence number is recorded, and no file holds a number above it.
      const st = natslakeState((await t1.snapshots.latest())!)!;
      for (const [b, p] of st.buckets) assert.ok(p.seq !== undefined && p.seq >= 0n, `bucket ${b} records its sequence number`);

      // The dead letters, with their reasons (the DLQ stream holds every table's): two of pk.users', one of pk.partial's.
      const jsm = await jetstreamManager(c.nc);
      const subjects = new Subjects();
      const lettersOf = (t: Table, count: number): Promise<string[]> =>
        waitFor(`${count} dead letters of ${t.name}`, async () => {
          const info = await jsm.streams.info(subjects.dlqStream).catch(() => undefined);
          if (info === undefined) return undefined;
          const found: string[] = [];
          for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
            const m = await jsm.streams.getMessage(subjects.dlqStream, { seq }).catch(() => null);
            if (m !== null && m.subject === subjects.dlq(t.identifier)) found.push(m.header.get("Natslake-Reason"));
          }
          return found.length >= count ? found : undefined;
        }, 30_000);
      const reasons = await lettersOf(tUsers, 2);
      assert.ok(reasons.some((r) => /row kind "\+X" is not one of/.test(r)), reasons.join(" | "));
      assert.ok(reasons.some((r) => /delete without its key|primary-key column 'id' is null/.test(r)), reasons.join(" | "));
      const refused = await lettersOf(tPartial, 1);
      assert.deepEqual(refused.length, 1, refused.join(" | "));
      assert.match(refused[0]!, /-D refused: By default, Partial update can not accept delete records/);
    });
  } finally {
    await c.stop();
  }
});
