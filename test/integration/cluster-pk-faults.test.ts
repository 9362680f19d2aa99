/**
 * A primary-key table through a 3-node cluster (real processes) under a load of upserts, updates and deletes over
 * few keys (each key changed many times, a fifth of the changes deletes), published by two producer clients with
 * the keys partitioned between them, while nodes are SIGKILLed mid-flush and mid-compaction:
 * - mid-flush: the leader in the middle of a commit (manifests written, not the snapshot), a writer between its
 *   flush's data file and its committable, then a third node by signal;
 * - mid-compaction: compactions asked of the table's leader as `natslake compact --nats` asks (the maintenance
 *   request, full), the two nodes killed mid-flush having come back as committers armed at
 *   `compact.rewrite.after-output` (after a rewritten bucket) and `compact.after-rewrite` (every output written,
 *   before the COMPACT commit) — a clean leader that runs a request is drained so that an armed one leads —; each
 *   armed leader dies in the compaction it took. Compactions land before (the first, while the first leader leads)
 *   and after (a clean leader at the end), so flushes land on top of compacted buckets.
 * Afterwards the table equals the model of every acknowledged change applied in stream order
 * (test/helpers/pk-model.ts: nothing lost, no key twice, no delete undone, no failed publish landed; an
 * unacknowledged change may or may not be there) — read by natslake and by pypaimon, which read the same rows —, and
 * at every snapshot each bucket's files form valid LSM levels (files above level 0 among them) and committed flushes
 * take increasing sequence numbers (test/helpers/pk-snapshots.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { startPkLoad, type PkLoad } from "../helpers/pk-load.ts";
import { judgePkRows, PK_COLUMNS, PK_KEY, publishOrderBreaks } from "../helpers/pk-model.ts";
import { checkPkSnapshots } from "../helpers/pk-snapshots.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import { paimonRead } from "../helpers/python.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { requestMaintenance } from "../../cluster/maintenance-client.ts";
import type { CompactSummary } from "../../src/maintenance/compact-summary.ts";
import type { TableAssignment } from "../../actors/wire/messages.ts";

const TABLE = "pkf.users";
const COLUMNS = ["id", "v", "src", "n"];

/** A seeded uniform source in [0, 1) (the keys and kinds of the load; a failure replays with the same draws). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}
/** n1 leads and dies at its 20th commit after its manifest lists (before the snapshot); n2 after its 12th flush's file. */
const LEADER_POINT = "commit.after-manifest-lists";
const WRITER_POINT = "writer.file.written";
/** Where the armed committers die mid-compaction: n1 after its 2nd bucket rewritten (of 3), n2 before the commit. */
const COMPACTION_ARMS: ReadonlyArray<[string, string, string]> = [
  ["n1", "compact.rewrite.after-output", "compact.rewrite.after-output:kill@2"],
  ["n2", "compact.after-rewrite", "compact.after-rewrite:kill@1"],
];

async function heartbeating(c: TestCluster, ids: string[]): Promise<void> {
  await waitFor(`${ids.join(", ")} heartbeating`, async () => {
    const kv = await new Kvm(c.nc).open("lake_members");
    const seen = new Set<string>();
    for await (const k of await kv.keys()) seen.add(k);
    return ids.every((id) => seen.has(id)) ? true : undefined;
  }, 60_000, 200);
}

async function assignment(c: TestCluster): Promise<TableAssignment | undefined> {
  const e = await (await new Kvm(c.nc).open("lake_assign")).get(TABLE);
  return e && e.operation === "PUT" ? e.json<TableAssignment>() : undefined;
}

const failpointFired = (c: TestCluster, id: string, point: string): boolean => new RegExp(`failpoint ${point.replace(/\./g, "\\.")}: SIGKILL`).test(c.logs(id));

/** Waits for node `id` to die at `point` (its log says so), then starts it again: clean, or as `extra` and `env` say. */
async function restartAfterFailpoint(c: TestCluster, id: string, point: string, extra: string[] = [], env: Record<string, string> = {}): Promise<void> {
  await c.waitExit(id, 90_000);
  assert.ok(failpointFired(c, id, point), `${id} died at ${point}`);
  await new Promise((r) => setTimeout(r, 500));
  c.startNode(id, extra, env);
}

/** Drains node `id` (SIGTERM: it hands its lease and buckets over) and starts it again, clean or with `env`. */
async function restart(c: TestCluster, id: string, extra: string[] = [], env: Record<string, string> = {}): Promise<void> {
  c.signal(id, "SIGTERM");
  await c.waitExit(id, 60_000);
  c.startNode(id, extra, env);
}

/** A full compaction asked of the table's leader, as `natslake compact --full --nats` asks: who took it, what came back. */
async function askFullCompaction(nc: NatsConnection): Promise<{ node: string | null; summary?: CompactSummary; error?: string }> {
  let node: string | null = null;
  try {
    const out = await requestMaintenance(nc, { type: "maintenance", v: 1, table: TABLE, task: "compact", options: { full: true } }, { prefix: "lake", acceptTimeoutMs: 30_000, silenceTimeoutMs: 10_000, onAccepted: (n) => (node = n) });
    return { node: out.node, summary: out.result as CompactSummary };
  } catch (e) {
    return { node, error: (e as Error).message };
  }
}

/** Full compactions asked until one lands (one finds nothing to do before the first flush is committed). */
async function landedCompaction(nc: NatsConnection, what: string): Promise<{ node: string; snapshotId: number }> {
  return waitFor(what, async () => {
    const r = await askFullCompaction(nc);
    return r.node !== null && r.summary?.snapshotId !== undefined && r.summary.snapshotId !== null ? { node: r.node, snapshotId: r.summary.snapshotId } : undefined;
  }, 120_000, 1000);
}

test("cluster PK faults - the leader and writers SIGKILLed mid-flush and mid-compaction under upserts and deletes: the table is the model of acknowledged changes", { timeout: 420_000 }, async (t) => {
  const c = await startCluster({ nodes: 0, commitInterval: "250ms" });
  const connections: NatsConnection[] = [];
  let load = null as PkLoad | null;
  try {
    await withNodeLogsOnFailure(c, async () => {
      c.startNode("n1", [], { FAILPOINTS: `${LEADER_POINT}:kill@20` });
      await heartbeating(c, ["n1"]);
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(TABLE), { columns: parseColumnList(PK_COLUMNS), primaryKeys: PK_KEY, options: { bucket: "3" } });
      await waitFor("n1 leading the table", async () => ((await assignment(c))?.leader === "n1" ? true : undefined), 60_000, 200);
      c.startNode("n2", [], { FAILPOINTS: `${WRITER_POINT}:kill@12` });
      c.startNode("n3");
      await heartbeating(c, ["n2", "n3"]);
      await waitFor("buckets spread over the three nodes", async () => {
        const a = await assignment(c);
        const owners = new Set(Object.values(a?.buckets ?? {}).filter((b) => b.state === "active").map((b) => b.node));
        return owners.size === 3 ? true : undefined;
      }, 60_000, 200);

      for (let i = 0; i < 2; i++) connections.push(await connect({ servers: c.nats.url, name: `pk-faults-producer-${i}` }));
      load = startPkLoad({ connections, table: TABLE, keys: 400, ratePerSec: 1000, durationMs: 240_000, maxChanges: 200_000, random: seeded(20261206) });
      let loading = true;
      void load.done.finally(() => (loading = false));

      // ---- mid-flush: a compaction lands first (n1 leads), then the armed points fire under the load; n1 and n2
      // come back as committers armed at the compaction points (below), and the third node is killed by signal once
      // both came back.
      await landedCompaction(c.nc, "a first compaction (n1 leads)");
      const [n1Arm, n2Arm] = COMPACTION_ARMS.map(([, , spec]) => ({ FAILPOINTS: spec }));
      await Promise.all([restartAfterFailpoint(c, "n1", LEADER_POINT, ["--roles", "committer"], n1Arm), restartAfterFailpoint(c, "n2", WRITER_POINT, ["--roles", "committer"], n2Arm)]);
      await new Promise((r) => setTimeout(r, 1000));
      c.signal("n3", "SIGKILL");
      await c.waitExit("n3", 10_000);
      c.startNode("n3");
      t.diagnostic(`mid-flush: n1 (leader) and n2 (writer) died at their points and came back as armed committers; n3 SIGKILLed after ${load.handedOver()} changes`);
      await heartbeating(c, ["n1", "n2", "n3"]);

      // ---- mid-compaction: compactions asked of the leader until each armed committer died in one (a clean leader
      // that runs one, n3, is drained, so that an armed one leads).
      const armed = new Map(COMPACTION_ARMS.map(([id, point]) => [id, point]));
      const rounds: string[] = [];
      for (const until = Date.now() + 180_000; armed.size > 0 && Date.now() < until; ) {
        const r = await askFullCompaction(c.nc);
        const point = r.node === null ? undefined : armed.get(r.node);
        if (r.node !== null && point !== undefined) {
          await c.waitExit(r.node, 30_000);
          assert.ok(failpointFired(c, r.node, point), `${r.node}, the leader, died at ${point} in the compaction it took (${r.error ?? "it answered"})`);
          assert.ok(r.error !== undefined, "the compaction of a leader killed mid-way did not answer done");
          armed.delete(r.node);
          c.startNode(r.node);
          rounds.push(`${r.node} died at ${point}`);
        } else if (r.node !== null) {
          rounds.push(`${r.node} (clean) ran it: ${r.summary ? `snapshot ${r.summary.snapshotId}` : r.error}; drained`);
          await restart(c, r.node);
        } else {
          // No leader now (a takeover after a kill or a drain): ask again shortly.
          if (rounds[rounds.length - 1] !== "nobody took it") rounds.push("nobody took it");
          await new Promise((r) => setTimeout(r, 500));
        }
      }
      assert.equal(armed.size, 0, `both armed leaders died mid-compaction: ${rounds.join("; ")}`);
      assert.ok(loading, `the kills happened under the load (${load.handedOver()} changes handed over by then)`);
      t.diagnostic(`mid-compaction: ${rounds.join("; ")}`);

      // ---- a compaction lands through the next leader; the writers flush on top of it until the load ends.
      const last = await landedCompaction(c.nc, "a compaction through the next leader");
      await new Promise((r) => setTimeout(r, 2000));
      load.stop();
      await load.done;
      await load.waitVisible(120_000);
      t.diagnostic(`the last compaction landed as snapshot ${last.snapshotId} on ${last.node}`);

      const changes = load.outcomes;
      const acked = changes.filter((x) => x.status === "ok" || x.status === "duplicate");
      assert.ok(acked.length > 3 * 400, `keys changed again and again (${acked.length} acknowledged changes over 400 keys)`);
      assert.ok(acked.filter((x) => x.op === "-D").length > acked.length / 10, "deletes among them");
      assert.deepEqual(publishOrderBreaks(changes), [], "every key's acknowledged changes are in the stream in publish order");

      const table = await catalog.getTable(parseIdentifier(TABLE));
      const ours: Array<Record<string, unknown>> = [];
      for await (const r of readRows(table, { projection: COLUMNS })) ours.push(r);
      const theirs = await paimonRead(c.warehouse, TABLE, { columns: COLUMNS });
      const nat = judgePkRows(changes, ours);
      const py = judgePkRows(changes, theirs);
      assert.equal(nat.findings, 0, `natslake: ${nat.describe()}`);
      assert.equal(py.findings, 0, `pypaimon: ${py.describe()}`);
      const text = (rows: Array<Record<string, unknown>>): string[] => rows.map((r) => COLUMNS.map((k) => String(r[k])).join("|")).sort();
      assert.deepEqual(text(theirs), text(ours), "natslake and pypaimon read the same rows");
      assert.ok(ours.length > 0, "rows read");
      // The judge is not blind: the table as of the snapshot before the last one that added changes lacks them.
      const ids = await table.snapshots.listIds();
      let lastAdding = ids[ids.length - 1]!;
      // (A COMPACT snapshot — the writers compact their buckets — changes no row, whatever its record counts say.)
      const addsChanges = async (id: number): Promise<boolean> => {
        const s = await table.snapshots.snapshot(id);
        return s.commitKind !== CommitKind.COMPACT && s.deltaRecordCount !== 0;
      };
      while (lastAdding > 1 && !(await addsChanges(lastAdding))) lastAdding--;
      const earlier: Array<Record<string, unknown>> = [];
      for await (const r of readRows(table, { projection: COLUMNS, snapshotId: lastAdding - 1 })) earlier.push(r);
      assert.ok(judgePkRows(changes, earlier).findings > 0, `snapshot ${lastAdding - 1}, before the last changes landed, is judged wrong`);
      t.diagnostic(`${changes.length} changes (${acked.length} acknowledged) over 400 keys; ${ours.length} rows, ${nat.ambiguous} keys after an unacknowledged change`);

      const snaps = await checkPkSnapshots(table);
      assert.deepEqual(snaps.unreadable, []);
      assert.deepEqual(snaps.levelProblems, []);
      assert.deepEqual(snaps.sequenceProblems, []);
      assert.deepEqual(snaps.snapshots, Array.from({ length: snaps.snapshots.length }, (_, i) => i + 1), "snapshot ids contiguous from 1");
      assert.ok(snaps.levels.compactSnapshots >= 2 && snaps.levels.withUpperLevels > 0, `compactions landed and put files above level 0 (${JSON.stringify(snaps.levels)})`);
      t.diagnostic(`${snaps.snapshots.length} snapshots (${snaps.levels.compactSnapshots} COMPACT): levels valid in ${snaps.levels.trees} bucket trees (${snaps.levels.withUpperLevels} with files above level 0, max level ${snaps.levels.maxLevel}); sequence chain unbroken`);
    });
  } finally {
    load?.stop();
    for (const nc of connections) await nc.close().catch(() => undefined);
    await c.stop();
  }
});
