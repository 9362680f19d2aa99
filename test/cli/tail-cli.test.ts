/**
 * `natslake tail`: rows as they land, by scan mode; a consumer id resumes where it stopped; a tail process SIGKILLed
 * and restarted again and again while a cluster commits (woken by its notifications): every row printed at least
 * once, exactly once after de-duplication by snapshot id, and no acknowledged snapshot ever again; bad input refused;
 * `--nats` without a warehouse: the rows through a reader node.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, tempDir, writeRows } from "../helpers/tables.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { getConsumer } from "../../src/table/consumers.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { CommitKind } from "../../src/format/snapshot.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const wh = tempDir();
after(() => wh.cleanup());

const tail = (args: string[], warehouse = wh.path) => spawnSync(process.execPath, [BIN, "tail", ...args, "--warehouse", warehouse, "--poll", "50ms"], { encoding: "utf8", timeout: 60_000 });
const lines = (stdout: string): Array<Record<string, unknown>> => stdout.split("\n").filter((l) => l.startsWith("{") && l.endsWith("}")).map((l) => JSON.parse(l) as Record<string, unknown>);

test("tail - --from full prints the table, then each new snapshot's rows; --consumer-id resumes after the last snapshot printed", { timeout: 120_000 }, async () => {
  const name = "tail.basic";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
  await writeRows(t, [{ id: 1, s: "a" }, { id: 2, s: "b" }]);
  await writeRows(t, [{ id: 3, s: "c" }]);
  // The tail starts on 2 snapshots; a third lands while it waits (once it printed the table: a CLI starting on a
  // loaded machine can take seconds, and a third snapshot landing before it starts would be part of its full scan).
  const child = spawn(process.execPath, [BIN, "tail", name, "--from", "full", "--max-snapshots", "2", "--consumer-id", "cli", "--warehouse", wh.path, "--poll", "50ms", "--with-snapshot-id"], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((r) => child.once("exit", r));
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  await waitFor("the tail printed the table", () => (lines(out).length >= 3 ? true : undefined), 60_000, 50);
  await writeRows(await reopen(wh.path, name), [{ id: 4, s: "d" }]);
  const code = await exited;
  assert.equal(code, 0);
  assert.deepEqual(lines(out), [
    { id: 1, s: "a", _snapshot: 2 },
    { id: 2, s: "b", _snapshot: 2 },
    { id: 3, s: "c", _snapshot: 2 },
    { id: 4, s: "d", _snapshot: 3 },
  ]);
  assert.equal((await getConsumer(await reopen(wh.path, name), "cli"))?.nextSnapshot, 4, "progress recorded after each snapshot printed");
  await writeRows(await reopen(wh.path, name), [{ id: 5, s: "e" }]);
  const again = tail([name, "--consumer-id", "cli", "--max-snapshots", "1", "--format", "table"]);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /-- snapshot 4 \(rows it added, 1 rows\)/);
  assert.match(again.stdout, /\b5\b.*\be\b/);
  assert.doesNotMatch(again.stdout, /\bd\b/, "snapshot 3 was acknowledged: never printed again");
});

test("tail - bad input: an unknown column, an expired start (naming the earliest snapshot), an unknown mode, a bad format", { timeout: 60_000 }, async () => {
  const name = "tail.bad";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms" } });
  for (let i = 0; i < 3; i++) await writeRows(t, [{ id: i }]);
  await expireSnapshots(await reopen(wh.path, name));
  const col = tail([name, "--columns", "id,nope", "--max-snapshots", "1"]);
  assert.equal(col.status, 2);
  assert.match(col.stderr, /nope/);
  const expired = tail([name, "--from", "snapshot:1", "--max-snapshots", "1"]);
  assert.equal(expired.status, 2, expired.stderr);
  assert.match(expired.stderr, /snapshot 1 of tail\.bad was expired: the earliest snapshot retained is 3/);
  const mode = tail([name, "--from", "yesterday"]);
  assert.equal(mode.status, 2);
  assert.match(mode.stderr, /unknown scan mode 'yesterday'/);
  const fmt = tail([name, "--format", "xml"]);
  assert.equal(fmt.status, 2);
  assert.match(fmt.stderr, /--format must be jsonl or table/);
});

test("tail - a consumer SIGKILLed and restarted 6 times while the cluster commits: every row at least once, exactly once by snapshot id, acknowledged snapshots never again", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "tail.kill";
      const id = parseIdentifier(name);
      await new Catalog(c.warehouse).createTable(id, { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      let next = 0;
      let writing = true;
      const writer = (async () => {
        while (writing) {
          for (let k = 0; k < 25; k++, next++) void producer.write({ id: next });
          await producer.flush();
          await new Promise((r) => setTimeout(r, 60));
        }
      })();
      const printed: Array<{ id: number; snapshot: number }> = [];
      const args = ["tail", name, "--from", "snapshot:1", "--consumer-id", "killme", "--nats", c.nats.url, "--poll", "5s", "--with-snapshot-id", "--warehouse", c.warehouse];
      for (let run = 0; run < 7; run++) {
        const last = run === 6;
        if (last) {
          writing = false;
          await writer;
          await producer.waitVisible(producer.token(), 60_000);
        }
        const startAt = (await getConsumer(await new Catalog(c.warehouse).getTable(id), "killme"))?.nextSnapshot ?? 1;
        const child = spawn(process.execPath, last ? [BIN, ...args, "--for", "4s"] : [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        child.stdout.on("data", (b: Buffer) => (out += b.toString()));
        if (!last) setTimeout(() => child.kill("SIGKILL"), 1200 + run * 300);
        await new Promise((r) => child.once("exit", r));
        const got = lines(out).map((r) => ({ id: Number(r["id"]), snapshot: Number(r["_snapshot"]) }));
        for (const g of got) assert.ok(g.snapshot >= startAt, `run ${run} printed snapshot ${g.snapshot}, acknowledged before it started (next ${startAt})`);
        printed.push(...got);
      }
      await producer.close();
      // De-duplicated by snapshot id: a snapshot printed twice (in flight at a kill) counts once.
      const bySnapshot = new Map<number, number[]>();
      for (const p of printed) {
        const ids = bySnapshot.get(p.snapshot) ?? [];
        ids.push(p.id);
        bySnapshot.set(p.snapshot, ids);
      }
      const once: number[] = [];
      const seenIn = new Map<number, number>();
      for (const [snap, ids] of bySnapshot) {
        const distinct = [...new Set(ids)];
        for (const v of distinct) {
          assert.ok(!seenIn.has(v), `row ${v} in snapshots ${seenIn.get(v)} and ${snap}`);
          seenIn.set(v, snap);
          once.push(v);
        }
      }
      assert.equal(once.length, next, `every acknowledged row printed (${once.length} of ${next})`);
      assert.deepEqual([...once].sort((a, b) => a - b), Array.from({ length: next }, (_, i) => i));
      assert.ok(printed.length >= next, "at least once");
    }, 60);
  } finally {
    await c.stop();
  }
});

test("tail - --nats without --warehouse reads through a reader node: the table, then each new snapshot's rows (natslake's reads of them); --consumer-id resumes; bad input refused", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  // No warehouse for the tail: neither --warehouse nor NATSLAKE_WAREHOUSE.
  const env = { ...process.env };
  delete env["NATSLAKE_WAREHOUSE"];
  const overNats = (args: string[]) => spawnSync(process.execPath, [BIN, "tail", ...args, "--nats", c.nats.url], { encoding: "utf8", timeout: 60_000, env });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "tail.nats";
      const id = parseIdentifier(name);
      await new Catalog(c.warehouse).createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      let next = 0;
      const round = async (): Promise<void> => {
        for (let k = 0; k < 20; k++, next++) void producer.write({ id: next, s: `s${next}` });
        await producer.flush();
        await producer.waitVisible(producer.token(), 60_000);
      };
      await round();
      await round();
      const child = spawn(process.execPath, [BIN, "tail", name, "--nats", c.nats.url, "--from", "full", "--consumer-id", "nt", "--max-snapshots", "2", "--with-snapshot-id"], { stdio: ["ignore", "pipe", "pipe"], env });
      // Listened for at once: the tail may print its second snapshot and exit while the third round is still being
      // waited for below.
      const exited = new Promise<number | null>((r) => child.once("exit", r));
      let out = "";
      let err = "";
      child.stdout.on("data", (b: Buffer) => (out += b.toString()));
      child.stderr.on("data", (b: Buffer) => (err += b.toString()));
      await waitFor("the tail printed the table", () => (lines(out).length >= 40 ? true : undefined), 60_000, 100);
      await round();
      const code = await exited;
      assert.equal(code, 0, err);
      const t = await new Catalog(c.warehouse).getTable(id);
      const printed = lines(out);
      const full = printed.filter((r) => r["_snapshot"] === printed[0]!["_snapshot"]);
      const fullAt = Number(full[0]!["_snapshot"]);
      assert.deepEqual(full.map(({ _snapshot, ...r }) => r), await readJson(t, { snapshotId: fullAt }), "first the table as of a snapshot, in natslake's read order");
      const delta = printed.slice(full.length);
      const deltaAt = Number(delta[0]!["_snapshot"]);
      assert.ok(deltaAt > fullAt);
      assert.deepEqual(delta.map(({ _snapshot, ...r }) => r), await readJson(t, { incremental: { from: deltaAt - 1, to: deltaAt } }), "then the rows the next snapshot added");
      assert.deepEqual(full.map((r) => r["id"]).sort((a, b) => Number(a) - Number(b)), Array.from({ length: 40 }, (_, i) => i), "the first two rounds");
      assert.equal((await getConsumer(t, "nt"))?.nextSnapshot, deltaAt + 1, "progress recorded by the reader after each snapshot printed");
      await round();
      const again = overNats([name, "--consumer-id", "nt", "--max-snapshots", "1", "--format", "table", "--columns", "s"]);
      assert.equal(again.status, 0, again.stderr);
      // It resumes at the first APPEND snapshot after the one acknowledged (COMPACT snapshots are passed over).
      let resumeAt = deltaAt + 1;
      while ((await t.snapshots.snapshot(resumeAt)).commitKind !== CommitKind.APPEND) resumeAt++;
      const want = await readJson(t, { incremental: { from: resumeAt - 1, to: resumeAt }, projection: ["s"] });
      assert.match(again.stdout, new RegExp(`-- snapshot ${resumeAt} \\(rows it added, ${want.length} rows\\)`));
      for (const r of want) assert.match(again.stdout, new RegExp(`\\b${String(r["s"])}\\b`));
      const col = overNats([name, "--columns", "id,nope", "--max-snapshots", "1"]);
      assert.equal(col.status, 2);
      assert.match(col.stderr, /nope/);
      const missing = overNats(["tail.none", "--max-snapshots", "1"]);
      assert.equal(missing.status, 2, missing.stderr);
      assert.match(missing.stderr, /tail\.none/);
      await producer.close();
    }, 60);
  } finally {
    await c.stop();
  }
});
