/**
 * Tables with deletion vectors that Java Paimon 1.4.2 wrote (test/compat/java/PaimonPk.java), read by natslake: Java
 * creates them and commits a history of inserts, updates and deletes, each commit followed by Java's lookup
 * compaction (an APPEND snapshot with a level-0 file, then a COMPACT one that moved it up and marked the older rows in
 * the vectors). One JVM creates and writes, one reads — every table at every snapshot — and streams.
 *
 * - deduplicate, partitioned, 32-bit vectors; the same with `deletion-vectors.bitmap64`; partial-update; aggregation;
 *   deduplicate with `index-file-in-data-file-dir`: natslake reads each snapshot as Java's batch read does (level 0
 *   skipped), with a projection too; pypaimon reads the 32-bit table's latest snapshot the same;
 * - append tables with vectors (as Spark's DELETE writes them: PaimonPk.java's delete-rows), without buckets and
 *   with 2 buckets and 64-bit vectors: every snapshot read as Java reads it, and through readMessages (reader nodes);
 * - a stream's first plan (from-snapshot-full at an APPEND snapshot) reads level 0 too, as Java's stream scan does;
 * - lookups, compactions (append tables' too), partition expiration and writes of such tables are refused by name, and
 *   so is creating one;
 * - orphan cleanup (bound 0) keeps every index file a snapshot references, wherever it lies, and doctor finds nothing;
 *   an index file damaged and one removed (last: this breaks dv.dedup) are doctor's findings, and reads fail naming them.
 */
import { after, before, test } from "node:test";
import * as arrow from "apache-arrow";
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Catalog, parseColumnList, parseIdentifier } from "../../src/index.ts";
import { assignFieldIds } from "../../src/format/data-types.ts";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import { DELETION_VECTORS_INDEX } from "../../src/format/index-manifest.ts";
import { BITMAP64_MAGIC } from "../../src/format/wire/deletion-vectors.ts";
import { doctorTable } from "../../src/maintenance/doctor.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { expirePartitions } from "../../src/maintenance/expire-partitions.ts";
import { removeOrphans } from "../../src/maintenance/remove-orphans.ts";
import { lookupKeys } from "../../src/scan/lookup.ts";
import { TableStream } from "../../src/scan/table-stream.ts";
import { readMessages, readRows } from "../../src/scan/read.ts";
import { toJsonValue } from "../../src/format/values.ts";
import { indexFilePath, readIndexManifest } from "../../src/table/deletion-vectors.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import type { Table } from "../../src/table/table.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { javaPk, javaPkCreateRequest, javaPkWriteRequest, javaReadResult, javaWriteResult, type JavaPkReadResult, type JavaPkRequest } from "../helpers/java-pk.ts";
import { javaRowToJson } from "../helpers/java.ts";
import { paimonRead } from "../helpers/python.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;
const COLUMNS = "p STRING NOT NULL, id INT NOT NULL, v STRING, n BIGINT";
const DV = { "deletion-vectors.enabled": "true" };

/** The tables Java writes, and their histories (one commit per batch). */
const TABLES: Array<{ name: string; options: Record<string, string>; partitioned: boolean; history: R[][] }> = [
  { name: "dv.dedup", options: { bucket: "2", ...DV }, partitioned: true, history: dedupHistory() },
  { name: "dv.dedup64", options: { bucket: "2", ...DV, "deletion-vectors.bitmap64": "true", "index-file-in-data-file-dir": "true" }, partitioned: true, history: dedupHistory() },
  { name: "dv.partial", options: { bucket: "2", ...DV, "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true" }, partitioned: false, history: partialHistory() },
  { name: "dv.agg", options: { bucket: "2", ...DV, "merge-engine": "aggregation", "fields.n.aggregate-function": "sum" }, partitioned: false, history: aggHistory() },
];

/**
 * Append tables with deletion vectors (what Spark's DELETE writes: PaimonPk.java's delete-rows), one without buckets
 * and partitioned, one of 2 buckets with 64-bit vectors: two commits of rows, rows deleted in every file, one more
 * commit, more rows deleted (merged into the files' vectors, a first one for the new file).
 */
const APPEND_TABLES: Array<{ name: string; options: Record<string, string> }> = [
  { name: "dv.append", options: { bucket: "-1", ...DV } },
  { name: "dv.append64", options: { bucket: "2", "bucket-key": "id", ...DV, "deletion-vectors.bitmap64": "true" } },
];
const appendRows = (from: number, n: number): R[] => Array.from({ length: n }, (_, i) => ({ p: (from + i) % 2 === 0 ? "a" : "b", id: from + i, v: `r${from + i}`, n: from + i }));
const FIRST_DELETES = [0, 1, 2, 10, 20, 30];
const SECOND_DELETES = [3, 4, 10, 25];
/** The 64-bit tables. */
const BITMAP64 = new Set(["dv.dedup64", "dv.append64"]);

/** 300 keys in two partitions, then updates, deletes (and re-inserts), more updates. */
function dedupHistory(): R[][] {
  const p = (id: number): string => (id % 3 === 0 ? "a" : "b");
  return [
    Array.from({ length: 300 }, (_, id) => ({ p: p(id), id, v: `v${id}`, n: id })),
    Array.from({ length: 40 }, (_, i) => ({ p: p(i * 7), id: i * 7, v: `u${i * 7}`, n: 1000 + i })),
    [...Array.from({ length: 25 }, (_, i) => ({ _row_kind: "-D", p: p(i * 11 + 2), id: i * 11 + 2 })), ...Array.from({ length: 10 }, (_, i) => ({ p: p(300 + i), id: 300 + i, v: "new", n: -i }))],
    Array.from({ length: 30 }, (_, i) => ({ p: p(i * 13 + 2), id: i * 13 + 2, v: `w${i}`, n: 2000 + i })),
  ];
}

/** Partial rows: each commit sets some columns of some keys; one commit deletes. */
function partialHistory(): R[][] {
  return [
    Array.from({ length: 120 }, (_, id) => ({ p: "x", id, v: `v${id}` })),
    Array.from({ length: 60 }, (_, i) => ({ p: "x", id: i * 2, n: i })),
    Array.from({ length: 15 }, (_, i) => ({ _row_kind: "-D", p: "x", id: i * 8 + 1 })),
    Array.from({ length: 50 }, (_, i) => ({ p: "x", id: i * 3, v: `w${i}` })),
  ];
}

/** Sums over four commits. */
function aggHistory(): R[][] {
  return [0, 1, 2, 3].map((c) => Array.from({ length: 100 - c * 20 }, (_, i) => ({ p: "x", id: i * (c + 1), v: `c${c}`, n: c * 100 + i })));
}

const tables = new Map<string, Table>();
const snapshotsOf = new Map<string, number[]>();
/** Java's reads: every snapshot of every table, then each table's latest with a projection. */
let reads: Array<{ table: Table; snapshotId?: number; columns?: string[] }> = [];
let javaReads: JavaPkReadResult[] = [];
/** Java's stream of dv.dedup from STREAM_START (the 5th snapshot: an APPEND, its level-0 file not compacted yet). */
let javaStream: R = {};
let streamStart = 0;

before(async () => {
  // One JVM creates and writes, one reads and streams: a JVM start costs seconds.
  const { fields } = assignFieldIds(parseColumnList(COLUMNS).map((c) => ({ id: -1, ...c })));
  const appendSteps = (name: string): JavaPkRequest[] => {
    const table = { name, schema: { fields } };
    return [
      javaPkWriteRequest({ table, batches: [appendRows(0, 200), appendRows(200, 100)] }),
      { op: "delete-rows", table: name, positions: { "*": FIRST_DELETES } },
      javaPkWriteRequest({ table, batches: [appendRows(300, 60)] }),
      { op: "delete-rows", table: name, positions: { "*": SECOND_DELETES } },
    ];
  };
  const requests: JavaPkRequest[] = [
    ...TABLES.map((t) => javaPkCreateRequest({ table: t.name, columns: COLUMNS, primaryKeys: ["p", "id"], partitionKeys: t.partitioned ? ["p"] : [], options: t.options })),
    ...APPEND_TABLES.map((t) => javaPkCreateRequest({ table: t.name, columns: COLUMNS, partitionKeys: ["p"], options: t.options })),
    ...TABLES.map((t) => javaPkWriteRequest({ table: { name: t.name, schema: { fields } }, batches: t.history })),
    ...APPEND_TABLES.flatMap((t) => appendSteps(t.name)),
  ];
  const done = await javaPk(wh.path, requests);
  done.forEach((a, i) => assert.equal(a["error"], undefined, `Java's ${requests[i]!.op} of ${"table" in requests[i]! ? requests[i]!.table : "?"}`));
  const writes = done.slice(TABLES.length + APPEND_TABLES.length).map(javaWriteResult);
  for (const [i, t] of TABLES.entries()) {
    tables.set(t.name, await reopen(wh.path, t.name));
    snapshotsOf.set(t.name, writes[i]!.commits.flatMap((c) => c.snapshots.map((x) => x.id)));
  }
  for (const [i, t] of APPEND_TABLES.entries()) {
    tables.set(t.name, await reopen(wh.path, t.name));
    const steps = writes.slice(TABLES.length + 4 * i, TABLES.length + 4 * (i + 1));
    snapshotsOf.set(t.name, steps.flatMap((w) => w.commits.flatMap((c) => c.snapshots.map((x) => x.id))));
  }
  reads = [...tables.values()].flatMap((t) => [...snapshotsOf.get(t.name)!.map((snapshotId) => ({ table: t, snapshotId })), { table: t, columns: ["n", "id"] }]);
  streamStart = snapshotsOf.get("dv.dedup")![4]!;
  const answers = await javaPk(wh.path, [
    ...reads.map(({ table, ...r }) => ({ op: "read" as const, table: table.name, ...r })),
    { op: "stream", table: "dv.dedup", options: { "scan.mode": "from-snapshot-full", "scan.snapshot-id": String(streamStart) } },
  ]);
  javaReads = answers.slice(0, reads.length).map((res, i) => javaReadResult(res, reads[i]!.table, reads[i]!.columns));
  javaStream = answers[reads.length]!;
});

test("Java wrote deletion vectors: some snapshots of every table have some, 64-bit ones with bitmap64, in the bucket directory with index-file-in-data-file-dir", async () => {
  for (const t of tables.values()) {
    const snapshots = await Promise.all(snapshotsOf.get(t.name)!.map((id) => t.snapshots.snapshot(id)));
    const entries = (await Promise.all(snapshots.map((s) => readIndexManifest(t, s)))).flat().filter((e) => e.indexFile.indexType === DELETION_VECTORS_INDEX);
    const deleted = entries.flatMap((e) => e.indexFile.dvRanges ?? []).reduce((n, r) => n + (r.cardinality ?? 0), 0);
    assert.ok(deleted > 0, `${t.name}: ${deleted} rows marked deleted`);
    for (const e of entries) {
      const path = indexFilePath(t, e);
      assert.ok(existsSync(path), path);
      if (t.name === "dv.dedup64") assert.match(path, /\/p=[ab]\/bucket-[01]\/index-[^/]+$/);
      else assert.match(path, /\/index\/index-[^/]+$/);
      const bytes = await t.io.readFile(path);
      for (const range of e.indexFile.dvRanges ?? []) {
        const magicLE = new DataView(bytes.buffer, bytes.byteOffset).getInt32(range.offset + 4, true);
        assert.equal(magicLE === BITMAP64_MAGIC, BITMAP64.has(t.name), `${t.name}: the bitmap format`);
      }
    }
  }
});

test("natslake reads every snapshot of every table as Java's batch read does (level 0 skipped, vectors applied), a projection too; pypaimon reads the 32-bit table the same", async () => {
  let withLevel0 = 0;
  for (const [i, r] of reads.entries()) {
    const res = javaReads[i]!;
    const where = `${r.table.name} ${r.snapshotId !== undefined ? `snapshot ${r.snapshotId}` : `latest, columns ${r.columns!.join(",")}`}`;
    assert.ok(res.rows !== undefined, `Java read ${where}: ${res.error ?? ""}`);
    const spec = r.snapshotId !== undefined ? { snapshotId: r.snapshotId } : { projection: r.columns! };
    assert.deepEqual(sortRows(await readJson(r.table, spec)), sortRows(res.rows), where);
    if (r.snapshotId !== undefined) {
      const live = await new ManifestStore(r.table).readLiveEntries(await r.table.snapshots.snapshot(r.snapshotId));
      if (r.table.isPrimaryKeyTable && live.some((e) => e.file.level === 0)) withLevel0++;
    }
  }
  assert.ok(withLevel0 > 0, "some primary-key snapshots read hold a level-0 file");
  const dedup = tables.get("dv.dedup")!;
  assert.deepEqual(sortRows(await paimonRead(wh.path, "dv.dedup")), sortRows(await readJson(dedup)), "pypaimon reads the 32-bit vectors as natslake does");
});

test("an append table's files read for a reader node's session (readMessages) lose their deleted rows too: a file with a vector comes as batches, one without as the decoder's messages", async () => {
  for (const t of APPEND_TABLES.map((x) => tables.get(x.name)!)) {
    // The snapshot of the third commit: the first two commits' files have vectors, its own files none yet.
    const snapshotId = snapshotsOf.get(t.name)![3]!;
    const ids: number[] = [];
    const kinds = new Set<string>();
    for await (const f of readMessages(t, { snapshotId, messageBytes: 64 * 1024 })) {
      kinds.add(f.kind);
      const batches = f.kind === "batches" ? f.batches : arrow.tableFromIPC([f.schema, ...f.messages.map((m) => m.bytes)]).batches;
      for (const b of batches) ids.push(...(b.getChild("id")!.toArray() as Int32Array));
    }
    assert.deepEqual([...kinds].sort(), ["batches", "messages"], t.name);
    const expected = (await readJson(t, { snapshotId })).map((r) => r["id"] as number);
    assert.deepEqual(
      ids.sort((a, b) => a - b),
      expected.sort((a, b) => a - b),
      t.name,
    );
    assert.ok(expected.length < 360, `${t.name}: ${expected.length} rows of 360 left`);
  }
});

test("a stream from a full snapshot that holds a level-0 file starts with what Java's stream starts with (level 0 merged in, vectors applied), then the next commits' changes", { timeout: 60_000 }, async () => {
  const t = tables.get("dv.dedup")!;
  const start = streamStart;
  assert.equal((await t.snapshots.snapshot(start)).commitKind, "APPEND");
  assert.ok((await new ManifestStore(t).readLiveEntries(await t.snapshots.snapshot(start))).some((e) => e.file.level === 0), "the start holds a level-0 file");
  assert.equal(javaStream["error"], undefined, String(javaStream["error"]));
  const render = javaRowToJson(t);
  const theirs = (javaStream["changes"] as Array<{ kind: string; row: R }>).map((c) => ({ kind: c.kind === "+U" ? "+I" : c.kind, row: render(c.row) }));
  const stream = new TableStream(t, { mode: { mode: "from-snapshot-full", snapshotId: start }, pollMs: 50 });
  // The last snapshot a stream yields: COMPACT snapshots add nothing to it.
  const lastAppend = Math.max(...(await Promise.all(snapshotsOf.get(t.name)!.map((id) => t.snapshots.snapshot(id)))).filter((s) => s.commitKind === "APPEND").map((s) => s.id));
  const mine: Array<{ kind: string; row: R }> = [];
  try {
    for (;;) {
      const item = await stream.next();
      if (item === null) break;
      for await (const r of readRows(t, item.read)) {
        const { _row_kind: kind, ...row } = r;
        mine.push({ kind: String(kind), row: Object.fromEntries(t.schema.fields.map((f) => [f.name, toJsonValue(f.type, row[f.name] ?? null)])) });
      }
      if (item.snapshotId >= lastAppend) break;
    }
  } finally {
    stream.close();
  }
  const key = (c: { kind: string; row: R }): string => JSON.stringify([c.row["p"], c.row["id"], c.kind, c.row]);
  assert.deepEqual(mine.map(key).sort(), theirs.map(key).sort());
  assert.ok(mine.length > 300, `${mine.length} rows and changes`);
});

test("lookups, compactions, partition expiration and writes of a table with deletion vectors are refused by name; natslake creates none", async () => {
  const t = tables.get("dv.dedup")!;
  const refusedWith = (pattern: RegExp) => (e: unknown) => isLakeError(e, ErrorKind.Unsupported) && pattern.test(e.message);
  await assert.rejects(lookupKeys(t, [{ p: "a", id: 3 }]), refusedWith(/dv\.dedup has deletion vectors enabled: natslake does not look keys up in tables with deletion vectors; read the table/));
  await assert.rejects(compactTable(t), refusedWith(/dv\.dedup has deletion vectors enabled: natslake does not compact tables with deletion vectors .*compact it with Java Paimon/));
  await assert.rejects(BatchWriter.open(t), refusedWith(/deletion-vectors\.enabled = true: natslake does not write tables with deletion vectors/));
  await assert.rejects(compactTable(tables.get("dv.append")!), refusedWith(/dv\.append has deletion vectors enabled: natslake does not compact/), "an append table's compaction too");
  await assert.rejects(expirePartitions(t, { expirationTimeMs: 0 }), refusedWith(/dv\.dedup has deletion vectors enabled: natslake does not expire partitions of tables with deletion vectors/));
  for (const primaryKeys of [["id"], []]) {
    await assert.rejects(
      new Catalog(wh.path).createTable(parseIdentifier(`dv.mine${primaryKeys.length}`), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys, options: primaryKeys.length > 0 ? { bucket: "1", ...DV } : DV }),
      refusedWith(/dv\.mine\d: deletion-vectors\.enabled = true: natslake does not write tables with deletion vectors \(its writers and compactions do not maintain them/),
    );
  }
  assert.deepEqual(sortRows(await readJson(t)), sortRows(await readJson(await reopen(wh.path, t.name))), "nothing was written");
});

test("orphan cleanup keeps every index file a snapshot references, under index/ or beside the data files; doctor finds nothing wrong", async () => {
  for (const name of ["dv.dedup", "dv.dedup64"]) {
    const t = tables.get(name)!;
    const before = sortRows(await readJson(t));
    const referenced = new Set<string>();
    for (const id of await t.snapshots.listIds()) for (const e of await readIndexManifest(t, await t.snapshots.snapshot(id))) referenced.add(indexFilePath(t, e));
    assert.ok(referenced.size > 0);
    const report = await doctorTable(t);
    assert.deepEqual(report.findings, [], `${name}: doctor`);
    const removed = await removeOrphans(t, { olderThanMs: 0 });
    assert.deepEqual(removed.files.filter((f) => /(^|\/)index-/.test(f.path)), [], `${name}: no index file removed`);
    for (const p of referenced) assert.ok(existsSync(p), `${name}: ${p} kept`);
    assert.deepEqual(sortRows(await readJson(await reopen(wh.path, name))), before, `${name} reads the same after the cleanup`);
  }
});

test("doctor checks the index files: one damaged and one gone are found, with the snapshots that use them; a read of such a snapshot fails naming the file", async () => {
  const t = tables.get("dv.dedup")!;
  // Index files with vectors, and a snapshot that uses each.
  const users = new Map<string, number>();
  for (const id of snapshotsOf.get(t.name)!) {
    for (const e of await readIndexManifest(t, await t.snapshots.snapshot(id))) if ((e.indexFile.dvRanges ?? []).length > 0) users.set(indexFilePath(t, e), id);
  }
  assert.ok(users.size >= 2, `${users.size} index files with vectors`);
  const [damaged, gone] = [...users.keys()];
  const bytes = readFileSync(damaged!);
  bytes[bytes.length - 1]! ^= 0xff; // the last vector's CRC
  writeFileSync(damaged!, bytes);
  rmSync(gone!);
  const report = await doctorTable(t, { orphansOlderThanMs: 86_400_000 });
  const found = report.findings.filter((f) => f.check === "index-file").map((f) => `${f.path}: ${f.problem.replace(/:.*/s, "")}, used by ${f.snapshots!.includes(users.get(f.path!)!)}`);
  assert.deepEqual(found.sort(), [`${damaged}: damaged, used by true`, `${gone}: missing, used by true`].sort());
  assert.match(report.findings.find((f) => f.path === damaged)!.problem, /CRC32 mismatch/);
  assert.ok(report.checked.indexFiles >= 2);
  // A snapshot may use both: its read fails naming one of them, as damaged or missing.
  for (const path of [damaged!, gone!]) {
    await assert.rejects(readJson(t, { snapshotId: users.get(path)! }), (e: unknown) => isLakeError(e) && (e.message.startsWith(`${damaged} is damaged: not a readable index file (`) || e.message.startsWith(`index file ${gone} is missing`)));
  }
});
