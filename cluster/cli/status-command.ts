/**
 * `natslake status --nats URL [--warehouse DIR] [--json]`: a live cluster at a glance — members and roles (live:
 * heartbeat within the member timeout), per table its leader and epoch, bucket assignments with owner epochs and
 * the messages pending in each bucket's subject (committed ones are purged, so what is left is not committed yet),
 * and, with the warehouse, the latest snapshot, its age, the live files and the consumers with their lag.
 */
import type { Command } from "commander";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { MemberHeartbeat, TableAssignment } from "../../actors/wire/messages.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { consumerLag } from "../../src/table/consumers.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { DEFAULT_PREFIX, Subjects } from "../nats/subjects.ts";
import { openKv } from "../nats/table-infra.ts";
import { isJetStreamError, STREAM_NOT_FOUND } from "../nats/jetstream-codes.ts";
import { redactUrl } from "../nats/connect-errors.ts";
import { catalogFrom, CliError, connectOrExplain, durationArg, renderTable, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";

interface StatusOpts extends WarehouseOpts {
  nats: string;
  prefix: string;
  json?: boolean;
  memberTimeout: number;
}

interface TableStatus {
  table: string;
  leader: string | null;
  leaderEpoch: number | null;
  buckets: Array<{ bucket: number; node: string; ownerEpoch: number; state: string; pendingMessages: number | null }>;
  latestSnapshot?: number | null;
  lastCommitAgeSeconds?: number | null;
  liveFiles?: number;
  consumers?: Array<{ id: string; nextSnapshot: number; snapshotsBehind: number; secondsBehind: number }>;
}

/**
 * The entries of one of the cluster's KV buckets. A bucket that does not exist means no node ever ran with this prefix
 * on this NATS: said in those words (a wrong --nats or --prefix is the usual cause), not as JetStream's error.
 */
async function entries<T>(nc: NatsConnection, bucket: string, o: StatusOpts): Promise<Array<{ key: string; value: T }>> {
  const kv = await openKv(nc, bucket);
  const out: Array<{ key: string; value: T }> = [];
  const keys: string[] = [];
  try {
    for await (const k of await kv.keys()) keys.push(k);
  } catch (e) {
    if (!isJetStreamError(e, STREAM_NOT_FOUND)) throw e;
    throw new CliError(`no natslake cluster with prefix '${o.prefix}' at ${redactUrl(o.nats)}: its KV bucket '${bucket}' does not exist (nodes create it when they start; check --nats and --prefix)`, { cause: e });
  }
  for (const key of keys.sort()) {
    const e = await kv.get(key);
    if (e === null || e.operation !== "PUT") continue;
    try {
      out.push({ key, value: e.json<T>() });
    } catch {
      // not ours
    }
  }
  return out;
}

export function registerStatusCommand(program: Command, out: (s: string) => void): void {
  program
    .command("status")
    .description("members, leaders, bucket assignments and pending messages of a live cluster; with --warehouse also snapshots, files and consumer lag")
    .requiredOption("--nats <url>", "the cluster's NATS server(s)")
    .option("--prefix <p>", "the cluster's subject prefix", DEFAULT_PREFIX)
    .option("--member-timeout <duration>", "a member whose last heartbeat is older is shown as gone", durationArg, 3000)
    .option("--json", "one JSON document")
    .option(WAREHOUSE_FLAG, `${WAREHOUSE_HELP}: adds snapshots, live files and consumers`)
    .addHelpText("after", "\nExamples:\n  natslake status --nats nats://127.0.0.1:4222\n  natslake status --nats nats://127.0.0.1:4222 --warehouse /data/wh --json\n")
    .action(async (o: StatusOpts) => {
      const subjects = new Subjects(o.prefix);
      const nc = await connectOrExplain({ ...o, nats: o.nats }, { name: "natslake-status" });
      try {
        const now = Date.now();
        const members = (await entries<MemberHeartbeat>(nc, subjects.membersKv, o)).map(({ value: m }) => ({
          node: m.nodeId,
          roles: m.roles,
          live: now - m.at <= o.memberTimeout,
          heartbeatAgeSeconds: Math.max(0, (now - m.at) / 1000),
          draining: m.draining,
          drained: m.drained === true,
          leading: m.leading ?? [],
        }));
        const jsm = await jetstreamManager(nc);
        const warehouse = o.warehouse ?? process.env["NATSLAKE_WAREHOUSE"];
        const catalog = warehouse !== undefined ? catalogFrom({ warehouse }, { mustExist: true }) : null;
        const tables: TableStatus[] = [];
        for (const { value: a } of await entries<TableAssignment>(nc, subjects.assignKv, o)) {
          // The bucket also holds the `released.<table>.<bucket>` records of hand-offs: not assignments.
          if (typeof a.table !== "string" || typeof a.buckets !== "object" || a.buckets === null) continue;
          const id = parseIdentifier(a.table);
          // Messages left per bucket subject of the ingest stream (one request for all subjects).
          let perSubject: Record<string, number> = {};
          try {
            const info = await jsm.streams.info(subjects.ingestStream(id), { subjects_filter: `${subjects.ingestRaw(id)}.*` });
            perSubject = info.state.subjects ?? {};
          } catch {
            perSubject = {};
          }
          const st: TableStatus = {
            table: a.table,
            leader: a.leader ?? null,
            leaderEpoch: a.leaderEpoch ?? null,
            buckets: Object.entries(a.buckets)
              .map(([b, x]) => ({ bucket: Number(b), node: x.node, ownerEpoch: x.epoch, state: x.state, pendingMessages: perSubject[subjects.ingestBucket(id, Number(b))] ?? 0 }))
              .sort((x, y) => x.bucket - y.bucket),
          };
          if (catalog !== null) {
            const t = await catalog.getTable(id).catch(() => null);
            if (t !== null) {
              const latest = await t.snapshots.latest();
              st.latestSnapshot = latest?.id ?? null;
              st.lastCommitAgeSeconds = latest === null ? null : Math.max(0, (now - latest.timeMillis) / 1000);
              st.liveFiles = latest === null ? 0 : (await new ManifestStore(t).readLiveEntries(latest)).length;
              st.consumers = (await consumerLag(t, now)).map((l) => ({ id: l.id, nextSnapshot: l.nextSnapshot, snapshotsBehind: l.snapshotsBehind, secondsBehind: Math.round(l.secondsBehind * 10) / 10 }));
            }
          }
          tables.push(st);
        }
        if (o.json) {
          out(JSON.stringify({ members, tables }, null, 2));
          return;
        }
        // A member whose heartbeat is older than the member timeout is gone (killed, partitioned): not listed.
        const live = members.filter((m) => m.live);
        const gone = members.filter((m) => !m.live);
        out(renderTable(["node", "roles", "state", "heartbeat", "leading"], live.map((m) => [m.node, m.roles.join(","), m.drained ? "drained" : m.draining ? "draining" : "live", `${m.heartbeatAgeSeconds.toFixed(1)} s ago`, m.leading.join(",")])));
        if (gone.length > 0) out(`(gone: ${gone.map((m) => `${m.node}, last heartbeat ${m.heartbeatAgeSeconds.toFixed(0)} s ago`).join("; ")})`);
        for (const t of tables) {
          const head = [`${t.table}: leader ${t.leader ?? "none"} (epoch ${t.leaderEpoch ?? "-"})`];
          if (t.latestSnapshot !== undefined) head.push(`latest snapshot ${t.latestSnapshot ?? "none"}${t.lastCommitAgeSeconds != null ? ` (${t.lastCommitAgeSeconds.toFixed(1)} s ago)` : ""}, ${t.liveFiles} live files`);
          out("");
          out(head.join("; "));
          out(renderTable(["bucket", "node", "owner epoch", "state", "pending messages"], t.buckets.map((b) => [b.bucket, b.node, b.ownerEpoch, b.state, b.pendingMessages ?? "?"])));
          if (t.consumers !== undefined && t.consumers.length > 0) out(renderTable(["consumer", "next snapshot", "snapshots behind", "seconds behind"], t.consumers.map((c) => [c.id, c.nextSnapshot, c.snapshotsBehind, c.secondsBehind])));
        }
      } finally {
        await nc.close().catch(() => undefined);
      }
    });
}
