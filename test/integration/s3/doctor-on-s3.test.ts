/**
 * `natslake doctor` on an S3 warehouse (SeaweedFS, real), through the CLI as a user runs it: a healthy partitioned
 * table exits 0; a data object deleted and a manifest overwritten with garbage are found, named by their s3:// URIs,
 * with the snapshot to roll back to; and a read names the damaged object.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { historyTable, liveDataFiles, warehouseCli } from "../../helpers/warehouse-cli.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import type { DoctorReport } from "../../../src/maintenance/doctor.ts";

let store: S3TestStore;
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
});

test("doctor on S3: healthy exits 0; a deleted data object and a damaged manifest found by their s3:// URIs; exit 1", { timeout: 180_000 }, async () => {
  const warehouse = store.uri(`doc-${randomBytes(4).toString("hex")}`);
  const w = warehouseCli(warehouse);
  const name = "doc.t";
  const t = await historyTable(warehouse, name, 4);
  const healthy = JSON.parse(await w.ok(["doctor", name, "--json"])) as DoctorReport;
  assert.deepEqual([healthy.healthy, healthy.findings, healthy.latestSnapshot, healthy.checked.dataFiles > 0], [true, [], 4, true]);

  // Snapshot 4's data objects: one deleted. Snapshot 3's delta manifest: garbage.
  const before4 = new Set(await liveDataFiles(t, { snapshotId: 3 }));
  const only4 = (await liveDataFiles(t, { snapshotId: 4 })).filter((f) => !before4.has(f));
  assert.ok(only4.length > 0);
  await t.io.delete(`${t.root}/${only4[0]}`);
  const s3 = await t.snapshots.snapshot(3);
  const manifest = (await new ManifestStore(t).readManifestList(s3.deltaManifestList))[0]!.fileName;
  await t.io.writeFile(t.paths.manifestPath(manifest), "garbage");

  const r = await w.cli(["doctor", name, "--json"]);
  assert.equal(r.code, 1, r.stderr);
  const report = JSON.parse(r.stdout) as DoctorReport;
  const byCheck = Object.fromEntries(report.findings.map((f) => [f.check, f]));
  assert.deepEqual(report.findings.map((f) => f.check).sort(), ["data-file", "manifest"]);
  assert.equal(byCheck["data-file"]!.path, `${t.location}/${only4[0]}`);
  assert.equal(byCheck["data-file"]!.problem, "missing");
  assert.deepEqual(byCheck["data-file"]!.snapshots, [4]);
  assert.equal(byCheck["manifest"]!.path, t.io.uriOf(t.paths.manifestPath(manifest)));
  assert.match(byCheck["manifest"]!.problem, /^damaged: /);
  assert.match(byCheck["manifest"]!.action, new RegExp(`roll back to snapshot 2, the last before it: natslake rollback ${name.replace(".", "\\.")} --to-snapshot 2 `));
  await w.fails(["read", name], 2, new RegExp(`^error: ${t.io.uriOf(t.paths.manifestPath(manifest)).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is damaged: not a readable manifest`));
});
