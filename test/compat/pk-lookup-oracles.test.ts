/**
 * Point lookups (src/scan/lookup.ts) against independent readers of the same snapshot: every key's answer — present,
 * deleted, never written, in several partitions and buckets, its versions in several sorted runs and levels — equals
 * Java Paimon 1.4.2's batch read of that snapshot (PaimonPk through test/helpers/java-pk.ts) and pypaimon's read of
 * the latest, as it equals natslake's own full read (test/integration/pk-lookup.test.ts has the rest). Tables written
 * by natslake's library (plain, sequence.field, ignore-delete) and one written by Java's own writer, several commits
 * and its compactions. Tables a lookup cannot merge are refused with the error a read gives.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { isLakeError, type Table } from "../../src/index.ts";
import { KeyLookup } from "../../src/scan/lookup.ts";
import { javaPkCreate, javaPkRead, javaPkWrite } from "../helpers/java-pk.ts";
import { paimonRead } from "../helpers/python.ts";
import { createLookupTable, expectLookupsEqualRead, keyText, LOOKUP_COLUMNS, seeded, writeLookupHistory } from "../helpers/pk-lookup.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;

/** Asserts each reader's rows are the full read's (so every lookup answer, checked against that read, is theirs too). */
function sameRows(read: Map<string, R>, theirs: readonly R[], who: string): void {
  assert.deepEqual(sortRows([...theirs]), sortRows([...read.values()]), who);
  assert.equal(new Set(theirs.map(keyText)).size, theirs.length, `${who}: each key once`);
}

/** At each snapshot: lookups equal natslake's full read, and that read equals Java's read of the snapshot. */
async function lookupsEqualJava(t: Table, keys: readonly R[], snapshotIds: readonly number[]): Promise<void> {
  const java = await javaPkRead(wh.path, t, snapshotIds.map((snapshotId) => ({ snapshotId })));
  for (const [i, snapshotId] of snapshotIds.entries()) {
    const { read } = await expectLookupsEqualRead(t, keys, { snapshotId });
    assert.ok(java[i]!.rows !== undefined, java[i]!.error);
    sameRows(read, java[i]!.rows, `Java Paimon's read of ${t.name} snapshot ${snapshotId}`);
  }
}

test("lookups on natslake-written tables equal Java Paimon's and pypaimon's reads of the same snapshots (plain, sequence.field, ignore-delete)", { timeout: 900_000 }, async () => {
  for (const [name, options] of [
    ["lko.plain", {}],
    ["lko.sequenced", { "sequence.field": "ts" }],
    ["lko.ignoring", { "ignore-delete": "true" }],
  ] as const) {
    const t = await createLookupTable(wh.path, name, options);
    const history = await writeLookupHistory(t, { rounds: 10, seed: name.length * 7 });
    const s = history.snapshots;
    await lookupsEqualJava(await reopen(wh.path, name), history.keys, [s[2]!, s[Math.floor(s.length / 2)]!, s[s.length - 1]!]);
    const { read } = await expectLookupsEqualRead(t, history.keys);
    sameRows(read, await paimonRead(wh.path, name), `pypaimon's read of ${name}`);
  }
});

test("lookups on a table Java Paimon wrote (its writer, several commits, its compactions) equal Java's reads", { timeout: 900_000 }, async () => {
  const name = "lko.java";
  const [created] = await javaPkCreate(wh.path, [{ table: name, columns: LOOKUP_COLUMNS, partitionKeys: ["region"], primaryKeys: ["region", "id"], options: { bucket: "2", "num-sorted-run.compaction-trigger": "3" } }]);
  assert.equal(created!.error, undefined, created!.error);
  const t = await reopen(wh.path, name);
  const random = seeded(42);
  const keys = new Map<string, R>();
  const batch = (size: number): R[] =>
    Array.from({ length: size }, (_, i) => {
      const key = { region: random() < 0.5 ? "eu" : "us", id: BigInt(Math.floor(random() * 80)) };
      keys.set(keyText(key), key);
      return random() < 0.15 ? { _row_kind: "-D", ...key } : { ...key, v: `java ${i}`, n: i, ts: BigInt(i) };
    });
  const first = await javaPkWrite(wh.path, t, [batch(120), batch(30), batch(30), batch(30)], { compact: true });
  assert.equal(first.error, undefined, first.error);
  const more = await javaPkWrite(wh.path, t, [batch(20), batch(20)]);
  assert.equal(more.error, undefined, more.error);
  const snapshotIds = [...first.commits, ...more.commits].flatMap((c) => c.snapshots.map((s) => s.id));
  const asked = [...keys.values(), { region: "eu", id: 1000n }, { region: "apac", id: 1n }];
  const latest = await reopen(wh.path, name);
  await lookupsEqualJava(latest, asked, [snapshotIds[1]!, snapshotIds[snapshotIds.length - 1]!]);
});

test("lookups refuse a table natslake cannot merge with the error its read gives (an aggregate function natslake does not run; deletion vectors, which reads apply and lookups refuse: java-dv-read.test.ts)", { timeout: 600_000 }, async () => {
  const specs: Array<{ table: string; options: Record<string, string> }> = [
    { table: "lko.sketch", options: { bucket: "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "theta_sketch" } },
  ];
  const created = await javaPkCreate(wh.path, specs.map((s) => ({ ...s, columns: "id INT NOT NULL, v STRING", primaryKeys: ["id"] })));
  for (const [i, s] of specs.entries()) {
    assert.equal(created[i]!.error, undefined, created[i]!.error);
    const t = await reopen(wh.path, s.table);
    const readError = await readJson(t).then(
      () => assert.fail(`${s.table}: the read refuses it`),
      (e: unknown) => e,
    );
    await assert.rejects(KeyLookup.open(t), (e: unknown) => {
      assert.ok(isLakeError(e) && isLakeError(readError), String(e));
      assert.equal(e.message, readError.message);
      assert.equal(e.kind, readError.kind);
      return true;
    });
  }
});
