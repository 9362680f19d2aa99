/**
 * LocalFileIO.mkdirs against real filesystems: /proc refuses new entries with ENOENT (Node's recursive mkdir spins
 * on that forever), a file in the way, and concurrent creators of one deep path; metadata reads on the calling
 * thread (same bytes, same errors, the event loop still turns during a long run of them).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LocalFileIO } from "../../../src/io/local.ts";
import { isLakeError } from "../../../src/errors.ts";
import { tempDir } from "../../helpers/tables.ts";

const dir = tempDir();
after(() => dir.cleanup());

/** Settles `p` or fails after `ms` (the old mkdirs never settled under /proc). */
async function within<T>(ms: number, p: Promise<T>): Promise<PromiseSettledResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)));
  try {
    return await Promise.race([Promise.allSettled([p]).then((r) => r[0]!), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

test("mkdirs - under /proc it fails at once with the reason, instead of spinning forever", { skip: !existsSync("/proc/self") && "no /proc here" }, async () => {
  const io = new LocalFileIO();
  for (const path of ["/proc/natslake-nope", "/proc/natslake-nope/a/b"]) {
    const r = await within(5000, io.mkdirs(path));
    assert.equal(r.status, "rejected", path);
    const e = (r as PromiseRejectedResult).reason as Error;
    assert.ok(isLakeError(e, "Io"), String(e));
    assert.match(e.message, /cannot create directory \/proc\/natslake-nope: .*\(ENOENT\)/);
  }
});

test("mkdirs - makes every level; a file in the way is said; concurrent creators of one path all succeed", async () => {
  const io = new LocalFileIO();
  const deep = join(dir.path, "a", "b", "c", "d");
  await Promise.all(Array.from({ length: 8 }, () => io.mkdirs(deep)));
  assert.ok(statSync(deep).isDirectory());
  await io.mkdirs(deep); // exists already: fine
  writeFileSync(join(dir.path, "file"), "x");
  await assert.rejects(io.mkdirs(join(dir.path, "file")), /cannot create directory .*file: a file of that name exists/);
  await assert.rejects(io.mkdirs(join(dir.path, "file", "sub")), /cannot create directory .*sub: a parent is not a directory \(ENOTDIR\)/);
});

test("metadata reads - the same bytes as a data read, NotFound alike; a long run of them still lets the event loop turn", async () => {
  const io = new LocalFileIO();
  const p = join(dir.path, "meta.json");
  writeFileSync(p, '{"id":1}');
  assert.equal(await io.readText(p, { metadata: true }), await io.readText(p));
  await assert.rejects(io.readFile(join(dir.path, "nope"), { metadata: true }), (e: unknown) => isLakeError(e, "NotFound"));
  // 64 reads in a row: each completes on this thread, yet a task queued before them runs before the last one.
  let turnedAt = -1;
  let i = 0;
  setImmediate(() => (turnedAt = i));
  for (; i < 64; i++) await io.readFile(p, { metadata: true });
  assert.ok(turnedAt >= 0 && turnedAt < 64, `the event loop turned during the reads (at read ${turnedAt})`);
});
