/**
 * A primary-key table read as a stream (TableStream, what `tail` and reader nodes' consumers read) gives the changes
 * Java Paimon 1.4.2's streaming read gives, row kinds included: with `changelog-producer = input` every change as
 * written (the changelog files); with `none` each commit's level-0 files read without merging (per key the commit's
 * last change, deletes included). A `-full` start's rows are the table's state, all "+I" in natslake (Java labels a
 * merged key "+U" when its last write was one: the documented difference). Incremental reads give the same changes.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseIdentifier, parseColumnList } from "../../src/index.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { TableStream } from "../../src/scan/table-stream.ts";
import { readRows } from "../../src/scan/read.ts";
import { toJsonValue, type Row } from "../../src/format/values.ts";
import { javaPkStream, type JavaChange } from "../helpers/java-pk.ts";
import { reopen, tempDir } from "../helpers/tables.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());

type Change = { snapshotId: number; kind: string; row: Record<string, unknown> };

const HISTORY: Array<Array<Record<string, unknown>>> = [
  [
    { id: 1, v: "a" },
    { id: 2, v: "b" },
    { id: 3, v: "c" },
  ],
  [{ _row_kind: "-U", id: 1, v: "a" }, { _row_kind: "+U", id: 1, v: "a2" }, { _row_kind: "-D", id: 2 }, { id: 4, v: "d" }],
  [
    { _row_kind: "+U", id: 3, v: "c2" },
    { _row_kind: "+U", id: 3, v: "c3" },
    { _row_kind: "-D", id: 4, v: "d" },
  ],
];

async function table(name: string, producer: string): Promise<Table> {
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2", "changelog-producer": producer } });
  for (const batch of HISTORY) {
    const w = await BatchWriter.open(t);
    await w.write(batch);
    await w.commit();
  }
  return reopen(wh.path, name);
}

/** natslake's stream from `mode` until the latest snapshot: every row with its kind and snapshot. */
async function natslakeStream(t: Table, mode: "snapshot-full" | "snapshot"): Promise<Change[]> {
  const stream = new TableStream(t, { mode: mode === "snapshot" ? { mode: "from-snapshot", snapshotId: 1 } : { mode: "from-snapshot-full", snapshotId: 1 }, pollMs: 50 });
  const latest = (await t.snapshots.latestId())!;
  const out: Change[] = [];
  for (;;) {
    const item = await stream.next();
    if (item === null) break;
    for await (const r of readRows(t, item.read)) out.push({ snapshotId: item.snapshotId, kind: String(r["_row_kind"]), row: json(t, r) });
    if (item.snapshotId >= latest) break;
  }
  stream.close();
  return out;
}

const json = (t: Table, r: Row): Record<string, unknown> => Object.fromEntries(t.schema.fields.map((f) => [f.name, toJsonValue(f.type, r[f.name] ?? null)]));
const key = (c: { snapshotId: number; kind: string; row: Record<string, unknown> }): string => `${c.snapshotId} ${String(c.row["id"]).padStart(3)} ${c.kind} ${JSON.stringify(c.row)}`;
/** Changes per snapshot, in key order then write order within a key (a bucket's order; buckets in any order). */
const ordered = (cs: ReadonlyArray<Change | JavaChange>): string[] => cs.map(key).sort((a, b) => (a.slice(0, 6) < b.slice(0, 6) ? -1 : a.slice(0, 6) > b.slice(0, 6) ? 1 : 0));

for (const producer of ["input", "none"]) {
  test(`PK stream (changelog-producer = ${producer}) - natslake's changes equal Java's streaming read, kinds included; the full start is the table's state`, { timeout: 240_000 }, async () => {
    const t = await table(`pk.stream_${producer}`, producer);
    const ours = await natslakeStream(t, "snapshot");
    const [java, javaFull] = await javaPkStream(wh.path, t, [{ options: { "scan.mode": "from-snapshot", "scan.snapshot-id": "1" } }, { options: { "scan.mode": "from-snapshot-full", "scan.snapshot-id": "1" } }]);
    assert.ok(java!.error === undefined, java!.error);
    assert.deepEqual(ordered(ours), ordered(java!.changes!), "the same changes, per snapshot and key, with their kinds");
    if (producer === "input") {
      // Every change as it was written, unfolded: snapshot 3 holds both +U of id 3.
      assert.equal(ours.filter((c) => c.snapshotId === 3 && c.row["id"] === 3).length, 2);
      assert.equal(ours.filter((c) => c.kind === "-U").length, 1);
    } else {
      // Each commit's last change per key: snapshot 3 holds id 3's last +U only; the -D of id 4 stays a -D.
      assert.deepEqual(ours.filter((c) => c.snapshotId === 3).map((c) => `${String(c.row["id"])}${c.kind}`).sort(), ["3+U", "4-D"]);
    }
    // The -full start: snapshot 1's rows as the table's state (+I), then the same changes from snapshot 2 on.
    const full = await natslakeStream(t, "snapshot-full");
    assert.ok(javaFull!.error === undefined, javaFull!.error);
    const strip = (cs: ReadonlyArray<Change | JavaChange>): string[] => cs.filter((c) => c.snapshotId === 1).map((c) => JSON.stringify(c.row)).sort();
    assert.deepEqual(strip(full), strip(javaFull!.changes!), "the full start holds the same rows");
    assert.ok(full.filter((c) => c.snapshotId === 1).every((c) => c.kind === "+I"));
    assert.deepEqual(ordered(full.filter((c) => c.snapshotId > 1)), ordered(javaFull!.changes!.filter((c) => c.snapshotId > 1)));
    // An incremental read of the same range gives the same changes.
    const incremental: Change[] = [];
    for (let id = 1; id <= 3; id++) for await (const r of readRows(t, { incremental: { from: id - 1, to: id } })) incremental.push({ snapshotId: id, kind: String(r["_row_kind"]), row: json(t, r) });
    assert.deepEqual(ordered(incremental), ordered(ours));
  });
}
