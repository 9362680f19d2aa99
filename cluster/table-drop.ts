/**
 * Dropping a table a cluster serves: its files, and everything the cluster keeps for it — the ingest and commit
 * streams, its keys in the KV buckets (tables, assign with its `released.*` keys, snap, router, dlq_replays) and its
 * dead letters — so that nothing says "no leader" for a table that is gone, producers are told it is not registered,
 * and a table created again under the same name starts clean (no old rows routed into it, no old committables
 * committed, no old letters to replay).
 *
 * Through the cluster (`natslake table drop --nats`, the admin request `drop-table`), in this order:
 * 1. the table's key in KV `<p>_tables` goes: producers and maintenance no longer find the table, and a node that
 *    notices the drop by itself (below) knows someone else is cleaning up;
 * 2. its `schema/` goes: it is no longer a table, so no node's table scan starts it again;
 * 3. every live node stops serving it and says so (cluster/table-stop.ts); one that does not answer stops the drop —
 *    its files, streams and metadata are left, and running the drop again finishes it;
 * 4. its directory goes, with whatever a stopped service wrote after step 2;
 * 5. its streams, KV keys and dead letters go.
 * A drop that is run again finishes what an interrupted one left (each step skips what is not there).
 *
 * On the warehouse only (`natslake table drop` without `--nats`, or another engine): each node serving the table
 * notices at its next table scan that the table's schema is gone and stops its services there; the first to take
 * the table's key out of KV `<p>_tables` (compare-and-set on its revision, and only while the warehouse still has no
 * such table) then does steps 3-5. A table created again within those seconds may meet them; `--nats` does it at once.
 */
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { Catalog } from "../src/table/catalog.ts";
import { identifierText, type Identifier } from "../src/table/table.ts";
import type { Subjects } from "./nats/subjects.ts";
import { stopTableEverywhere, type StopOutcome } from "./table-stop.ts";
import { DROP_TABLE_STOP_TIMEOUT_MS } from "./admin-client.ts";
import { isJetStreamError as isApiError, STREAM_NOT_FOUND } from "./nats/jetstream-codes.ts";


export interface TableDropDeps {
  nc: NatsConnection;
  subjects: Subjects;
  catalog: Catalog;
  /** The node ids of the live members (heartbeat within the member timeout). */
  liveMembers(): Promise<string[]>;
  /** How long each node may take to stop serving the table (default DROP_TABLE_STOP_TIMEOUT_MS). */
  stopTimeoutMs?: number;
}

/** What the cluster kept for a table and a drop removed. */
export interface RemovedState {
  streams: string[];
  /** KV keys purged (across the cluster's buckets). */
  kvKeys: number;
  /** Dead letters of the table purged from the DLQ stream. */
  deadLetters: number;
}

export interface DropResult extends RemovedState {
  table: string;
  path: string;
  /** Whether the warehouse held the table's directory. */
  files: boolean;
  /** Nodes that were serving it and stopped. */
  stoppedOn: string[];
}

/**
 * Drops `id` through the cluster (steps 1-5 of the module comment). Nothing of it anywhere: NotFound, or null with
 * `ifExists`. A table whose name cannot be a subject token was never served by a cluster: only its files go.
 */
export async function dropTable(d: TableDropDeps, id: Identifier, o: { ifExists?: boolean } = {}): Promise<DropResult | null> {
  const name = identifierText(id);
  const root = d.catalog.tablePath(id);
  const files = await d.catalog.io.exists(root);
  const served = subjectSafe(d.subjects, id);
  if (!files && !(served && (await presentOnNats(d.nc, d.subjects, id)))) {
    if (o.ifExists) return null;
    throw new LakeError(ErrorKind.NotFound, `table '${name}' does not exist: neither in the warehouse ${d.catalog.uri} nor on NATS (prefix ${d.subjects.prefix})`);
  }
  let stopped: StopOutcome = { stopped: [], idle: [], silent: [] };
  if (served) {
    await purgeKeys(d.nc, d.subjects.tablesKv, d.subjects.tableKey(id));
    if (files) await d.catalog.io.deleteTree(join(root, "schema"));
    stopped = await stopTableEverywhere(d.nc, d.subjects, await d.liveMembers(), name, d.stopTimeoutMs ?? DROP_TABLE_STOP_TIMEOUT_MS);
    if (stopped.silent.length > 0)
      throw new LakeError(
        ErrorKind.Unexpected,
        `${name}: ${stopped.silent.map((s) => `node ${s.node}: ${s.why}`).join("; ")} — it may still be serving the table, so its files, streams and metadata were left ` +
          "(the table is no longer listed: no node starts it again); drop it again once every node answers",
      );
  }
  if (files) await d.catalog.io.deleteTree(root);
  const removed = served ? await removeTableState(d.nc, d.subjects, id) : { streams: [], kvKeys: 0, deadLetters: 0 };
  return { table: name, path: root, files, stoppedOn: stopped.stopped, ...removed };
}

/**
 * A node noticed that `id`, which it served, is gone from the warehouse (dropped there) and has stopped its own
 * services: takes the cleanup (the module comment's last paragraph) when nobody else has, and runs it. Null when
 * another node (or a drop through the cluster) has it, or the table exists again.
 */
export async function cleanUpDroppedTable(d: TableDropDeps, id: Identifier): Promise<(RemovedState & { stoppedOn: string[]; silent: string[] }) | null> {
  const kv = await openKv(d.nc, d.subjects.tablesKv);
  const key = d.subjects.tableKey(id);
  const entry = kv === null ? null : await kv.get(key);
  if (kv === null || entry === null || entry.operation !== "PUT") return null;
  // Read before looking at the warehouse: a table created again since writes its schema before its key (a node's
  // table scan registers it), so either it is seen here or the compare-and-set below fails.
  if (await d.catalog.tableExists(id)) return null;
  try {
    await kv.purge(key, { previousSeq: entry.revision });
  } catch {
    return null; // changed since it was read: another node took it, or the table was registered again
  }
  const stopped = await stopTableEverywhere(d.nc, d.subjects, await d.liveMembers(), identifierText(id), d.stopTimeoutMs ?? DROP_TABLE_STOP_TIMEOUT_MS);
  // What a service wrote into the dropped directory before it stopped (a snapshot, data files), unless it is a table again.
  if (!(await d.catalog.tableExists(id))) await d.catalog.io.deleteTree(d.catalog.tablePath(id));
  return { ...(await removeTableState(d.nc, d.subjects, id)), stoppedOn: stopped.stopped, silent: stopped.silent.map((s) => s.node) };
}

/** Removes what the cluster keeps on NATS for `id` (streams, KV keys, dead letters); what is not there is skipped. */
export async function removeTableState(nc: NatsConnection, subjects: Subjects, id: Identifier): Promise<RemovedState> {
  const jsm = await jetstreamManager(nc);
  const streams: string[] = [];
  for (const stream of [subjects.ingestStream(id), subjects.commitStream(id)]) if (await deleteStream(jsm, stream)) streams.push(stream);
  const key = subjects.tableKey(id);
  let kvKeys = 0;
  for (const [bucket, keys] of [
    [subjects.tablesKv, [key]],
    [subjects.assignKv, [key, `released.${key}.*`]],
    [subjects.snapKv, [key]],
    [subjects.routerKv, [key]],
    [subjects.dlqReplaysKv, [`${key}.*`]],
    [subjects.attemptsKv, [`${key}.*`]],
  ] as const) {
    for (const k of keys) kvKeys += await purgeKeys(nc, bucket, k);
  }
  let deadLetters = 0;
  try {
    deadLetters = (await jsm.streams.purge(subjects.dlqStream, { filter: subjects.dlq(id) })).purged;
  } catch (e) {
    if (!isApiError(e, STREAM_NOT_FOUND)) throw e;
  }
  return { streams, kvKeys, deadLetters };
}

/** Whether the table's name can be a subject token: a cluster can have served it (cluster/nats/subjects.ts). */
const subjectSafe = (subjects: Subjects, id: Identifier): boolean => {
  try {
    subjects.tableKey(id);
    return true;
  } catch {
    return false;
  }
};

/** Whether the cluster has anything of the table: its key in KV `<p>_tables`, or one of its streams. */
async function presentOnNats(nc: NatsConnection, subjects: Subjects, id: Identifier): Promise<boolean> {
  const kv = await openKv(nc, subjects.tablesKv);
  const entry = kv === null ? null : await kv.get(subjects.tableKey(id));
  if (entry !== null && entry.operation === "PUT") return true;
  const jsm = await jetstreamManager(nc);
  for (const stream of [subjects.ingestStream(id), subjects.commitStream(id)]) {
    try {
      await jsm.streams.info(stream);
      return true;
    } catch (e) {
      if (!isApiError(e, STREAM_NOT_FOUND)) throw e;
    }
  }
  return false;
}

async function deleteStream(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    return await jsm.streams.delete(name);
  } catch (e) {
    if (isApiError(e, STREAM_NOT_FOUND)) return false;
    throw e;
  }
}

/** The KV bucket, or null when it does not exist. */
async function openKv(nc: NatsConnection, bucket: string): Promise<KV | null> {
  try {
    const kv = await new Kvm(nc).open(bucket);
    await kv.status(); // open() binds without looking
    return kv;
  } catch (e) {
    if (isApiError(e, STREAM_NOT_FOUND) || /stream not found/i.test(String(e))) return null;
    throw e;
  }
}

/** Purges the keys `pattern` matches (one key, or a `*` filter) in `bucket`; how many there were. */
async function purgeKeys(nc: NatsConnection, bucket: string, pattern: string): Promise<number> {
  const kv = await openKv(nc, bucket);
  if (kv === null) return 0;
  const keys: string[] = [];
  for await (const k of await kv.keys(pattern)) keys.push(k);
  for (const k of keys) await kv.purge(k);
  return keys.length;
}

