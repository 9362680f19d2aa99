/**
 * Lookups from a reader node on an S3 warehouse (SeaweedFS, real) go through its disk cache (src/io/file-cache.ts):
 * with a memory level too small to keep any decoded file, every lookup decodes its files again — from the reader's
 * disk, not from the store. Counted from the reader's own /metrics: after the first lookups fetched the files, further
 * lookups send no GET of a data file (`natslake_s3_requests_total{type="GET",area="data"}` stays), the disk cache
 * counts hits, and the answers stay right; the cache directory holds the files.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../../helpers/cluster.ts";
import { freePort } from "../../helpers/servers.ts";
import { scrapeMetrics, scrapeS3Requests } from "../../helpers/node-metrics.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { createLookupClient, type LookupClient } from "../../../cluster/lookup-client.ts";
import { METRICS } from "../../../actors/metrics.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";

let store: S3TestStore;
const cacheDir = mkdtempSync(join(tmpdir(), "lookup-disk-cache-"));
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
  rmSync(cacheDir, { recursive: true, force: true });
});

const ready = async (port: number): Promise<true | undefined> => {
  const r = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
  return r?.status === 200 ? true : undefined;
};

/** The reader's disk cache reads of a result. */
async function diskReads(port: number, result: "hit" | "miss"): Promise<number> {
  const m = new RegExp(`^${METRICS.lookupDiskCacheReads.name}\\{[^}]*result="${result}"[^}]*\\} (\\d+)`, "m").exec(await scrapeMetrics(port));
  return m === null ? 0 : Number(m[1]);
}

test("lookups on S3 - a reader decodes the files its lookups need from its disk cache: no GET of a data file after the first lookups", { timeout: 240_000 }, async () => {
  const uri = store.uri(`lookup-${randomBytes(4).toString("hex")}`);
  const c: TestCluster = await startCluster({ nodes: 0, warehouse: uri, commitInterval: "250ms" });
  const port = await freePort();
  let client: LookupClient | undefined;
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(uri);
      // A memory level that holds no decoded file: each lookup decodes again.
      await catalog.createTable(parseIdentifier("lk.users"), {
        columns: parseColumnList("id BIGINT NOT NULL, name STRING"),
        primaryKeys: ["id"],
        options: { bucket: "2", "lookup.cache-max-memory-size": "1 kb", "write-only": "true" },
      });
      c.startNode("w", ["--roles", "writer,committer"]);
      c.startNode("r", ["--roles", "reader", "--metrics-port", String(port), "--lookup-cache-dir", cacheDir]);
      await waitFor("the reader ready", () => ready(port), 90_000, 250);
      const producer = await producerWhenRegistered(c.nc, "lk.users", 60_000);
      await producer.upsert(Array.from({ length: 200 }, (_, id) => ({ id, name: `n${id}` })));
      await producer.upsert([{ id: 7, name: "seven" }]);
      client = await createLookupClient({ nc: c.nc });
      const keys = [{ id: 7 }, { id: 150 }, { id: 999 }];
      const expected = [{ id: 7, name: "seven" }, { id: 150, name: "n150" }, null];
      const first = await client.get("lk.users", keys, { readYourWrites: producer.token() });
      assert.deepEqual(first.rows, expected);
      await producer.close();
      const fetched = await scrapeS3Requests(port);
      assert.ok(fetched.byArea.data.GET >= 1, `the first lookups fetched data files: ${JSON.stringify(fetched.byArea.data)}`);
      const hitsBefore = await diskReads(port, "hit");
      for (let i = 0; i < 5; i++) assert.deepEqual((await client.get("lk.users", keys, { atLeastSnapshot: first.snapshotId! })).rows, expected);
      const later = await scrapeS3Requests(port);
      assert.equal(later.byArea.data.GET, fetched.byArea.data.GET, "no data file fetched again");
      assert.ok((await diskReads(port, "hit")) >= hitsBefore + 5, "the lookups read the files from the disk cache");
      assert.ok(readdirSync(cacheDir).length >= 1, "the cached files are in --lookup-cache-dir");
    });
  } finally {
    await client?.close();
    await c.stop();
  }
});
