/**
 * LocalFileIO.mkdirs against real filesystems: /proc refuses new entries with ENOENT (Node's recursive mkdir spins
 * on that forever), a file in the way, and concurrent creators of one deep path.
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
