/**
 * A table's ingest stream deleted and re-created (as after `natslake up` on an existing warehouse with a fresh
 * JetStream store): its sequence numbers start again at 1, below the offsets the snapshots recorded. Before stream
 * identities, writers resumed after the old offsets and silently skipped every new message numbered at or below
 * them, the committer purged them, and read-your-writes answered "visible" because the old offsets covered the new
 * sequences. Now: nothing is read, skipped or purged from the new stream, read-your-writes does not answer falsely,
 * and after `natslake table reset-offsets` every row published to the new stream lands exactly once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createProducer } from "../../cluster/producer.ts";
import { ensureTableInfra } from "../../cluster/nats/table-infra.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import { readRows } from "../../src/scan/read.ts";
import type { Table } from "../../src/table/table.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

async function ids(t: Table): Promise<number[]> {
  const out: number[] = [];
  for await (const row of readRows(t)) out.push(Number(row["id"]));
  return out.sort((a, b) => a - b);
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

test("stream reset - a re-created ingest stream is refused loudly, never skipped; reset-offsets then lands every new row once", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1, env: { NATSLAKE_LOG_LEVEL: "debug" } });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.reset";
      const id = parseIdentifier(name);
      const subjects = new Subjects();
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, n INT"), options: { bucket: "2", "bucket-key": "id" } });
      // Small batches: many messages, so the old stream's offsets sit far above what the new stream numbers first.
      await (await producerWhenRegistered(c.nc, name)).close();
      const before = await createProducer({ nc: c.nc, table: name, maxBatchRows: 5 });
      await Promise.all(range(0, 400).map((i) => before.write({ id: i, n: i })));
      await before.flush();
      await before.waitVisible(before.token(), 30_000);
      await before.close();
      const t0 = await catalog.getTable(id);
      const st0 = natslakeState((await t0.snapshots.latest())!)!;
      assert.match(st0.stream ?? "", /^LAKE_IN_it_reset#/, "the snapshot names the stream its offsets belong to");
      assert.ok(Math.max(...[...st0.buckets.values()].map((b) => Number(b.offset))) > 20, "old offsets well above the new stream's first sequences");

      // The stream is deleted and re-created (a new JetStream store does the same).
      const jsm = await jetstreamManager(c.nc);
      await jsm.streams.delete(subjects.ingestStream(id));
      await ensureTableInfra({ nc: c.nc, subjects, table: t0 });
      const after = await createProducer({ nc: c.nc, table: name, maxBatchRows: 5 });
      await Promise.all(range(1000, 60).map((i) => after.write({ id: i, n: i })));
      await after.flush();
      // Raw rows through the router too: its progress counted in the old stream.
      const js = jetstream(c.nc);
      for (let m = 0; m < 4; m++) await js.publish(subjects.ingestRaw(id), JSON.stringify(range(2000 + m * 5, 5).map((i) => ({ id: i, n: i }))), { msgID: `reset-raw-${m}` });

      // Read-your-writes must not answer "visible": the snapshots' offsets belong to the old stream.
      await assert.rejects(after.waitVisible(after.token(), 4000), /reset-offsets/);
      await waitFor("the writers and the router refusing the new stream", () => {
        const log = c.logs("n1");
        return log.includes("not reading the bucket: the table's offsets belong to another stream") && log.includes("not routing: the router's progress belongs to another stream") ? true : undefined;
      }, 30_000, 200);
      const t1 = await catalog.getTable(id);
      assert.deepEqual(await ids(t1), range(0, 400), "nothing from the new stream committed before the reset");
      // Nothing was purged from the new stream either (the committer's purges are guarded by the stream identity).
      const info = await jsm.streams.info(subjects.ingestStream(id));
      assert.ok(info.state.messages >= 60 / 5 + 4, `the new stream still holds its messages (${info.state.messages})`);

      // The explicit recovery.
      const reset = spawnSync(process.execPath, [BIN, "table", "reset-offsets", name, "--nats", c.nats.url], { encoding: "utf8", timeout: 60_000 });
      assert.equal(reset.status, 0, reset.stderr);
      assert.match(reset.stdout, /reset it\.reset onto stream LAKE_IN_it_reset#.* resumes after sequence 0 .*offset epoch 1; router progress moved too/);
      const expected = [...range(0, 400), ...range(1000, 60), ...range(2000, 20)];
      await waitFor("every row of the new stream committed", async () => ((await (await catalog.getTable(id)).snapshots.latest())!.totalRecordCount >= expected.length ? true : undefined), 30_000, 200);
      await after.waitVisible(after.token(), 30_000);
      await after.close();
      const t2 = await catalog.getTable(id);
      assert.deepEqual(await ids(t2), expected, "every row exactly once");
      const st2 = natslakeState((await t2.snapshots.latest())!)!;
      assert.equal(st2.offsetEpoch, 1, "the reset is recorded");
      assert.notEqual(st2.stream, st0.stream);

      // A second reset finds nothing wrong and refuses: it would read committed rows again.
      const again = spawnSync(process.execPath, [BIN, "table", "reset-offsets", name, "--nats", c.nats.url], { encoding: "utf8", timeout: 60_000 });
      assert.notEqual(again.status, 0);
      assert.match(again.stderr, /already belong to the live stream \S+; nothing to reset/);
    }, 120);
  } finally {
    await c.stop();
  }
});
