/**
 * The cluster's admin create-table while JetStream answers slowly: the table is in the warehouse before its streams
 * are set up, so the node waits out passing JetStream failures (timeouts, an election) within a budget instead of
 * answering a failure that a retry would meet as "already exists"; past the budget it says what state the table is
 * in (exit 1, not bad input), and a definite refusal is reported at once.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/transport-node";
import { JetStreamApiError } from "@nats-io/jetstream";
import { Catalog } from "../../../src/table/catalog.ts";
import type { Table } from "../../../src/table/table.ts";
import { handleAdmin } from "../../../cluster/admin.ts";
import { tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

const create = (table: string): Uint8Array => new TextEncoder().encode(JSON.stringify({ type: "create-table", table, columns: "id BIGINT NOT NULL", options: { bucket: "1", "bucket-key": "id" } }));
const notUsed = (): Promise<never> => Promise.reject(new Error("not used"));

test("admin create-table - JetStream timeouts while setting up the streams are waited out", async () => {
  let calls = 0;
  const ensure = async (_t: Table): Promise<void> => {
    if (++calls <= 2) throw new errors.TimeoutError();
  };
  const reply = await handleAdmin(create("adm.slow"), { catalog: new Catalog(wh.path), ensure, resetOffsets: notUsed, dropTable: notUsed, ensureBudgetMs: 10_000 });
  assert.deepEqual(reply, { ok: true, result: { table: "adm.slow", path: (await new Catalog(wh.path).getTable({ database: "adm", table: "slow" })).root } });
  assert.equal(calls, 3);
});

test("admin create-table - past the budget the reply says the table exists and the nodes finish it (an IO failure, not bad input)", async () => {
  let calls = 0;
  const ensure = async (_t: Table): Promise<void> => {
    calls++;
    throw new errors.TimeoutError();
  };
  const reply = await handleAdmin(create("adm.stuck"), { catalog: new Catalog(wh.path), ensure, resetOffsets: notUsed, dropTable: notUsed, ensureBudgetMs: 600 });
  assert.equal(reply.ok, false);
  const r = reply as { error: string; kind: string };
  assert.equal(r.kind, "Io");
  assert.match(r.error, /table adm\.stuck is in the warehouse, but JetStream did not set up its streams within 1 s \(timeout\); the nodes finish it at their next table scan/);
  assert.ok(calls >= 2, `tried ${calls} times`);
});

test("admin create-table - a definite refusal of JetStream is answered at once", async () => {
  let calls = 0;
  const ensure = async (_t: Table): Promise<void> => {
    calls++;
    throw new JetStreamApiError({ code: 500, err_code: 10074, description: "replicas > 1 not supported in non-clustered mode" });
  };
  const reply = await handleAdmin(create("adm.refused"), { catalog: new Catalog(wh.path), ensure, resetOffsets: notUsed, dropTable: notUsed, ensureBudgetMs: 10_000 });
  assert.equal(reply.ok, false);
  assert.match((reply as { error: string }).error, /replicas > 1 not supported/);
  assert.equal(calls, 1);
});
