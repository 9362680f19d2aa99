/**
 * The chaos verifier of the default workload (numbered append rows, chaos/load-child.ts): judges a run from the
 * history the load generator and the subscriber wrote and from the final state, independently of the write path.
 * The checks that do not depend on the rows — the snapshot chain (chaos/snapshot-chain.ts), recovery
 * (chaos/recovery.ts), the subscriber (chaos/subscriber-check.ts), compaction, orphans and streams
 * (chaos/warehouse-check.ts) — are shared with the primary-key workload's verifier (chaos/pk-verifier.ts).
 *
 * Sources:
 * - the load history (chaos/load-child.ts): every row's outcome, its bucket and stream sequence when acknowledged,
 *   and the time it was handed to the client; poison rows and payloads that must end in the dead-letter stream;
 * - the table, read twice: through natslake's reader (src/scan/read.ts, bucket by bucket in sequence order) and
 *   through pypaimon (test/helpers/python.ts) — row counts and id multisets must agree;
 * - every snapshot file and every manifest it references (src/table), and every data file any snapshot references,
 *   read with pyarrow (chaos/py/check_files.py, not natslake's Parquet code): present, the declared size and row
 *   count, and the ids inside;
 * - the dead-letter stream `LAKE_DLQ` (subject lake.dlq.<db>.<table>), read message by message;
 * - the subscriber's notifications (test/helpers/subscriber-child.ts, its own process, attached to a NATS node the
 *   built-in nemeses never kill: notifications are core NATS, and a disconnected subscriber misses those published
 *   meanwhile — snapshots-client.ts documents that; I6 is about the committer's side).
 *
 * Invariants (reliability.md §3):
 * - I1 every acknowledged row is in the table (poison: in the DLQ); `lost` counts the others, minus I7's;
 * - I2 nothing twice (table and DLQ together), no row that was never published, no definite failure that landed;
 * - order: per bucket, acknowledged rows of one source (client, raw) read back in increasing id (publish) order;
 * - I3 snapshot ids contiguous (from 1, or from the earliest one expiration left), every snapshot parses, `natslake.epoch` non-decreasing, per bucket the offset
 *   and owner epoch never go back; every retained snapshot reads whole: its manifest lists, manifests and every data
 *   file it reads (also those added by snapshots expired since) exist, a data file with the size and row count its
 *   manifest entry declares (snapshots below the retained ones — the range an expiration killed by the final stop
 *   was removing — may read deleted files: reported, not failed); every acknowledged row found in the file a
 *   snapshot added sits in the bucket the producer routed it to, with a stream sequence in (previous snapshot's
 *   offset, this one's];
 * - I4 what readers see is what the latest snapshot references: natslake's read = the snapshot's record count = the
 *   sum of its files' row counts = pypaimon's read; notified snapshot ids exist;
 * - I5 recovery within budget (lease TTL + commit interval + 10 s): for each fault, the time from its injection
 *   (crashes, pauses, node loss) or healing (Redis down) until every bucket committed a row handed to the producer
 *   after that moment; when faults overlap, measured from the latest fault event before recovery completed;
 * - I6 the subscriber's notifications are strictly increasing, without gaps, up to the last snapshot;
 * - I7 JetStream kept its streams and every acknowledged message natslake had not committed. An acknowledged row
 *   missing from the table is blamed on NATS only when the proof is sound: natslake purges a bucket's subject only
 *   up to the offset committed in a snapshot (and raw messages only after routing them), so a message whose
 *   sequence lies above the committed offset (raw: above the router's progress) and that the stream no longer holds
 *   was lost by JetStream. Every other missing row counts as `lost` (natslake's fault).
 * - compaction (judged when the scenario sets `expectCompaction`): COMPACT snapshots landed (notified or on disk), a
 *   live file of the latest snapshot came from a compaction, and no bucket ends with more live files than the bound.
 * Orphans (data files no snapshot references, unreferenced manifests, hidden temp files) are reported, not judged:
 * crashed flushes and rejected committables leave them by design (reliability.md R6).
 */
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import { planScan } from "../src/scan/plan.ts";
import { readRows } from "../src/scan/read.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { paimonRead } from "../test/helpers/python.ts";
import { judgeRecovery, type Publish } from "./recovery.ts";
import { chainInvariant, pushSample as push, walkSnapshotChain } from "./snapshot-chain.ts";
import { ghostNotifications, judgeSubscriber, readSubscriber } from "./subscriber-check.ts";
import { compactionCheck, countOrphans, missingStreams, readDeadLetters, streamPresence } from "./warehouse-check.ts";
import type { PkEngine } from "../test/helpers/pk-engines.ts";
import type { ChaosReport, CompactionExpectation, FaultRecord, InvariantResult, LoadDoneLine, LoadLine, LoadPoisonLine, RowOutcome } from "./types.ts";

export interface VerifyInput {
  warehouse: string;
  table: string;
  nc: NatsConnection;
  loadFile: string;
  subscriberFile: string;
  faults: FaultRecord[];
  recoveryBudgetMs: number;
  /** When the runner stopped every node (epoch ms): where the retention options put the retained snapshots. */
  stoppedAt?: number;
  /** Judge writer-side compaction (the scenario set it up to run often): see `Scenario.expectCompaction`. */
  expectCompaction?: CompactionExpectation;
  /** The primary-key workload's merge engine (chaos/pk-verifier.ts; default deduplicate). */
  engine?: PkEngine;
}

export type Verdict = Pick<
  ChaosReport,
  | "rows"
  | "lost"
  | "duplicated"
  | "reordered"
  | "samples"
  | "infraLoss"
  | "snapshotsChecked"
  | "filesChecked"
  | "orphanFiles"
  | "orphanManifests"
  | "tempFiles"
  | "subscriber"
  | "invariants"
  | "pypaimonRows"
  | "recoveryBudgetMs"
  | "compaction"
  | "pk"
>;

/** A row's outcome as the load saw it. */
type RowInfo = Publish;

const acked = (s: RowOutcome): boolean => s === "ok" || s === "duplicate";

/** The load history. */
export function readLoadHistory(file: string): { rows: Map<number, RowInfo>; poison: LoadPoisonLine[]; done: LoadDoneLine | null } {
  const rows = new Map<number, RowInfo>();
  const poison: LoadPoisonLine[] = [];
  let done: LoadDoneLine | null = null;
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    // no history: every count is zero and I1 reports it
  }
  for (const raw of text.split("\n")) {
    if (raw.trim() === "") continue;
    const l = JSON.parse(raw) as LoadLine;
    if (l.kind === "rows") {
      for (const id of l.ids) rows.set(id, { status: l.status, src: l.src, bucket: l.bucket, at: l.at, ...(l.seq === undefined ? {} : { seq: l.seq }) });
    } else if (l.kind === "poison") poison.push(l);
    else if (l.kind === "done") done = l;
  }
  return { rows, poison, done };
}

export async function verify(v: VerifyInput): Promise<Verdict> {
  const subjects = new Subjects();
  const id = parseIdentifier(v.table);
  const jsm = await jetstreamManager(v.nc, { timeout: 10_000 });
  const inv: Record<string, InvariantResult> = {};
  const { rows, poison } = readLoadHistory(v.loadFile);
  const table: Table = await new Catalog(v.warehouse).getTable(id);

  // ---- the table through natslake's reader, bucket by bucket (sequence order within a bucket)
  const counts = new Map<number, number>();
  const perBucket = new Map<number, Array<{ id: number; src: string }>>();
  const plan = await planScan(table);
  let natslakeRows = 0;
  for (const split of plan.splits) {
    const list = perBucket.get(split.bucket) ?? [];
    perBucket.set(split.bucket, list);
    for await (const row of readRows(table, { buckets: [split.bucket], projection: ["id", "src"] })) {
      const rid = Number(row["id"]);
      list.push({ id: rid, src: String(row["src"]) });
      counts.set(rid, (counts.get(rid) ?? 0) + 1);
      natslakeRows++;
    }
  }

  // ---- the same table through pypaimon
  let pypaimonRows: number | null = null;
  let pyDetail = "";
  try {
    const theirs = await paimonRead(v.warehouse, v.table, { columns: ["id"], timeoutMs: 600_000 });
    pypaimonRows = theirs.length;
    const pyCounts = new Map<number, number>();
    for (const r of theirs) pyCounts.set(Number(r["id"]), (pyCounts.get(Number(r["id"])) ?? 0) + 1);
    let differ = 0;
    for (const [k, n] of counts) if (pyCounts.get(k) !== n) differ++;
    for (const [k, n] of pyCounts) if (counts.get(k) !== n) differ++;
    pyDetail = differ === 0 ? `pypaimon reads the same ${pypaimonRows} rows` : `pypaimon and natslake disagree on ${differ} ids (pypaimon ${pypaimonRows} rows, natslake ${natslakeRows})`;
  } catch (e) {
    pyDetail = `pypaimon could not read the table: ${(e as Error).message.split("\n")[0]}`;
  }

  // ---- dead letters
  const letters = await readDeadLetters(jsm, subjects, v.table);
  const dlqIds = new Map<number, number>();
  const dlqText: string[] = [];
  for (const l of letters) {
    const o = l.original;
    if (o !== null && typeof o === "object" && !Array.isArray(o)) {
      const rid = Number((o as Record<string, unknown>)["id"]);
      if (Number.isSafeInteger(rid)) dlqIds.set(rid, (dlqIds.get(rid) ?? 0) + 1);
      dlqText.push(JSON.stringify(o));
    } else if (typeof o === "string") {
      // An undecodable payload, kept base64-encoded.
      dlqText.push(Buffer.from(o, "base64").toString("latin1"));
    }
  }

  // ---- snapshots, manifests and files (I3) and the per-snapshot row ranges
  const walk = await walkSnapshotChain(table, { column: "id", ...(v.stoppedAt !== undefined ? { stoppedAt: v.stoppedAt } : {}) });
  const { ids, snaps, latest } = walk;
  const snapById = new Map(snaps.map((s) => [s.id, s]));
  const outOfRange: string[] = [];
  let outOfRangeCount = 0;
  for (const a of walk.added) {
    const f = walk.files.get(a.path);
    const cur = snapById.get(a.snap);
    if (!f || !f.ok || !cur) continue;
    const prev = snapById.get(a.snap - 1);
    for (const raw of f.ids) {
      const info = rows.get(Number(raw));
      if (!info || info.bucket < 0 || info.seq === undefined) continue;
      // A compaction's output holds rows committed by earlier snapshots: anything up to the snapshot's offset.
      const lo = a.compacted ? 0 : (prev?.offsets.get(a.bucket) ?? 0);
      const hi = cur.offsets.get(a.bucket) ?? 0;
      if (info.bucket !== a.bucket || info.seq <= lo || info.seq > hi) {
        outOfRangeCount++;
        push(outOfRange, `row ${raw} (bucket ${info.bucket}, seq ${info.seq}) in snapshot ${a.snap}'s ${a.compacted ? "compacted " : ""}file of bucket ${a.bucket} covering (${lo}, ${hi}]`);
      }
    }
  }
  if (outOfRangeCount > 0) walk.problems.push(`${outOfRangeCount} rows outside their snapshot's offset range or bucket, e.g. ${outOfRange.slice(0, 3).join("; ")}`);
  inv["I3"] = chainInvariant(walk, "; rows within their snapshot's offsets");

  // ---- I1 / I2 / order
  const lostIds: number[] = [];
  const dupIds: number[] = [];
  let duplicated = 0;
  let failedButPresent = 0;
  let unexpected = 0;
  let ackedCount = 0;
  let unknownCount = 0;
  let failedCount = 0;
  const lostRows: number[] = [];
  for (const [rid, info] of rows) {
    const n = (counts.get(rid) ?? 0) + (dlqIds.get(rid) ?? 0);
    if (acked(info.status)) {
      ackedCount++;
      if ((counts.get(rid) ?? 0) === 0) lostRows.push(rid);
    } else if (info.status === "unknown") unknownCount++;
    else {
      failedCount++;
      if (n > 0) failedButPresent++;
    }
    if (n > 1) {
      duplicated++;
      push(dupIds, rid);
    }
  }
  for (const [rid, n] of counts) {
    if (!rows.has(rid)) {
      unexpected += n;
      if (n > 0) push(dupIds, rid);
    }
  }
  // Poison: acknowledged ones in the DLQ exactly once (by id, or by marker for undecodable payloads), never in the table.
  let poisonItems = 0;
  let poisonAcked = 0;
  let poisonInDlq = 0;
  const poisonMissing: string[] = [];
  const dlqAll = dlqText.join("\n");
  for (const p of poison) {
    for (const pid of p.ids) {
      poisonItems++;
      const inDlq = dlqIds.get(pid) ?? 0;
      if (inDlq > 0) poisonInDlq++;
      if (inDlq > 1) {
        duplicated++;
        push(dupIds, pid);
      }
      if ((counts.get(pid) ?? 0) > 0) unexpected += counts.get(pid)!;
      if (acked(p.status)) {
        poisonAcked++;
        if (inDlq === 0) push(poisonMissing, `${p.what} id ${pid}`);
      }
    }
    for (const marker of p.markers) {
      poisonItems++;
      // Markers end with '#', so one is never a prefix of another.
      const hits = dlqAll.split(marker).length - 1;
      if (hits > 0) poisonInDlq++;
      if (hits > 1) duplicated++;
      if (acked(p.status)) {
        poisonAcked++;
        if (hits === 0) push(poisonMissing, `${p.what} ${marker}`);
      }
    }
  }
  const poisonMissingCount = poison.reduce((n, p) => n + (acked(p.status) ? p.ids.filter((x) => (dlqIds.get(x) ?? 0) === 0).length + p.markers.filter((m) => !dlqAll.includes(m)).length : 0), 0);

  // ---- I7: who lost the missing rows
  const finalOffsets = snaps[snaps.length - 1]?.offsets ?? new Map<number, number>();
  const ingestStream = subjects.ingestStream(id);
  let routerThrough = 0;
  try {
    const kv = await new Kvm(v.nc).open(subjects.routerKv);
    const e = await kv.get(subjects.tableKey(id));
    if (e && e.operation === "PUT") routerThrough = Number(e.json<{ through: number }>().through);
  } catch {
    // no router progress: every raw seq counts as not routed
  }
  const present = streamPresence(jsm, ingestStream);
  let infraMissing = 0;
  let lost = 0;
  const infraWhy: string[] = [];
  for (const rid of lostRows) {
    const info = rows.get(rid)!;
    let infra = false;
    if (info.seq !== undefined) {
      const committedOrRouted = info.bucket >= 0 ? (finalOffsets.get(info.bucket) ?? 0) >= info.seq : routerThrough >= info.seq;
      if (!committedOrRouted && !(await present(info.seq))) {
        infra = true;
        if (infraWhy.length < 3) infraWhy.push(`row ${rid}: seq ${info.seq} (${info.bucket >= 0 ? `bucket ${info.bucket}, committed offset ${finalOffsets.get(info.bucket) ?? 0}` : `raw, router through ${routerThrough}`}) is gone from ${ingestStream}`);
      }
    }
    if (infra) infraMissing++;
    else {
      lost++;
      push(lostIds, rid);
    }
  }
  const streamsMissing = await missingStreams(jsm, [ingestStream, subjects.commitStream(id), subjects.dlqStream]);
  inv["I1"] = {
    ok: lost === 0 && poisonMissingCount === 0,
    detail:
      lost === 0 && poisonMissingCount === 0
        ? `all ${ackedCount} acknowledged rows in the table${poisonAcked > 0 ? `, all ${poisonAcked} acknowledged poison items in the DLQ` : ""}`
        : [lost > 0 ? `${lost} acknowledged rows missing, e.g. ${lostIds.join(", ")}` : "", poisonMissingCount > 0 ? `${poisonMissingCount} acknowledged poison items not in the DLQ, e.g. ${poisonMissing.join("; ")}` : ""].filter(Boolean).join("; "),
  };
  inv["I2"] = {
    ok: duplicated === 0 && unexpected === 0 && failedButPresent === 0,
    detail:
      duplicated === 0 && unexpected === 0 && failedButPresent === 0
        ? "no row twice (table and DLQ together), none that was never published, no definite failure landed"
        : `${duplicated} rows twice, ${unexpected} rows never published (or poison in the table), ${failedButPresent} definitely failed rows present; e.g. ${dupIds.join(", ")}`,
  };

  // ---- per-bucket order of acknowledged rows, per source. Client rows: publish (id) order — the producer keeps one
  // batch per bucket in flight. Raw rows: the order the stream stored their raw messages (raw sequence, then id within
  // a message) — concurrent raw publishes have no publish order of their own; the router must keep the stream's.
  let reordered = 0;
  let firstReorder = "";
  const reorderedIds: number[] = [];
  for (const [b, list] of perBucket) {
    const maxBySrc = new Map<string, [number, number]>();
    for (const r of list) {
      const info = rows.get(r.id);
      if (!info || !acked(info.status) || (r.src !== "client" && r.src !== "raw")) continue;
      const key: [number, number] = r.src === "raw" ? [info.seq ?? 0, r.id] : [0, r.id];
      const max = maxBySrc.get(r.src) ?? [-1, -1];
      if (key[0] < max[0] || (key[0] === max[0] && key[1] < max[1])) {
        reordered++;
        push(reorderedIds, r.id);
        if (reordered === 1) firstReorder = `bucket ${b}: ${r.src} row ${r.id}${r.src === "raw" ? ` (raw seq ${key[0]})` : ""} after row ${max[1]}${r.src === "raw" ? ` (raw seq ${max[0]})` : ""}`;
      } else maxBySrc.set(r.src, key);
    }
  }
  inv["order"] = {
    ok: reordered === 0,
    detail: reordered === 0 ? "per bucket, client rows read back in publish order and raw rows in the stream's order" : `${reordered} rows read back after a row published (raw: stored) later in the same bucket (first: ${firstReorder}), e.g. ${reorderedIds.join(", ")}`,
  };

  // ---- I4: what readers see
  const liveRows = latest ? (await new ManifestStore(table).readLiveEntries(latest)).reduce((n, e) => n + e.file.rowCount, 0) : 0;
  const subscriber = readSubscriber(v.subscriberFile);
  const ghost = ghostNotifications(subscriber, ids);
  const i4: string[] = [];
  if (latest && natslakeRows !== latest.totalRecordCount) i4.push(`natslake reads ${natslakeRows} rows, the latest snapshot counts ${latest.totalRecordCount}`);
  if (natslakeRows !== liveRows) i4.push(`natslake reads ${natslakeRows} rows, the latest snapshot's files hold ${liveRows}`);
  if (pypaimonRows === null || !pyDetail.startsWith("pypaimon reads the same")) i4.push(pyDetail);
  if (ghost.length > 0) i4.push(`notified snapshot ids that do not exist: ${ghost.slice(0, 5).join(", ")}`);
  inv["I4"] = { ok: i4.length === 0, detail: i4.length === 0 ? `${natslakeRows} rows read by natslake = snapshot ${latest?.id ?? 0}'s count and files; ${pyDetail}` : i4.join("; ") };

  const compaction = await compactionCheck(table, ids, latest, subscriber, v.expectCompaction);
  if (compaction.invariant) inv["compaction"] = compaction.invariant;
  inv["I5"] = judgeRecovery(v.faults, rows.values(), snaps, subscriber.notifications, walk.first, v.recoveryBudgetMs);
  const sub = judgeSubscriber(subscriber, ids, latest);
  inv["I6"] = sub.invariant;
  inv["I7"] = {
    ok: streamsMissing.length === 0 && infraMissing === 0,
    detail:
      streamsMissing.length === 0 && infraMissing === 0
        ? "every stream exists; no acknowledged message went missing from JetStream before natslake committed it"
        : [streamsMissing.length > 0 ? `streams missing: ${streamsMissing.join(", ")}` : "", infraMissing > 0 ? `JetStream lost ${infraMissing} acknowledged rows (infra-loss, not natslake): ${infraWhy.join("; ")}` : ""].filter(Boolean).join("; "),
  };

  // ---- orphans (reported only). Files added by snapshots the leader expired are still read by those on disk.
  const orphans = countOrphans(table, new Set([...walk.added.map((a) => a.path), ...walk.readBy.keys()]), walk.referencedManifests);

  return {
    rows: {
      published: rows.size + poisonItems,
      acknowledged: ackedCount + poisonAcked,
      unknown: unknownCount + poison.filter((p) => p.status === "unknown").reduce((n, p) => n + p.ids.length + p.markers.length, 0),
      failed: failedCount + poison.filter((p) => p.status === "failed").reduce((n, p) => n + p.ids.length + p.markers.length, 0),
      found: natslakeRows,
      deadLettered: letters.length,
      poison: poisonItems,
      poisonInDlq,
      unexpected,
      failedButPresent,
    },
    lost,
    duplicated,
    reordered,
    samples: { lost: lostIds, duplicated: dupIds, reordered: reorderedIds },
    infraLoss: { streamMissing: streamsMissing.length > 0, ackedMissingFromStream: infraMissing, detail: inv["I7"].detail },
    snapshotsChecked: ids.length,
    filesChecked: walk.added.length + walk.inherited.length,
    ...orphans,
    subscriber: sub.summary,
    invariants: inv,
    pypaimonRows,
    recoveryBudgetMs: v.recoveryBudgetMs,
    compaction: compaction.summary,
  };
}
