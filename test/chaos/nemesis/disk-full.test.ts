import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, promises as fs } from "node:fs";
import { join } from "node:path";
import { DiskMountUnavailable, isMountPoint, mountSmallDisk, type SmallDisk } from "../../../chaos/nemesis/disk-full.ts";
import { diskFull } from "../../../chaos/nemesis/index.ts";
import { isLakeError, type LakeError } from "../../../src/errors.ts";
import { readAllRows } from "../../../src/scan/read.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";

const disks: SmallDisk[] = [];
after(async () => {
  for (const d of disks) await d.unmount();
});

const KiB = 1024;
const MiB = 1024 * KiB;

async function writeFails(path: string, bytes: number): Promise<string | null> {
  try {
    await fs.writeFile(path, Buffer.alloc(bytes, 7));
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? String(e);
  } finally {
    await fs.rm(path, { force: true });
  }
}

for (const kind of ["tmpfs", "ext4-loop"] as const) {
  test(`disk-full - ${kind}: fill() makes writes fail with ENOSPC, free() makes them work, unmount() cleans up`, async () => {
    let t0 = performance.now();
    const disk = await mountSmallDisk({ sizeBytes: 16 * MiB, kind });
    const mountMs = performance.now() - t0;
    disks.push(disk);
    assert.equal(disk.kind, kind);
    assert.ok(await isMountPoint(disk.dir));
    const initial = await disk.freeBytes();
    assert.ok(initial > 10 * MiB && initial <= 16 * MiB, `free on a fresh ${kind}: ${initial}`);
    assert.equal(await writeFails(join(disk.dir, "before"), 100 * KiB), null);

    t0 = performance.now();
    const filled = await disk.fill();
    const fillMs = performance.now() - t0;
    assert.ok(filled.written > 10 * MiB);
    assert.ok(filled.freeBytes < 64 * KiB, `free after fill(): ${filled.freeBytes}`);
    assert.equal(await writeFails(join(disk.dir, "full"), 64 * KiB), "ENOSPC");
    assert.deepEqual(
      (await fs.readdir(disk.dir)).filter((n) => !n.startsWith(".natslake-filler-") && n !== "lost+found"),
      [],
      "the filler is all there is",
    );

    const freed = await disk.free();
    assert.ok(freed > initial - 64 * KiB, `free after free(): ${freed} (initially ${initial})`);
    assert.equal(await writeFails(join(disk.dir, "after"), 1 * MiB), null);

    // leaveBytes: small writes still fit, large ones do not.
    const partly = await disk.fill(512 * KiB);
    assert.ok(partly.freeBytes <= 512 * KiB + 64 * KiB && partly.freeBytes >= 256 * KiB, `free after fill(512 KiB): ${partly.freeBytes}`);
    assert.equal(await writeFails(join(disk.dir, "small"), 64 * KiB), null);
    assert.equal(await writeFails(join(disk.dir, "big"), 2 * MiB), "ENOSPC");
    await disk.free();

    t0 = performance.now();
    await disk.unmount();
    await disk.unmount(); // idempotent
    const unmountMs = performance.now() - t0;
    assert.equal(existsSync(disk.dir), false, "the mount point it created is removed");
    console.log(`# ${kind} 16 MiB: mount ${mountMs.toFixed(0)} ms, fill ${fillMs.toFixed(0)} ms (${filled.written} bytes), unmount ${unmountMs.toFixed(0)} ms`);
  });
}

test("disk-full - an impossible mount is reported with every attempt, and leaves nothing behind", async () => {
  const err = await mountSmallDisk({ sizeBytes: 2 * MiB, kind: "ext4-loop" }).then(
    () => assert.fail("a 2 MiB ext4 image should be refused"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof DiskMountUnavailable);
  assert.equal(err.attempts.length, 1);
  assert.match(err.message, /ext4-loop: an ext4 image needs at least 8 MiB/);
  assert.equal(existsSync(err.dir), false);
  await assert.rejects(mountSmallDisk({ sizeBytes: 100 }), RangeError);
});

test("disk-full - natslake: a commit into a full warehouse fails with Io/ENOSPC (not retryable), the table stays readable, and commits again after free", async () => {
  const disk = await mountSmallDisk({ sizeBytes: 32 * MiB });
  disks.push(disk);
  const warehouse = join(disk.dir, "warehouse");
  const catalog = new Catalog(warehouse);
  const id = parseIdentifier("chaos.full");
  const table = await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, payload STRING"), partitionKeys: [], options: {} });
  const rows = (from: number, n: number): Array<Record<string, unknown>> =>
    Array.from({ length: n }, (_, i) => ({ id: from + i, payload: `row-${from + i}-${"x".repeat(200)}` }));
  const commit = async (from: number, n: number): Promise<number | undefined> => {
    const w = await BatchWriter.open(table);
    await w.write(rows(from, n));
    return (await w.commit()).snapshot?.id;
  };
  assert.equal(await commit(0, 1000), 1);

  const nemesis = diskFull(disk, { kind: "node", id: "n1" });
  const record = await nemesis.inject();
  assert.equal(record.name, "disk-full");
  assert.equal(record.target, "node:n1");
  assert.ok((record.detail?.["freeBytes"] as number) < 64 * KiB);

  const err = await commit(1000, 1000).then(
    () => assert.fail("a commit into a full warehouse must fail"),
    (e: unknown) => e,
  );
  assert.ok(isLakeError(err, "Io"), `expected LakeError Io, got ${String(err)}`);
  const lake = err as LakeError;
  assert.equal(lake.retryable, false, "ENOSPC is not retryable");
  assert.match(lake.message, /ENOSPC/);
  assert.equal((lake.cause as NodeJS.ErrnoException).code, "ENOSPC");

  // The table is still readable at its previous snapshot, through a fresh catalog too.
  assert.equal(await table.snapshots.latestId(), 1);
  assert.deepEqual(await table.snapshots.listIds(), [1]);
  const reopened = await new Catalog(warehouse).getTable(id);
  const before = await readAllRows(reopened);
  assert.equal(before.length, 1000);
  assert.deepEqual(
    before.map((r) => Number(r["id"])).sort((a, b) => a - b),
    Array.from({ length: 1000 }, (_, i) => i),
  );
  const leftovers = (await fs.readdir(join(warehouse, "chaos.db", "full"), { recursive: true })).filter((n) => /\.tmp$/.test(n));

  await nemesis.heal(record);
  assert.ok(record.healedAt !== undefined && record.healedAt >= record.injectedAt);
  assert.equal(await commit(1000, 1000), 2);
  const all = await readAllRows(await new Catalog(warehouse).getTable(id));
  assert.equal(all.length, 2000);
  assert.equal(new Set(all.map((r) => Number(r["id"]))).size, 2000);
  console.log(`# natslake on a full tmpfs: "${lake.message}"; temp files left behind: ${leftovers.length}`);
  await disk.unmount();
});
