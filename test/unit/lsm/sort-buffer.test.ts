/**
 * A bucket's flush (src/lsm/sort-buffer.ts) against a direct model over random buffers: rows sorted by Paimon's key
 * order, per key the last version in merge order (sequence.field, then arrival), ignore-delete passing retractions
 * over, sequence numbers firstSeq + arrival index, the changelog every row in the same order; value columns of every
 * layout (nulls, decimals, timestamps, strings, nested) copied exactly, whatever the key type (integer keys take a
 * native sort, BIGINTs beyond 2^53 and strings the comparator).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { newTableSchema } from "../../../src/format/schema.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { RecordBatchBuilder } from "../../../src/codec/columns/record-batch-builder.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { flushBuffer, keyValueLayout } from "../../../src/lsm/sort-buffer.ts";
import { keyComparator } from "../../../src/lsm/key-comparator.ts";
import { Timestamp, type Row, type Value } from "../../../src/format/values.ts";

const KEY_TYPES = ["INT", "BIGINT", "WIDE BIGINT", "STRING"] as const;

function layoutOf(keyType: string, opts: Record<string, string>): ReturnType<typeof keyValueLayout> {
  const schema = newTableSchema({
    columns: parseColumnList(`k ${keyType === "WIDE BIGINT" ? "BIGINT" : keyType} NOT NULL, s STRING, d DECIMAL(20, 3), ts TIMESTAMP(3), tags ARRAY<INT>, q BIGINT`),
    primaryKeys: ["k"],
    partitionKeys: [],
    options: { bucket: "1", ...opts },
  });
  return keyValueLayout(schema);
}

const keyArb = (t: (typeof KEY_TYPES)[number]): fc.Arbitrary<Value> =>
  t === "INT"
    ? fc.integer({ min: -5, max: 5 })
    : t === "BIGINT"
    ? fc.constantFrom(0n, 1n, -1n, 2n ** 60n, 2n ** 60n + 1n, -(2n ** 62n))
    : t === "WIDE BIGINT"
    ? // Within ±2^52 (the radix sort's offsets, up to 2^53, need both words and every digit) and a few repeats.
      fc.oneof(fc.constantFrom(0n, 1n, -1n, 2n ** 52n - 1n, -(2n ** 52n), 2n ** 32n, 2n ** 32n - 1n, 2047n, 2048n), fc.bigInt({ min: -(2n ** 52n), max: 2n ** 52n - 1n }))
    : fc.constantFrom("", "a", "ab", "\uFF5E", "\u{1F600}", "b");

const rowArb = (t: (typeof KEY_TYPES)[number]): fc.Arbitrary<Row> =>
  fc.record({
    k: keyArb(t),
    s: fc.option(fc.string(), { nil: null }),
    d: fc.option(fc.bigInt({ min: -(10n ** 19n), max: 10n ** 19n }), { nil: null }),
    ts: fc.option(fc.integer({ min: -1e12, max: 1e12 }).map((ms) => new Timestamp(ms, 0)), { nil: null }),
    tags: fc.option(fc.array(fc.option(fc.integer(), { nil: null }), { maxLength: 3 }), { nil: null }),
    q: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
    // null: a row buffered without a kind (an upsert), which is +I.
    _VALUE_KIND: fc.constantFrom(0, 0, 0, 1, 2, 3, null),
  });

test("flush - sorted by key, folded per key to the last version, sequence numbers by arrival; the changelog keeps every row (random buffers, every key type)", () => {
  for (const keyType of KEY_TYPES) {
    fc.assert(
      fc.property(fc.array(rowArb(keyType), { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 40n }), fc.bigInt({ min: 2n ** 53n - 100n, max: 2n ** 53n + 100n })), fc.boolean(), (rows, pieces, ignoreDelete, firstSeq, sliced) => {
        const layout = layoutOf(keyType, { "changelog-producer": "input", ...(ignoreDelete ? { "ignore-delete": "true" } : {}) });
        // The buffer as several batches, as a builder finished them along the way — or as slices of one batch (columns
        // that start at an offset into their buffers).
        const batches = [];
        const whole = sliced ? new RecordBatchBuilder(layout.bufferFields, rows.length) : null;
        if (whole !== null) for (const r of rows) whole.appendRow(r);
        const all = whole?.finish();
        for (let p = 0; p < pieces; p++) {
          const from = Math.floor((p * rows.length) / pieces);
          const to = Math.floor(((p + 1) * rows.length) / pieces);
          if (to === from) continue;
          if (all !== undefined) {
            batches.push(all.slice(from, to));
            continue;
          }
          const b = new RecordBatchBuilder(layout.bufferFields, to - from);
          for (const r of rows.slice(from, to)) b.appendRow(r);
          batches.push(b.finish());
        }
        const out = flushBuffer(layout, batches, firstSeq);
        const cmp = keyComparator([layout.keyFields[0]!.type]);
        const indexed = rows.map((r, i) => ({ r, i }));
        const sorted = [...indexed].sort((a, b) => cmp([a.r["k"]!], [b.r["k"]!]) || a.i - b.i);
        const survivors: typeof indexed = [];
        for (let at = 0; at < sorted.length; ) {
          let end = at + 1;
          while (end < sorted.length && cmp([sorted[at]!.r["k"]!], [sorted[end]!.r["k"]!]) === 0) end++;
          for (let k = end - 1; k >= at; k--) {
            const retract = sorted[k]!.r["_VALUE_KIND"] === 1 || sorted[k]!.r["_VALUE_KIND"] === 3;
            if (ignoreDelete && retract) continue;
            survivors.push(sorted[k]!);
            break;
          }
          at = end;
        }
        const expect = (list: typeof indexed): Row[] => list.map(({ r, i }) => ({ _KEY_k: r["k"]!, _SEQUENCE_NUMBER: firstSeq + BigInt(i), ...r, _VALUE_KIND: r["_VALUE_KIND"] ?? 0 }));
        const got = (b: typeof out.data): Row[] => (b === null ? [] : recordBatchToRows(layout.fileFields, b.batch));
        assert.deepEqual(got(out.data), expect(survivors));
        assert.deepEqual(got(out.changelog), expect(sorted));
        if (out.data !== null) {
          assert.deepEqual(out.data.minKey, [survivors[0]!.r["k"]]);
          assert.deepEqual(out.data.maxKey, [survivors[survivors.length - 1]!.r["k"]]);
          assert.equal(out.data.deleteRows, survivors.filter(({ r }) => r["_VALUE_KIND"] === 1 || r["_VALUE_KIND"] === 3).length);
        }
      }),
      { numRuns: 150 },
    );
  }
});

test("flush - partial-update: per key the versions folded by its function (non-null fields overwrite, +I, the last version's sequence number); a key's only version as it is; ignore-delete drops retractions first (random buffers, every key type)", () => {
  const VALUE_COLUMNS = ["s", "d", "ts", "tags", "q"];
  for (const keyType of KEY_TYPES) {
    fc.assert(
      fc.property(fc.array(rowArb(keyType), { minLength: 1, maxLength: 50 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), fc.bigInt({ min: 0n, max: 2n ** 40n }), (raw, pieces, ignoreDelete, firstSeq) => {
        // Without ignore-delete a retraction among several versions is refused (tested below): additions only.
        const rows = ignoreDelete ? raw : raw.map((r) => (r["_VALUE_KIND"] === 1 || r["_VALUE_KIND"] === 3 ? { ...r, _VALUE_KIND: 2 } : r));
        const layout = layoutOf(keyType, { "merge-engine": "partial-update", ...(ignoreDelete ? { "ignore-delete": "true" } : {}) });
        const batches = [];
        for (let p = 0; p < pieces; p++) {
          const part = rows.slice(Math.floor((p * rows.length) / pieces), Math.floor(((p + 1) * rows.length) / pieces));
          if (part.length === 0) continue;
          const b = new RecordBatchBuilder(layout.bufferFields, part.length);
          for (const r of part) b.appendRow(r);
          batches.push(b.finish());
        }
        const out = flushBuffer(layout, batches, firstSeq);
        const cmp = keyComparator([layout.keyFields[0]!.type]);
        const kept = rows.map((r, i) => ({ r, i })).filter(({ r }) => !(ignoreDelete && (r["_VALUE_KIND"] === 1 || r["_VALUE_KIND"] === 3)));
        const byKey = new Map<string, typeof kept>();
        for (const x of kept) {
          const k = JSON.stringify(x.r["k"], (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
          byKey.set(k, [...(byKey.get(k) ?? []), x]);
        }
        const expected = [...byKey.values()]
          .sort((a, b) => cmp([a[0]!.r["k"]!], [b[0]!.r["k"]!]))
          .map((versions) => {
            const last = versions[versions.length - 1]!;
            if (versions.length === 1) return { _KEY_k: last.r["k"]!, _SEQUENCE_NUMBER: firstSeq + BigInt(last.i), ...last.r, _VALUE_KIND: last.r["_VALUE_KIND"] ?? 0 };
            const row: Row = { k: last.r["k"]! };
            for (const c of VALUE_COLUMNS) row[c] = null;
            for (const { r } of versions) for (const c of VALUE_COLUMNS) if (r[c] !== null && r[c] !== undefined) row[c] = r[c]!;
            return { _KEY_k: last.r["k"]!, _SEQUENCE_NUMBER: firstSeq + BigInt(last.i), ...row, _VALUE_KIND: 0 };
          });
        const got = out.data === null ? [] : recordBatchToRows(layout.fileFields, out.data.batch);
        assert.deepEqual(got, expected);
        if (out.data !== null) {
          const seqs = expected.map((r) => r._SEQUENCE_NUMBER);
          assert.equal(out.data.minSequenceNumber, seqs.reduce((a, b) => (b < a ? b : a)));
          assert.equal(out.data.maxSequenceNumber, seqs.reduce((a, b) => (b > a ? b : a)));
          assert.deepEqual([out.data.minKey, out.data.maxKey], [[expected[0]!._KEY_k], [expected[expected.length - 1]!._KEY_k]]);
        }
      }),
      { numRuns: 100 },
    );
  }
  // A retraction among a key's versions, without ignore-delete or remove-record-on-delete: refused as Java refuses it.
  const layout = layoutOf("INT", { "merge-engine": "partial-update" });
  const b = new RecordBatchBuilder(layout.bufferFields, 2);
  b.appendRow({ k: 1, s: "a", d: null, ts: null, tags: null, q: null, _VALUE_KIND: 0 });
  b.appendRow({ k: 1, s: null, d: null, ts: null, tags: null, q: null, _VALUE_KIND: 3 });
  assert.throws(() => flushBuffer(layout, [b.finish()], 0n), /Partial update can not accept delete records/);
});

test("flush - deduplicate's fold inlined in the write buffer equals the deduplicate merge function's fold (src/lsm/merge-functions/deduplicate.ts), which merge-on-read and compaction run (random buffers, every key type, with and without ignore-delete and sequence.field)", () => {
  for (const keyType of KEY_TYPES) {
    fc.assert(
      fc.property(fc.array(rowArb(keyType), { minLength: 1, maxLength: 60 }), fc.boolean(), fc.boolean(), fc.bigInt({ min: 0n, max: 2n ** 40n }), (rows, ignoreDelete, bySequenceField, firstSeq) => {
        const layout = layoutOf(keyType, { ...(ignoreDelete ? { "ignore-delete": "true" } : {}), ...(bySequenceField ? { "sequence.field": "q" } : {}) });
        assert.equal(layout.engine.name, "deduplicate");
        // The same engine under another name: the flush cannot take its inlined path and folds through the function.
        const throughFunction = { ...layout, engine: { name: "deduplicate (through its function)", ignoreDelete: layout.engine.ignoreDelete, create: layout.engine.create.bind(layout.engine) } } as unknown as typeof layout;
        const batch = (): ReturnType<RecordBatchBuilder["finish"]> => {
          const b = new RecordBatchBuilder(layout.bufferFields, rows.length);
          for (const r of rows) b.appendRow(r);
          return b.finish();
        };
        const inlined = flushBuffer(layout, [batch()], firstSeq).data;
        const folded = flushBuffer(throughFunction, [batch()], firstSeq).data;
        const rowsOf = (d: typeof inlined): Row[] => (d === null ? [] : recordBatchToRows(layout.fileFields, d.batch));
        assert.deepEqual(rowsOf(inlined), rowsOf(folded));
        assert.deepEqual([inlined?.minKey, inlined?.maxKey, inlined?.deleteRows, inlined?.minSequenceNumber, inlined?.maxSequenceNumber], [folded?.minKey, folded?.maxKey, folded?.deleteRows, folded?.minSequenceNumber, folded?.maxSequenceNumber]);
      }),
      { numRuns: 100 },
    );
  }
});
