import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { readParquet, readParquetAsync, writeParquet, type ParquetWriteOptions } from "../../../src/codec/parquet.ts";
import { decodeStruct, readFileMetaData, type ThriftField } from "../../../src/codec/parquet-footer.mjs";
import { parquetFooter, parquetRowGroupRows, stitchParquet } from "../../../src/codec/parquet-stitch.ts";
import { T, type DataField } from "../../../src/format/data-types.ts";
import type { Row } from "../../../src/format/values.ts";
import { ALL_ROWS, ALL_TYPES } from "../../helpers/codec-fixtures.ts";
import { runPython } from "../../helpers/python.ts";

const FIELDS: DataField[] = [
  { id: 0, name: "id", type: T.bigint() },
  { id: 1, name: "s", type: T.string() },
  { id: 2, name: "d", type: T.double() },
];
const rowsFrom = (from: number, n: number): Row[] =>
  Array.from({ length: n }, (_, k) => ({ id: BigInt(from + k), s: (from + k) % 97 === 0 ? null : `v${(from + k) % 13}`, d: (from + k) / 7 }));

/** A file of `n` rows from `from`, in row groups of `group` rows. */
function file(from: number, n: number, group: number, opts: ParquetWriteOptions = {}): { bytes: Uint8Array; rows: Row[] } {
  const rows = rowsFrom(from, n);
  return { bytes: writeParquet(rowsToRecordBatch(FIELDS, rows), { maxRowGroupSize: group, ...opts }), rows };
}

/** The rows of the given row groups of a file (groups of `group` rows). */
const groupRows = (rows: Row[], group: number, groups: number[]): Row[] => groups.flatMap((g) => rows.slice(g * group, (g + 1) * group));

for (const [name, opts] of [
  ["defaults", {}],
  ["dictionary pages, page statistics (column and offset indexes), v2 pages", { dictionary: true, statistics: "page", writerVersion: "2.0" }],
] as Array<[string, ParquetWriteOptions]>) {
  test(`parquet stitch - chosen row groups of several files, copied, read back in order by parquet-wasm, DuckDB and pyarrow (${name})`, async () => {
    const a = file(0, 5000, 2000, opts); // groups of 2000, 2000, 1000
    const b = file(5000, 3000, 3000, opts);
    const c = file(8000, 1500, 500, opts);
    assert.deepEqual(parquetRowGroupRows(a.bytes), [2000, 2000, 1000]);
    const r = stitchParquet([
      { bytes: a.bytes, rowGroups: [0, 2] },
      { bytes: b.bytes, rowGroups: [0] },
      { bytes: c.bytes, rowGroups: [1, 2] },
    ]);
    assert.equal(r.kind, "stitched", r.kind === "refused" ? r.reason : "");
    if (r.kind !== "stitched") return;
    const expected = [...groupRows(a.rows, 2000, [0, 2]), ...b.rows, ...groupRows(c.rows, 500, [1, 2])];
    assert.equal(r.rows, expected.length);
    assert.deepEqual(parquetRowGroupRows(r.bytes), [2000, 1000, 3000, 500, 500]);
    assert.deepEqual(recordBatchToRows(FIELDS, readParquet(r.bytes)), expected);
    assertIndexesPointAtPages(r.bytes, opts.statistics === "page");
    // The async reader, by row group and projected (it seeks with the footer's offsets).
    assert.deepEqual(
      recordBatchToRows([FIELDS[0]!], await readParquetAsync(r.bytes, { columns: ["id"], rowGroups: [3] })).map((x) => x["id"]),
      expected.slice(6000, 6500).map((x) => x["id"]),
    );
    const dir = mkdtempSync(join(tmpdir(), "natslake-stitch-"));
    try {
      const path = join(dir, "stitched.parquet");
      writeFileSync(path, r.bytes);
      const inst = await DuckDBInstance.create(":memory:");
      const conn = await inst.connect();
      try {
        const duck = (await conn.runAndReadAll(`select id, s, d from read_parquet('${path}')`)).getRowObjectsJS();
        assert.deepEqual(duck.map((x) => x["id"]), expected.map((x) => x["id"]));
        assert.deepEqual(duck.map((x) => x["s"]), expected.map((x) => x["s"]));
        // A filter DuckDB may answer with the footer's statistics and the page index.
        const filtered = (await conn.runAndReadAll(`select count(*)::INTEGER as n, sum(id)::BIGINT as total from read_parquet('${path}') where id between 4100 and 8700`)).getRowObjectsJS()[0]!;
        const want = expected.filter((x) => (x["id"] as bigint) >= 4100n && (x["id"] as bigint) <= 8700n);
        assert.equal(filtered["n"], want.length);
        assert.equal(filtered["total"], want.reduce((t, x) => t + (x["id"] as bigint), 0n));
      } finally {
        conn.closeSync();
        inst.closeSync();
      }
      // pyarrow: every row in order, the metadata valid (its page index read when present).
      const out = await runPython("-c", [
        `import pyarrow.parquet as pq, json, sys
f = pq.ParquetFile(sys.argv[1], page_checksum_verification=True)
t = f.read()
groups = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
print(json.dumps({"ids": t.column("id").to_pylist(), "groups": groups}))`,
        path,
      ]);
      const py = JSON.parse(out) as { ids: number[]; groups: number[] };
      assert.deepEqual(py.groups, [2000, 1000, 3000, 500, 500]);
      assert.deepEqual(py.ids, expected.map((x) => Number(x["id"])));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * Every chunk's offset index (always written) and column index (with page statistics) lies inside the file, and the
 * offset index's pages start at the chunk's first data page and stay inside the chunk: the offsets were moved.
 */
function assertIndexesPointAtPages(bytes: Uint8Array, columnIndexes: boolean): void {
  const get = (fs: ThriftField[], id: number): ThriftField["value"] | undefined => fs.find((f) => f.id === id)?.value;
  const list = (v: ThriftField["value"] | undefined): ThriftField[][] => ((v as { items: ThriftField[][] } | undefined)?.items ?? []);
  let chunks = 0;
  for (const rg of list(get(readFileMetaData(bytes), 4))) {
    for (const chunk of list(get(rg, 1))) {
      chunks++;
      const meta = get(chunk, 3) as ThriftField[];
      const dataPage = Number(get(meta, 9));
      const start = Math.min(dataPage, Number(get(meta, 11) ?? Infinity));
      const end = start + Number(get(meta, 7));
      const at = Number(get(chunk, 4));
      const locations = list(get(decodeStruct(bytes, at, at + (get(chunk, 5) as number)), 1));
      assert.ok(locations.length > 0);
      assert.equal(Number(get(locations[0]!, 1)), dataPage, "the first page the offset index names is the chunk's first data page");
      for (const loc of locations) assert.ok(Number(get(loc, 1)) + (get(loc, 2) as number) <= end, "every page inside its chunk");
      if (columnIndexes) assert.ok(Number(get(chunk, 6)) + (get(chunk, 7) as number) <= bytes.length, "a column index inside the file");
    }
  }
  assert.ok(chunks > 0);
}

test("parquet stitch - every type (nested, decimals, INT96 timestamps) survives a copy of its row groups", () => {
  const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
  const one = writeParquet(batch, { maxRowGroupSize: 1 });
  const groups = parquetRowGroupRows(one).length;
  assert.equal(groups, ALL_ROWS.length);
  const reversedHalves = [
    { bytes: one, rowGroups: Array.from({ length: groups }, (_, k) => k).filter((k) => k % 2 === 0) },
    { bytes: one, rowGroups: Array.from({ length: groups }, (_, k) => k).filter((k) => k % 2 === 1) },
  ];
  const r = stitchParquet(reversedHalves);
  assert.equal(r.kind, "stitched");
  if (r.kind !== "stitched") return;
  const even = ALL_ROWS.filter((_, k) => k % 2 === 0);
  const odd = ALL_ROWS.filter((_, k) => k % 2 === 1);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, readParquet(r.bytes)), [...even, ...odd]);
});

test("parquet stitch - pieces that disagree on the schema or the Arrow metadata are refused with the reason", () => {
  const a = file(0, 100, 100).bytes;
  const other = writeParquet(rowsToRecordBatch([FIELDS[0]!], rowsFrom(0, 10)));
  const r = stitchParquet([
    { bytes: a, rowGroups: [0] },
    { bytes: other, rowGroups: [0] },
  ]);
  assert.deepEqual(r, { kind: "refused", reason: "piece 1 has another schema than piece 0" });
  // The writer's name is not the file's shape: it may differ.
  const renamed = writeParquet(rowsToRecordBatch(FIELDS, rowsFrom(0, 10)), { createdBy: "someone else" });
  assert.equal(stitchParquet([{ bytes: a, rowGroups: [0] }, { bytes: renamed, rowGroups: [0] }]).kind, "stitched", "created_by may differ");
  assert.throws(() => stitchParquet([{ bytes: a, rowGroups: [1] }]), /piece 0 has no row group 1/);
});

test("parquet stitch - pieces given their parsed footers (parquetFooter) stitch the same bytes as pieces parsed here; a disagreeing one is still refused", () => {
  const a = file(0, 5000, 2000);
  const b = file(5000, 3000, 1000);
  const footerA = parquetFooter(a.bytes);
  assert.deepEqual(footerA.groupRows, [2000, 2000, 1000]);
  const parsedHere = stitchParquet([
    { bytes: a.bytes, rowGroups: [0] },
    { bytes: b.bytes, rowGroups: [1, 2] },
    { bytes: a.bytes, rowGroups: [2] },
  ]);
  const given = stitchParquet([
    { bytes: a.bytes, rowGroups: [0], footer: footerA },
    { bytes: b.bytes, rowGroups: [1, 2], footer: parquetFooter(b.bytes) },
    { bytes: a.bytes, rowGroups: [2], footer: footerA },
  ]);
  assert.equal(given.kind, "stitched");
  assert.deepEqual(given, parsedHere);
  const other = writeParquet(rowsToRecordBatch([FIELDS[0]!], rowsFrom(0, 10)));
  assert.deepEqual(stitchParquet([{ bytes: a.bytes, rowGroups: [0], footer: footerA }, { bytes: other, rowGroups: [0], footer: parquetFooter(other) }]), { kind: "refused", reason: "piece 1 has another schema than piece 0" });
});
