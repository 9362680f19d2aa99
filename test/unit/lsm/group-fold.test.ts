/**
 * The column-wise fold of a key's additions (src/lsm/group-fold.ts) against the merge functions it stands in for: the
 * same merge-on-read and compaction (src/lsm/merge-reader.ts) run once with the engine as it is and once with its
 * field rules taken away, so every group goes to the merge function; the rows (a compaction's physical rows and chunk
 * meta too) or the refusal must be the same. Random histories over random runs (fast-check), per table options:
 * partial-update with ignore-delete or remove-record-on-delete, NOT NULL fields given nulls, aggregators that pick a
 * version's cell, those that choose one (max, min, on -0 and 0 too) and those that compute (sum, product, first values,
 * listagg, ignore-retract), retractions in groups, equal sequence numbers and ones beyond 32 bits; sequence groups and
 * `sequence.field`, which never fold.
 * The fold must also be what merges additions: the merge function is not called for them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type * as arrow from "apache-arrow";
import { mergeBucketFiles, mergeForCompaction, type CompactionMergeSpec, type MergeReadSpec } from "../../../src/lsm/merge-reader.ts";
import { keyCopyField, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../../../src/lsm/key-value-fields.ts";
import { parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import type { DataFileMeta } from "../../../src/format/manifest.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import type { Row } from "../../../src/format/values.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { mergeEngineOf } from "../../../src/lsm/merge-functions/merge-engine.ts";
import type { MergeEngine, MergeFunction } from "../../../src/lsm/merge-functions/merge-function.ts";
import { sequenceFieldSpec } from "../../../src/lsm/merge-order.ts";
import { lsmFile } from "../../helpers/lsm-files.ts";

const ALL: DataField[] = parseColumnList("id INT NOT NULL, a STRING, b INT, c DOUBLE, n INT NOT NULL").map((c, i) => ({ id: i, name: c.name, type: c.type }));
const KEY = [ALL[0]!];
const SEQ = SEQUENCE_NUMBER_FIELD.name;
const KIND = VALUE_KIND_FIELD.name;
/** The files' columns: `n` nullable, so a file can hold the null the NOT NULL field refuses at the merge. */
const FILE_FIELDS = [...ALL.map((f) => (f.name === "n" ? { ...f, type: { ...f.type, nullable: true } } : f)), SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
const PHYSICAL = [...KEY.map(keyCopyField), SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD, ...ALL];

/** Table options, each a case of the fold: whether it folds at all, what it refuses. */
const TABLES: Record<string, Record<string, string>> = {
  "partial-update": { "merge-engine": "partial-update" },
  "partial-update ignore-delete": { "merge-engine": "partial-update", "ignore-delete": "true" },
  "partial-update remove-record-on-delete": { "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true" },
  "partial-update sequence group": { "merge-engine": "partial-update", "fields.c.sequence-group": "a,b" },
  "aggregation sum max": { "merge-engine": "aggregation", "fields.c.aggregate-function": "sum", "fields.b.aggregate-function": "max" },
  "aggregation min product listagg": { "merge-engine": "aggregation", "fields.b.aggregate-function": "min", "fields.c.aggregate-function": "product", "fields.a.aggregate-function": "listagg" },
  "aggregation max min": { "merge-engine": "aggregation", "fields.a.aggregate-function": "max", "fields.c.aggregate-function": "max", "fields.b.aggregate-function": "min" },
  "aggregation first values": { "merge-engine": "aggregation", "fields.a.aggregate-function": "first_non_null_value", "fields.b.aggregate-function": "first_value", "fields.c.aggregate-function": "last_value" },
  "aggregation remove-record-on-delete": { "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true", "fields.c.aggregate-function": "sum" },
  "aggregation ignore-retract": { "merge-engine": "aggregation", "fields.b.aggregate-function": "max", "fields.b.ignore-retract": "true", "fields.c.aggregate-function": "sum" },
  "aggregation sequence.field": { "merge-engine": "aggregation", "sequence.field": "b", "fields.c.aggregate-function": "sum" },
};

const schemaOf = (options: Record<string, string>) =>
  newTableSchema({ columns: ALL.map((f) => ({ name: f.name, type: f.type })), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1", ...options } });

/** The engine with no field rules: every group of several versions goes to its merge function. */
const withoutFold = (engine: MergeEngine): MergeEngine => ({ ...engine, fieldRules: undefined });

/** The engine, counting the versions its merge functions are given. */
function counting(engine: MergeEngine): { engine: MergeEngine; adds: () => number } {
  let adds = 0;
  const create = <V>(...args: Parameters<MergeEngine["create"]>): MergeFunction<V> => {
    const fn = engine.create<V>(...(args as [never, readonly DataField[]]));
    return {
      reset: () => fn.reset(),
      add: (v) => {
        adds++;
        fn.add(v);
      },
      result: () => fn.result(),
    };
  };
  return { engine: { ...engine, create: create as MergeEngine["create"] }, adds: () => adds };
}

interface Version {
  key: number;
  seq: bigint;
  kind: number;
  a: string | null;
  b: number | null;
  c: number | null;
  n: number | null;
}

let fileNo = 0;
/** A sorted run's file of these versions (one per key). */
function runFile(versions: readonly Version[], level: number, batches: Map<string, arrow.RecordBatch>): DataFileMeta {
  const sorted = [...versions].sort((x, y) => x.key - y.key);
  const name = `g${fileNo++}`;
  const rows: Row[] = sorted.map((x) => ({ id: x.key, a: x.a, b: x.b, c: x.c, n: x.n, [SEQ]: x.seq, [KIND]: x.kind }));
  batches.set(name, rowsToRecordBatch(FILE_FIELDS, rows));
  const seqs = sorted.map((x) => x.seq);
  return {
    ...lsmFile({ name, level, min: sorted[0]!.key, max: sorted[sorted.length - 1]!.key, minSeq: seqs.reduce((p, q) => (q < p ? q : p)), maxSeq: seqs.reduce((p, q) => (q > p ? q : p)) }),
    rowCount: sorted.length,
    deleteRowCount: sorted.filter((x) => x.kind === 1 || x.kind === 3).length,
  };
}

type Outcome = { rows: unknown[] } | { refused: string };

async function outcome(run: () => Promise<unknown[]>): Promise<Outcome> {
  try {
    return { rows: await run() };
  } catch (e) {
    return { refused: (e as Error).message };
  }
}

async function readMerged(files: DataFileMeta[], batches: Map<string, arrow.RecordBatch>, engine: MergeEngine, options: Record<string, string>, batchRows: number): Promise<unknown[]> {
  const spec: MergeReadSpec = { keyFields: KEY, sequence: sequenceFieldSpec(schemaOf(options)), ignoreDelete: engine.ignoreDelete, engine, output: ALL, readFile: async (f) => [batches.get(f.fileName)!], batchRows };
  const out: Row[] = [];
  for await (const b of mergeBucketFiles(files, spec)) out.push(...recordBatchToRows(ALL, b));
  return out;
}

async function compacted(files: DataFileMeta[], batches: Map<string, arrow.RecordBatch>, engine: MergeEngine, options: Record<string, string>, batchRows: number, dropDelete: boolean): Promise<unknown[]> {
  const spec: CompactionMergeSpec = {
    keyFields: KEY,
    sequence: sequenceFieldSpec(schemaOf(options)),
    ignoreDelete: engine.ignoreDelete,
    engine,
    dropDelete,
    valueFields: ALL,
    readFile: async (f) => [batches.get(f.fileName)!],
    batchRows,
  };
  const out: unknown[] = [];
  for await (const c of mergeForCompaction([files.map((f) => [f])], spec)) {
    out.push({ minKey: c.minKey, maxKey: c.maxKey, minSeq: c.minSequenceNumber, maxSeq: c.maxSequenceNumber, deletes: c.deleteRows }, ...recordBatchToRows(PHYSICAL, c.batch));
  }
  return out;
}

const version = (retractions: boolean, nullsInNotNull: boolean) =>
  fc.record({
    key: fc.integer({ min: 0, max: 10 }),
    // Sequence numbers from a small range (equal ones in two runs) or beyond 32 bits.
    seq: fc.oneof(fc.bigInt({ min: 0n, max: 30n }), fc.bigInt({ min: 2n ** 32n - 3n, max: 2n ** 32n + 3n })),
    kind: retractions ? fc.constantFrom(0, 0, 0, 2, 1, 3) : fc.constantFrom(0, 0, 2),
    a: fc.option(fc.constantFrom("x", "yy", "")),
    b: fc.option(fc.integer({ min: -4, max: 4 })),
    // -0 and 0: max and min keep the accumulator of equals, whose cell must be the one taken.
    c: fc.option(fc.oneof(fc.integer({ min: -8, max: 8 }).map((x) => x / 4), fc.constant(-0))),
    n: nullsInNotNull ? fc.option(fc.integer({ min: 0, max: 3 }), { freq: 8 }) : fc.integer({ min: 0, max: 3 }),
    run: fc.integer({ min: 0, max: 4 }),
  });

test("group fold - random histories over random runs, every table: the fold's rows (read and compacted) or refusal are the merge function's", async () => {
  const history = fc.boolean().chain((retractions) => fc.boolean().chain((nulls) => fc.array(version(retractions, nulls), { maxLength: 60 })));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...Object.keys(TABLES)), history, fc.integer({ min: 1, max: 9 }), fc.boolean(), async (table, ops, batchRows, dropDelete) => {
      const options = TABLES[table]!;
      const engine = mergeEngineOf(schemaOf(options));
      const batches = new Map<string, arrow.RecordBatch>();
      const files: DataFileMeta[] = [];
      for (let r = 0; r <= 4; r++) {
        // A run holds a key once (its last version here); run 4 is a level-1 run.
        const last = new Map<number, Version>();
        // A null in the NOT NULL `n` only for partial-update, which refuses it. Aggregation takes it as it is (no
        // writer stores one: Java and natslake refuse it at the write), and its merge function's compaction, which
        // appends values, refuses it where its merge-on-read and a fold gather it.
        for (const o of ops) if (o.run === r) last.set(o.key, o.n === null && table.startsWith("aggregation") ? { ...o, n: 0 } : o);
        if (last.size > 0) files.push(runFile([...last.values()], r === 4 ? 1 : 0, batches));
      }
      const slow = withoutFold(engine);
      assert.deepEqual(await outcome(() => readMerged(files, batches, engine, options, batchRows)), await outcome(() => readMerged(files, batches, slow, options, batchRows)), `${table}: merge-on-read`);
      assert.deepEqual(
        await outcome(() => compacted(files, batches, engine, options, batchRows, dropDelete)),
        await outcome(() => compacted(files, batches, slow, options, batchRows, dropDelete)),
        `${table}: compaction`,
      );
    }),
    { numRuns: 400 },
  );
});

test("group fold - additions of keys in several runs are folded without the merge function; a retraction, a null in a NOT NULL partial-update field, sequence groups and sequence.field go to it", async () => {
  const batches = new Map<string, arrow.RecordBatch>();
  const at = (key: number, seq: number, kind: number, values: Partial<Version>): Version => ({ key, seq: BigInt(seq), kind, a: null, b: null, c: null, n: 1, ...values });
  const older = runFile([at(1, 1, 0, { a: "old", b: 3, c: 1.5 }), at(2, 2, 0, { a: "two", c: 2 })], 1, batches);
  // Key 1: a +U that leaves a and c null (both versions' nulls: b); key 2: b set, a and c null.
  const newer = runFile([at(1, 5, 2, { b: 7 }), at(2, 6, 0, { b: 1 })], 0, batches);
  const merges = async (options: Record<string, string>, files: DataFileMeta[]): Promise<{ rows: Outcome; adds: number }> => {
    const { engine, adds } = counting(mergeEngineOf(schemaOf(options)));
    const rows = await outcome(() => readMerged(files, batches, engine, options, 64));
    return { rows, adds: adds() };
  };
  const partial = await merges(TABLES["partial-update"]!, [older, newer]);
  assert.deepEqual(partial, { rows: { rows: [{ id: 1, a: "old", b: 7, c: 1.5, n: 1 }, { id: 2, a: "two", b: 1, c: 2, n: 1 }] }, adds: 0 });
  const agg = await merges(TABLES["aggregation sum max"]!, [older, newer]);
  assert.deepEqual(agg, { rows: { rows: [{ id: 1, a: "old", b: 7, c: 1.5, n: 1 }, { id: 2, a: "two", b: 1, c: 2, n: 1 }] }, adds: 0 });
  // Compacted: the +U's row comes out as +I with its sequence number.
  const { engine } = counting(mergeEngineOf(schemaOf(TABLES["partial-update"]!)));
  const physical = (await compacted([older, newer], batches, engine, TABLES["partial-update"]!, 64, false)).slice(1) as Row[];
  assert.deepEqual(
    physical.map((r) => [r[SEQ], r[KIND]]),
    [
      [5n, 0],
      [6n, 0],
    ],
  );

  const retracted = runFile([at(1, 9, 1, {})], 0, batches);
  const removing = await merges(TABLES["partial-update remove-record-on-delete"]!, [older, newer, retracted]);
  assert.ok(removing.adds > 0, "a group with a retraction goes to the merge function");
  // A -U with remove-record-on-delete is passed over (the row keeps the additions' values).
  assert.deepEqual(removing.rows, { rows: [{ id: 1, a: "old", b: 7, c: 1.5, n: 1 }, { id: 2, a: "two", b: 1, c: 2, n: 1 }] });
  const nullN = runFile([at(2, 10, 0, { n: null })], 0, batches);
  const refused = await merges(TABLES["partial-update"]!, [older, newer, nullN]);
  assert.ok(refused.adds > 0 && "refused" in refused.rows && /Field n can not be null/.test(refused.rows.refused), JSON.stringify(refused));
  for (const name of ["partial-update sequence group", "aggregation sequence.field"]) {
    const merged = await merges(TABLES[name]!, [older, newer]);
    assert.ok(merged.adds > 0, `${name}: the merge function merges`);
  }
});
