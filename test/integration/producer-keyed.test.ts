/**
 * The producer client on primary-key tables, against a real nats-server: `upsert` and `delete` publish RowBatches
 * whose `cols` end with `_row_kind` to the bucket Paimon's bucket function gives the key; rows carrying `_row_kind`
 * go through `write` and `writeMany`; a bad kind, a missing or null key is refused before anything is published, with
 * the reason; and `_row_kind` on an append table is refused. What is published converts, by the rules every writer
 * uses (src/lsm/keyed-input.ts), into exactly the rows and kinds that were written.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import { createBucketFunction } from "../../src/format/bucket.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { compileKeyedInput } from "../../src/lsm/keyed-input.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import type { Table } from "../../src/table/table.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureTableInfra } from "../../cluster/nats/table-infra.ts";
import { createProducer } from "../../cluster/producer.ts";
import type { RowBatch } from "../../actors/wire/messages.ts";
import { decodeRowBatch } from "../../actors/wire/row-batch.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { tempDir } from "../helpers/tables.ts";

let server: ServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let warehouse: ReturnType<typeof tempDir>;
let tableNo = 0;
const subjects = new Subjects("lake");

before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
  warehouse = tempDir("natslake-producer-keyed-");
});

after(async () => {
  await nc.close();
  await server.stop();
  warehouse.cleanup();
});

/** A partitioned primary-key table `(dt, id)` with 4 buckets on `id`, registered on NATS. */
async function keyedTable(): Promise<{ table: Table; name: string }> {
  const name = `db.k${++tableNo}`;
  const table = await new Catalog(warehouse.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, name STRING NOT NULL, score DOUBLE"),
    partitionKeys: ["dt"],
    primaryKeys: ["dt", "id"],
    options: { bucket: "4" },
  });
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
  return { table, name };
}

/** Every RowBatch stored on the table's bucket subjects, with its bucket, in stream order. */
async function storedBatches(table: Table): Promise<Array<{ bucket: number; batch: RowBatch }>> {
  const stream = subjects.ingestStream(table.identifier);
  const st = (await jsm.streams.info(stream)).state;
  const out: Array<{ bucket: number; batch: RowBatch }> = [];
  for (let seq = st.first_seq; seq <= st.last_seq && st.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m !== null) out.push({ bucket: Number(m.subject.split(".").at(-1)), batch: decodeRowBatch(m.data) });
  }
  return out;
}

/** The stored rows as a writer converts them: [bucket, kind, dt, id, name, score]. */
async function storedRows(table: Table): Promise<Array<[number, string, string, bigint, string, number | null]>> {
  const convert = compileKeyedInput(table.schema);
  const kinds = ["+I", "-U", "+U", "-D"];
  const out: Array<[number, string, string, bigint, string, number | null]> = [];
  for (const { bucket, batch } of await storedBatches(table)) {
    assert.deepEqual(batch.cols, ["dt", "id", "name", "score", "_row_kind"]);
    assert.equal(batch.schema, table.schema.id);
    for (const values of batch.rows) {
      const { row, kind } = convert(Object.fromEntries(batch.cols.map((c, i) => [c, values[i]])));
      out.push([bucket, kinds[kind]!, row["dt"] as string, row["id"] as bigint, row["name"] as string, row["score"] as number | null]);
    }
  }
  return out;
}

test("producer (primary key) - upsert, delete by key, and rows with _row_kind reach the key's bucket with their kinds", async () => {
  const { table, name } = await keyedTable();
  const bucketOf = createBucketFunction([table.typeOf("id")], 4);
  const producer = await createProducer({ nc, table: name, producerId: "pk" });
  const ids = [1, 2, 3, 4, 5, 6, 7, 8];
  const upserted = await producer.upsert(ids.map((id) => ({ dt: "2026-01-01", id, name: `n${id}`, score: id / 2 })));
  assert.ok(upserted.every((o) => o.status === "ok"));
  // Deletes name only the key (the partition column is part of it); the whole row is fine too.
  await producer.delete([{ dt: "2026-01-01", id: 2 }, { dt: "2026-01-01", id: 3, name: "n3", score: 1.5 }]);
  // An update as a changelog states it, through writeMany; and single rows through write.
  await producer.writeMany([
    { dt: "2026-01-01", id: 4, _row_kind: "-U" },
    { dt: "2026-01-01", id: 4, name: "n4 again", score: null, _row_kind: "+U" },
  ]);
  await producer.write({ dt: "2026-01-02", id: 9, name: "n9", _row_kind: "+I" });
  await producer.write({ dt: "2026-01-02", id: 10, name: "n10" }); // no kind: +I
  await producer.close();

  const rows = await storedRows(table);
  const expected: Array<[number, string, string, bigint, string, number | null]> = [
    ...ids.map((id): [number, string, string, bigint, string, number | null] => [bucketOf([BigInt(id)]), "+I", "2026-01-01", BigInt(id), `n${id}`, id / 2]),
    [bucketOf([2n]), "-D", "2026-01-01", 2n, "", null], // a NOT NULL column a delete leaves out travels as its zero
    [bucketOf([3n]), "-D", "2026-01-01", 3n, "n3", 1.5],
    [bucketOf([4n]), "-U", "2026-01-01", 4n, "", null],
    [bucketOf([4n]), "+U", "2026-01-01", 4n, "n4 again", null],
    [bucketOf([9n]), "+I", "2026-01-02", 9n, "n9", null],
    [bucketOf([10n]), "+I", "2026-01-02", 10n, "n10", null],
  ];
  // Per bucket the rows keep write order; across buckets the stream interleaves them.
  const byBucket = (rs: typeof rows): string[] => [0, 1, 2, 3].map((b) => JSON.stringify(rs.filter((r) => r[0] === b), (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)));
  assert.deepEqual(byBucket(rows), byBucket(expected));
  assert.equal(rows.length, expected.length);
});

test("producer (primary key) - a bad kind, a missing or null key, a contradicting kind: refused with the reason, nothing published", async () => {
  const { table, name } = await keyedTable();
  const producer = await createProducer({ nc, table: name });
  const refused = (f: () => unknown, reason: string, message: RegExp): void => {
    assert.throws(f, (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.context["reason"] === reason && message.test(e.message));
  };
  refused(() => producer.write({ dt: "d", id: 1, name: "a", _row_kind: "+X" }), "bad-row-kind", /row kind "\+X" is not one of \+I, -U, \+U, -D/);
  refused(() => producer.write({ dt: "d", id: 1, name: "a", _row_kind: 3 }), "bad-row-kind", /row kind 3 is not one of/);
  refused(() => producer.delete([{ dt: "d", id: 1 }, { id: 2 }]), "missing-key", /^row 1: a delete without its key: primary-key column 'dt' is missing/);
  refused(() => producer.write({ dt: "d", name: "a" }), "missing-key", /a row without its key: primary-key column 'id' is missing/);
  refused(() => producer.upsert([{ dt: "d", id: null, name: "a" }]), "null-key", /row 0: primary-key column 'id' is null/);
  refused(() => producer.upsert([{ dt: "d", id: 1, name: "a", _row_kind: "-D" }]), "bad-row-kind", /_row_kind says -D, the write is \+I \(an upsert\)/);
  refused(() => producer.delete([{ dt: "d", id: 1, _row_kind: "+U" }]), "bad-row-kind", /_row_kind says \+U, the write is -D \(a delete\)/);
  // An addition still needs its NOT NULL values; a retraction does not.
  assert.throws(() => producer.write({ dt: "d", id: 1, _row_kind: "+U" }), /column name is NOT NULL/);
  assert.throws(() => producer.write({ dt: "d", id: 1, name: "a", colour: "red" }), /unknown column 'colour'/);
  assert.deepEqual(await producer.flush(), []);
  assert.equal((await jsm.streams.info(subjects.ingestStream(table.identifier))).state.messages, 0, "nothing published");
  // A kind that matches the method's is fine.
  const ok = await producer.delete([{ dt: "d", id: 1, _row_kind: "-D" }]);
  assert.equal(ok[0]!.status, "ok");
  await producer.close();
});

test("producer (primary key, rowkind.field) - the kind comes from the column: write and writeMany take it from there, delete by key names its own; a null or contradicting one refused before anything is published", async () => {
  const name = `db.k${++tableNo}`;
  const table = await new Catalog(warehouse.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id BIGINT NOT NULL, op STRING, v STRING"),
    primaryKeys: ["id"],
    options: { bucket: "1", "rowkind.field": "op" },
  });
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
  const producer = await createProducer({ nc, table: name, producerId: "rk" });
  assert.throws(() => producer.write({ id: 1, v: "no kind" }), /Row kind cannot be null: the rowkind.field column 'op' is missing/);
  assert.throws(() => producer.upsert([{ id: 1, op: "-D" }]), /the rowkind.field column 'op' says -D, the write is \+I \(an upsert\)/);
  await producer.writeMany([
    { id: 1, op: "+I", v: "a" },
    { id: 2, op: "+I", v: "b" },
    { id: 1, op: "-U", v: "a" },
    { id: 1, op: "+U", v: "a2" },
    { id: 2, op: "-D" },
  ]);
  await producer.delete([{ id: 3 }]);
  await producer.close();
  const convert = compileKeyedInput(table.schema);
  const got: string[] = [];
  for (const { batch } of await storedBatches(table)) {
    for (const values of batch.rows) {
      const { row, kind } = convert(Object.fromEntries(batch.cols.map((c, i) => [c, values[i]])));
      got.push(`${["+I", "-U", "+U", "-D"][kind]} ${String(row["id"])} ${String(row["op"])} ${String(row["v"])}`);
    }
  }
  // The writer's conversion gives each row the kind its column named; the column keeps its value.
  assert.deepEqual(got, ["+I 1 +I a", "+I 2 +I b", "-U 1 -U a", "+U 1 +U a2", "-D 2 -D null", "-D 3 null null"]);
});

test("producer (append table) - _row_kind is refused by name; upsert and delete need a primary key", async () => {
  const name = `db.a${++tableNo}`;
  const table = await new Catalog(warehouse.path).createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT, v STRING"), options: { bucket: "2", "bucket-key": "id" } });
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
  const producer = await createProducer({ nc, table: name });
  assert.throws(
    () => producer.write({ id: 1, v: "a", _row_kind: "+I" }),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.context["reason"] === "row-kind-on-append-table" && new RegExp(`_row_kind is for primary-key tables: ${name} has no primary key`).test(e.message),
  );
  assert.throws(() => producer.upsert([{ id: 1, v: "a" }]), (e: unknown) => isLakeError(e, ErrorKind.Unsupported) && /upsert: .* has no primary key/.test(e.message));
  assert.throws(() => producer.delete([{ id: 1 }]), (e: unknown) => isLakeError(e, ErrorKind.Unsupported) && /delete: .* has no primary key/.test(e.message));
  // Its rows are as before: no _row_kind column.
  assert.equal((await producer.write({ id: 1, v: "a" })).status, "ok");
  await producer.close();
  const m = await jsm.streams.getMessage(subjects.ingestStream(table.identifier), { seq: 1 });
  assert.deepEqual(decodeRowBatch(m!.data).cols, ["id", "v"]);
});
