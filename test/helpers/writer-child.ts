/**
 * A separate writer process for crash and concurrency tests:
 *   node --import tsx test/helpers/writer-child.ts <warehouse> <db.table> <firstId> <rows> <commits>
 * Writes `commits` batch commits of `rows` rows each (ids firstId, firstId+1, …) with columns (id BIGINT, who STRING).
 * Failpoints (FAILPOINTS=…) let a test kill it at a chosen point of the commit.
 */
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { installRedisCommitLock } from "../../cluster/redis/commit-lock.ts";

const [warehouse, name, first, rows, commits] = process.argv.slice(2);
if (!warehouse || !name || !first || !rows || !commits) {
  process.stderr.write("usage: writer-child.ts <warehouse> <db.table> <firstId> <rows> <commits>\n");
  process.exit(2);
}
// A warehouse with commit-lock=redis locks in NATSLAKE_REDIS, as the CLI does.
installRedisCommitLock();
const catalog = new Catalog(warehouse);
let id = Number(first);
for (let c = 0; c < Number(commits); c++) {
  const table = await catalog.getTable(parseIdentifier(name));
  const w = await BatchWriter.open(table);
  const batch = Array.from({ length: Number(rows) }, () => ({ id: id++, who: `pid-${process.pid}` }));
  await w.write(batch);
  const res = await w.commit();
  process.stdout.write(JSON.stringify({ snapshot: res.snapshot?.id ?? null, attempts: res.attempts }) + "\n");
}
