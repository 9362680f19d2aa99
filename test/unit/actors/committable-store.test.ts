/**
 * Committables too large for one NATS message travel by reference (issue 9): the writer writes the body under the
 * table's directory and appends a small CommittableRef; the committer loads it, applies it as one committable, and
 * removes the body once decided and purged. A body that is gone is never applied empty.
 *
 * Real table files in a temporary warehouse; the NATS/Redis ports are in-process fakes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { COMMITTABLES_DIR, CommittableStore, toCommitEntry } from "../../../actors/committable-store.ts";
import { decodeCommitEntry, encodeMsg } from "../../../actors/wire/codec.ts";
import { fitDeadLetter, payloadLimit } from "../../../actors/wire/limits.ts";
import type { Committable, DeadLetter } from "../../../actors/wire/messages.ts";
import { EMPTY_STATS, FileSource, type DataFileMeta } from "../../../src/format/manifest.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";
import { startCommitter, until } from "../../helpers/committer-harness.ts";

const meta = (i: number, statsBytes: number): DataFileMeta => ({
  fileName: `data-${i}.parquet`,
  fileSize: 100,
  rowCount: 1,
  minKey: EMPTY_STATS.minValues,
  maxKey: EMPTY_STATS.maxValues,
  keyStats: EMPTY_STATS,
  valueStats: { minValues: new Uint8Array(statsBytes).fill(1), maxValues: new Uint8Array(statsBytes).fill(2), nullCounts: [0n] },
  minSequenceNumber: BigInt(i),
  maxSequenceNumber: BigInt(i),
  schemaId: 0,
  level: 0,
  extraFiles: [],
  creationTimeMillis: 1,
  deleteRowCount: 0,
  embeddedIndex: null,
  fileSource: FileSource.APPEND,
  valueStatsCols: null,
  externalPath: null,
  firstRowId: null,
  writeCols: null,
});

const committable = (prevOffset: number, lastOffset: number, files: DataFileMeta[] = []): Committable => ({
  type: "committable",
  v: 1,
  table: "t.refs",
  stream: "S#1",
  bucket: 0,
  ownerEpoch: 1,
  writerId: "w1",
  prevOffset,
  lastOffset,
  rowCount: files.length,
  files: files.map((m) => ({ partition: new Uint8Array([0, 0, 0, 0]), totalBuckets: 1, meta: m })),
  flushId: lastOffset,
  firstArrivalMillis: 0,
});

test("committable by reference - small ones travel as they are; large ones as a reference to a durable body", async () => {
  const dir = tempDir();
  try {
    const table = await createTable(dir.path, "t.refs", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    const store = new CommittableStore(table);
    const limit = payloadLimit(1024 * 1024);
    const small = committable(0, 10, [meta(1, 20)]);
    assert.equal(await toCommitEntry(small, limit, store), small);
    // 2 000 files with 600 bytes of statistics each: ~2.5 MB encoded.
    const large = { ...committable(10, 20, Array.from({ length: 2000 }, (_, i) => meta(i, 300))), beatMillis: 1_000_250 };
    assert.ok(encodeMsg(large).length > 1024 * 1024);
    const entry = await toCommitEntry(large, limit, store);
    assert.equal(entry.type, "committable-ref");
    const wire = encodeMsg(entry as never);
    assert.ok(wire.length < 1024, `the reference is small (${wire.length} bytes)`);
    const ref = decodeCommitEntry(wire);
    assert.ok(ref.type === "committable-ref");
    assert.ok(ref.path.startsWith(`${COMMITTABLES_DIR}/`));
    assert.deepEqual({ ...ref, path: "", size: 0 }, { type: "committable-ref", v: 1, table: "t.refs", stream: "S#1", bucket: 0, ownerEpoch: 1, writerId: "w1", prevOffset: 10, lastOffset: 20, flushId: 20, beatMillis: 1_000_250, path: "", size: 0 }, "the reference carries the flush's beat: the leader gathers a beat before loading bodies");
    assert.deepEqual(await store.load(ref), large);
    // A body that is not the committable the reference describes is refused, never applied.
    await assert.rejects(store.load({ ...ref, bucket: 1 }), /does not match its reference/);
    await assert.rejects(store.load({ ...ref, path: `${COMMITTABLES_DIR}/../snapshot/LATEST` }), /outside/);
    assert.equal(await store.remove(ref), true);
    assert.equal(await store.load(ref), null);
  } finally {
    dir.cleanup();
  }
});

test("dead letters - one whose original would not fit in a message carries the start of it and its size", () => {
  const l: DeadLetter = { type: "dead-letter", table: "t.refs", stage: "router", reason: "too large", streamSeq: 7, rowIndex: 0, original: { s: "x".repeat(2_000_000) }, at: 1 };
  const bytes = fitDeadLetter(l, payloadLimit(1024 * 1024));
  assert.ok(bytes.length < 16 * 1024);
  const back = JSON.parse(new TextDecoder().decode(bytes)) as DeadLetter;
  assert.equal(back.originalBytes, JSON.stringify(l.original).length);
  assert.equal(back.original, JSON.stringify(l.original).slice(0, 4096));
  assert.deepEqual({ ...back, original: null, originalBytes: 0 }, { ...l, original: null, originalBytes: 0 });
  const smallLetter = { ...l, original: { s: "x" } };
  assert.deepEqual(JSON.parse(new TextDecoder().decode(fitDeadLetter(smallLetter, 1024))), smallLetter);
});

test("committer - applies a committable sent by reference as one, removes its body once purged; a missing body is refused, never applied empty", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.refs", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    const store = new CommittableStore(table);
    // No snapshot announced before, no stored assignment: the leader takes epoch 1, its writers' owner epoch.
    const out = startCommitter(system, table, { lastNotified: 0, storedLeaderEpoch: 0 });
    const queue = out.queue;
    const ref = await store.put(committable(0, 10));
    queue.push({ seq: 1, committable: ref });
    await until("snapshot 1 announced", () => out.published.length >= 1);
    assert.deepEqual(out.published[0]!.offsets, { "0": 10 });
    await until("the body removed after the purge", async () => out.purgedThrough >= 1 && !(await table.io.exists(`${table.root}/${ref.path}`)));
    // The same reference again (a new leader's reader took it before the purge): its body is gone, it is a duplicate.
    queue.push({ seq: 2, committable: ref });
    // A reference whose body is gone and that was never committed: refused, the offsets do not move.
    const lost = await store.put(committable(10, 20));
    await store.remove(lost);
    queue.push({ seq: 3, committable: lost });
    // A body that is not what its reference says (here: another committable's) is refused too, not applied.
    const other = await store.put(committable(10, 30));
    const wrong = await store.put(committable(10, 20));
    await table.io.writeFile(`${table.root}/${wrong.path}`, await table.io.readFile(`${table.root}/${other.path}`));
    queue.push({ seq: 4, committable: wrong });
    await until("the lost and the wrong one refused", () => out.rejections.length >= 2);
    const refused = { type: "rejection", table: "t.refs", bucket: 0, ownerEpoch: 1, prevOffset: 10, committedOffset: 10, reason: "body-missing" };
    assert.deepEqual(out.rejections, [refused, refused]);
    await until("all purged", () => out.purgedThrough >= 4);
    assert.equal(out.published.length, 1, "nothing committed for them");
    assert.equal((await table.snapshots.latest())!.id, 1);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});
