/**
 * Paimon's lock alternative for object stores without conditional puts (src/io/commit-lock.ts, the Redis lock in
 * cluster/redis/commit-lock.ts), against real servers: SeaweedFS behind a proxy that drops `If-None-Match` — a store
 * that ignores the condition, so a PUT of an existing key overwrites it — and a real redis-server.
 *
 * Without the opt-in such a store is refused at start, the message naming it; with `commit-lock=redis` it is
 * accepted and exclusive creates (snapshots, tags, schemas) race to exactly one winner, committers in one process and
 * in two processes land contiguous snapshots with every row once (pypaimon agrees), a lock left by a dead holder is
 * waited out, a lease too short for a write is refused before writing, and a process without a Redis says so.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { startSeaweed, type SeaweedHandle } from "../../../cluster/local/seaweedfs.ts";
import { startRedis, type ServerHandle } from "../../../cluster/local/servers.ts";
import { installRedisCommitLock, RedisCommitLock } from "../../../cluster/redis/commit-lock.ts";
import { checkWarehouse, openWarehouse } from "../../../src/io/warehouse.ts";
import type { S3FileIO } from "../../../src/io/s3.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { paimonRead } from "../../helpers/python.ts";
import { readJson, writeRows } from "../../helpers/tables.ts";
import { runNatslake } from "../../helpers/warehouse-cli.ts";
import { startHeaderStripProxy, type HeaderStripProxy } from "../../helpers/header-strip-proxy.ts";

const BUCKET = "natslake-lock";
const CHILD = fileURLToPath(new URL("../../helpers/writer-child.ts", import.meta.url));

let weed: SeaweedHandle;
let proxy: HeaderStripProxy;
let redis: ServerHandle;

before(async () => {
  weed = await startSeaweed({ anonymous: true });
  await weed.createBucket(BUCKET);
  Object.assign(process.env, weed.env);
  proxy = await startHeaderStripProxy(weed.port, ["if-none-match"]);
  redis = await startRedis();
  installRedisCommitLock(redis.url);
});
after(async () => {
  await proxy?.close();
  await weed?.stop();
  await redis?.stop();
});

/** A warehouse on a fresh prefix through the proxy (conditions ignored), with or without the lock opt-in. */
function uriOf(prefix: string, lock: boolean): string {
  return `s3://${BUCKET}/${prefix}?endpoint=${encodeURIComponent(proxy.url)}${lock ? "&commit-lock=redis" : ""}`;
}
const fresh = (): string => `wh-${randomBytes(4).toString("hex")}`;

test("commit lock - a store that ignores If-None-Match is refused at start, the message naming commit-lock=redis; the same store without the proxy enforces it", async () => {
  const ignoring = openWarehouse(uriOf(fresh(), false)).io as S3FileIO;
  const before = proxy.stripped();
  await assert.rejects(checkWarehouse(ignoring), /does not enforce conditional puts.*commit-lock=redis/s);
  assert.ok(proxy.stripped() > before, "the conditions were dropped on the way");
  // The first exclusive create runs the same probe: nothing is ever created unchecked.
  await assert.rejects(ignoring.createExclusive(`/${fresh()}/snapshot/snapshot-1`, "x"), /does not enforce conditional puts/);
  const direct = openWarehouse(`s3://${BUCKET}/${fresh()}?endpoint=${encodeURIComponent(weed.endpoint)}`).io;
  await checkWarehouse(direct);
});

test("commit lock - with commit-lock=redis the store is accepted, and exclusive creates from two FileIOs race to exactly one winner per key", async () => {
  const prefix = fresh();
  const a = openWarehouse(uriOf(prefix, true));
  const b = openWarehouse(uriOf(prefix, true));
  await checkWarehouse(a.io);
  for (let round = 0; round < 10; round++) {
    const path = `${a.root}/t/snapshot/snapshot-${round + 1}`;
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a.io : b.io).createExclusive(path, `writer ${i}`)));
    assert.equal(results.filter(Boolean).length, 1, `round ${round}: ${JSON.stringify(results)}`);
    assert.equal(await a.io.readText(path), `writer ${results.indexOf(true)}`, "the object holds the winner's bytes");
  }
});

test("commit lock - committers racing through the lock, 8 in one process and 2 processes: contiguous snapshots, every row once; pypaimon agrees", { timeout: 180_000 }, async () => {
  const prefix = fresh();
  const catalog = new Catalog(uriOf(prefix, true));
  const t = await catalog.createTable(parseIdentifier("c.race"), { columns: parseColumnList("id BIGINT NOT NULL, who STRING"), partitionKeys: [], options: { bucket: "2", "bucket-key": "id" } });
  const results = await Promise.all(Array.from({ length: 8 }, (_, k) => writeRows(t, Array.from({ length: 10 }, (_, i) => ({ id: k * 100 + i, who: "in-process" })))));
  assert.deepEqual([...results].sort((x, y) => x! - y!), [1, 2, 3, 4, 5, 6, 7, 8]);
  const child = (base: string): Promise<{ code: number | null; stderr: string }> =>
    new Promise((resolve) => {
      const p = spawn(process.execPath, ["--import", "tsx", CHILD, uriOf(prefix, true), "c.race", base, "20", "5"], { env: { ...process.env, NATSLAKE_REDIS: redis.url }, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      p.on("close", (code) => resolve({ code, stderr }));
    });
  const [x, y] = await Promise.all([child("10000"), child("20000")]);
  assert.equal(x.code, 0, x.stderr);
  assert.equal(y.code, 0, y.stderr);
  const again = await catalog.getTable(parseIdentifier("c.race"));
  assert.deepEqual(await again.snapshots.listIds(), Array.from({ length: 18 }, (_, i) => i + 1), "8 + 2 × 5 snapshots, contiguous");
  const ids = (await readJson(again)).map((r) => Number(r["id"]));
  assert.equal(ids.length, 80 + 200);
  assert.equal(new Set(ids).size, ids.length, "no row twice");
  const theirs = (await paimonRead(`s3://${BUCKET}/${prefix}`, "c.race")).map((r) => Number(r["id"]));
  assert.deepEqual(theirs.sort((p, q) => p - q), [...ids].sort((p, q) => p - q));
});

test("commit lock - a lock left by a dead holder is waited out (its lease), then the create goes on", async () => {
  const prefix = fresh();
  const wh = openWarehouse(uriOf(prefix, true));
  const path = `${wh.root}/t/tag/tag-x`;
  // A holder that died while holding the directory's lock: its key stays until its lease ends.
  const r = new Redis(redis.url);
  try {
    await r.set(`natslake:commit-lock:s3://${BUCKET}${wh.root}/t/tag`, "dead-holder", "PX", 1500);
    const started = Date.now();
    assert.equal(await wh.io.createExclusive(path, "after"), true);
    assert.ok(Date.now() - started >= 1000, `waited for the dead holder's lease: ${Date.now() - started} ms`);
    assert.equal(await wh.io.createExclusive(path, "again"), false, "then it exists");
  } finally {
    r.disconnect();
  }
});

test("commit lock - a lease too short for a write is refused before writing (retryable); without a Redis, a clear error", async () => {
  const prefix = fresh();
  const short = new RedisCommitLock(redis.url, { leaseMs: 3000 });
  const wh = openWarehouse(uriOf(prefix, true), { s3: { commitLock: short } });
  const path = `${wh.root}/t/snapshot/snapshot-1`;
  await assert.rejects(wh.io.createExclusive(path, "x"), (e: unknown) => /lease has \d+ ms left/.test(String(e)) && (e as { retryable?: boolean }).retryable === true);
  assert.equal(await wh.io.isFile(path), false, "nothing written");
  await assert.rejects(new RedisCommitLock(undefined).check(), /no Redis is configured: set NATSLAKE_REDIS/);
  // The CLI without NATSLAKE_REDIS: the create is refused, naming what is missing; with it, it works.
  const env = { ...weed.env, NATSLAKE_REDIS: "" };
  const create = ["table", "create", "c.cli", "--columns", "id BIGINT NOT NULL", "--warehouse", uriOf(prefix, true)];
  const refused = await runNatslake(create, env);
  assert.notEqual(refused.code, 0, refused.stdout);
  assert.match(refused.stderr, /no Redis is configured: set NATSLAKE_REDIS/);
  const ok = await runNatslake(create, { ...env, NATSLAKE_REDIS: redis.url });
  assert.equal(ok.code, 0, ok.stderr);
  // A setting of the URI that is not a known lock kind is refused at parse.
  const bad = await runNatslake(["table", "list", "--warehouse", `s3://${BUCKET}/x?commit-lock=zookeeper`], env);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /commit-lock must be one of redis, got 'zookeeper'/);
});
