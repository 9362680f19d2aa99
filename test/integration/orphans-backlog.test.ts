/**
 * Orphan cleanup never deletes the files of committables still waiting in the commit stream. After a gap with no
 * leader longer than `natslake.orphan-older-than`, the stream holds committables whose data files are older than the
 * bound; a new leader's orphan cleanup (due at once in a new leadership) must wait until its committer decided that
 * backlog, or it deletes files the next snapshot references. The committer's first round is slowed by a failpoint
 * (`committer.first-round:sleep`, as a large backlog would), so the cleanup would run inside it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, reopen } from "../helpers/tables.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { dataFilePath } from "../../src/table/file-refs.ts";

const NAME = "ob.events";

test("orphan cleanup waits for the new leader to decide the commit-stream backlog: files older than the bound that a pending committable names stay", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0 });
  try {
    await withNodeLogsOnFailure(c, async () => {
      await createTable(c.warehouse, NAME, "id BIGINT NOT NULL", {
        options: { bucket: "1", "bucket-key": "id", "write-only": "true", "natslake.orphan-older-than": "2 s", "natslake.orphan-check-interval": "1 s" },
      });
      c.startNode("w1", ["--roles", "writer"]);
      c.startNode("c1", ["--roles", "committer,reader"]);
      const producer = await producerWhenRegistered(c.nc, NAME);
      for (let i = 0; i < 100; i++) void producer.write({ id: i });
      await producer.flush();
      await producer.waitVisible(producer.token(), 60_000);

      // No leader: the writer's next flushes wait in the commit stream until their files are older than the bound.
      c.signal("c1", "SIGKILL");
      await c.waitExit("c1");
      for (let i = 100; i < 200; i++) void producer.write({ id: i });
      await producer.flush();
      await new Promise((r) => setTimeout(r, 5000));
      // An aged orphan (a crashed write's file): the cleanup must still remove it once it runs.
      const t = await reopen(c.warehouse, NAME);
      const orphan = join(t.root, "bucket-0", "data-00000000-0000-0000-0000-00000000beef-0.parquet");
      writeFileSync(orphan, "nobody references this");
      const old = (Date.now() - 3_600_000) / 1000;
      utimesSync(orphan, old, old);

      // A new leader whose first round takes 4 s; its orphan cleanup is due at once.
      c.startNode("c2", ["--roles", "committer,reader"], { FAILPOINTS: "committer.first-round:sleep(4000)" });
      await producer.waitVisible(producer.token(), 90_000);
      await producer.close();
      await waitFor("the aged orphan removed (the cleanup ran)", () => (existsSync(orphan) ? undefined : true), 60_000, 200);

      const t2 = await reopen(c.warehouse, NAME);
      const latest = (await t2.snapshots.latest())!;
      for (const e of await new ManifestStore(t2).readLiveEntries(latest)) assert.ok(existsSync(dataFilePath(t2, e)), `${e.file.fileName} of snapshot ${latest.id} exists`);
      const ids = (await readAllRows(t2)).map((r) => Number(r["id"])).sort((a, b) => a - b);
      assert.deepEqual(ids, Array.from({ length: 200 }, (_, i) => i), "every row, once");
      assert.deepEqual((await paimonRead(c.warehouse, NAME)).map((r) => Number(r["id"])).sort((a, b) => a - b), ids, "pypaimon reads the same");
    });
  } finally {
    await c.stop();
  }
});
