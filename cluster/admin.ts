/**
 * Admin requests (JSON request-reply on `<prefix>.ctl.admin`, served by reader nodes): create a table through a
 * running cluster — its warehouse files, its ingest stream and its metadata for producers — list or describe tables,
 * and drop one with everything the cluster keeps for it (cluster/table-drop.ts). Every failure becomes `{ok: false, error, kind}` naming what was wrong; nothing is half-created in a way
 * that a retry cannot finish (the stream and KV steps are idempotent).
 */
import { ensureError, ErrorKind, isLakeError, LakeError } from "../src/errors.ts";
import { parseColumnList, typeToSql } from "../src/format/data-types.ts";
import type { Catalog } from "../src/table/catalog.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import type { Identifier, Table } from "../src/table/table.ts";
import type { AdminReply, AdminRequest } from "../actors/wire/messages.ts";
import { isTransientJetStreamError } from "./nats/table-infra.ts";
import { CREATE_TABLE_ENSURE_BUDGET_MS } from "./admin-client.ts";

export interface AdminDeps {
  catalog: Catalog;
  ensure: (t: Table) => Promise<void>;
  resetOffsets: (t: Table, from: "earliest" | "latest") => Promise<unknown>;
  /** Drops the table and everything the cluster keeps for it (cluster/table-drop.ts); null: nothing to drop. */
  dropTable: (id: Identifier, ifExists: boolean) => Promise<unknown>;
  /**
   * How long create-table keeps setting up a new table's streams while JetStream fails for a passing reason (default
   * CREATE_TABLE_ENSURE_BUDGET_MS): a loaded NATS cluster can take longer than one API timeout, and the table is
   * already in the warehouse, so an early failure would leave a caller whose retry meets "already exists".
   */
  ensureBudgetMs?: number;
}

/** Runs `ensure` until it succeeds, fails for a reason that is not passing, or the budget is spent. */
async function ensureWithin(t: Table, ensure: (t: Table) => Promise<void>, budgetMs: number): Promise<void> {
  const deadline = Date.now() + budgetMs;
  for (let waitMs = 250; ; waitMs = Math.min(4000, waitMs * 2)) {
    try {
      return await ensure(t);
    } catch (e) {
      if (!isTransientJetStreamError(e)) throw e;
      if (Date.now() + waitMs > deadline) {
        throw new LakeError(
          ErrorKind.Io,
          `table ${t.name} is in the warehouse, but JetStream did not set up its streams within ${Math.round(budgetMs / 1000)} s (${ensureError(e).message}); ` +
            "the nodes finish it at their next table scan (every 2 s): `natslake status` lists the table once it is served",
          { cause: e },
        );
      }
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}

/**
 * Options written into every table created through the cluster (explicit options win; Java and pypaimon see them).
 *
 * Retention for tables created through the cluster, which commits 4–10 times a second. Paimon's defaults (at least
 * 10, at most 2^31 snapshots, kept 1 h) would keep 14k–36k snapshots — each with two manifest lists — and make every
 * listing of the table's metadata slow. These keep 10 minutes (enough for a consumer or a reader of an older snapshot
 * to finish and for time travel over a deploy), capped at 3,000 snapshots (5–12 minutes at those rates), and let a
 * run (after every commit) expire up to 100, so expiration catches up after a pause.
 *
 * The stop trigger of primary-key buckets (`num-sorted-run.stop-trigger`: Paimon's default is the compaction trigger
 * + 3 = 8). A cluster commits every 250 ms, so a bucket under load adds four level-0 runs a second, and a bucket
 * compacts one job at a time (as Paimon's writer does): while one job runs, its runs grow by four a second from the
 * compaction trigger (5). Merging a bucket's levels into its top level (size amplification, about every 6 s at
 * 12,500 upserts/s into 250,000 keys) took 1.3–1.9 s, and the node's other bucket waited as long for the compaction
 * slot — with 8, both buckets stood still for 1–2.5 s at a time and publish → visible p99 was 1.3–1.6 s. 16 leaves
 * 11 runs, ~2.75 s of one job and its wait at that rate, so ingest does not reach it; compaction still starts at 5, so
 * a bucket is back to a few runs once the job lands, and reads merge more runs only during the job. Paimon documents
 * raising it (to 2^31 − 1 for fully asynchronous compaction) for write throughput.
 */
export const CLUSTER_TABLE_DEFAULTS: Readonly<Record<string, string>> = {
  "snapshot.time-retained": "10 min",
  "snapshot.num-retained.min": "10",
  "snapshot.num-retained.max": "3000",
  "snapshot.expire.limit": "100",
  "num-sorted-run.stop-trigger": "16",
};

function parseRequest(data: Uint8Array): AdminRequest {
  const o = JSON.parse(new TextDecoder().decode(data)) as AdminRequest;
  if (typeof o !== "object" || o === null || typeof (o as { type?: unknown }).type !== "string") throw new Error("an admin request is a JSON object with a 'type'");
  return o;
}

export async function handleAdmin(data: Uint8Array, d: AdminDeps): Promise<AdminReply> {
  try {
    const req = parseRequest(data);
    switch (req.type) {
      case "create-table": {
        const id = parseIdentifier(req.table);
        const t = await d.catalog.createTable(id, {
          columns: parseColumnList(req.columns),
          partitionKeys: req.partitionKeys ?? [],
          primaryKeys: req.primaryKeys ?? [],
          options: { ...CLUSTER_TABLE_DEFAULTS, ...(req.options ?? {}) },
        });
        await ensureWithin(t, d.ensure, d.ensureBudgetMs ?? CREATE_TABLE_ENSURE_BUDGET_MS);
        return { ok: true, result: { table: t.name, path: t.location } };
      }
      case "list-tables": {
        const out: string[] = [];
        for (const db of await d.catalog.listDatabases()) for (const t of await d.catalog.listTables(db)) out.push(`${db}.${t}`);
        return { ok: true, result: out };
      }
      case "describe-table": {
        const t = await d.catalog.getTable(parseIdentifier(req.table));
        return {
          ok: true,
          result: { table: t.name, columns: t.schema.fields.map((f) => ({ name: f.name, type: typeToSql(f.type) })), partitionKeys: t.partitionKeys, options: t.schema.options },
        };
      }
      case "reset-offsets": {
        if (req.from !== "earliest" && req.from !== "latest") return { ok: false, error: `reset-offsets: 'from' is earliest or latest, not '${String(req.from)}'`, kind: "DataInvalid" };
        const t = await d.catalog.getTable(parseIdentifier(req.table));
        return { ok: true, result: await d.resetOffsets(t, req.from) };
      }
      case "drop-table": {
        const result = await d.dropTable(parseIdentifier(req.table), req.ifExists === true);
        return { ok: true, result };
      }
      default:
        return { ok: false, error: `unknown admin request type '${(req as { type: string }).type}'`, kind: "DataInvalid" };
    }
  } catch (e) {
    const err = ensureError(e);
    return { ok: false, error: err.message, kind: isLakeError(err) ? err.kind : "DataInvalid" };
  }
}
