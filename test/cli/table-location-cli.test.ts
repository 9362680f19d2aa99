/**
 * Where a table lives, as the CLI and the library show it: on an S3 warehouse (SeaweedFS, real) the full
 * `s3://bucket/prefix/<db>.db/<table>` — `table create` (directly and through a cluster's admin request), `table
 * describe` as text and JSON, `Table.location` — not the path inside the bucket; a local warehouse keeps its
 * absolute directory.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { startS3Store, type S3TestStore } from "../helpers/s3.ts";
import { startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { tempDir } from "../helpers/tables.ts";
import { runNatslake as nl } from "../helpers/warehouse-cli.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";

// The store's credentials are in this process's environment (startS3Store puts them there), so the CLI gets them.

let store: S3TestStore;
const local = tempDir();
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
  local.cleanup();
});

const COLUMNS = ["--columns", "id BIGINT NOT NULL, s STRING", "--option", "bucket=2", "--option", "bucket-key=id"];

test("table location - an S3 warehouse's table is named s3://bucket/prefix/<db>.db/<table> by create, describe and Table.location", { timeout: 180_000 }, async () => {
  const prefix = `loc-${randomBytes(4).toString("hex")}`;
  const uri = store.uri(prefix);
  const where = `s3://${store.bucket}/${prefix}/geo.db/t`;
  const created = await nl(["table", "create", "geo.t", "--warehouse", uri, ...COLUMNS]);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.stdout.trim(), `created geo.t at ${where}`);
  const text = await nl(["table", "describe", "geo.t", "--warehouse", uri]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`^path     ${where.replace(/[.]/g, "\\.")}$`, "m"));
  const json = await nl(["table", "describe", "geo.t", "--warehouse", uri, "--json"]);
  assert.equal(json.code, 0, json.stderr);
  assert.equal((JSON.parse(json.stdout) as { path: string }).path, where);
  const table = await new Catalog(uri).getTable(parseIdentifier("geo.t"));
  assert.equal(table.location, where);
  assert.equal(table.root, `/${prefix}/geo.db/t`, "the FileIO's own path is unchanged");
});

test("table location - table create --nats through a cluster on S3 names the s3:// location", { timeout: 240_000 }, async () => {
  const prefix = `loc-${randomBytes(4).toString("hex")}`;
  const c = await startCluster({ nodes: 1, warehouse: store.uri(prefix) });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const r = await waitFor("a reader node answered create-table", async () => {
        const x = await nl(["table", "create", "geo.n", "--nats", c.nats.url, ...COLUMNS]);
        return x.code === 0 ? x : undefined;
      }, 60_000, 500);
      assert.equal(r.stdout.trim(), `created geo.n at s3://${store.bucket}/${prefix}/geo.db/n (through the cluster at ${c.nats.url})`);
    });
  } finally {
    await c.stop();
  }
});

test("table location - a local warehouse's table is named by its absolute directory", async () => {
  const created = await nl(["table", "create", "geo.t", "--warehouse", local.path, ...COLUMNS]);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.stdout.trim(), `created geo.t at ${join(local.path, "geo.db", "t")}`);
  const json = await nl(["table", "describe", "geo.t", "--warehouse", local.path, "--json"]);
  assert.equal((JSON.parse(json.stdout) as { path: string }).path, join(local.path, "geo.db", "t"));
});
