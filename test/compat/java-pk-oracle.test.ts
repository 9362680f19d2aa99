/**
 * Java Paimon 1.4.2 as the oracle of natslake's primary-key tables (test/compat/java/PaimonPk.java through
 * test/helpers/java-pk.ts), on tables natslake's library creates and writes (Catalog.createTable, BatchWriter with
 * upsert / delete / rows of every kind):
 * - read: Java's reads at every snapshot, at a tag, at the latest and projected equal natslake's `readJson` there;
 * - stream: Java's streaming read of a `changelog-producer = input` table yields exactly the changes written, with
 *   their kinds, per key in write order, each from its snapshot; of a `none` table, per commit each key's last change
 *   (the writer folds a commit); the first plan of latest-full / from-snapshot-full is the merged table;
 * - write: Java's batch writer continues natslake's buckets (restoring levels and sequence numbers from natslake's
 *   files, compacting them) and fully compacts them; natslake reads Java's snapshots as Java does, and natslake's next
 *   write goes on after Java's sequence numbers;
 * - create: Java's catalog and natslake's agree on which primary-key schemas are valid, except where natslake refuses
 *   on purpose what it cannot write (each such case says why);
 * - bench-write: Java's write benchmark runs and writes the rows bench/shape.ts describes (figures: bench/java-pk-write.bench.ts);
 * - bench-read: Java's read benchmark counts the rows of natslake's table and its checksum equals natslake's
 *   (bench/read-checksum.ts), and its sparse rows are bench/shape.ts's (figures: bench/pk-engines.bench.ts).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { BatchWriter, Catalog, createTag, isLakeError, parseColumnList, parseIdentifier, type Table } from "../../src/index.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { schemaToJson } from "../../src/format/schema.ts";
import { BENCH_COLUMNS, benchSparseUpsertRow, benchUpsertKey } from "../../bench/shape.ts";
import { readBatches } from "../../src/scan/read.ts";
import { checksumDifferences, ReadChecksummer } from "../../bench/read-checksum.ts";
import { javaPkBenchRead, javaPkBenchWrite, javaPkCreate, javaPkRead, javaPkStream, javaPkWrite, type JavaChange, type JavaCreateSpec } from "../helpers/java-pk.ts";
import { expectedJson, readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;

async function createPk(name: string, columns: string, primaryKeys: string[], options: Record<string, string>, partitionKeys: string[] = []): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(name), { columns: parseColumnList(columns), primaryKeys, partitionKeys, options });
}

/** One natslake commit of rows carrying `_row_kind` (default +I); its snapshot id. */
async function commitChanges(t: Table, changes: readonly R[]): Promise<number> {
  const w = await BatchWriter.open(t);
  await w.write(changes);
  return (await w.commit()).snapshot!.id;
}

/** The model of a deduplicate table: per key the row of its last change; -U and -D remove the key. */
class Model {
  readonly rows = new Map<string, R>();
  constructor(
    private readonly table: Table,
    private readonly keyOf: (r: R) => string,
  ) {}
  apply(changes: readonly R[]): void {
    for (const c of changes) {
      const { _row_kind: kind, ...row } = c;
      if (kind === "-D" || kind === "-U") this.rows.delete(this.keyOf(row));
      else this.rows.set(this.keyOf(row), expectedJson(this.table, row));
    }
  }
  json(): R[] {
    return sortRows([...this.rows.values()]);
  }
}

test("read: Java's reads at each snapshot, at a tag, at the latest and projected equal natslake's readJson", { timeout: 600_000 }, async () => {
  const t = await createPk(
    "pk.read",
    "id BIGINT NOT NULL, region STRING NOT NULL, name STRING, price DECIMAL(20,4), at TIMESTAMP(6), score DOUBLE, tags ARRAY<STRING>",
    ["region", "id"],
    { bucket: "2" },
    ["region"],
  );
  const big = 2n ** 60n;
  const row = (i: number, region: string, v: string): R => ({
    id: i % 2 === 0 ? BigInt(i) : big + BigInt(i),
    region,
    name: `${v} \u{1F600} ${i}`,
    price: `${i * 1000}.${String(i).padStart(4, "0")}`,
    at: `2024-0${(i % 9) + 1}-01T12:00:00.${String(i).padStart(6, "0")}`,
    score: i === 3 ? NaN : i === 4 ? -0 : i / 3,
    tags: i % 3 === 0 ? null : [v, `t${i}`],
  });
  const regions = ["eu", "\uFF5Eus"];
  const s1 = await commitChanges(t, regions.flatMap((r) => Array.from({ length: 10 }, (_, i) => row(i, r, "v1"))));
  const w2 = await BatchWriter.open(t);
  await w2.upsert([0, 3, 4, 7].map((i) => row(i, "eu", "v2")));
  const s2 = (await w2.commit()).snapshot!.id;
  await createTag(t, "v2", { snapshotId: s2 });
  const w3 = await BatchWriter.open(t);
  await w3.delete([1, 2].flatMap((i) => regions.map((r) => ({ id: row(i, r, "").id, region: r }))));
  const s3 = (await w3.commit()).snapshot!.id;
  const s4 = await commitChanges(t, [
    { _row_kind: "-U", ...row(5, "eu", "v1") },
    { _row_kind: "+U", ...row(5, "eu", "v4") },
    { _row_kind: "+I", ...row(1, "eu", "back") },
    { _row_kind: "-D", ...row(9, "\uFF5Eus", "v1") },
  ]);
  assert.deepEqual([s1, s2, s3, s4], [1, 2, 3, 4]);

  const reopened = await reopen(wh.path, "pk.read");
  const projection = ["name", "id", "price"];
  const points = [{ snapshotId: 1 }, { snapshotId: 2 }, { snapshotId: 3 }, { snapshotId: 4 }, { tag: "v2" }, {}, { snapshotId: 3, columns: projection }, { snapshotId: 99 }];
  const java = await javaPkRead(wh.path, reopened, points);
  for (const [i, p] of points.entries()) {
    const res = java[i]!;
    if (p.snapshotId === 99) {
      assert.ok(res.error !== undefined && /snapshot/i.test(res.error), `Java refuses a snapshot that does not exist: ${res.error ?? "(rows)"}`);
      await assert.rejects(readJson(reopened, { snapshotId: 99 }), (e: unknown) => isLakeError(e) && /snapshot 99/.test(e.message));
      continue;
    }
    assert.ok(res.rows !== undefined, `Java read at ${JSON.stringify(p)}: ${res.error ?? ""}`);
    const { columns, ...at } = p as { columns?: string[]; snapshotId?: number; tag?: string };
    const ours = await readJson(reopened, { ...at, ...(columns ? { projection: columns } : {}) });
    assert.deepEqual(sortRows(res.rows), sortRows(ours), `Java and natslake read the same rows at ${JSON.stringify(p)}`);
    assert.deepEqual(res.snapshotIds, [p.snapshotId ?? (p.tag !== undefined ? s2 : s4)], "the snapshot Java read");
  }
  // The points differ from each other, so equal reads mean the right snapshot was read.
  const counts = java.slice(0, 4).map((r) => r.rows!.length);
  assert.deepEqual(counts, [20, 20, 16, 16]);
  assert.notDeepEqual(sortRows(java[1]!.rows!), sortRows(java[0]!.rows!));
  assert.notDeepEqual(sortRows(java[3]!.rows!), sortRows(java[2]!.rows!));
  assert.deepEqual(sortRows(java[4]!.rows!), sortRows(java[1]!.rows!), "the tag holds snapshot 2");
});

/** The changes of a history as Java's stream renders them: every column (absent ones null), with kind and snapshot. */
function expectedChanges(t: Table, history: readonly R[][], firstSnapshot: number): JavaChange[] {
  return history.flatMap((batch, i) =>
    batch.map((c) => {
      const { _row_kind: kind, ...row } = c;
      return { snapshotId: firstSnapshot + i, kind: (kind as JavaChange["kind"] | undefined) ?? "+I", row: expectedJson(t, row) };
    }),
  );
}

/** Changes grouped per key, each key's in stream order. */
function perKey(changes: readonly JavaChange[], key: string): Map<unknown, JavaChange[]> {
  const out = new Map<unknown, JavaChange[]>();
  for (const c of changes) {
    const k = c.row[key];
    out.set(k, [...(out.get(k) ?? []), c]);
  }
  return new Map([...out.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
}

const STREAM_HISTORY: R[][] = [
  [
    { id: 1, v: "a", n: 10n },
    { id: 2, v: "b", n: 20n },
    { id: 3, v: "c\u{1F600}", n: 30n },
    { _row_kind: "+U", id: 1, v: "a2", n: 11n },
  ],
  [
    { _row_kind: "-U", id: 2, v: "b", n: 20n },
    { _row_kind: "+U", id: 2, v: "b2", n: 21n },
    { _row_kind: "-D", id: 3 },
    { id: 4, v: "d", n: 2n ** 62n },
  ],
  [
    { id: 3, v: "c again", n: 31n },
    { _row_kind: "-D", id: 1, v: "a2", n: 11n },
    { id: 5, v: "e", n: null },
  ],
];

test("stream: Java's streaming read of a changelog-producer = input table yields every change written, with its kind, per key in write order", { timeout: 600_000 }, async () => {
  const t = await createPk("pk.changes", "id INT NOT NULL, v STRING, n BIGINT", ["id"], { bucket: "2", "changelog-producer": "input" });
  for (const batch of STREAM_HISTORY) await commitChanges(t, batch);
  const model = new Model(t, (r) => String(r["id"]));
  for (const batch of STREAM_HISTORY) model.apply(batch);
  const [fromOne, latestFull, fromOneFull] = await javaPkStream(wh.path, t, [
    { options: { "scan.mode": "from-snapshot", "scan.snapshot-id": "1" } },
    {},
    { options: { "scan.mode": "from-snapshot-full", "scan.snapshot-id": "1" } },
  ]);

  // from-snapshot 1: no full phase; the changelog of snapshots 1, 2, 3.
  assert.ok(fromOne!.changes !== undefined, fromOne!.error);
  const expected = expectedChanges(t, STREAM_HISTORY, 1);
  assert.deepEqual(perKey(fromOne!.changes, "id"), perKey(expected, "id"), "each key's changes, in write order, with kinds and snapshots");
  assert.equal(fromOne!.changes.length, expected.length, "nothing more");
  assert.deepEqual(fromOne!.plans.map((p) => p.snapshotIds), [[1], [2], [3]]);
  assert.equal(fromOne!.nextSnapshotId, 4);

  // latest-full (the default): the table at snapshot 3, merged — each live key once, with its last version's kind.
  assert.ok(latestFull!.changes !== undefined, latestFull!.error);
  assert.deepEqual(sortRows(latestFull!.changes.map((c) => c.row)), sortRows(await readJson(t)), "the full phase is natslake's read of the latest snapshot");
  assert.deepEqual(sortRows(latestFull!.changes.map((c) => c.row)), model.json());
  assert.ok(latestFull!.changes.every((c) => c.snapshotId === 3));
  // Every bucket holds files of several commits at snapshot 3, so Java merges them: a row has its version's kind.
  const lastKind = new Map(expected.map((c) => [c.row["id"], c.kind]));
  for (const c of latestFull!.changes) assert.equal(c.kind, lastKind.get(c.row["id"]), `key ${String(c.row["id"])} comes with the kind of its last change`);

  // from-snapshot-full 1: snapshot 1 merged, then the changelog of 2 and 3.
  assert.ok(fromOneFull!.changes !== undefined, fromOneFull!.error);
  const first = fromOneFull!.changes.filter((c) => c.snapshotId === 1);
  assert.deepEqual(sortRows(first.map((c) => c.row)), sortRows(await readJson(t, { snapshotId: 1 })));
  // At snapshot 1 each bucket is one file without retractions, which Java reads as it is: +I throughout, even for
  // key 1, whose stored version is a +U.
  assert.deepEqual(first.map((c) => c.kind), first.map(() => "+I"));
  assert.deepEqual(perKey(fromOneFull!.changes.slice(first.length), "id"), perKey(expected.filter((c) => c.snapshotId > 1), "id"));
});

test("stream: of a changelog-producer = none table Java yields per APPEND snapshot each key's last change of the commit; COMPACT snapshots add nothing", { timeout: 600_000 }, async () => {
  const t = await createPk("pk.deltas", "id INT NOT NULL, v STRING, n BIGINT", ["id"], { bucket: "2" });
  for (const batch of STREAM_HISTORY) await commitChanges(t, batch);
  // Java compacts the table: snapshot 4, COMPACT.
  const compaction = await javaPkWrite(wh.path, t, [], { compact: true });
  assert.equal(compaction.error, undefined, compaction.error);
  assert.deepEqual(compaction.commits, [{ batch: "compact", snapshots: [{ id: 4, commitKind: "COMPACT" }] }]);
  const [fromOne, fromCompact] = await javaPkStream(wh.path, t, [{ options: { "scan.mode": "from-snapshot", "scan.snapshot-id": "1" } }, { options: { "scan.mode": "from-snapshot", "scan.snapshot-id": "4" } }]);
  assert.ok(fromOne!.changes !== undefined, fromOne!.error);
  // Per commit and key the last change (natslake's writer folds a commit as Java's does), with its kind.
  const folded = STREAM_HISTORY.map((batch) => [...new Map(batch.map((c) => [c["id"], c])).values()]);
  const expected = expectedChanges(t, folded, 1);
  assert.deepEqual(perKey(fromOne!.changes, "id"), perKey(expected, "id"));
  assert.equal(fromOne!.changes.length, expected.length);
  assert.deepEqual(fromOne!.plans.map((p) => p.snapshotIds), [[1], [2], [3]], "snapshot 4 (COMPACT) is skipped");
  assert.equal(fromOne!.nextSnapshotId, 5);
  assert.ok(fromCompact!.changes !== undefined, fromCompact!.error);
  assert.deepEqual(fromCompact!.changes, []);
  // And natslake reads Java's compacted snapshot as the model says.
  const model = new Model(t, (r) => String(r["id"]));
  for (const batch of STREAM_HISTORY) model.apply(batch);
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, "pk.deltas"))), model.json());
});

test("write: Java's batch writer continues natslake's buckets (restores, compacts them); natslake reads Java's snapshots as Java does and writes on after them", { timeout: 900_000 }, async () => {
  const name = "pk.cont";
  const t = await createPk(name, "k STRING NOT NULL, p INT NOT NULL, v BIGINT, d DECIMAL(10,2), note STRING", ["p", "k"], { bucket: "2" }, ["p"]);
  const keyOf = (r: R): string => `${String(r["p"])}/${String(r["k"])}`;
  const model = new Model(t, keyOf);
  const keys = ["a", "b", "c", "d", "\u{1F600}", "\uFF5E", "zz", ""];
  // Six natslake commits over the same keys: six level-0 files per bucket, past Java's compaction trigger (5 runs).
  for (let c = 0; c < 6; c++) {
    const changes: R[] = keys.flatMap((k, i) => [1, 2].map((p) => ({ k, p, v: BigInt(c * 100 + i), d: `${c}.${i}0`, note: `natslake ${c}` })));
    if (c === 3) changes.push({ _row_kind: "-D", k: "b", p: 1 }, { _row_kind: "-U", k: "c", p: 2 });
    await commitChanges(t, changes);
    model.apply(changes);
  }
  const batches: R[][] = [
    [
      { k: "new", p: 1, v: 1n, d: "1.00", note: "java +I" },
      { _row_kind: "+U", k: "a", p: 1, v: -1n, d: "-1.50", note: "java +U" },
      { _row_kind: "-D", k: "d", p: 2 },
      { _row_kind: "-U", k: "zz", p: 1, v: 500n },
      { k: "b", p: 1, v: 2n ** 62n, d: "99999999.99", note: "java re-insert \u{1F600}" },
    ],
    [{ _row_kind: "+U", k: "\u{1F600}", p: 2, v: 7n, d: null, note: null }],
  ];
  const res = await javaPkWrite(wh.path, t, batches, { compact: true });
  assert.equal(res.error, undefined, `Java wrote into natslake's buckets: ${res.error ?? ""}`);
  // Batch 0 finds seven sorted runs per bucket (natslake's six files and its own), past the trigger: Java compacts
  // natslake's files before committing (APPEND, then COMPACT). Whether batch 1 compacts too, and whether anything is
  // left for the full compaction to do, is Java's picker's business: only the shape is fixed.
  const kinds = res.commits.map((c) => [c.batch, c.snapshots.map((x) => x.commitKind)] as const);
  assert.deepEqual(kinds[0], [0, ["APPEND", "COMPACT"]], JSON.stringify(res.commits));
  assert.equal(kinds[1]![0], 1);
  assert.equal(kinds[1]![1][0], "APPEND");
  assert.ok(kinds[1]![1].slice(1).every((k) => k === "COMPACT"));
  assert.equal(kinds[2]![0], "compact");
  assert.ok(kinds[2]![1].every((k) => k === "COMPACT"));
  assert.deepEqual(res.commits.flatMap((c) => c.snapshots.map((x) => x.id)), Array.from({ length: res.commits.flatMap((c) => c.snapshots).length }, (_, i) => 7 + i));
  const afterBatch = [...model.rows.entries()];
  const snapshotsAfter: Array<{ id: number; rows: R[] }> = [];
  for (const [i, batch] of batches.entries()) {
    model.apply(batch);
    for (const s of res.commits[i]!.snapshots) snapshotsAfter.push({ id: s.id, rows: model.json() });
  }
  for (const x of res.commits[2]!.snapshots) snapshotsAfter.push({ id: x.id, rows: model.json() });
  assert.notDeepEqual(afterBatch, [...model.rows.entries()], "Java's batches changed the table");

  // Every snapshot Java made: natslake, Java and the model agree.
  const reopened = await reopen(wh.path, name);
  const java = await javaPkRead(wh.path, reopened, snapshotsAfter.map((s) => ({ snapshotId: s.id })));
  for (const [i, s] of snapshotsAfter.entries()) {
    assert.ok(java[i]!.rows !== undefined, java[i]!.error);
    assert.deepEqual(sortRows(java[i]!.rows), s.rows, `Java's read of snapshot ${s.id} equals the model`);
    assert.deepEqual(sortRows(await readJson(reopened, { snapshotId: s.id })), s.rows, `natslake's read of Java's snapshot ${s.id} equals the model`);
  }
  // After the full compaction every bucket is one file at the top level.
  const store = new ManifestStore(reopened);
  const latest = (await reopened.snapshots.latest())!;
  const live = await store.readLiveEntries(latest);
  assert.ok(live.every((e) => e.file.level === 5), `levels after Java's full compaction: ${live.map((e) => e.file.level).join(",")}`);
  const javaMaxSeq = live.reduce((m, e) => (e.file.maxSequenceNumber > m ? e.file.maxSequenceNumber : m), -1n);

  // natslake writes on: its sequence numbers continue after Java's, so its versions win.
  const more: R[] = [
    { _row_kind: "+U", k: "new", p: 1, v: 2n, d: "2.00", note: "natslake after java" },
    { _row_kind: "-D", k: "a", p: 1 },
    { k: "a", p: 2, v: 3n, d: "3.00", note: "natslake after java" },
  ];
  const s = await commitChanges(reopened, more);
  model.apply(more);
  const after = await reopen(wh.path, name);
  const added = (await store.readDeltaEntries(await after.snapshots.snapshot(s))).filter((e) => e.kind === 0);
  assert.ok(added.length > 0 && added.every((e) => e.file.minSequenceNumber > javaMaxSeq), "natslake's new files follow Java's sequence numbers");
  const [javaLatest] = await javaPkRead(wh.path, after, [{}]);
  assert.deepEqual(sortRows(javaLatest!.rows!), model.json(), "Java reads natslake's write after its own");
  assert.deepEqual(sortRows(await readJson(after)), model.json());
});

test("write: values of every type go through Java's writer and come back equal in natslake's and Java's reads", { timeout: 600_000 }, async () => {
  const t = await createPk(
    "pk.types",
    "id BIGINT NOT NULL, k STRING NOT NULL, b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(38,10), " +
      "ch CHAR(3), bin BINARY(4), vbin BYTES, dt DATE, tm TIME, ts9 TIMESTAMP(9), ltz3 TIMESTAMP_LTZ(3), arr ARRAY<INT>, " +
      "m MAP<STRING, BIGINT>, ms MULTISET<STRING>, r ROW<x DOUBLE, y STRING>",
    ["id", "k"],
    { bucket: "3" },
  );
  const row = (id: number, k: string, alt: boolean): R => ({
    id: alt ? -(2n ** 63n) : 2n ** 63n - 1n - BigInt(id),
    k,
    b: alt,
    ti: alt ? -128 : 127,
    si: alt ? -32768 : 32767,
    i: alt ? -2147483648 : id,
    bi: alt ? "-9007199254740993" : 9007199254740993n,
    f: alt ? -0 : Infinity,
    d: alt ? NaN : -1.5e300,
    dec: alt ? "-9999999999999999999999999999.9999999999" : "0.0000000001",
    ch: "abc",
    bin: Buffer.from([0, 255, 1, 2 + id]).toString("base64"),
    vbin: alt ? "" : Buffer.from("\u{1F600}").toString("base64"),
    dt: alt ? "1900-01-01" : "2262-04-11",
    tm: "23:59:59.999",
    ts9: alt ? "1677-09-21T00:12:43.145224192" : "1969-12-31T23:59:59.999999999",
    ltz3: "2026-11-29T10:00:00.123Z",
    arr: alt ? [] : [1, null, -3],
    m: alt ? {} : { "\u{1F600}": 1n, z: null },
    ms: alt ? ["a", "a", "b"] : [],
    r: alt ? { x: -0.5, y: null } : { x: 1e-300, y: "\uFF5E" },
  });
  const natslakeRows = [row(1, "n1", false), row(2, "n2", true)];
  await commitChanges(t, natslakeRows);
  const javaRows = [row(3, "j\u{1F600}", false), row(4, "j~", true), { ...row(5, "n1", true), id: natslakeRows[0]!["id"] }];
  const res = await javaPkWrite(wh.path, t, [javaRows]);
  assert.equal(res.error, undefined, res.error);
  const model = new Model(t, (r) => `${String(r["id"])}/${String(r["k"])}`);
  model.apply(natslakeRows);
  model.apply(javaRows);
  const reopened = await reopen(wh.path, "pk.types");
  assert.deepEqual(sortRows(await readJson(reopened)), model.json(), "natslake reads Java's values");
  const [java] = await javaPkRead(wh.path, reopened, [{}]);
  assert.deepEqual(sortRows(java!.rows!), model.json(), "Java reads them back");
  assert.equal(model.rows.size, 4, "Java's row for n1 replaced natslake's");
});

interface CreateCase {
  what: string;
  spec: Omit<JavaCreateSpec, "table">;
  /** Both accept, both refuse, or natslake refuses (on purpose) what Java accepts — with the reason. */
  expect: "both-accept" | "both-refuse" | { natslakeRefuses: string };
  /** Words of Java's error (both-refuse). */
  javaSays?: RegExp;
}

const CREATE_CASES: CreateCase[] = [
  { what: "a fixed-bucket primary-key table", spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "4" } }, expect: "both-accept" },
  {
    what: "a partitioned table whose key holds the partition field, with changelog-producer = input and a sequence field",
    spec: { columns: "dt STRING, id INT, ts BIGINT, v STRING", partitionKeys: ["dt"], primaryKeys: ["dt", "id"], options: { bucket: "2", "changelog-producer": "input", "sequence.field": "ts" } },
    expect: "both-accept",
  },
  {
    what: "bucket = -1 (dynamic buckets)",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "-1" } },
    expect: { natslakeRefuses: "natslake writes primary-key tables with a fixed bucket count: dynamic buckets need a hash index of every key natslake does not keep" },
  },
  {
    what: "no bucket option (Java's default for a primary-key table is -1, dynamic)",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"] },
    expect: { natslakeRefuses: "the default is dynamic buckets, which natslake does not write; natslake asks for bucket = N" },
  },
  {
    what: "bucket = -2 (postpone)",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "-2" } },
    expect: { natslakeRefuses: "postponed buckets are assigned by Paimon's own rescale job, which natslake does not run" },
  },
  {
    what: "a fixed-bucket partitioned table whose key lacks the partition field",
    spec: { columns: "dt STRING, id INT, v STRING", partitionKeys: ["dt"], primaryKeys: ["id"], options: { bucket: "2" } },
    expect: {
      natslakeRefuses:
        "Java 1.4.2 creates it (HASH_FIXED), but then a key is unique only within a partition: a row whose partition changes leaves its old version behind; natslake refuses rather than write a table whose key is not a key",
    },
  },
  {
    what: "a cross-partition table with a sequence field",
    spec: { columns: "dt STRING, id INT, ts BIGINT", partitionKeys: ["dt"], primaryKeys: ["id"], options: { bucket: "-1", "sequence.field": "ts" } },
    expect: "both-refuse",
    javaSays: /You can not use sequence.field in cross partition update case/,
  },
  {
    what: "a dynamic-bucket partitioned table whose key lacks the partition field (cross-partition upsert)",
    spec: { columns: "dt STRING, id INT, v STRING", partitionKeys: ["dt"], primaryKeys: ["id"], options: { bucket: "-1" } },
    expect: { natslakeRefuses: "a key that moves between partitions needs the global index of dynamic buckets, which natslake does not write" },
  },
  {
    what: "a rowkind.field that is not a column",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "rowkind.field": "op" } },
    expect: "both-refuse",
    javaSays: /Rowkind field: 'op' can not be found in table schema/,
  },
  {
    what: "a rowkind.field that is not a string",
    spec: { columns: "id BIGINT, op INT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "rowkind.field": "op" } },
    expect: { natslakeRefuses: "Java refuses a non-string rowkind.field when a writer opens the table (RowKindGenerator); natslake when the table is created, in Java's words" },
  },
  {
    what: "a rowkind.field of type STRING",
    spec: { columns: "id BIGINT, op STRING, v STRING", primaryKeys: ["id"], options: { bucket: "2", "rowkind.field": "op" } },
    expect: "both-accept",
  },
  {
    what: "a sequence.field that is not a column",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "sequence.field": "ts" } },
    expect: "both-refuse",
    javaSays: /Sequence field: 'ts' can not be found in table schema/,
  },
  {
    what: "an unknown merge engine",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "newest-wins" } },
    expect: "both-refuse",
    javaSays: /Could not parse value 'newest-wins' for key 'merge-engine'/,
  },
  {
    what: "merge-engine = partial-update",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true" } },
    expect: "both-accept",
  },
  {
    what: "merge-engine = partial-update with a sequence group",
    spec: { columns: "id BIGINT, v STRING, g INT", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "partial-update", "fields.g.sequence-group": "v" } },
    expect: "both-accept",
  },
  {
    what: "partial-update with ignore-delete and remove-record-on-delete",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "partial-update", "ignore-delete": "true", "partial-update.remove-record-on-delete": "true" } },
    expect: "both-refuse",
    javaSays: /ignore-delete and partial-update.remove-record-on-delete have conflicting behavior so should not be enabled at the same time/,
  },
  {
    what: "merge-engine = aggregation with functions per field and a default",
    spec: { columns: "id BIGINT, n BIGINT, s STRING, b BOOLEAN", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.s.aggregate-function": "listagg", "fields.b.aggregate-function": "bool_or", "fields.default-aggregate-function": "last_value" } },
    expect: "both-accept",
  },
  {
    what: "an unknown aggregate function",
    spec: { columns: "id BIGINT, n BIGINT", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "avg" } },
    expect: "both-refuse",
    javaSays: /Could not find any factory for identifier 'avg'/,
  },
  {
    what: "sum of a STRING column",
    spec: { columns: "id BIGINT, s STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "aggregation", "fields.s.aggregate-function": "sum" } },
    expect: { natslakeRefuses: "Java checks a function's type when it first merges the table; natslake when the table is created, in Java's words" },
  },
  {
    what: "an aggregate function natslake does not run (theta_sketch)",
    spec: { columns: "id BIGINT, a BYTES", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "aggregation", "fields.a.aggregate-function": "theta_sketch" } },
    expect: { natslakeRefuses: "natslake does not run the sketch functions yet" },
  },
  {
    what: "changelog-producer = lookup",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "changelog-producer": "lookup" } },
    expect: "both-accept",
  },
  {
    what: "changelog-producer = full-compaction",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "changelog-producer": "full-compaction" } },
    expect: { natslakeRefuses: "its changelog comes only from full compactions, which natslake's writers do not schedule; lookup's comes with every compaction of level 0" },
  },
  {
    what: "a primary key of partition fields only",
    spec: { columns: "dt STRING, v STRING", partitionKeys: ["dt"], primaryKeys: ["dt"], options: { bucket: "2" } },
    expect: "both-refuse",
    javaSays: /primary key/i,
  },
  {
    what: "a primary key column that does not exist",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["nope"], options: { bucket: "2" } },
    expect: "both-refuse",
    javaSays: /nope/,
  },
  {
    what: "an ARRAY primary key",
    spec: { columns: "id ARRAY<INT>, v STRING", primaryKeys: ["id"], options: { bucket: "2" } },
    expect: "both-refuse",
    javaSays: /primary key|unsupported/i,
  },
  {
    what: "duplicate primary key columns",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id", "id"], options: { bucket: "2" } },
    expect: "both-refuse",
    javaSays: /must not contain duplicate columns/,
  },
  {
    what: "bucket = 0",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "0" } },
    expect: "both-refuse",
    javaSays: /The number of buckets needs to be greater than 0/,
  },
  {
    what: "a sequence field named twice",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "sequence.field": "v,v" } },
    expect: "both-refuse",
    javaSays: /Sequence field 'v' is defined repeatedly/,
  },
  {
    what: "a changelog producer on a table without a primary key",
    spec: { columns: "id BIGINT, v STRING", options: { bucket: "-1", "changelog-producer": "input" } },
    expect: "both-refuse",
    javaSays: /Can not set changelog-producer on table without primary keys/,
  },
  {
    what: "an ARRAY sequence field",
    spec: { columns: "id BIGINT, v STRING, s ARRAY<INT>", primaryKeys: ["id"], options: { bucket: "2", "sequence.field": "s" } },
    expect: { natslakeRefuses: "natslake orders a key's versions by the sequence field and compares primitive values only" },
  },
  {
    what: "merge-engine = first-row",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "first-row", "ignore-delete": "true" } },
    expect: "both-accept",
  },
  {
    what: "first-row with a sequence field",
    spec: { columns: "id BIGINT, v STRING, ts BIGINT", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "first-row", "sequence.field": "ts" } },
    expect: "both-refuse",
    javaSays: /Do not support use sequence field on FIRST_ROW merge engine/,
  },
  {
    what: "first-row with changelog-producer = input",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "first-row", "changelog-producer": "input" } },
    expect: "both-refuse",
    javaSays: /Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine/,
  },
  {
    what: "deletion vectors",
    spec: { columns: "id BIGINT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "deletion-vectors.enabled": "true" } },
    expect: { natslakeRefuses: "natslake writes no deletion vectors (they need lookup compaction)" },
  },
  {
    what: "a column named _row_kind",
    spec: { columns: "id BIGINT, _row_kind STRING", primaryKeys: ["id"], options: { bucket: "2" } },
    expect: { natslakeRefuses: "natslake's primary-key rows carry their kind in the field _row_kind, so a column cannot have that name" },
  },
  {
    what: "a bucket key outside the primary key",
    spec: { columns: "id BIGINT, g INT, v STRING", primaryKeys: ["id"], options: { bucket: "2", "bucket-key": "g" } },
    expect: "both-refuse",
    javaSays: /bucket key|bucket-key/i,
  },
];

test("write: rowkind.field — natslake's writer and Java's take each row's kind from the column and keep its value; each reads what the other wrote as the other does", { timeout: 600_000 }, async () => {
  const t = await createPk("pk.rowkind", "id BIGINT NOT NULL, op STRING, v STRING", ["id"], { bucket: "2", "rowkind.field": "op" });
  await commitChanges(t, [1, 2, 3, 4].map((id) => ({ id, op: "+I", v: `v${id}` })));
  // The kinds only the column names: a delete of 2, an update of 3 (-U then +U), and 4 updated by a +U alone.
  await commitChanges(t, [
    { id: 2, op: "-D" },
    { id: 3, op: "-U", v: "v3" },
    { id: 3, op: "+U", v: "v3 updated" },
    { id: 4, op: "+U", v: "v4 updated" },
  ]);
  const ours = [
    { id: 1, op: "+I", v: "v1" },
    { id: 3, op: "+U", v: "v3 updated" },
    { id: 4, op: "+U", v: "v4 updated" },
  ];
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, "pk.rowkind"))), sortRows(ours.map((r) => expectedJson(t, r))));
  const [javaRead] = await javaPkRead(wh.path, t, [{}]);
  assert.deepEqual(sortRows(javaRead!.rows ?? []), sortRows(ours.map((r) => expectedJson(t, r))), "Java reads natslake's kinds as natslake does");
  // Java's writer: the row's own kind says +I, the column -D — the column decides (RowKindGenerator).
  const res = await javaPkWrite(wh.path, t, [[{ id: 1, op: "-D", v: null }, { id: 5, op: "+I", v: "java" }]]);
  assert.equal(res.error, undefined, res.error);
  const expected = sortRows([...ours.slice(1), { id: 5, op: "+I", v: "java" }].map((r) => expectedJson(t, r)));
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, "pk.rowkind"))), expected, "natslake reads Java's delete by the column");
  // natslake refuses a row whose column names no kind, and one whose _row_kind disagrees with it; nothing is written.
  const w = await BatchWriter.open(await reopen(wh.path, "pk.rowkind"));
  await assert.rejects(w.write([{ id: 6, v: "no kind" }]), /Row kind cannot be null: the rowkind.field column 'op' is missing/);
  await assert.rejects(w.write([{ id: 6, op: "+I", _row_kind: "-D" }]), /the rowkind.field column 'op' says \+I, _row_kind says -D/);
  await w.abort();
  // A table whose rowkind.field names no string column is refused when created, in Java's words (Java refuses it
  // when its writer opens the table).
  await assert.rejects(createPk("pk.rowkind_int", "id BIGINT NOT NULL, op INT", ["id"], { bucket: "1", "rowkind.field": "op" }), /only support string type for rowkind, but op is INT/);
  await assert.rejects(new Catalog(wh.path).createTable(parseIdentifier("pk.rowkind_append"), { columns: parseColumnList("id BIGINT, op STRING"), options: { "rowkind.field": "op" } }), /rowkind.field is for primary-key tables/);
});

test("create: Java's catalog and natslake's agree on which primary-key schemas are valid; natslake's refusals of what Java accepts are deliberate", { timeout: 600_000 }, async () => {
  const javaWh = tempDir();
  const oursWh = tempDir();
  try {
    const java = await javaPkCreate(
      javaWh.path,
      CREATE_CASES.map((c, i) => ({ table: `c.t${i}`, ...c.spec })),
    );
    for (const [i, c] of CREATE_CASES.entries()) {
      let ours: Table | Error;
      try {
        ours = await new Catalog(oursWh.path).createTable(parseIdentifier(`c.t${i}`), {
          columns: parseColumnList(c.spec.columns),
          partitionKeys: c.spec.partitionKeys ?? [],
          primaryKeys: c.spec.primaryKeys ?? [],
          options: c.spec.options ?? {},
        });
      } catch (e) {
        ours = e as Error;
      }
      const j = java[i]!;
      const label = `${c.what}: natslake ${ours instanceof Error ? `refuses (${ours.message})` : "accepts"}, Java ${j.error !== undefined ? `refuses (${j.error.split("\n")[0]!})` : "accepts"}`;
      if (c.expect === "both-accept") {
        assert.ok(!(ours instanceof Error) && j.schema !== undefined, label);
        // The same schema: fields (ids, types, NOT NULL keys), keys and the options given.
        const mine = schemaToJson(ours.schema);
        assert.deepEqual(j.schema.fields, mine.fields, `${c.what}: fields`);
        assert.deepEqual([j.schema.partitionKeys, j.schema.primaryKeys, j.schema.highestFieldId], [mine.partitionKeys, mine.primaryKeys, mine.highestFieldId], `${c.what}: keys`);
        for (const [k, v] of Object.entries(c.spec.options ?? {})) assert.equal(j.schema.options[k], v);
      } else if (c.expect === "both-refuse") {
        assert.ok(ours instanceof Error && isLakeError(ours) && j.error !== undefined, label);
        assert.match(j.error, c.javaSays!, label);
      } else {
        assert.ok(j.schema !== undefined, `${label} — Java accepts it`);
        assert.ok(ours instanceof Error && isLakeError(ours), `${label} — natslake refuses it on purpose: ${c.expect.natslakeRefuses}`);
      }
    }
  } finally {
    javaWh.cleanup();
    oursWh.cleanup();
  }
});

test("bench-write: Java's write benchmark writes the upsert rows of bench/shape.ts (0.9 n keys), its figures complete", { timeout: 600_000 }, async () => {
  const benchWh = tempDir();
  try {
    const rows = 20_000;
    const figures = await javaPkBenchWrite(benchWh.path, { rows, warmupRows: 2_000, buckets: 4 });
    const keys = new Set(Array.from({ length: rows }, (_, i) => benchUpsertKey(i))).size;
    assert.equal(keys, 18_000);
    assert.equal(figures.keys, keys, "Java generated the same keys as bench/shape.ts");
    assert.equal(figures.rowCount, keys, "one row per key after the commit");
    assert.equal(figures.rows, rows);
    assert.equal(figures.buckets, 4);
    assert.equal(figures.files, 4, "one file per bucket");
    assert.equal(figures.commitKind, "APPEND");
    assert.ok(figures.wallMs > 0 && figures.threadCpuMs > 0 && figures.processCpuMs >= figures.threadCpuMs * 0.5, JSON.stringify(figures));
    assert.ok(Math.abs(figures.rowsPerSec - rows / (figures.wallMs / 1000)) < 1e-6 * figures.rowsPerSec);
  } finally {
    benchWh.cleanup();
  }
});

test("bench-read: Java reads the aggregation table natslake wrote from bench/shape.ts's sparse rows and Java's own, both checksums equal natslake's", { timeout: 600_000 }, async () => {
  const benchWh = tempDir();
  try {
    const rows = 5_000;
    const options = { "merge-engine": "aggregation", "fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max" };
    const java = await javaPkBenchWrite(benchWh.path, { rows, warmupRows: 0, buckets: 2, options, table: "bench.java", sparseUpdates: true });
    const catalog = new Catalog(benchWh.path);
    const ours = await catalog.createTable(parseIdentifier("bench.ours"), { columns: parseColumnList(BENCH_COLUMNS), primaryKeys: ["id"], options: { bucket: "2", ...options } });
    const input = Array.from({ length: rows }, (_, i) => benchSparseUpsertRow(i));
    assert.ok(input.some((r) => r["qty"] === null) && input.some((r) => r["qty"] !== null), "some updates leave qty null");
    const w = await BatchWriter.open(ours);
    await w.upsert(input.slice(0, rows / 2));
    await w.commit();
    const w2 = await BatchWriter.open(ours);
    await w2.upsert(input.slice(rows / 2));
    await w2.commit(); // two level-0 runs per bucket: the read merges them
    const [javaOfOurs, javaOfJava] = await javaPkBenchRead(benchWh.path, ["bench.ours", "bench.java"], { reads: 2, warmupReads: 1 });
    for (const [label, table, figures] of [
      ["natslake's table", ours, javaOfOurs!],
      ["Java's table", await catalog.getTable(parseIdentifier("bench.java")), javaOfJava!],
    ] as const) {
      const sum = new ReadChecksummer(table.schema.fields);
      for await (const b of readBatches(table)) sum.add(b);
      assert.equal(sum.rows, java.keys, `${label}: one row per key`);
      assert.equal(figures.rows, sum.rows, `${label}: Java's read counts natslake's rows`);
      assert.deepEqual(checksumDifferences(figures.checksum, sum.checksum), [], `${label}: Java's checksum is natslake's`);
      assert.ok(figures.checksum["qty"]!.nulls < sum.rows && figures.checksum["amount"]!.sum !== "0", JSON.stringify(figures.checksum));
      assert.equal(figures.reads, 2);
      assert.equal(figures.readMs.length, 2);
      assert.ok(figures.wallMs > 0 && figures.rowsPerSec > 0 && figures.processCpuMs > 0, JSON.stringify(figures));
    }
    // The two tables were written from the same rows by two writers: the same merged values.
    assert.deepEqual(checksumDifferences(javaOfOurs!.checksum, javaOfJava!.checksum), []);
  } finally {
    benchWh.cleanup();
  }
});
