/**
 * Changes through the bare subject `<p>.in.<db>.<table>`, against a real nats-server: the router (run here on the
 * cluster's NATS ports, as a leader runs it) routes raw rows with `_row_kind` and Debezium change events to the
 * bucket subjects, and dead-letters what is wrong — a bad kind, a missing or null key, a truncate, an event of another
 * table shape — with the reason, while the rest of the message lands. The routed batches are read back from the
 * bucket subjects and converted by the rules every writer uses (src/lsm/keyed-input.ts).
 *
 * The router runs alone here, so what it routes can be read exactly as it left; cdc-cluster.test.ts follows the same
 * changes through a running cluster into the table.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { metrics } from "@opentelemetry/api";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { stringify as stringifyLossless } from "lossless-json";
import { parseColumnList } from "../../src/format/data-types.ts";
import { createBucketFunction } from "../../src/format/bucket.ts";
import { compileKeyedInput } from "../../src/lsm/keyed-input.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { Table } from "../../src/table/table.ts";
import { ActorSystem, noopLogger } from "../../actors/runtime/index.ts";
import { RouterActor } from "../../actors/router.ts";
import { systemClock } from "../../actors/ports.ts";
import type { DeadLetter, RowBatch } from "../../actors/wire/messages.ts";
import { decodeRowBatch, packValue } from "../../actors/wire/row-batch.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureTableInfra } from "../../cluster/nats/table-infra.ts";
import { natsPorts, type NatsPorts } from "../../cluster/nats/adapters.ts";
import { readLetters } from "../../cluster/dlq.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { tempDir } from "../helpers/tables.ts";
import { waitFor } from "../helpers/cluster.ts";

let server: ServerHandle;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let ports: NatsPorts;
let warehouse: ReturnType<typeof tempDir>;
let system: ActorSystem;
const subjects = new Subjects("lake");

before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  ports = await natsPorts(nc, subjects);
  warehouse = tempDir("natslake-cdc-router-");
  system = new ActorSystem({ log: noopLogger });
});

after(async () => {
  await system.shutdown();
  await nc.close();
  await server.stop();
  warehouse.cleanup();
});

const FIXTURES = new URL("../fixtures/debezium/", import.meta.url);
const fixture = (name: string): Uint8Array => readFileSync(new URL(name, FIXTURES));
/** The fixture's payload alone: the event as `schemas.enable=false` publishes it. */
const unwrapped = (name: string): Uint8Array => {
  const text = new TextDecoder().decode(fixture(name));
  const start = text.indexOf('"payload":');
  return new TextEncoder().encode(text.slice(start + '"payload":'.length, text.lastIndexOf("}")));
};

async function registered(name: string, columns: string, o: { primaryKeys?: string[]; partitionKeys?: string[]; options: Record<string, string> }): Promise<Table> {
  const table = await new Catalog(warehouse.path).createTable(parseIdentifier(name), {
    columns: parseColumnList(columns),
    primaryKeys: o.primaryKeys ?? [],
    partitionKeys: o.partitionKeys ?? [],
    options: o.options,
  });
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
  return table;
}

/** Publishes raw messages to the table's bare subject; resolves with the last one's stream sequence. */
async function publishRaw(table: Table, payloads: Array<Uint8Array | string>): Promise<number> {
  let last = 0;
  for (const p of payloads) last = (await js.publish(subjects.ingestRaw(table.identifier), p)).seq;
  return last;
}

/** Runs a router for the table until it has routed through `lastSeq`. */
async function route(table: Table, lastSeq: number): Promise<void> {
  system.spawn(`router-${table.name}`, () => new RouterActor({ table, raw: ports.raw, bus: ports.bus, clock: systemClock, meter: metrics.getMeter("test"), fetchBatch: 64 }));
  await waitFor(`${table.name} routed through ${lastSeq}`, async () => ((await ports.raw.readProgress(table.name)).progress.through >= lastSeq ? true : undefined), 20_000, 50);
}

/** The routed batches on the table's bucket subjects, in stream order. */
async function routed(table: Table): Promise<Array<{ bucket: number; batch: RowBatch }>> {
  const stream = subjects.ingestStream(table.identifier);
  const st = (await jsm.streams.info(stream)).state;
  const out: Array<{ bucket: number; batch: RowBatch }> = [];
  for (let seq = st.first_seq; seq <= st.last_seq; seq++) {
    // Raw messages are purged once routed (a purged sequence reads as a message without a subject).
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    const bucket = /\.(\d+)$/.exec(m?.subject ?? "")?.[1];
    if (m !== null && bucket !== undefined && m.subject.startsWith(`${subjects.ingestRaw(table.identifier)}.`)) out.push({ bucket: Number(bucket), batch: decodeRowBatch(m.data) });
  }
  return out;
}

const KINDS = ["+I", "-U", "+U", "-D"];
/** Routed rows as a writer converts them: `bucket kind {row}` lines, per bucket in stream order. */
async function routedRows(table: Table): Promise<Map<number, string[]>> {
  const convert = compileKeyedInput(table.schema);
  const out = new Map<number, string[]>();
  for (const { bucket, batch } of await routed(table)) {
    assert.deepEqual(batch.cols, [...table.schema.fields.map((f) => f.name), "_row_kind"]);
    for (const values of batch.rows) {
      const { row, kind } = convert(Object.fromEntries(batch.cols.map((c, i) => [c, values[i]])));
      const list = out.get(bucket) ?? [];
      list.push(`${KINDS[kind]} ${stringifyLossless(row, (_k, v: unknown) => (typeof v === "bigint" ? Number(v) : v))}`);
      out.set(bucket, list);
    }
  }
  return out;
}

async function letters(table: Table): Promise<DeadLetter[]> {
  return (await readLetters(nc, subjects, table.identifier, { limit: 100 })).letters.map((l) => l.letter);
}

test("router - raw rows with _row_kind: kinds and keys checked; a bad kind, a missing or null key dead-lettered with the reason; the rest routed", async () => {
  const table = await registered("db.kv", "dt STRING NOT NULL, id BIGINT NOT NULL, name STRING NOT NULL, score DOUBLE", {
    primaryKeys: ["dt", "id"],
    partitionKeys: ["dt"],
    options: { bucket: "4" },
  });
  const last = await publishRaw(table, [
    JSON.stringify([
      { dt: "d1", id: 1, name: "a", score: 0.5, _row_kind: "+I" },
      { dt: "d1", id: 1, _row_kind: "-D" }, // a delete by key
      { dt: "d1", id: 2, name: "b", _row_kind: "+X" },
      { id: 3, name: "c" },
      { dt: "d1", id: null, name: "d" },
      { dt: "d1", id: 4, name: "e" }, // no kind: +I
    ]),
    // A RowBatch published raw, its cols naming _row_kind; and msgpack rows.
    packValue({ v: 1, cols: ["dt", "id", "name", "_row_kind"], rows: [["d1", 5, "x", "-U"], ["d1", 5, "y", "+U"]] }),
    packValue({ dt: "d1", id: 6, name: "f", _row_kind: 2n ** 60n }),
    "{not json",
  ]);
  await route(table, last);
  const bucketOf = createBucketFunction([table.typeOf("id")], 4);
  const expected = new Map<number, string[]>();
  const put = (id: number, line: string): void => void expected.set(bucketOf([BigInt(id)]), [...(expected.get(bucketOf([BigInt(id)])) ?? []), line]);
  put(1, `+I {"dt":"d1","id":1,"name":"a","score":0.5}`);
  put(1, `-D {"dt":"d1","id":1,"name":"","score":null}`);
  put(4, `+I {"dt":"d1","id":4,"name":"e","score":null}`);
  put(5, `-U {"dt":"d1","id":5,"name":"x","score":null}`);
  put(5, `+U {"dt":"d1","id":5,"name":"y","score":null}`);
  assert.deepEqual(await routedRows(table), expected);
  const dead = await letters(table);
  assert.deepEqual(
    dead.map((l) => [l.streamSeq, l.rowIndex, l.reason.replace(/: Expected .*/, "")]),
    [
      [1, 2, 'row kind "+X" is not one of +I, -U, +U, -D'],
      [1, 3, "a row without its key: primary-key column 'dt' is missing"],
      [1, 4, "primary-key column 'id' is null"],
      [3, 0, `row kind ${2n ** 60n} (a bigint) is not one of +I, -U, +U, -D`],
      [4, -1, "payload is not valid JSON"],
    ],
  );
  assert.deepEqual(dead[0]!.original, { dt: "d1", id: 2, name: "b", _row_kind: "+X" });
  assert.ok(dead.every((l) => l.stage === "router" && l.table === "db.kv"));
});

test("router - Debezium events (MySQL and Postgres customers, with and without the schema wrapper) become -U/+U/-D rows in the key's bucket; truncates and foreign events are dead letters", async () => {
  const table = await registered("inventory.customers", "id INT NOT NULL, first_name STRING NOT NULL, last_name STRING NOT NULL, email STRING NOT NULL", {
    primaryKeys: ["id"],
    options: { bucket: "2", "natslake.ingest.format": "debezium-json" },
  });
  const foreign = new TextEncoder().encode(JSON.stringify({ op: "c", before: null, after: { id: 77, first_name: "A", last_name: "B", email: "e", phone: "1" } }));
  const last = await publishRaw(table, [
    fixture("mysql-customers-read.json"), // 1
    fixture("mysql-customers-create.json"), // 2
    fixture("mysql-customers-update.json"), // 3
    fixture("mysql-customers-delete.json"), // 4
    "", // 5: a tombstone, passed over
    fixture("mysql-customers-truncate.json"), // 6: dead letter
    unwrapped("postgres-customers-create.json"), // 7
    unwrapped("postgres-customers-update.json"), // 8: before holds only the key
    unwrapped("postgres-customers-delete.json"), // 9
    foreign, // 10: a column the table lacks
    "[1, 2]", // 11: not an event
    packValue({ op: "c" }), // 12: not JSON
  ]);
  await route(table, last);
  const bucketOf = createBucketFunction([table.typeOf("id")], 2);
  const anne = { id: 1004, first_name: "Anne", last_name: "Kretchmar", email: "annek@noanswer.org" };
  const expected = new Map<number, string[]>();
  const put = (id: number, kind: string, row: object): void => void expected.set(bucketOf([id]), [...(expected.get(bucketOf([id])) ?? []), `${kind} ${JSON.stringify(row)}`]);
  put(1001, "+I", { id: 1001, first_name: "Sally", last_name: "Thomas", email: "sally.thomas@acme.com" });
  put(1004, "+I", anne);
  put(1004, "-U", anne);
  put(1004, "+U", { ...anne, first_name: "Anne Marie" });
  put(1004, "-D", { ...anne, first_name: "Anne Marie" });
  put(1, "+I", { id: 1, first_name: "Anne", last_name: "Kretchmar", email: "annek@noanswer.org" });
  put(1, "-U", { id: 1, first_name: "", last_name: "", email: "" });
  put(1, "+U", { id: 1, first_name: "Anne Marie", last_name: "Kretchmar", email: "annek@noanswer.org" });
  put(1, "-D", { id: 1, first_name: "", last_name: "", email: "" });
  assert.deepEqual(await routedRows(table), expected);
  const dead = await letters(table);
  assert.deepEqual(
    dead.map((l) => [l.streamSeq, l.rowIndex]),
    [
      [6, -1],
      [10, -1],
      [11, -1],
      [12, -1],
    ],
  );
  assert.match(dead[0]!.reason, /^a truncate event \('t'\) is not applied: natslake does not empty inventory\.customers/);
  assert.equal((dead[0]!.original as { payload: { op: string } }).payload.op, "t", "the event itself is the letter's original");
  assert.match(dead[1]!.reason, /"after" has column 'phone', which inventory\.customers does not have/);
  assert.match(dead[2]!.reason, /a Debezium change event is a JSON object, got an array/);
  assert.equal(dead[3]!.reason, `payload is not JSON text (it starts with byte 0x${packValue({ op: "c" })[0]!.toString(16)})`);
});

test("router - an append table: a row with _row_kind is a dead letter saying why, the others land as before", async () => {
  const table = await registered("db.events", "id BIGINT, v STRING", { options: { bucket: "2", "bucket-key": "id" } });
  const last = await publishRaw(table, [JSON.stringify([{ id: 1, v: "a" }, { id: 2, v: "b", _row_kind: "+I" }, { id: 3, v: "c" }])]);
  await route(table, last);
  const batches = await routed(table);
  assert.deepEqual(batches.flatMap((b) => b.batch.rows.map((r) => r[0])).sort(), [1, 3]);
  assert.ok(batches.every((b) => b.batch.cols.join() === "id,v"));
  const dead = await letters(table);
  assert.deepEqual(dead.map((l) => [l.rowIndex, l.reason]), [[1, "_row_kind is for primary-key tables: db.events has no primary key (its rows are appended as they come; leave _row_kind out)"]]);
});

test("router - an ingest format it does not know: nothing is read (no progress, the raw message stays), nothing dead-lettered", async () => {
  const created = await registered("db.other", "id INT NOT NULL, v STRING", { primaryKeys: ["id"], options: { bucket: "2" } });
  // As another engine could have written it: an option value natslake refuses at create.
  const table = new Table(created.identifier, created.root, created.io, { ...created.schema, options: { ...created.schema.options, "natslake.ingest.format": "maxwell-json" } });
  const last = await publishRaw(table, [JSON.stringify({ id: 1, v: "a" })]);
  system.spawn("router-db.other", () => new RouterActor({ table, raw: ports.raw, bus: ports.bus, clock: systemClock, meter: metrics.getMeter("test"), fetchBatch: 64 }));
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await ports.raw.readProgress("db.other")).progress.through, 0);
  const st = (await jsm.streams.info(subjects.ingestStream(table.identifier))).state;
  assert.equal(st.last_seq, last);
  assert.equal(st.messages, 1, "the raw message is kept");
  assert.deepEqual(await letters(table), []);
});
