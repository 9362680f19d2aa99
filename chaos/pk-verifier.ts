/**
 * The chaos verifier of the primary-key workload (`Scenario.workload`, chaos/pk-load-child.ts): judges a run from
 * the history of changes the load wrote and from the final state, independently of the write path.
 *
 * The model (test/helpers/pk-model.ts): every acknowledged change applied in stream order — by the sequence of the
 * message that holds it, then by version within a message —, so every key holds the state after its last acknowledged
 * change in that order; or after one of its unacknowledged changes, which may or may not have been stored, and may have
 * been stored last. The table is read twice, by natslake's reader (merge on read) and by pypaimon, and each read is
 * judged against the model. A table of another merge engine (`VerifyInput.engine`) is judged against that engine's
 * model (test/helpers/pk-engines.ts: its fold of the acknowledged changes; its load retracts nothing, so pypaimon
 * reads every engine), and I7 then looks at every acknowledged change of a key found wrong, not only its last.
 *
 * Invariants (named as the append workload's where they mean the same):
 * - I1 nothing acknowledged lost: no key missing (an acknowledged upsert left no row), stale (another acknowledged
 *   version than the last in stream order: a later change lost, an older one applied again after it, or two applied
 *   out of order) or resurrected (a row where the last acknowledged change deleted the key) — in both reads; a key is
 *   blamed on JetStream instead (I7) when its last acknowledged change's message lies above the bucket's committed
 *   offset and the stream no longer holds it;
 * - I2 nothing applied that should not be: no key read twice, no version never published for its key, none whose
 *   publish definitely failed — in both reads;
 * - I3 the snapshot chain and every file retained snapshots read (chaos/snapshot-chain.ts), and inside the flushed
 *   files (chaos/pk-flushes.ts): no change flushed twice, each acknowledged one within the offsets its snapshot
 *   advanced;
 * - I4 natslake and pypaimon read exactly the same rows; the latest snapshot's record count is its live files'
 *   rows; notified snapshot ids exist;
 * - levels: at every retained snapshot, every bucket's files form valid LSM levels — no two files of one level ≥ 1
 *   overlap in key range (src/lsm/levels.ts `Levels`, via test/helpers/pk-snapshots.ts). Trivial while only flushes
 *   landed (level 0); judged at every snapshot once compactions — the leader's, asked for by the scenario, or the
 *   writers' own — put files above it;
 * - sequence chain: per bucket, each APPEND snapshot's level-0 files take sequence numbers above every earlier one's
 *   and within the number the snapshot records (no flush committed twice or out of order);
 * - order: per key, the acknowledged changes are in the stream in publish order (the producer client's per-bucket
 *   order; the table is judged by stream order whatever it is);
 * - I5 recovery, I6 the subscriber, I7 streams, compaction (when expected): as for the append workload.
 */
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import { readRows } from "../src/scan/read.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { paimonRead } from "../test/helpers/python.ts";
import { isAcked, judgePkRows, publishOrderBreaks, streamOrder, type PkChangeOutcome, type PkJudgement } from "../test/helpers/pk-model.ts";
import { ENGINE_WORKLOADS, judgeEngineRows } from "../test/helpers/pk-engines.ts";
import { checkPkSnapshots } from "../test/helpers/pk-snapshots.ts";
import { judgeFlushedChanges } from "./pk-flushes.ts";
import { judgeRecovery } from "./recovery.ts";
import { chainInvariant, walkSnapshotChain } from "./snapshot-chain.ts";
import { ghostNotifications, judgeSubscriber, readSubscriber } from "./subscriber-check.ts";
import { compactionCheck, countOrphans, missingStreams, readDeadLetters, streamPresence } from "./warehouse-check.ts";
import type { VerifyInput, Verdict } from "./verifier.ts";
import type { InvariantResult, LoadLine, PkReadReport, PkReport } from "./types.ts";

/** The changes of the load history, each with its outcome. */
export function readChangeHistory(file: string): PkChangeOutcome[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    // no history: every count is zero and I1 reports it
  }
  const out: PkChangeOutcome[] = [];
  for (const raw of text.split("\n")) {
    if (raw.trim() === "") continue;
    const l = JSON.parse(raw) as LoadLine;
    if (l.kind === "change") {
      const { kind: _, ...change } = l;
      out.push(change);
    }
  }
  return out;
}

function readReport(j: PkJudgement): PkReadReport {
  const s = (keys: number[]): number[] => keys.slice(0, 10);
  return {
    rows: j.rowsRead,
    expectedRows: j.expectedRows,
    ambiguous: j.ambiguous,
    missing: j.missing.length,
    resurrected: j.resurrected.length,
    stale: j.stale.length,
    unexpected: j.unexpected.length,
    duplicateKeys: j.duplicateKeys.length,
    unverifiable: j.unverifiable.length,
    samples: { missing: s(j.missing), resurrected: s(j.resurrected), stale: s(j.stale), unexpected: s(j.unexpected), duplicateKeys: s(j.duplicateKeys) },
  };
}

/** A row as a string independent of how the engine typed its numbers (BIGINT as bigint or number). */
const rowText = (columns: readonly string[], r: Record<string, unknown>): string => columns.map((c) => String(r[c] ?? null)).join("|");

export async function verifyPk(v: VerifyInput): Promise<Verdict> {
  const subjects = new Subjects();
  const id = parseIdentifier(v.table);
  const jsm = await jetstreamManager(v.nc, { timeout: 10_000 });
  const inv: Record<string, InvariantResult> = {};
  const changes = readChangeHistory(v.loadFile);
  const table = await new Catalog(v.warehouse).getTable(id);
  const engine = ENGINE_WORKLOADS[v.engine ?? "deduplicate"];
  const columns = engine.names;
  // deduplicate's load retracts keys and has its own judge; the other engines' are judged by their fold.
  const judge = (rows: Iterable<Record<string, unknown>>): PkJudgement => (engine.retractions ? judgePkRows(changes, rows) : judgeEngineRows(engine, changes, rows));

  // ---- the table through natslake's reader (merged by key) and through pypaimon, each judged against the model
  const natRows: Array<Record<string, unknown>> = [];
  for await (const row of readRows(table, { projection: columns })) natRows.push(row);
  const nat = judge(natRows);
  let pyRows: Array<Record<string, unknown>> | null = null;
  let pyError = "";
  try {
    pyRows = await paimonRead(v.warehouse, v.table, { columns, timeoutMs: 600_000 });
  } catch (e) {
    pyError = `pypaimon could not read the table: ${(e as Error).message.split("\n")[0]}`;
  }
  const py = pyRows === null ? null : judge(pyRows);

  // ---- I7 first: keys whose acknowledged change JetStream lost are not natslake's loss
  // The version column: it names the change that wrote each row (chaos/pk-flushes.ts).
  const walk = await walkSnapshotChain(table, { column: "v", ...(v.stoppedAt !== undefined ? { stoppedAt: v.stoppedAt } : {}) });
  const finalOffsets = walk.snaps[walk.snaps.length - 1]?.offsets ?? new Map<number, number>();
  const ingestStream = subjects.ingestStream(id);
  const present = streamPresence(jsm, ingestStream);
  // The changes a key's state depends on: deduplicate's last acknowledged one; every acknowledged one of a fold.
  const decisive = new Map<number, PkChangeOutcome[]>();
  for (const c of changes.filter((x) => isAcked(x.status)).sort(streamOrder)) decisive.set(c.key, engine.retractions ? [c] : [...(decisive.get(c.key) ?? []), c]);
  const infraKeys = new Set<number>();
  const infraWhy: string[] = [];
  for (const key of [...nat.missing, ...nat.stale, ...nat.resurrected]) {
    for (const c of decisive.get(key) ?? []) {
      if (c.seq === undefined || (finalOffsets.get(c.bucket) ?? 0) >= c.seq || (await present(c.seq))) continue;
      infraKeys.add(key);
      if (infraWhy.length < 3) infraWhy.push(`key ${key}: its change v${c.v} at seq ${c.seq} (bucket ${c.bucket}, committed offset ${finalOffsets.get(c.bucket) ?? 0}) is gone from ${ingestStream}`);
      break;
    }
  }
  const streamsMissing = await missingStreams(jsm, [ingestStream, subjects.commitStream(id), subjects.dlqStream]);
  inv["I7"] = {
    ok: streamsMissing.length === 0 && infraKeys.size === 0,
    detail:
      streamsMissing.length === 0 && infraKeys.size === 0
        ? "every stream exists; no acknowledged message went missing from JetStream before natslake committed it"
        : [streamsMissing.length > 0 ? `streams missing: ${streamsMissing.join(", ")}` : "", infraKeys.size > 0 ? `JetStream lost the last acknowledged change of ${infraKeys.size} keys (infra-loss, not natslake): ${infraWhy.join("; ")}` : ""].filter(Boolean).join("; "),
  };

  // ---- I1 / I2: the model, in both reads
  const reads: Array<[string, PkJudgement | null]> = [
    ["natslake", nat],
    ["pypaimon", py],
  ];
  const lostKeys = (j: PkJudgement): number[] => [...j.missing, ...j.stale, ...j.resurrected].filter((k) => !infraKeys.has(k));
  const i1 = reads.flatMap(([who, j]) => (j === null ? [] : lostKeys(j).length > 0 ? [`${who}: ${j.describe()}`] : []));
  inv["I1"] = {
    ok: i1.length === 0 && py !== null,
    detail: i1.length === 0 && py !== null ? `natslake and pypaimon: ${nat.describe()} (${nat.changes.acknowledged} acknowledged changes over ${nat.keys} keys)` : [...i1, ...(py === null ? [pyError] : [])].join("; "),
  };
  const extra = (j: PkJudgement): number => j.duplicateKeys.length + j.unexpected.length;
  const i2 = reads.flatMap(([who, j]) => (j !== null && extra(j) > 0 ? [`${who}: ${j.describe()}`] : []));
  inv["I2"] = { ok: i2.length === 0, detail: i2.length === 0 ? "no key read twice, no version that was never published for its key or whose publish failed" : i2.join("; ") };

  // ---- I3: the chain; levels and sequence numbers at every retained snapshot
  const flushed = judgeFlushedChanges(walk.added, walk.files, walk.snaps, changes);
  if (flushed.problems > 0) walk.problems.push(`${flushed.problems} findings in the flushed files, e.g. ${flushed.samples.slice(0, 3).join("; ")}`);
  inv["I3"] = chainInvariant(walk, `; in ${flushed.files} flushed files, ${flushed.changes} changes, none flushed twice, each within its snapshot's offsets`);
  const pk = await checkPkSnapshots(table, { from: walk.retainedFrom });
  const lv = pk.levels;
  const levelProblems = [...pk.levelProblems, ...pk.unreadable];
  inv["levels"] = {
    ok: levelProblems.length === 0,
    detail:
      levelProblems.length === 0
        ? `${lv.trees} bucket trees checked at ${pk.snapshots.length} snapshots: valid LSM levels; ${lv.withUpperLevels === 0 ? "no file above level 0 yet (no compaction of these buckets landed)" : `${lv.withUpperLevels} of them with files at level ≥ 1 (max level ${lv.maxLevel}, ${lv.compactSnapshots} COMPACT snapshots), none overlapping within a level`}`
        : `${levelProblems.length} broken: ${levelProblems.slice(0, 3).join("; ")}`,
  };
  inv["sequence chain"] = {
    ok: pk.sequenceProblems.length === 0,
    detail: pk.sequenceProblems.length === 0 ? `per bucket, every APPEND snapshot's files take sequence numbers above the earlier ones' and within the recorded ones (${pk.snapshots.length} snapshots)` : pk.sequenceProblems.slice(0, 3).join("; "),
  };

  // ---- I4: what readers see
  const latest = walk.latest;
  const liveRows = latest ? (await new ManifestStore(table).readLiveEntries(latest)).reduce((n, e) => n + e.file.rowCount, 0) : 0;
  const subscriber = readSubscriber(v.subscriberFile);
  const ghost = ghostNotifications(subscriber, walk.ids);
  const natSet = natRows.map((r) => rowText(columns, r)).sort();
  const pySet = pyRows?.map((r) => rowText(columns, r)).sort() ?? null;
  const enginesAgree = pySet !== null && pySet.length === natSet.length && pySet.every((r, i) => r === natSet[i]);
  const i4: string[] = [];
  if (pySet === null) i4.push(pyError);
  else if (!enginesAgree) i4.push(`natslake reads ${natSet.length} rows, pypaimon ${pySet.length}; they differ (e.g. ${natSet.filter((r) => !pySet.includes(r)).slice(0, 2).join(", ") || pySet.filter((r) => !natSet.includes(r)).slice(0, 2).join(", ")})`);
  if (latest && liveRows !== latest.totalRecordCount) i4.push(`the latest snapshot counts ${latest.totalRecordCount} records, its live files hold ${liveRows}`);
  if (ghost.length > 0) i4.push(`notified snapshot ids that do not exist: ${ghost.slice(0, 5).join(", ")}`);
  inv["I4"] = { ok: i4.length === 0, detail: i4.length === 0 ? `natslake and pypaimon read the same ${natSet.length} rows; snapshot ${latest?.id ?? 0}'s record count = its files' ${liveRows} rows` : i4.join("; ") };

  const reordered = publishOrderBreaks(changes);
  inv["order"] = {
    ok: reordered.length === 0,
    detail: reordered.length === 0 ? "per key, the acknowledged changes are in the stream in publish order" : `${reordered.length} keys have acknowledged changes in the stream out of publish order (the producer's per-bucket order broke), e.g. keys ${reordered.slice(0, 8).join(", ")}`,
  };

  const compaction = await compactionCheck(table, walk.ids, latest, subscriber, v.expectCompaction);
  if (compaction.invariant) inv["compaction"] = compaction.invariant;
  inv["I5"] = judgeRecovery(v.faults, changes.map((c) => ({ ...c, src: "client" })), walk.snaps, subscriber.notifications, walk.first, v.recoveryBudgetMs);
  const sub = judgeSubscriber(subscriber, walk.ids, latest);
  inv["I6"] = sub.invariant;
  const orphans = countOrphans(table, new Set([...walk.added.map((a) => a.path), ...walk.readBy.keys()]), walk.referencedManifests);
  const letters = await readDeadLetters(jsm, subjects, v.table);

  const report: PkReport = {
    engine: engine.engine,
    keys: nat.keys,
    changes: nat.changes,
    natslake: readReport(nat),
    pypaimon: py === null ? null : readReport(py),
    enginesAgree,
    levels: { snapshots: pk.snapshots.length, trees: lv.trees, withUpperLevels: lv.withUpperLevels, maxLevel: lv.maxLevel, compactSnapshots: lv.compactSnapshots, problems: levelProblems.length },
    sequenceProblems: pk.sequenceProblems.length,
    flushes: { files: flushed.files, changes: flushed.changes, problems: flushed.problems },
  };
  // The append workload's counters, in this workload's terms: lost = keys missing an acknowledged change (any
  // kind), duplicated = keys read twice, reordered = keys whose changes the stream holds out of publish order.
  const lost = lostKeys(nat);
  return {
    rows: {
      published: nat.changes.published,
      acknowledged: nat.changes.acknowledged,
      unknown: nat.changes.unknown,
      failed: nat.changes.failed,
      found: natRows.length,
      deadLettered: letters.length,
      poison: 0,
      poisonInDlq: 0,
      unexpected: nat.unexpected.length,
      failedButPresent: nat.failedLanded.length,
    },
    lost: lost.length,
    duplicated: nat.duplicateKeys.length,
    reordered: reordered.length,
    samples: { lost: lost.slice(0, 10), duplicated: nat.duplicateKeys.slice(0, 10), reordered: reordered.slice(0, 10) },
    infraLoss: { streamMissing: streamsMissing.length > 0, ackedMissingFromStream: infraKeys.size, detail: inv["I7"].detail },
    snapshotsChecked: walk.ids.length,
    filesChecked: walk.added.length + walk.inherited.length,
    ...orphans,
    subscriber: sub.summary,
    invariants: inv,
    pypaimonRows: pyRows?.length ?? null,
    recoveryBudgetMs: v.recoveryBudgetMs,
    compaction: compaction.summary,
    pk: report,
  };
}
