/**
 * Debezium change events → rows with kinds (src/cdc/debezium-json.ts), on the `customers` events of Debezium's MySQL
 * and PostgreSQL connector pages (test/fixtures/debezium), each read from its bytes as the router reads a message
 * (`parseJsonMessage`), with the schema wrapper and without it (the wrapper's payload alone, what
 * `schemas.enable=false` publishes). Then the value encodings the wrapper's schema names, the events that are refused
 * and why, and a property: any event either converts into rows of valid kinds and keys or is refused with a typed
 * reason — never another exception.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { stringify as stringifyLossless } from "lossless-json";
import { compileDebeziumJson, compileDebeziumRoundingCheck, type DebeziumChange } from "../../../src/cdc/debezium-json.ts";
import { ingestFormatOf } from "../../../src/cdc/ingest-format.ts";
import { isLakeError } from "../../../src/errors.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { newTableSchema, type TableSchema } from "../../../src/format/schema.ts";
import { Timestamp } from "../../../src/format/values.ts";
import { RowKind } from "../../../src/lsm/row-kind.ts";
import { parseJsonMessage } from "../../../actors/wire/row-batch.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { tempDir } from "../../helpers/tables.ts";

const FIXTURES = new URL("../../fixtures/debezium/", import.meta.url);
const bytesOf = (name: string): Uint8Array => readFileSync(new URL(name, FIXTURES));
/** The event as Debezium Server publishes it with the schema wrapper (the fixture's bytes). */
const wrapped = (name: string): unknown => parseJsonMessage(bytesOf(name));
/** The same event without the wrapper: the payload's JSON text alone, read back from bytes. */
const unwrapped = (name: string): unknown => {
  const payload = (wrapped(name) as { payload: unknown }).payload;
  return parseJsonMessage(new TextEncoder().encode(stringifyLossless(payload)!));
};

const schemaOf = (columns: string, primaryKeys: string[], options: Record<string, string> = {}): TableSchema =>
  newTableSchema({ columns: parseColumnList(columns), primaryKeys, options: { bucket: "2", "natslake.ingest.format": "debezium-json", ...options } });

/** MySQL's and Postgres's `customers`: `id INTEGER` primary key and three NOT NULL strings. */
const CUSTOMERS = schemaOf("id INT NOT NULL, first_name STRING NOT NULL, last_name STRING NOT NULL, email STRING NOT NULL", ["id"]);
const readCustomers = compileDebeziumJson("inventory.customers", CUSTOMERS);

const KIND = { [RowKind.INSERT]: "+I", [RowKind.UPDATE_BEFORE]: "-U", [RowKind.UPDATE_AFTER]: "+U", [RowKind.DELETE]: "-D" } as const;
/** A change as `[kind, row]` pairs, for comparison. */
const rowsOf = (c: DebeziumChange): Array<[string, Record<string, unknown>]> => (c.op === "tombstone" ? [] : c.rows.map((r) => [KIND[r.kind], r.row]));

const anne = { id: 1004, first_name: "Anne", last_name: "Kretchmar", email: "annek@noanswer.org" };
const anneMarie = { ...anne, first_name: "Anne Marie" };

/** Asserts `f` throws a DataInvalid LakeError with this `context.reason` and a message matching `message`. */
function refused(f: () => unknown, reason: string, message: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(isLakeError(e, "DataInvalid"), `a DataInvalid LakeError, got ${String(e)}`);
    assert.equal(e.context["reason"], reason, e.message);
    assert.match(e.message, message);
    return true;
  });
}

for (const [form, read] of [
  ["with the schema wrapper", wrapped],
  ["without the schema wrapper", unwrapped],
] as const) {
  test(`debezium-json - MySQL customers ${form}: create, snapshot read, update, delete`, () => {
    const create = readCustomers(read("mysql-customers-create.json"));
    assert.equal(create.op, "c");
    assert.deepEqual(rowsOf(create), [["+I", anne]]);
    const snapshot = readCustomers(read("mysql-customers-read.json"));
    assert.equal(snapshot.op, "r");
    assert.deepEqual(rowsOf(snapshot), [["+I", { id: 1001, first_name: "Sally", last_name: "Thomas", email: "sally.thomas@acme.com" }]]);
    // An update: the row before it is retracted (-U), then the row after it added (+U).
    assert.deepEqual(rowsOf(readCustomers(read("mysql-customers-update.json"))), [
      ["-U", anne],
      ["+U", anneMarie],
    ]);
    assert.deepEqual(rowsOf(readCustomers(read("mysql-customers-delete.json"))), [["-D", anneMarie]]);
  });

  test(`debezium-json - Postgres customers ${form}: REPLICA IDENTITY DEFAULT (before holds the key) and FULL`, () => {
    const anne1 = { id: 1, first_name: "Anne", last_name: "Kretchmar", email: "annek@noanswer.org" };
    assert.deepEqual(rowsOf(readCustomers(read("postgres-customers-create.json"))), [["+I", anne1]]);
    // DEFAULT: `before` is {"id": 1}; the retraction names the key, its NOT NULL strings are their zero ("").
    const keyOnly = { id: 1, first_name: "", last_name: "", email: "" };
    assert.deepEqual(rowsOf(readCustomers(read("postgres-customers-update.json"))), [
      ["-U", keyOnly],
      ["+U", { ...anne1, first_name: "Anne Marie" }],
    ]);
    assert.deepEqual(rowsOf(readCustomers(read("postgres-customers-delete.json"))), [["-D", keyOnly]]);
    // FULL: `before` holds every column.
    assert.deepEqual(rowsOf(readCustomers(read("postgres-customers-update-full.json"))), [
      ["-U", anne1],
      ["+U", { ...anne1, first_name: "Anne Marie" }],
    ]);
    assert.deepEqual(rowsOf(readCustomers(read("postgres-customers-delete-full.json"))), [["-D", { ...anne1, first_name: "Anne Marie" }]]);
  });

  test(`debezium-json - truncate and message events ${form} are refused with the reason`, () => {
    refused(() => readCustomers(read("mysql-customers-truncate.json")), "unsupported-op", /truncate event \('t'\) is not applied.*skipped\.operations=t/);
    refused(() => readCustomers(read("postgres-customers-truncate.json")), "unsupported-op", /truncate/);
    refused(() => readCustomers(read("postgres-message.json")), "unsupported-op", /message event \('m'\) carries no row/);
  });
}

test("debezium-json - tombstones are ignored: an empty message, a JSON null, a wrapper with a null payload", () => {
  for (const text of ["", "  \n", "null", `{"schema": null, "payload": null}`]) {
    assert.deepEqual(readCustomers(parseJsonMessage(new TextEncoder().encode(text))), { op: "tombstone" }, JSON.stringify(text));
  }
});

test("debezium-json - an update without `before` (Postgres REPLICA IDENTITY NOTHING) is its +U alone", () => {
  const event = unwrapped("postgres-customers-update.json") as Record<string, unknown>;
  delete event["before"];
  assert.deepEqual(rowsOf(readCustomers(event)), [["+U", { id: 1, first_name: "Anne Marie", last_name: "Kretchmar", email: "annek@noanswer.org" }]]);
  assert.deepEqual(rowsOf(readCustomers({ ...event, before: null })), rowsOf(readCustomers(event)));
});

test("debezium-json - events of another table shape, or not change events, are refused with the reason", () => {
  // The customers events read into a table that has no `email` column.
  const narrow = compileDebeziumJson("crm.people", schemaOf("id INT NOT NULL, first_name STRING, last_name STRING", ["id"]));
  refused(() => narrow(wrapped("mysql-customers-create.json")), "unknown-column", /"after" has column 'email', which crm\.people does not have \(columns: id, first_name, last_name\)/);
  // A table keyed on (tenant, id): Postgres's key-only `before` lacks `tenant`.
  const tenanted = compileDebeziumJson("crm.t", schemaOf("tenant STRING NOT NULL, id INT NOT NULL, first_name STRING, last_name STRING, email STRING", ["tenant", "id"]));
  refused(() => tenanted(wrapped("postgres-customers-delete.json")), "missing-key", /delete event's "before": a delete without its key: primary-key column 'tenant' is missing/);
  refused(() => tenanted(wrapped("postgres-customers-create.json")), "missing-key", /create event's "after".*'tenant' is missing/);
  // A null key.
  const nullKey = { ...(unwrapped("mysql-customers-create.json") as object), after: { ...anne, id: null } };
  refused(() => readCustomers(nullKey), "null-key", /primary-key column 'id' is null/);
  // Images missing where the op needs them.
  refused(() => readCustomers({ op: "c", before: null, after: null }), "missing-image", /create event \('c'\) has no "after" row/);
  refused(() => readCustomers({ op: "d", before: null, after: null }), "missing-image", /delete event \('d'\) has no "before" row \(for deletes, Postgres needs/);
  refused(() => readCustomers({ op: "u", before: null, after: "x" }), "missing-image", /"after" is "x", not a row/);
  // Not change events at all.
  refused(() => readCustomers([anne]), "not-an-event", /JSON object, got an array/);
  refused(() => readCustomers(anne), "not-an-event", /has no "op"/);
  refused(() => readCustomers({ schema: {}, payload: 7 }), "not-an-event", /payload is number 7/);
  refused(() => readCustomers({ op: "x", after: anne }), "unsupported-op", /unknown Debezium operation "x"/);
  // A value the column cannot take.
  refused(() => readCustomers({ op: "c", after: { ...anne, first_name: 12 } }), "bad-value", /create event's "after": column first_name: expected a string/);
});

/** A wrapped create event whose `after` has these fields (Connect schemas) and values. */
function wrappedCreate(fields: Array<Record<string, unknown>>, after: Record<string, unknown>): unknown {
  const image = { type: "struct", fields, optional: true, name: "srv.db.t.Value" };
  return {
    schema: { type: "struct", fields: [{ ...image, field: "before" }, { ...image, field: "after" }, { type: "string", optional: false, field: "op" }], optional: false, name: "srv.db.t.Envelope" },
    payload: { before: null, after, op: "c", ts_ms: 1 },
  };
}

test("debezium-json - values by the wrapper's schema: Debezium's time types, decimals, bits and bytes", () => {
  const schema = schemaOf(
    "id BIGINT NOT NULL, d DATE, t TIME(3), mt TIME(3), ts TIMESTAMP(3), mts TIMESTAMP(6), nts TIMESTAMP(9), zts TIMESTAMP(6) WITH LOCAL TIME ZONE, " +
      "price DECIMAL(10, 2), neg DECIMAL(10, 2), num DECIMAL(10, 2), vsd DECIMAL(20, 5), bits BYTES, raw BYTES, txt STRING, isod DATE, cd DATE, ct TIME, cts TIMESTAMP(3), dts TIMESTAMP(3), tsd DATE, rawts BIGINT",
    ["id"],
  );
  const field = (name: string, type: string, semantic?: string, parameters?: Record<string, string>): Record<string, unknown> => ({
    type,
    optional: true,
    ...(semantic !== undefined ? { name: semantic } : {}),
    ...(parameters !== undefined ? { parameters } : {}),
    field: name,
  });
  const price = Buffer.from([0x04, 0xd2]).toString("base64"); // unscaled 1234
  const neg = Buffer.from([0xfb, 0x2e]).toString("base64"); // unscaled −1234 (two's complement)
  const event = wrappedCreate(
    [
      field("id", "int64"),
      field("d", "int32", "io.debezium.time.Date"),
      field("t", "int32", "io.debezium.time.Time"),
      field("mt", "int64", "io.debezium.time.MicroTime"),
      field("ts", "int64", "io.debezium.time.Timestamp"),
      field("mts", "int64", "io.debezium.time.MicroTimestamp"),
      field("nts", "int64", "io.debezium.time.NanoTimestamp"),
      field("zts", "string", "io.debezium.time.ZonedTimestamp"),
      field("price", "bytes", "org.apache.kafka.connect.data.Decimal", { scale: "2", "connect.decimal.precision": "10" }),
      field("neg", "bytes", "org.apache.kafka.connect.data.Decimal", { scale: "2" }),
      field("num", "bytes", "org.apache.kafka.connect.data.Decimal", { scale: "2" }),
      { type: "struct", optional: true, name: "io.debezium.data.VariableScaleDecimal", fields: [field("scale", "int32"), field("value", "bytes")], field: "vsd" },
      field("bits", "bytes", "io.debezium.data.Bits", { length: "16" }),
      field("raw", "bytes"),
      field("txt", "bytes"),
      field("isod", "string", "io.debezium.time.IsoDate"),
      field("cd", "int32", "org.apache.kafka.connect.data.Date"),
      field("ct", "int32", "org.apache.kafka.connect.data.Time"),
      field("cts", "int64", "org.apache.kafka.connect.data.Timestamp"),
      field("dts", "int32", "io.debezium.time.Date"),
      field("tsd", "int64", "io.debezium.time.MicroTimestamp"),
      field("rawts", "int64", "io.debezium.time.MicroTimestamp"),
    ],
    {
      id: 7,
      d: 16816, // 2016-01-16
      t: 45_296_789, // 12:34:56.789
      mt: 45_296_789_123,
      ts: 1_529_476_623_000, // DATETIME 2018-06-20 06:37:03 (the MySQL page's example)
      mts: 1_529_476_623_123_456,
      nts: 1_529_476_623_123_456_789n,
      zts: "2018-06-20T13:37:03.5Z",
      price,
      neg,
      num: 12.5, // decimal.format=numeric
      vsd: { scale: 3, value: Buffer.from([0x30, 0x39]).toString("base64") }, // 12345 at scale 3
      bits: Buffer.from([0x01, 0x80]).toString("base64"), // little-endian
      raw: Buffer.from([0, 1, 254, 255]).toString("base64"),
      txt: Buffer.from("héllo", "utf8").toString("base64"),
      isod: "2017-09-15Z",
      cd: 16816,
      ct: 1000,
      cts: 1_529_476_623_000,
      dts: 16816, // a date into a timestamp column: its midnight
      tsd: 1_529_476_623_123_456, // a timestamp into a date column: its day
      rawts: 1_529_476_623_123_456, // into a BIGINT column: the count as it is
    },
  );
  const c = compileDebeziumJson("db.t", schema)(event);
  assert.equal(c.op, "c");
  const row = c.op === "c" ? c.rows[0]!.row : {};
  const days = (iso: string): number => Date.parse(`${iso}T00:00:00Z`) / 86_400_000;
  assert.deepEqual(row, {
    id: 7n,
    d: days("2016-01-16"),
    t: 45_296_789,
    mt: 45_296_789,
    ts: new Timestamp(Date.parse("2018-06-20T06:37:03Z"), 0),
    mts: new Timestamp(Date.parse("2018-06-20T06:37:03.123Z"), 456_000),
    nts: new Timestamp(Date.parse("2018-06-20T06:37:03.123Z"), 456_789),
    zts: new Timestamp(Date.parse("2018-06-20T13:37:03.500Z"), 0),
    price: 1234n,
    neg: -1234n,
    num: 1250n,
    vsd: 1_234_500n, // 12.345 at scale 5
    bits: Uint8Array.of(0x80, 0x01),
    raw: Uint8Array.of(0, 1, 254, 255),
    txt: "héllo",
    isod: days("2017-09-15"),
    cd: days("2016-01-16"),
    ct: 1000,
    cts: new Timestamp(Date.parse("2018-06-20T06:37:03Z"), 0),
    dts: new Timestamp(days("2016-01-16") * 86_400_000, 0),
    tsd: days("2018-06-20"),
    rawts: 1_529_476_623_123_456n,
  });
  // A value of the wrong form for its semantic type names the column and the type.
  const bad = wrappedCreate([field("id", "int64"), field("d", "int32", "io.debezium.time.Date")], { id: 1, d: "yesterday" });
  refused(() => compileDebeziumJson("db.t", schema)(bad), "bad-value", /column d: Debezium type io\.debezium\.time\.Date expects days since 1970-01-01, got 'yesterday'/);
  const badDecimal = wrappedCreate([field("id", "int64"), field("price", "bytes", "org.apache.kafka.connect.data.Decimal", { scale: "2" })], { id: 1, price: "not base64!" });
  refused(() => compileDebeziumJson("db.t", schema)(badDecimal), "bad-value", /column price: Debezium type org\.apache\.kafka\.connect\.data\.Decimal expects base64 text/);
});

test("debezium-json - without the wrapper, values convert by the table's column types as JSON rows do", () => {
  const schema = schemaOf("id BIGINT NOT NULL, d DATE, ts TIMESTAMP(3), price DECIMAL(10, 2), b BYTES", ["id"]);
  const c = compileDebeziumJson("db.t", schema)({ op: "c", before: null, after: { id: 1, d: "2016-01-16", ts: 1_529_476_623_000, price: "12.34", b: "AAH+/w==" } });
  const [[kind, row]] = rowsOf(c) as [[string, Record<string, unknown>]];
  assert.equal(kind, "+I");
  assert.deepEqual({ ...row, b: new Uint8Array(row["b"] as Uint8Array) }, { id: 1n, d: 16816, ts: new Timestamp(1_529_476_623_000, 0), price: 1234n, b: Uint8Array.of(0, 1, 254, 255) });
});

test("natslake.ingest.format - rows by default, debezium-json on primary-key tables only, refused by name otherwise", () => {
  assert.equal(ingestFormatOf("db.t", schemaOf("id INT NOT NULL", ["id"], { "natslake.ingest.format": "rows" })), "rows");
  assert.equal(ingestFormatOf("db.t", CUSTOMERS), "debezium-json");
  const append = newTableSchema({ columns: parseColumnList("id INT"), options: { "natslake.ingest.format": "debezium-json" } });
  assert.throws(() => ingestFormatOf("db.a", append), /db\.a: option 'natslake\.ingest\.format' = 'debezium-json' needs a primary key/);
  // An unknown value is refused when the table is created (the options registry), and by the router for a table
  // another engine wrote.
  assert.throws(() => schemaOf("id INT NOT NULL", ["id"], { "natslake.ingest.format": "debezium-avro" }), /natslake\.ingest\.format.*debezium-avro/);
  assert.throws(() => ingestFormatOf("db.x", { ...CUSTOMERS, options: { ...CUSTOMERS.options, "natslake.ingest.format": "maxwell" } }), /expected one of rows, debezium-json/);
});

test("natslake.ingest.format - creating an append table with debezium-json is refused; a primary-key table takes it", async () => {
  const dir = tempDir();
  try {
    const catalog = new Catalog(dir.path);
    await assert.rejects(
      catalog.createTable(parseIdentifier("db.events"), { columns: parseColumnList("id INT, v STRING"), options: { "natslake.ingest.format": "debezium-json" } }),
      /needs a primary key/,
    );
    const t = await catalog.createTable(parseIdentifier("db.customers"), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2", "natslake.ingest.format": "debezium-json" } });
    assert.equal(t.options.get("natslake.ingest.format"), "debezium-json");
  } finally {
    dir.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Property: any event converts or is refused with a typed reason

const REASONS = new Set(["not-an-event", "unsupported-op", "missing-image", "unknown-column", "bad-value", "bad-row-kind", "missing-key", "null-key"]);

const column = fc.constantFrom("id", "first_name", "last_name", "email", "extra", "_row_kind");
const value = fc.oneof(
  fc.integer(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.string({ maxLength: 8 }),
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.constantFrom("+I", "-D", "AAE=", "2020-01-01"),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
/** A row of `customers` (what converts), a key alone, or anything. */
const customer = fc.record({ id: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), first_name: fc.string({ maxLength: 5 }), last_name: fc.string({ maxLength: 5 }), email: fc.string({ maxLength: 5 }) });
const image = fc.oneof(customer, customer.map((c) => ({ id: c.id })), fc.dictionary(column, value, { maxKeys: 6 }), fc.constant(null), value);
const connectField = fc.record({
  type: fc.constantFrom("int32", "int64", "string", "bytes", "struct", "boolean", "float64"),
  name: fc.option(
    fc.constantFrom(
      "io.debezium.time.Date",
      "io.debezium.time.MicroTimestamp",
      "io.debezium.time.NanoTimestamp",
      "io.debezium.time.ZonedTimestamp",
      "io.debezium.time.ZonedTime",
      "io.debezium.time.MicroTime",
      "org.apache.kafka.connect.data.Decimal",
      "io.debezium.data.VariableScaleDecimal",
      "io.debezium.data.Bits",
    ),
    { nil: undefined },
  ),
  parameters: fc.option(fc.record({ scale: fc.constantFrom("0", "2", "-1", "x") }), { nil: undefined }),
  field: column,
});
const event = fc.record({
  op: fc.option(fc.constantFrom("c", "r", "u", "d", "t", "m", "q"), { nil: undefined }),
  before: image,
  after: image,
});

test("debezium-json - property: random events convert into rows of valid kinds and keys, or are refused with a typed reason", () => {
  const outcomes = { converted: 0, tombstones: 0, refused: new Map<string, number>() };
  fc.assert(
    fc.property(event, fc.boolean(), fc.array(connectField, { maxLength: 6 }), (e, wrap, fields) => {
      const message = wrap ? { schema: { type: "struct", fields: [{ type: "struct", fields, field: "after" }] }, payload: e } : e;
      let change: DebeziumChange;
      try {
        change = readCustomers(message);
      } catch (err) {
        assert.ok(isLakeError(err, "DataInvalid"), `only DataInvalid is thrown, got ${String(err)}`);
        assert.ok(REASONS.has(String(err.context["reason"])), `a typed reason, got ${String(err.context["reason"])}: ${err.message}`);
        outcomes.refused.set(String(err.context["reason"]), (outcomes.refused.get(String(err.context["reason"])) ?? 0) + 1);
        return;
      }
      if (change.op === "tombstone") return void outcomes.tombstones++;
      outcomes.converted++;
      assert.ok(["c", "r", "u", "d"].includes(change.op));
      for (const r of change.rows) {
        assert.ok(r.kind >= 0 && r.kind <= 3);
        assert.equal(typeof r.row["id"], "number", "every row has its key");
      }
      const kinds = change.rows.map((r) => KIND[r.kind]).join(",");
      const expected = { c: ["+I"], r: ["+I"], u: ["-U,+U", "+U"], d: ["-D"] }[change.op];
      assert.ok(expected.includes(kinds), `${change.op} → ${kinds}`);
    }),
    { numRuns: 3000 },
  );
  // The property saw both sides: events that convert, and refusals of every kind the generator can make.
  assert.ok(outcomes.converted > 100, `converted ${outcomes.converted}`);
  for (const reason of ["not-an-event", "unsupported-op", "missing-image", "unknown-column", "bad-value", "missing-key"]) assert.ok((outcomes.refused.get(reason) ?? 0) > 0, `no event refused as ${reason}`);
});

// ---------------------------------------------------------------------------------------------------------------
// Reading fast: JSON.parse, and again without rounding only when the rows would take a rounded value

test("debezium-json - the rounding check: envelope timestamps do not count, a big integer or a long decimal in a row image does", () => {
  const mayRound = compileDebeziumRoundingCheck(schemaOf("id BIGINT NOT NULL, amount DECIMAL(38, 10), score DOUBLE, tags ARRAY<BIGINT>", ["id"]));
  const fast = (text: string): unknown => parseJsonMessage(new TextEncoder().encode(text), true);
  // The documented events carry 19-digit ts_ns numbers outside the rows.
  for (const name of ["mysql-customers-update.json", "postgres-customers-delete.json"]) assert.equal(compileDebeziumRoundingCheck(CUSTOMERS)(parseJsonMessage(bytesOf(name), true)), false, name);
  assert.equal(mayRound(fast(`{"op":"c","ts_ns":1465581029523758914,"after":{"id":9007199254740991,"amount":"AAE=","score":0.1}}`)), false, "a safe integer, a decimal in base64, a double");
  assert.equal(mayRound(fast(`{"op":"c","after":{"id":1,"amount":1.5}}`)), true, "a number for a DECIMAL column");
  // 2541763395034178.75 is the double 2541763395034179 — an integer — so any number for a DECIMAL counts (found by the property below).
  assert.equal(mayRound(fast(`{"op":"c","after":{"id":1,"amount":2541763395034178.75}}`)), true, "a DECIMAL number that rounded to an integer");
  assert.equal(mayRound(fast(`{"op":"c","after":{"id":9007199254740993}}`)), true, "an integer beyond 2^53");
  assert.equal(mayRound(fast(`{"schema":{},"payload":{"op":"u","before":{"id":9007199254740993},"after":{"id":1}}}`)), true, "in the wrapped before");
  assert.equal(mayRound(fast(`{"op":"c","after":{"id":1,"tags":[1,18446744073709551615]}}`)), true, "inside a nested value");
  assert.equal(mayRound(fast(`null`)), false);
});

test("debezium-json - property: an event the check passes reads the same from JSON.parse as read without rounding", () => {
  const schema = schemaOf("id BIGINT NOT NULL, amount DECIMAL(38, 10), score DOUBLE, ts TIMESTAMP(9), tags ARRAY<BIGINT>", ["id"]);
  const read = compileDebeziumJson("db.t", schema);
  const mayRound = compileDebeziumRoundingCheck(schema);
  const outcome = (event: unknown): unknown => {
    try {
      return rowsOf(read(event));
    } catch (e) {
      return isLakeError(e) ? `refused: ${e.message}` : `crash: ${String(e)}`;
    }
  };
  const integer = fc.oneof(
    { weight: 6, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }) },
    { weight: 1, arbitrary: fc.constantFrom(9007199254740991n, 9007199254740993n, 2n ** 63n - 1n) },
  );
  const decimal = fc.tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 12 })).map(([u, scale]) => {
    const digits = (u < 0n ? -u : u).toString().padStart(scale + 1, "0");
    return `${u < 0n ? "-" : ""}${scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`}`;
  });
  let passed = 0;
  let checked = 0;
  fc.assert(
    fc.property(integer, fc.oneof(decimal, integer.map(String), decimal.map((d) => JSON.stringify(d)), fc.constantFrom("null", '"BNI="')), fc.double({ noNaN: true, noDefaultInfinity: true }), integer, fc.array(integer, { maxLength: 2 }), fc.boolean(), (id, amount, score, ts, tags, wrap) => {
      const after = `{"id":${id},"amount":${amount},"score":${JSON.stringify(score)},"ts":${ts},"tags":[${tags.join(",")}]}`;
      const envelope = `{"op":"c","ts_ns":${2n ** 60n + BigInt(ts)},"before":null,"after":${after}}`;
      const text = wrap ? `{"schema":{"type":"struct","fields":[{"type":"struct","field":"after","fields":[{"type":"int64","name":"io.debezium.time.NanoTimestamp","field":"ts"}]}]},"payload":${envelope}}` : envelope;
      const bytes = new TextEncoder().encode(text);
      const fast = parseJsonMessage(bytes, true);
      checked++;
      if (mayRound(fast)) return;
      passed++;
      assert.deepEqual(outcome(fast), outcome(parseJsonMessage(bytes)), text);
    }),
    { numRuns: 3000 },
  );
  assert.ok(passed > 200 && passed < checked, `the check passed ${passed} of ${checked} events: both sides are exercised`);
});
