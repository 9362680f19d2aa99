/**
 * The table core on an S3 warehouse (SeaweedFS, real): write and read; pypaimon reads what natslake wrote there and
 * natslake reads what pypaimon wrote; the commit protocol — committers racing in one process and in two processes,
 * a crash before the snapshot, an unknown outcome of the snapshot's conditional put — and the commit path's cost in
 * requests, with no LIST; names and escaped partition values keep every key under the warehouse's prefix.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { isLakeError } from "../../../src/errors.ts";
import { S3FileIO } from "../../../src/io/s3.ts";
import { countsSince, type S3RequestCounts } from "../../../src/io/s3-requests.ts";
import { FileStoreCommit } from "../../../src/commit/file-store-commit.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { paimonRead, paimonWrite } from "../../helpers/python.ts";
import { readJson, sortRows, writeRows } from "../../helpers/tables.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.ts";

let store: S3TestStore;
let proxy: TcpProxy;
before(async () => {
  store = await startS3Store();
  proxy = await startTcpProxy(store.server.port);
});
after(async () => {
  await proxy?.close();
  await store?.stop();
});

const CHILD = fileURLToPath(new URL("../../helpers/writer-child.ts", import.meta.url));

/** A warehouse on a fresh prefix: the URI natslake takes, the plain one pypaimon takes, its catalog. */
function warehouse(): { uri: string; plain: string; catalog: Catalog } {
  const prefix = `wh-${randomBytes(4).toString("hex")}`;
  return { uri: store.uri(prefix), plain: `s3://${store.bucket}/${prefix}`, catalog: new Catalog(store.uri(prefix)) };
}

const ioOf = (c: Catalog): S3FileIO => c.io as S3FileIO;

test("write and read on S3; pypaimon reads the table natslake wrote there", async () => {
  const wh = warehouse();
  const t = await wh.catalog.createTable(parseIdentifier("db.events"), {
    columns: parseColumnList("id BIGINT NOT NULL, dt STRING, v DOUBLE"),
    partitionKeys: ["dt"],
    options: { bucket: "2", "bucket-key": "id" },
  });
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, dt: i % 3 === 0 ? "2026-01-01" : "2026-01-02", v: i / 4 }));
  await writeRows(t, rows.slice(0, 100));
  await writeRows(t, rows.slice(100));
  assert.equal(await t.snapshots.latestId(), 2);
  const ours = sortRows(await readJson(t));
  assert.equal(ours.length, 300);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, "db.events")), ours);
  assert.deepEqual(await wh.catalog.listDatabases(), ["db"]);
  assert.deepEqual(await wh.catalog.listTables("db"), ["events"]);
});

test("natslake reads on S3 a table pypaimon wrote there", async () => {
  const wh = warehouse();
  const res = await paimonWrite({
    warehouse: wh.plain,
    table: "db.from_py",
    create: { columns: [["id", "BIGINT NOT NULL"], ["name", "STRING"]], partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } },
    batches: [
      [{ id: 1, name: "a" }, { id: 2, name: "b" }],
      [{ id: 3, name: "c" }],
    ],
    overwrite: null,
  });
  assert.deepEqual(res.snapshots, [1, 2]);
  const t = await wh.catalog.getTable(parseIdentifier("db.from_py"));
  assert.deepEqual(sortRows(await readJson(t)), [{ id: 1, name: "a" }, { id: 2, name: "b" }, { id: 3, name: "c" }]);
  // natslake commits on top of pypaimon's snapshots; pypaimon reads the result.
  await writeRows(t, [{ id: 4, name: "d" }]);
  assert.equal(await t.snapshots.latestId(), 3);
  assert.equal((await paimonRead(wh.plain, "db.from_py")).length, 4);
});

test("commit - 8 concurrent committers in one process: contiguous snapshots, every row once", async () => {
  const wh = warehouse();
  const t = await wh.catalog.createTable(parseIdentifier("c.race"), { columns: parseColumnList("id BIGINT NOT NULL"), partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } });
  const results = await Promise.all(Array.from({ length: 8 }, (_, k) => writeRows(t, Array.from({ length: 10 }, (_, i) => ({ id: k * 100 + i })))));
  assert.deepEqual([...results].sort((a, b) => a! - b!), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(await t.snapshots.listIds(), [1, 2, 3, 4, 5, 6, 7, 8]);
  const ids = (await readJson(t)).map((r) => Number(r["id"]));
  assert.equal(ids.length, 80);
  assert.equal(new Set(ids).size, 80);
});

function runChild(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

test("commit - two processes committing to one S3 table at once: contiguous snapshots, no row lost or doubled (pypaimon agrees)", async () => {
  const wh = warehouse();
  await wh.catalog.createTable(parseIdentifier("c.procs"), { columns: parseColumnList("id BIGINT NOT NULL, who STRING"), partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } });
  const [a, b] = await Promise.all([runChild([wh.uri, "c.procs", "0", "20", "5"]), runChild([wh.uri, "c.procs", "1000", "20", "5"])]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const t = await wh.catalog.getTable(parseIdentifier("c.procs"));
  assert.deepEqual(await t.snapshots.listIds(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const ids = (await paimonRead(wh.plain, "c.procs")).map((r) => Number(r["id"]));
  assert.equal(ids.length, 200);
  assert.equal(new Set(ids).size, 200);
});

test("crash - a writer killed just before its snapshot's conditional put leaves the S3 table at its previous snapshot", async () => {
  const wh = warehouse();
  const t = await wh.catalog.createTable(parseIdentifier("c.crash"), { columns: parseColumnList("id BIGINT NOT NULL, who STRING"), partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } });
  await writeRows(t, [{ id: -1, who: "before" }]);
  const r = await runChild([wh.uri, "c.crash", "0", "50", "1"], { FAILPOINTS: "commit.before-snapshot:kill" });
  assert.equal(r.signal, "SIGKILL", r.stderr);
  const again = await wh.catalog.getTable(parseIdentifier("c.crash"));
  assert.equal(await again.snapshots.latestId(), 1);
  assert.deepEqual(await paimonRead(wh.plain, "c.crash"), [{ id: -1, who: "before" }]);
  await writeRows(again, [{ id: 5, who: "after" }]);
  assert.equal((await readJson(again)).length, 2);
});

test("commit - the snapshot's conditional put landed but its answer was lost: the commit reads it back, succeeds once, and a retry finds it", async () => {
  const wh = warehouse();
  await wh.catalog.createTable(parseIdentifier("c.unknown"), { columns: parseColumnList("id BIGINT NOT NULL"), partitionKeys: [], options: { bucket: "1", "bucket-key": "id" } });
  const { server, bucket } = store;
  const io = new S3FileIO({ bucket, endpoint: proxy.url, region: server.region, forcePathStyle: true, credentials: server.credentials, maxAttempts: 3 });
  const viaProxy = new Catalog(wh.catalog.warehouse, io);
  const t = await viaProxy.getTable(parseIdentifier("c.unknown"));
  const w = new TableWrite(t);
  w.writeRows([{ id: 1 }, { id: 2 }]);
  const messages = await w.prepareCommit();
  proxy.arm("drop-response", /^PUT [^\n]*snapshot\/snapshot-1[ ?]/);
  const fired = proxy.fired();
  const commit = new FileStoreCommit(t);
  const res = await commit.commit({ commitUser: "u", commitIdentifier: 7n, messages });
  assert.equal(proxy.fired(), fired + 1, "the answer of the snapshot's put was lost");
  assert.equal(res.snapshot?.id, 1);
  // The caller retrying after an unknown outcome (as the cluster's committer does) finds it and applies nothing twice.
  const again = await commit.commit({ commitUser: "u", commitIdentifier: 7n, messages, recoverFrom: 1 });
  assert.equal(again.alreadyCommitted, true);
  assert.deepEqual(await t.snapshots.listIds(), [1]);
  assert.deepEqual(sortRows(await readJson(t)), [{ id: 1 }, { id: 2 }]);
  io.destroy();
});

test("commit path - writing data files and committing costs no LIST, and a bounded number of requests per commit", async () => {
  const wh = warehouse();
  const t0 = await wh.catalog.createTable(parseIdentifier("c.cost"), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } });
  await writeRows(t0, [{ id: 0, s: "first" }]); // the first commit of a table has no LATEST hint yet
  const t = await wh.catalog.getTable(parseIdentifier("c.cost"));
  const commit = new FileStoreCommit(t);
  const io = ioOf(wh.catalog);
  const per: S3RequestCounts[] = [];
  const w = new TableWrite(t); // one writer, as a cluster writer keeps its state between flushes
  for (let i = 1; i <= 12; i++) {
    const before = { ...io.requests };
    w.writeRows(Array.from({ length: 20 }, (_, k) => ({ id: i * 100 + k, s: `r${k}` })));
    const res = await commit.commit({ commitUser: "cost", commitIdentifier: BigInt(i), messages: await w.prepareCommit() });
    assert.equal(res.snapshot?.id, i + 1);
    per.push(countsSince(before, io.requests));
  }
  for (const [i, c] of per.entries()) {
    assert.equal(c.LIST, 0, `commit ${i + 1} listed: ${JSON.stringify(c)}`);
    // PUTs: the data files (one per bucket), a manifest, two manifest lists, the snapshot, the LATEST hint. Reads:
    // the hint and existence checks (of the hinted snapshot and the next one), and at its first flush the writer's
    // sequence numbers from the live files; manifests are cached, so reads do not grow with the table.
    assert.ok(c.PUT <= 7, `commit ${i + 1}: ${JSON.stringify(c)}`);
    assert.ok(c.GET + c.HEAD <= (i === 0 ? 12 : 4), `commit ${i + 1}: ${JSON.stringify(c)}`);
  }
  assert.equal((await readJson(t)).length, 1 + 12 * 20);
});

test("names and partition values on S3: every key stays under the warehouse prefix; escaped values read back; a name that would escape is refused", async () => {
  const prefix = `wh-${randomBytes(4).toString("hex")}`;
  const catalog = new Catalog(store.uri(prefix));
  const values = ["a/b", "..", "../../x", "%2e%2e", "%", "a=b", "é/ü"];
  const t = await catalog.createTable(parseIdentifier("esc.parts"), { columns: parseColumnList("id BIGINT NOT NULL, p STRING"), partitionKeys: ["p"] });
  const rows = values.map((p, i) => ({ id: i, p }));
  await writeRows(t, rows);
  for (const bad of ["esc.%2e%2e", "esc..x", "esc.a/b", "esc.>"]) {
    await assert.rejects(
      (async () => catalog.createTable(parseIdentifier(bad), { columns: parseColumnList("x INT") }))(),
      (e: unknown) => isLakeError(e, "DataInvalid"),
      bad,
    );
  }
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await store.server.client.send(new ListObjectsV2Command({ Bucket: store.bucket, ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.NextContinuationToken;
  } while (token !== undefined);
  // Every test writes under its own wh-<hex>/ prefix: a key anywhere else escaped one.
  for (const k of keys) assert.match(k, /^wh-[0-9a-f]{8}\//, k);
  const ours = keys.filter((k) => k.startsWith(`${prefix}/`));
  for (const k of ours) assert.ok(k === `${prefix}/esc.db/` || k.startsWith(`${prefix}/esc.db/parts/`), k);
  const dirs = new Set(ours.filter((k) => k.endsWith(".parquet")).map((k) => k.split("/")[3]));
  assert.deepEqual([...dirs].sort(), ["p=%252e%252e", "p=%25", "p=..", "p=..%2F..%2Fx", "p=a%2Fb", "p=a%3Db", "p=é%2Fü"].sort());
  assert.deepEqual(sortRows(await readJson(t)), sortRows(rows));
  assert.deepEqual(sortRows(await paimonRead(`s3://${store.bucket}/${prefix}`, "esc.parts")), sortRows(rows));
});
