/**
 * The read-ahead of a merged read (src/scan/merge-files-ahead.ts), with reads whose completion the test controls:
 * which files start when, that each file is read once, and that the read-ahead stops when asked.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as arrow from "apache-arrow";
import type { DataFileMeta } from "../../../src/format/manifest.ts";
import { MergeFilesAhead, READ_AHEAD_BYTES } from "../../../src/scan/merge-files-ahead.ts";
import type { DataSplit } from "../../../src/scan/plan.ts";
import { lsmFile } from "../../helpers/lsm-files.ts";

const MB = 1024 * 1024;

/** Buckets of one large file (`largeMb`) and three small ones (`smallMb` each). */
function buckets(n: number, largeMb: number, smallMb: number): DataSplit[] {
  return Array.from({ length: n }, (_, b) => ({
    partition: new Uint8Array(),
    partitionValues: [],
    bucket: b,
    totalBuckets: n,
    files: [0, 1, 2].map((i) => lsmFile({ name: `b${b}-small${i}`, size: smallMb * MB })).concat([lsmFile({ name: `b${b}-large`, size: largeMb * MB })]),
  })) as unknown as DataSplit[];
}

/** Reads that finish when the test says so; records the order they started in. */
class Reads {
  readonly started: string[] = [];
  private readonly finish = new Map<string, () => void>();
  readonly read = (_split: DataSplit, file: DataFileMeta): Promise<arrow.RecordBatch[]> => {
    this.started.push(file.fileName);
    return new Promise((resolve) => this.finish.set(file.fileName, () => resolve([])));
  };
  async done(name: string): Promise<void> {
    const f = this.finish.get(name);
    assert.ok(f !== undefined, `${name} was started`);
    f();
    // Let the completion handlers run.
    await new Promise((r) => setImmediate(r));
  }
}

test("merge read-ahead - the largest file of a bucket starts first; small ones follow within the byte bound", () => {
  const reads = new Reads();
  const splits = buckets(3, 4, 0.25);
  new MergeFilesAhead(splits, 2, reads.read).begin();
  // b0-large (nothing in flight), its three small files (within READ_AHEAD_BYTES), then b1-large would exceed
  // READ_AHEAD_BYTES while four reads are decoding (≥ 2 workers): it waits.
  assert.deepEqual(reads.started, ["b0-large", "b0-small0", "b0-small1", "b0-small2"]);
  assert.ok(4.75 * MB <= READ_AHEAD_BYTES && 8.75 * MB > READ_AHEAD_BYTES);
});

test("merge read-ahead - a large file of a later bucket starts as soon as a worker is free, within twice the byte bound", async () => {
  const reads = new Reads();
  const splits = buckets(4, 4, 0.25);
  new MergeFilesAhead(splits, 2, reads.read).begin();
  for (const small of ["b0-small0", "b0-small1", "b0-small2"]) await reads.done(small);
  // One read decoding (b0-large): the next bucket's large file goes to the free worker although READ_AHEAD_BYTES is
  // passed; then its small files, each for a worker freed.
  assert.deepEqual(reads.started.slice(4), ["b1-large"]);
  await reads.done("b0-large");
  assert.deepEqual(reads.started.slice(5), ["b1-small0"]);
  await reads.done("b1-small0");
  await reads.done("b1-small1");
  // A worker freed at a time: bucket 1's small files one by one (9.5 MB held, not taken).
  assert.deepEqual(reads.started.slice(5), ["b1-small0", "b1-small1", "b1-small2"]);
  await reads.done("b1-small2");
  // 9.5 MB held, one read decoding: bucket 2's large file makes 13.5 MB ≤ 2 × READ_AHEAD_BYTES.
  assert.equal(reads.started.at(-1), "b2-large");
  // Every read finished and none taken: the rest of bucket 2 fits within 16 MB, bucket 3's large file does not.
  for (let i = 0; i < reads.started.length; i++) await reads.done(reads.started[i]!);
  assert.deepEqual(reads.started.slice(9), ["b2-small0", "b2-small1", "b2-small2"]);
  assert.ok(!reads.started.includes("b3-large"), "bucket 3 waits until earlier buckets are taken");
});

test("merge read-ahead - each file is read once: a file taken before it started is read then and skipped later", async () => {
  const reads = new Reads();
  const splits = buckets(2, 4, 0.25);
  const ahead = new MergeFilesAhead(splits, 1, reads.read).begin();
  const [b0, b1] = splits as [DataSplit, DataSplit];
  // Bucket 1's large file, asked for before the read-ahead reached it: read now.
  const late = b1.files.find((f) => f.fileName === "b1-large")!;
  assert.ok(!reads.started.includes("b1-large"));
  void ahead.take(b1, late);
  // Bucket 0's files, started ahead: taken without a new read; then every read finishes and bucket 1's are taken.
  for (const f of b0.files) void ahead.take(b0, f);
  for (let i = 0; i < reads.started.length; i++) await reads.done(reads.started[i]!);
  for (const f of b1.files) if (f !== late) void ahead.take(b1, f);
  const counts = new Map<string, number>();
  for (const name of reads.started) counts.set(name, (counts.get(name) ?? 0) + 1);
  assert.deepEqual([...counts.values()].filter((n) => n !== 1), [], `reads: ${reads.started.join(", ")}`);
  assert.equal(counts.size, 8);
});

test("merge read-ahead - none without workers (no pool, or a read with a limit); none after close", async () => {
  const none = new Reads();
  const splits = buckets(2, 1, 0.1);
  const ahead = new MergeFilesAhead(splits, 0, none.read).begin();
  assert.deepEqual(none.started, []);
  void ahead.take(splits[0]!, splits[0]!.files[0]!);
  assert.deepEqual(none.started, [splits[0]!.files[0]!.fileName], "a read asked for is made");
  const reads = new Reads();
  const closing = new MergeFilesAhead(buckets(4, 4, 0.25), 1, reads.read).begin();
  const before = reads.started.length;
  closing.close();
  for (const name of [...reads.started]) await reads.done(name);
  assert.equal(reads.started.length, before, "finished reads start nothing after close");
});
