/**
 * Ranged reads on S3 (SeaweedFS, real): a projection of a table whose data files are large fetches each file's footer
 * and the wanted columns' chunks only — measured in bytes the S3FileIO read — and returns the same rows as a read
 * of whole files (the local warehouse's path) and as pypaimon. Small files are still fetched in one GET.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import type { S3FileIO } from "../../../src/io/s3.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { paimonRead } from "../../helpers/python.ts";
import { readJson, writeRows } from "../../helpers/tables.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";
import { RANGED_READ_MIN_BYTES } from "../../../src/scan/ranged-fetch.ts";

let store: S3TestStore;
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
});

test("ranged reads on S3 - a projection of large files fetches a fraction of their bytes and reads the same rows as whole files and pypaimon", { timeout: 180_000 }, async () => {
  const prefix = `wh-${randomBytes(4).toString("hex")}`;
  const catalog = new Catalog(store.uri(prefix));
  const io = catalog.io as S3FileIO;
  const t = await catalog.createTable(parseIdentifier("db.wide"), {
    columns: parseColumnList("id BIGINT NOT NULL, a STRING, b STRING, c STRING"),
    options: { bucket: "1", "bucket-key": "id" },
  });
  const rows = Array.from({ length: 50_000 }, (_, i) => ({ id: i, a: randomBytes(32).toString("hex"), b: randomBytes(32).toString("hex"), c: `k${i % 5}` }));
  await writeRows(t, rows.slice(0, 25_000));
  await writeRows(t, rows.slice(25_000));
  const files = await new ManifestStore(t).readLiveEntries((await t.snapshots.latest())!);
  const total = files.reduce((n, e) => n + e.file.fileSize, 0);
  assert.ok(files.every((e) => e.file.fileSize >= RANGED_READ_MIN_BYTES), `every data file is large: ${files.map((e) => e.file.fileSize).join(", ")}`);

  for (const projection of [["id"], ["c", "id"]]) {
    const before = io.bytesRead;
    const ours = await readJson(t, { projection });
    const fetched = io.bytesRead - before;
    assert.equal(ours.length, rows.length);
    assert.ok(fetched < total * 0.35, `${projection}: ${fetched} of ${total} data bytes fetched`);
    assert.deepEqual(ours, rows.map((r) => Object.fromEntries(projection.map((k) => [k, (r as Record<string, unknown>)[k]]))), `${projection}: the rows, in order`);
  }
  // Every column: the files are read whole, as before.
  const before = io.bytesRead;
  assert.equal((await readJson(t)).length, rows.length);
  assert.ok(io.bytesRead - before >= total, "a full read fetches every byte");
  // The same rows through pypaimon, from the same objects.
  const theirs = await paimonRead(`s3://${store.bucket}/${prefix}`, "db.wide", { columns: ["id", "c"] });
  assert.deepEqual(theirs.map((r) => Number(r["id"])).sort((x, y) => x - y), rows.map((r) => r.id));
});
