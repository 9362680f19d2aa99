/**
 * The native merge of a deduplicate bucket (native/parquet/src/merge.rs through src/scan/native-bucket-merge.ts)
 * against the JS merge (src/lsm/merge-reader.ts `mergeBucketFiles`), its oracle: for random buckets — several sorted
 * runs at level 0 and above, overlapping and disjoint (several sections), files of a level split by key, +I/-U/+U/-D
 * versions, ignore-delete, nulls in values, BIGINT, INT, string (astral characters included: UTF-8 byte order) and
 * composite keys with nulls, sequence numbers beyond 2^32, output batches smaller than a file — the same rows in the
 * same order, in batches of at most the asked rows. Buckets it must not take (another engine, `sequence.field`,
 * a key type it does not prove, a file read through a schema change) are refused, a row count that differs from the
 * manifest and a damaged file fail as the JS merge's do. Skipped where the native addon does not load.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type * as arrow from "apache-arrow";
import { parquetCodec, openBucketMerge } from "../../../src/codec/parquet-ops.mjs";
import { readParquetAsync, writeParquet } from "../../../src/codec/parquet.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { serializeBinaryRow } from "../../../src/format/binary-row.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../../src/format/manifest.ts";
import { newTableSchema, type TableSchema } from "../../../src/format/schema.ts";
import { sortedRowsMeta } from "../../helpers/lsm-files.ts";
import type { Row, Value } from "../../../src/format/values.ts";
import { keyComparator } from "../../../src/lsm/key-comparator.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../../../src/lsm/key-value-fields.ts";
import { mergeBucketFiles } from "../../../src/lsm/merge-reader.ts";
import { mergeEngineOf } from "../../../src/lsm/merge-functions/merge-engine.ts";
import { schemaMapping } from "../../../src/scan/file-mapping.ts";
import { nativeBucketMerge, nativeMergeRefusal, NativeMergeFileError, type NativeMergeFile, type NativeMergeRequest } from "../../../src/scan/native-bucket-merge.ts";
import { isLakeError } from "../../../src/errors.ts";
import { readFileSync } from "node:fs";
import { BatchWriter, Catalog, parseIdentifier } from "../../../src/index.ts";
import { planRead, readAllRows } from "../../../src/scan/read.ts";
import { mergeReadFields } from "../../../src/lsm/merge-read.ts";
import { tempDir } from "../../helpers/tables.ts";
import { fetchColumnsOf } from "../../../src/scan/ranged-fetch.ts";

const skip = parquetCodec.path !== "native" ? `the Parquet codec is ${parquetCodec.path} (${parquetCodec.reason})` : openBucketMerge([], probeSpec()) === null ? "the loaded addon has no bucket merge" : false;

function probeSpec() {
  return { keyColumns: ["id"], outputColumns: [], sections: [], rowCounts: [], ignoreDelete: false, batchRows: 1 };
}

const SEQ = SEQUENCE_NUMBER_FIELD.name;
const KIND = VALUE_KIND_FIELD.name;

interface Shape {
  name: string;
  columns: string;
  keys: string[];
  key: fc.Arbitrary<Row>;
}

const SHAPES: Shape[] = [
  { name: "BIGINT key", columns: "id BIGINT NOT NULL, s STRING, n BIGINT, d DOUBLE", keys: ["id"], key: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((id) => ({ id })) },
  { name: "small BIGINT key", columns: "id BIGINT NOT NULL, s STRING, n INT", keys: ["id"], key: fc.integer({ min: -40, max: 200 }).map((id) => ({ id: BigInt(id) })) },
  { name: "INT key", columns: "k INT NOT NULL, s STRING, n BIGINT", keys: ["k"], key: fc.integer({ min: -100, max: 100 }).map((k) => ({ k })) },
  { name: "string key", columns: "k STRING NOT NULL, n BIGINT, s STRING", keys: ["k"], key: fc.string({ unit: "binary", maxLength: 4 }).map((k) => ({ k })) },
  {
    name: "composite key with nulls",
    columns: "a STRING, b INT, n BIGINT, s STRING",
    keys: ["a", "b"],
    key: fc.record({ a: fc.option(fc.constantFrom("", "a", "ab", "b", "\u{1F600}", "\uFFFD"), { nil: null }), b: fc.option(fc.integer({ min: -3, max: 3 }), { nil: null }) }),
  },
];

const fieldsOf = (text: string): DataField[] => parseColumnList(text).map((c, i) => ({ id: i, name: c.name, type: c.type }));

/** A version's values besides the key: nulls among them. */
const valuesArb = fc.record({ s: fc.option(fc.string({ maxLength: 6 }), { nil: null }), n: fc.option(fc.integer({ min: -1000, max: 1000 }), { nil: null }), d: fc.double({ noNaN: true }) });

interface RunPlan {
  level: number;
  /** Per key of the pool: whether the run holds a version of it. */
  holds: boolean[];
  kinds: number[];
  values: Array<{ s: string | null; n: number | null; d: number }>;
  /** Files the run's keys are split into (level ≥ 1). */
  pieces: number;
}

const bucketArb = (shape: Shape) =>
  fc.record({
    keys: fc.uniqueArray(shape.key, { minLength: 1, maxLength: 40, selector: (k) => JSON.stringify(k, (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) }),
    runs: fc.array(
      fc.record({
        level0: fc.boolean(),
        density: fc.double({ min: 0.05, max: 1, noNaN: true }),
        // Where in the key pool the run's keys lie: a run of a part of the pool is disjoint from others (sections).
        from: fc.double({ min: 0, max: 0.9, noNaN: true }),
        span: fc.double({ min: 0.1, max: 1, noNaN: true }),
        pieces: fc.integer({ min: 1, max: 3 }),
        seed: fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 3 }), valuesArb), { minLength: 40, maxLength: 40 }),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    seqBase: fc.constantFrom(0n, 2n ** 32n - 3n, 2n ** 40n),
    ignoreDelete: fc.boolean(),
    batchRows: fc.integer({ min: 1, max: 50 }),
  });

type Bucket = ReturnType<typeof bucketArb> extends fc.Arbitrary<infer T> ? T : never;

let fileNo = 0;

/** The bucket's files (Parquet bytes and metadata) as the writer and compaction would leave them. */
function buildFiles(shape: Shape, bucket: Bucket): Array<{ meta: DataFileMeta; bytes: Uint8Array }> {
  const all = fieldsOf(shape.columns);
  const keyFields = shape.keys.map((k) => all.find((f) => f.name === k)!);
  const types = keyFields.map((f) => f.type);
  const compare = keyComparator(types);
  const keyOf = (r: Row): Value[] => keyFields.map((f) => r[f.name] ?? null);
  const pool = [...bucket.keys].sort((a, b) => compare(keyOf(a), keyOf(b)));
  const plans: RunPlan[] = [];
  let level = 1;
  for (const r of bucket.runs) {
    const lo = Math.floor(r.from * pool.length);
    const hi = Math.min(pool.length, lo + Math.ceil(r.span * pool.length));
    const holds = pool.map((_, i) => i >= lo && i < hi && r.seed[i % r.seed.length]![0] < r.density);
    plans.push({ level: r.level0 ? 0 : level++, holds, kinds: r.seed.map((s) => s[1]), values: r.seed.map((s) => s[2]), pieces: r.pieces });
  }
  // Sequence numbers: unique, older runs (higher levels, earlier level-0 files) mostly lower, some not.
  let seq = bucket.seqBase;
  const files: Array<{ meta: DataFileMeta; bytes: Uint8Array }> = [];
  const fields = [...all, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
  for (const plan of plans) {
    const rows: Row[] = [];
    pool.forEach((key, i) => {
      if (!plan.holds[i]) return;
      const v = plan.values[i % plan.values.length]!;
      const values: Row = { s: v.s, n: v.n === null ? null : all.find((f) => f.name === "n")!.type.root === "BIGINT" ? BigInt(v.n) : v.n, d: v.d };
      const row: Row = { ...key, [SEQ]: (seq += 1n + BigInt(i % 3)), [KIND]: plan.kinds[i % plan.kinds.length]! };
      for (const f of all) if (!(f.name in row)) row[f.name] = values[f.name] ?? null;
      rows.push(row);
    });
    if (rows.length === 0) continue;
    const pieces = plan.level === 0 ? 1 : Math.min(plan.pieces, rows.length);
    const per = Math.ceil(rows.length / pieces);
    for (let p = 0; p < rows.length; p += per) {
      const part = rows.slice(p, p + per);
      const bytes = writeParquet(rowsToRecordBatch(fields, part));
      files.push({ bytes, meta: sortedRowsMeta({ name: `f${fileNo++}`, rows: part, keyTypes: types, keyOf, level: plan.level, fileSize: bytes.length }) });
    }
  }
  return files;
}

function schemaOf(shape: Shape, options: Record<string, string> = {}): TableSchema {
  return newTableSchema({ columns: parseColumnList(shape.columns), primaryKeys: shape.keys, partitionKeys: [], options: { bucket: "1", ...options } });
}

function request(shape: Shape, schema: TableSchema, files: Array<{ meta: DataFileMeta; bytes: Uint8Array }>, batchRows: number): NativeMergeRequest {
  const fields = [...schema.fields, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
  const mapping = schemaMapping(schema, fields, true);
  const out: NativeMergeFile[] = files.map((f) => ({ meta: f.meta, path: f.meta.fileName, bytes: f.bytes.slice(), mapping }));
  return { schema, fields, output: schema.fields, files: out, batchRows };
}

async function jsRows(schema: TableSchema, files: Array<{ meta: DataFileMeta; bytes: Uint8Array }>, batchRows: number): Promise<Row[]> {
  const bytes = new Map(files.map((f) => [f.meta, f.bytes]));
  const keyFields = schema.primaryKeys.map((k) => schema.fields.find((f) => f.name === k)!);
  const out: Row[] = [];
  const merged = mergeBucketFiles(
    files.map((f) => f.meta),
    {
      keyFields,
      sequence: null,
      ignoreDelete: false,
      engine: mergeEngineOf(schema),
      output: schema.fields,
      readFile: async (m) => (await readParquetAsync(bytes.get(m)!)).batches,
      batchRows,
    },
  );
  for await (const b of merged) out.push(...recordBatchToRows(schema.fields, b));
  return out;
}

async function nativeRows(req: NativeMergeRequest, batchRows: number): Promise<Row[]> {
  const merged = nativeBucketMerge(req);
  assert.ok(merged !== null, `the native merge took the bucket (refusal: ${nativeMergeRefusal(req)})`);
  const out: Row[] = [];
  for await (const b of merged) {
    assert.ok(b.numRows >= 1 && b.numRows <= batchRows, `a batch of ${b.numRows} rows (at most ${batchRows})`);
    out.push(...recordBatchToRows(req.output, b as arrow.RecordBatch));
  }
  return out;
}

for (const shape of SHAPES) {
  test(`native bucket merge - ${shape.name}: the same rows in the same order as the JS merge, random buckets`, { skip }, async () => {
    await fc.assert(
      fc.asyncProperty(bucketArb(shape), async (bucket) => {
        const files = buildFiles(shape, bucket);
        fc.pre(files.length > 0);
        const schema = schemaOf(shape, bucket.ignoreDelete ? { "ignore-delete": "true" } : {});
        const expected = await jsRows(schema, files, bucket.batchRows);
        const actual = await nativeRows(request(shape, schema, files, bucket.batchRows), bucket.batchRows);
        assert.deepStrictEqual(actual, expected);
      }),
      { numRuns: 60 },
    );
  });
}

test("native bucket merge - a long compacted run with a few fresh upserts and deletes: stretches sliced, the same rows", { skip }, async () => {
  const shape = SHAPES[0]!;
  const schema = schemaOf(shape);
  const fields = [...fieldsOf(shape.columns), SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
  const base: Row[] = Array.from({ length: 20_000 }, (_, i) => ({ id: BigInt(i * 2), s: `v${i}`, n: i % 7 === 0 ? null : BigInt(i), d: i / 3, [SEQ]: BigInt(i), [KIND]: 0 }));
  const fresh: Row[] = Array.from({ length: 300 }, (_, j) => ({ id: BigInt(j * 131 + 1 - (j % 2)), s: `u${j}`, n: null, d: -j, [SEQ]: 100_000n + BigInt(j), [KIND]: j % 5 === 0 ? 3 : 2 }));
  const mk = (rows: Row[], level: number, name: string) => {
    const bytes = writeParquet(rowsToRecordBatch(fields, rows));
    const types = [fields[0]!.type];
    return {
      bytes,
      meta: {
        fileName: name, fileSize: bytes.length, rowCount: rows.length, minKey: serializeBinaryRow(types, [rows[0]!["id"]!]), maxKey: serializeBinaryRow(types, [rows[rows.length - 1]!["id"]!]),
        keyStats: EMPTY_STATS, valueStats: EMPTY_STATS, minSequenceNumber: rows[0]![SEQ] as bigint, maxSequenceNumber: rows[rows.length - 1]![SEQ] as bigint, schemaId: 0, level, extraFiles: [], creationTimeMillis: 0,
        deleteRowCount: rows.filter((r) => r[KIND] === 3).length, embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
      } satisfies DataFileMeta,
    };
  };
  const files = [mk(base, 5, "big"), mk(fresh.slice(0, 150), 0, "l0a"), mk(fresh.slice(150), 0, "l0b")];
  const expected = await jsRows(schema, files, 4096);
  const actual = await nativeRows(request(shape, schema, files, 4096), 4096);
  assert.equal(actual.length, expected.length);
  assert.deepStrictEqual(actual, expected);
});

test("native bucket merge - buckets it does not prove are refused: another engine, sequence.field, a FLOAT key, a schema change, NATSLAKE_NATIVE_MERGE=off", { skip }, () => {
  const shape = SHAPES[0]!;
  const files = buildFiles(shape, { keys: [{ id: 1n }, { id: 2n }], runs: [{ level0: true, density: 1, from: 0, span: 1, pieces: 1, seed: Array.from({ length: 40 }, () => [0, 0, { s: null, n: null, d: 0 }] as [number, number, { s: null; n: null; d: number }]) }], seqBase: 0n, ignoreDelete: false, batchRows: 5 });
  const refused = (schema: TableSchema, edit: (r: NativeMergeRequest) => void = () => {}): string | null => {
    const r = request(shape, schema, files, 5);
    edit(r);
    const why = nativeMergeRefusal(r);
    if (why !== null) assert.equal(nativeBucketMerge(r), null);
    return why;
  };
  assert.equal(refused(schemaOf(shape)), null);
  assert.match(refused(schemaOf(shape, { "merge-engine": "partial-update" })) ?? "", /partial-update/);
  assert.match(refused(schemaOf({ ...shape, columns: "id BIGINT NOT NULL, s STRING, n BIGINT, d DOUBLE, ts BIGINT" }, { "sequence.field": "ts" })) ?? "", /sequence\.field/);
  assert.match(refused(newTableSchema({ columns: parseColumnList("f FLOAT NOT NULL, s STRING"), primaryKeys: ["f"], partitionKeys: [], options: { bucket: "1" } })) ?? "", /FLOAT/);
  assert.match(refused(schemaOf(shape), (r) => (r.files[0]!.mapping = { ...r.files[0]!.mapping, sameLogicalType: r.files[0]!.mapping.sameLogicalType.map((s, k) => s && k !== 2) })) ?? "", /schema change/);
  process.env["NATSLAKE_NATIVE_MERGE"] = "off";
  try {
    assert.match(refused(schemaOf(shape)) ?? "", /NATSLAKE_NATIVE_MERGE/);
  } finally {
    delete process.env["NATSLAKE_NATIVE_MERGE"];
  }
});

test("native bucket merge - a row count other than the manifest's fails as the JS read does; a damaged file names its index", { skip }, async () => {
  const shape = SHAPES[1]!;
  const bucket: Bucket = { keys: Array.from({ length: 30 }, (_, i) => ({ id: BigInt(i) })), runs: [0, 1].map((r) => ({ level0: r === 0, density: 1, from: 0, span: 1, pieces: 1, seed: Array.from({ length: 40 }, () => [0, 0, { s: "x", n: 1, d: 0 }] as [number, number, { s: string; n: number; d: number }]) })), seqBase: 0n, ignoreDelete: false, batchRows: 8 };
  const files = buildFiles(shape, bucket);
  const schema = schemaOf(shape);
  const wrongCount = request(shape, schema, files, 8);
  wrongCount.files[1]!.meta = { ...wrongCount.files[1]!.meta, rowCount: 29 };
  assert.throws(
    () => nativeBucketMerge(wrongCount),
    (e: unknown) => isLakeError(e, "DataInvalid") && /has 30 rows but its manifest entry says 29/.test(e.message),
  );
  const damaged = request(shape, schema, files, 8);
  const bytes = damaged.files[1]!.bytes;
  bytes.fill(0x5a, 4, Math.min(bytes.length - 64, 4096));
  // Found when its footer is read (the merge is opened) or when its pages are.
  await assert.rejects(
    (async () => {
      for await (const _ of nativeBucketMerge(damaged)!);
    })(),
    (e: unknown) => e instanceof NativeMergeFileError && e.fileIndex === 1,
  );
});

test("native bucket merge - a read that stops early closes the merge: its bytes let go, a later next() refused", { skip }, async () => {
  const shape = SHAPES[1]!;
  const bucket: Bucket = { keys: Array.from({ length: 40 }, (_, i) => ({ id: BigInt(i) })), runs: [0, 1].map((r) => ({ level0: r === 0, density: 1, from: 0, span: 1, pieces: 2, seed: Array.from({ length: 40 }, () => [0, 0, { s: "x", n: 1, d: 0 }] as [number, number, { s: string; n: number; d: number }]) })), seqBase: 0n, ignoreDelete: false, batchRows: 4 };
  const files = buildFiles(shape, bucket);
  // A level-0 file, then a level-1 run split in two files.
  assert.deepEqual(files.map((f) => f.meta.level), [0, 1, 1]);
  const merge = openBucketMerge(
    files.map((f) => f.bytes),
    { keyColumns: ["id"], outputColumns: ["id", "s"], sections: [[[0], [1, 2]]], rowCounts: files.map((f) => f.meta.rowCount), ignoreDelete: false, batchRows: 4 },
  )!;
  assert.ok(merge.next() !== null);
  merge.close();
  assert.throws(() => merge.next(), /an earlier call failed/);
  // Through the module: the generator closes the merge when the reader stops.
  const merged = nativeBucketMerge(request(shape, schemaOf(shape), files, 4))!;
  for await (const b of merged) {
    assert.equal(b.numRows, 4);
    break;
  }
});

test("native bucket merge - a table's own files (every column type of the benchmarks' rows) qualify, and the merge gives the read's rows", { skip }, async () => {
  const wh = tempDir();
  try {
    const table = await new Catalog(wh.path).createTable(parseIdentifier("nm.t"), {
      columns: parseColumnList("id BIGINT NOT NULL, ts TIMESTAMP(3), user STRING, amount DOUBLE, qty INT, tags ARRAY<STRING>, price DECIMAL(10, 2)"),
      primaryKeys: ["id"],
      partitionKeys: [],
      options: { bucket: "2" },
    });
    for (let commit = 0; commit < 3; commit++) {
      const w = await BatchWriter.open(table);
      await w.upsert(Array.from({ length: 300 }, (_, i) => ({ id: BigInt(i * (commit + 1)), ts: 1_700_000_000_000 + i, user: i % 9 === 0 ? null : `u${i}-${commit}`, amount: i / 7, qty: i % 5 === 0 ? null : i, tags: [`t${commit}`], price: "12.34" })));
      if (commit === 2) await w.delete(Array.from({ length: 20 }, (_, i) => ({ id: BigInt(i * 3) })));
      await w.commit();
    }
    const plan = await planRead(table);
    const fields = mergeReadFields(table, table.schema.fields);
    const mapping = schemaMapping(table.schema, fields, true);
    const expected = await readAllRows(table, { mergeInWorkers: false });
    const rows: Row[] = [];
    for (const split of plan.splits) {
      const files = split.files.map((meta) => ({ meta, path: meta.fileName, bytes: new Uint8Array(readFileSync(table.paths.dataFilePath("", split.bucket, meta.fileName, meta.externalPath).replace(/^file:\/\//, ""))), mapping }));
      const req: NativeMergeRequest = { schema: table.schema, fields, output: table.schema.fields, files };
      assert.equal(nativeMergeRefusal(req), null);
      const merged = nativeBucketMerge(req);
      assert.ok(merged !== null, "the addon took the bucket (its column types are the read's)");
      for await (const b of merged) rows.push(...recordBatchToRows(table.schema.fields, b));
    }
    const byId = (a: Row, b: Row): number => (a["id"] as bigint) < (b["id"] as bigint) ? -1 : 1;
    assert.ok(expected.length > 500 && !rows.some((r) => r["id"] === 3n), "the deletes took effect");
    assert.deepStrictEqual(rows.sort(byId), expected.sort(byId));
  } finally {
    wh.cleanup();
  }
});

test("native bucket merge - files fetched as an object store read does (footer and the merge's column chunks only, the rest zeros) merge to the read's rows", { skip }, async () => {
  const wh = tempDir();
  try {
    const table = await new Catalog(wh.path).createTable(parseIdentifier("nm.ranged"), {
      columns: parseColumnList("id BIGINT NOT NULL, note STRING, blob STRING"),
      primaryKeys: ["id"],
      partitionKeys: [],
      options: { bucket: "1" },
    });
    // `blob` is most of each file and never read: the fetch leaves it out.
    const noise = (i: number, commit: number): string => Array.from({ length: 24 }, (_, k) => ((i * 2654435761 + k * 40503 + commit) >>> 0).toString(36)).join("");
    for (let commit = 0; commit < 2; commit++) {
      const w = await BatchWriter.open(table);
      await w.upsert(Array.from({ length: 20_000 }, (_, i) => ({ id: BigInt(i * (commit + 1)), note: `n${i}-${commit}`, blob: noise(i, commit) })));
      await w.commit();
    }
    const wanted = table.schema.fields.filter((f) => f.name !== "blob");
    const fields = mergeReadFields(table, wanted);
    const mapping = schemaMapping(table.schema, fields, true);
    const [split] = (await planRead(table)).splits;
    let skipped = 0;
    const files: NativeMergeFile[] = [];
    for (const meta of split!.files) {
      const path = table.paths.dataFilePath("", split!.bucket, meta.fileName, meta.externalPath);
      const fetched = await fetchColumnsOf(table.io, path, meta.fileSize, mapping.columns);
      skipped += meta.fileSize - fetched.fetchedBytes;
      files.push({ meta, path, bytes: fetched.bytes, mapping });
    }
    assert.ok(skipped > 0, "the fetch left column chunks out");
    const merged = nativeBucketMerge({ schema: table.schema, fields, output: wanted, files });
    assert.ok(merged !== null);
    const rows: Row[] = [];
    for await (const b of merged) rows.push(...recordBatchToRows(wanted, b));
    const expected = await readAllRows(table, { mergeInWorkers: false, projection: ["id", "note"] });
    assert.equal(rows.length, expected.length);
    assert.deepStrictEqual(rows, expected);
  } finally {
    wh.cleanup();
  }
});
