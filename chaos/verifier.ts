/**
 * The chaos verifier: judges a run from the history the load generator and the subscriber wrote and from the final
 * state, independently of the write path.
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
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import { FileKind, FileSource } from "../src/format/manifest.ts";
import { CommitKind, natslakeState, type Snapshot } from "../src/format/snapshot.ts";
import { planScan } from "../src/scan/plan.ts";
import { expirableRange } from "../src/maintenance/expire-snapshots.ts";
import { readRows } from "../src/scan/read.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import type { DeadLetter, SnapshotNotification } from "../actors/wire/messages.ts";
import { paimonRead, runPython } from "../test/helpers/python.ts";
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
>;

interface RowInfo {
  status: RowOutcome;
  src: string;
  bucket: number;
  seq?: number;
  at: number;
}

const CHECK_FILES_PY = new URL("./py/check_files.py", import.meta.url).pathname;
const SAMPLE = 10;
const acked = (s: RowOutcome): boolean => s === "ok" || s === "duplicate";

function push<T>(arr: T[], v: T): void {
  if (arr.length < SAMPLE) arr.push(v);
}

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
    else done = l;
  }
  return { rows, poison, done };
}

/** Every dead letter of the table in the DLQ stream. */
async function readDeadLetters(jsm: JetStreamManager, subjects: Subjects, table: string): Promise<DeadLetter[]> {
  const subject = subjects.dlq(parseIdentifier(table));
  let info;
  try {
    info = await jsm.streams.info(subjects.dlqStream);
  } catch {
    return [];
  }
  const out: DeadLetter[] = [];
  const last = info.state.last_seq;
  for (let seq = info.state.first_seq; seq <= last && seq > 0; seq++) {
    const m = await jsm.streams.getMessage(subjects.dlqStream, { seq });
    if (m === null || m.subject !== subject) continue;
    out.push(m.json<DeadLetter>());
  }
  return out;
}

interface SnapInfo {
  id: number;
  /**
   * When the snapshot was linked: its file's mtime (the kernel's clock, which a clock-skew nemesis does not shift);
   * the snapshot's own `timeMillis` (the committing leader's wall clock, skewed or not) when the file cannot be stat'ed.
   */
  timeMillis: number;
  epoch: number;
  offsets: Map<number, number>;
}

/** Reads every data file with pyarrow: footer row count, size and ids. */
async function checkFiles(paths: string[]): Promise<Map<string, { ok: true; rows: number; size: number; ids: Array<number | string> } | { ok: false; error: string }>> {
  const out = new Map<string, { ok: true; rows: number; size: number; ids: Array<number | string> } | { ok: false; error: string }>();
  for (let i = 0; i < paths.length; i += 2000) {
    const chunk = paths.slice(i, i + 2000);
    const text = await runPython(CHECK_FILES_PY, [], { input: JSON.stringify(chunk.map((path) => ({ path, column: "id" }))), timeoutMs: 300_000 });
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      const r = JSON.parse(line) as { path: string; ok: boolean; rows?: number; size?: number; ids?: Array<number | string>; error?: string };
      out.set(r.path, r.ok ? { ok: true, rows: r.rows!, size: r.size!, ids: r.ids! } : { ok: false, error: r.error ?? "unreadable" });
    }
  }
  return out;
}

function listRecursive(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const n of names) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) out.push(...listRecursive(p));
    else out.push(p);
  }
  return out;
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
  const store = new ManifestStore(table);
  const chainProblems: string[] = [];
  const ids = await table.snapshots.listIds();
  /**
   * Snapshot expiration deletes an expired range's data files, then its manifests, then its snapshot files (Paimon's
   * order): a leader killed midway — by a fault, or by the final stop of every node — leaves snapshots of that range
   * on disk that read deleted files, until the next run removes them. Those are the oldest snapshots, below the first
   * one the retention options keep at the stop (the range can only grow with time and commits); a snapshot from that
   * one on — a retained snapshot — must read whole.
   */
  const retainedFrom = (await expirableRange(table, { now: v.stoppedAt ?? Date.now(), dryRun: true })).end;
  /** Snapshots of the range being expired that read a missing file or manifest: tolerated, reported. */
  const expiring = new Set<number>();
  const missing = (sid: number, problem: string): void => {
    if (sid < retainedFrom) expiring.add(sid);
    else push(chainProblems, problem);
  };
  const snaps: SnapInfo[] = [];
  /** Data files as snapshots added them; `compacted`: added by a COMPACT snapshot (rows of earlier snapshots). */
  const added: Array<{ snap: number; bucket: number; path: string; rowCount: number; fileSize: number; compacted: boolean }> = [];
  const referencedManifests = new Set<string>();
  /**
   * Every data file a snapshot on disk reads (its live entries) and the newest snapshot reading it: besides the files
   * snapshots on disk added themselves, those added by snapshots expiration removed since (a retained snapshot still
   * reads them) and, after a compaction, its inputs older snapshots still read.
   */
  const readBy = new Map<string, { newest: number; rowCount: number; fileSize: number }>();
  let latest: Snapshot | null = null;
  // Contiguous from the earliest snapshot on disk: the leader expires old snapshots (a long soak outlives the
  // cluster tables' retention), and expiration removes them oldest first.
  const first = ids[0] ?? 1;
  ids.forEach((x, i) => {
    if (x !== first + i) push(chainProblems, `snapshot ids are not contiguous from ${first}: ${ids.slice(Math.max(0, i - 1), i + 2).join(", ")}`);
  });
  let prevEpoch = 0;
  const prevOffsets = new Map<number, number>();
  const prevOwners = new Map<number, number>();
  for (const sid of ids) {
    let s: Snapshot;
    try {
      s = await table.snapshots.snapshot(sid);
    } catch (e) {
      push(chainProblems, `snapshot ${sid} does not parse: ${(e as Error).message}`);
      continue;
    }
    latest = s;
    const st = natslakeState(s);
    if (st === null) {
      push(chainProblems, `snapshot ${sid} carries no natslake state`);
      continue;
    }
    if (st.epoch < prevEpoch) push(chainProblems, `snapshot ${sid}: epoch ${st.epoch} after ${prevEpoch}`);
    prevEpoch = st.epoch;
    const offsets = new Map<number, number>();
    for (const [b, p] of st.buckets) {
      const off = Number(p.offset);
      if (off < (prevOffsets.get(b) ?? 0)) push(chainProblems, `snapshot ${sid} bucket ${b}: offset ${off} after ${prevOffsets.get(b)}`);
      if (p.ownerEpoch < (prevOwners.get(b) ?? 0)) push(chainProblems, `snapshot ${sid} bucket ${b}: owner epoch ${p.ownerEpoch} after ${prevOwners.get(b)}`);
      prevOwners.set(b, p.ownerEpoch);
      offsets.set(b, off);
    }
    let linkedAt = s.timeMillis;
    try {
      linkedAt = statSync(table.paths.snapshotPath(sid)).mtimeMs;
    } catch {
      // keep the snapshot's own time
    }
    snaps.push({ id: sid, timeMillis: linkedAt, epoch: st.epoch, offsets });
    for (const [b, off] of offsets) prevOffsets.set(b, off);
    try {
      referencedManifests.add(s.baseManifestList);
      referencedManifests.add(s.deltaManifestList);
      const metas = await store.allManifests(s);
      for (const m of metas) referencedManifests.add(m.fileName);
      for (const e of await store.readLiveEntries(s)) {
        const path = table.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath);
        readBy.set(path, { newest: sid, rowCount: e.file.rowCount, fileSize: e.file.fileSize });
      }
      for (const e of await store.readDeltaEntries(s)) {
        if (e.kind !== FileKind.ADD) continue;
        added.push({ snap: sid, bucket: e.bucket, path: table.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath), rowCount: e.file.rowCount, fileSize: e.file.fileSize, compacted: s.commitKind === CommitKind.COMPACT });
      }
    } catch (e) {
      missing(sid, `snapshot ${sid}: a manifest list or manifest is missing or unreadable: ${(e as Error).message}`);
    }
  }
  const addedPaths = new Set(added.map((a) => a.path));
  const inherited = [...readBy].filter(([path]) => !addedPaths.has(path));
  const files = await checkFiles([...addedPaths, ...inherited.map(([path]) => path)]);
  for (const [path, r] of inherited) {
    const f = files.get(path);
    if (!f || !f.ok) missing(r.newest, `snapshot ${r.newest} reads ${path} (added by an expired snapshot): ${f && !f.ok ? f.error : "not checked"}`);
    else if (f.rows !== r.rowCount || f.size !== r.fileSize) push(chainProblems, `${path}: ${f.rows} rows and ${f.size} bytes, the manifest says ${r.rowCount} and ${r.fileSize}`);
  }
  const snapById = new Map(snaps.map((s) => [s.id, s]));
  const outOfRange: string[] = [];
  let outOfRangeCount = 0;
  for (const a of added) {
    const f = files.get(a.path);
    if (!f || !f.ok) {
      // Gone: fine only when no snapshot from the retained ones on reads it (a compaction's input, expired).
      missing(readBy.get(a.path)?.newest ?? a.snap, `snapshot ${a.snap} references ${a.path}: ${f && !f.ok ? f.error : "not checked"}`);
      continue;
    }
    if (f.rows !== a.rowCount) push(chainProblems, `${a.path}: ${f.rows} rows, the manifest says ${a.rowCount}`);
    if (f.size !== a.fileSize) push(chainProblems, `${a.path}: ${f.size} bytes, the manifest says ${a.fileSize}`);
    const cur = snapById.get(a.snap);
    const prev = snapById.get(a.snap - 1);
    for (const raw of f.ids) {
      const info = rows.get(Number(raw));
      if (!info || info.bucket < 0 || info.seq === undefined || !cur) continue;
      // A compaction's output holds rows committed by earlier snapshots: anything up to the snapshot's offset.
      const lo = a.compacted ? 0 : (prev?.offsets.get(a.bucket) ?? 0);
      const hi = cur.offsets.get(a.bucket) ?? 0;
      if (info.bucket !== a.bucket || info.seq <= lo || info.seq > hi) {
        outOfRangeCount++;
        push(outOfRange, `row ${raw} (bucket ${info.bucket}, seq ${info.seq}) in snapshot ${a.snap}'s ${a.compacted ? "compacted " : ""}file of bucket ${a.bucket} covering (${lo}, ${hi}]`);
      }
    }
  }
  if (outOfRangeCount > 0) chainProblems.push(`${outOfRangeCount} rows outside their snapshot's offset range or bucket, e.g. ${outOfRange.slice(0, 3).join("; ")}`);
  const expiringNote =
    expiring.size === 0
      ? ""
      : `; ${expiring.size} snapshots below the retained ones (${Math.min(...expiring)}..${Math.max(...expiring)} of ${first}..${retainedFrom - 1}) read deleted files: an expiration interrupted by the stop, which the next run finishes`;
  inv["I3"] = {
    ok: chainProblems.length === 0,
    detail:
      chainProblems.length === 0
        ? `${ids.length} snapshots contiguous, epochs and offsets monotonic; every retained one (from ${Math.max(first, retainedFrom)}) reads whole: manifest lists, manifests and ${added.length + inherited.length} data files present with their declared size and rows${inherited.length > 0 ? ` (${inherited.length} of them added by expired snapshots)` : ""}; rows within their snapshot's offsets${expiringNote}`
        : chainProblems.join("; ") + expiringNote,
  };

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
  const inStream = new Map<number, boolean>();
  const present = async (seq: number): Promise<boolean> => {
    let p = inStream.get(seq);
    if (p === undefined) {
      p = (await jsm.streams.getMessage(ingestStream, { seq }).catch(() => null)) !== null;
      inStream.set(seq, p);
    }
    return p;
  };
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
  const streamsMissing: string[] = [];
  for (const name of [ingestStream, subjects.commitStream(id), subjects.dlqStream]) {
    try {
      await jsm.streams.info(name);
    } catch {
      streamsMissing.push(name);
    }
  }
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
  const liveRows = latest ? (await store.readLiveEntries(latest)).reduce((n, e) => n + e.file.rowCount, 0) : 0;
  const subscriber = readSubscriber(v.subscriberFile);
  const idSet = new Set(ids);
  // Ids below the earliest snapshot on disk were expired by the leader, not made up.
  const ghost = subscriber.ids.filter((x) => !idSet.has(x) && x >= (ids[0] ?? 1));
  const i4: string[] = [];
  if (latest && natslakeRows !== latest.totalRecordCount) i4.push(`natslake reads ${natslakeRows} rows, the latest snapshot counts ${latest.totalRecordCount}`);
  if (natslakeRows !== liveRows) i4.push(`natslake reads ${natslakeRows} rows, the latest snapshot's files hold ${liveRows}`);
  if (pypaimonRows === null || !pyDetail.startsWith("pypaimon reads the same")) i4.push(pyDetail);
  if (ghost.length > 0) i4.push(`notified snapshot ids that do not exist: ${ghost.slice(0, 5).join(", ")}`);
  inv["I4"] = { ok: i4.length === 0, detail: i4.length === 0 ? `${natslakeRows} rows read by natslake = snapshot ${latest?.id ?? 0}'s count and files; ${pyDetail}` : i4.join("; ") };

  // ---- writer-side compaction: COMPACT snapshots (notified, or still on disk) and the live files per bucket at the end
  const compactIds = new Set(subscriber.notifications.filter((n) => n.kind === CommitKind.COMPACT).map((n) => n.snapshotId));
  for (const sid of ids) {
    const s = await table.snapshots.snapshot(sid).catch(() => null);
    if (s?.commitKind === CommitKind.COMPACT) compactIds.add(sid);
  }
  const liveEntries = latest ? await store.readLiveEntries(latest) : [];
  const liveFilesPerBucket: Record<string, number> = {};
  for (const e of liveEntries) liveFilesPerBucket[String(e.bucket)] = (liveFilesPerBucket[String(e.bucket)] ?? 0) + 1;
  const compaction = {
    compactSnapshots: compactIds.size,
    liveFilesPerBucket,
    compactedLiveFiles: liveEntries.filter((e) => e.file.fileSource === FileSource.COMPACT).length,
  };
  if (v.expectCompaction) {
    const max = Math.max(0, ...Object.values(liveFilesPerBucket));
    const bound = v.expectCompaction.maxLiveFilesPerBucket;
    const problems: string[] = [];
    if (compaction.compactSnapshots === 0) problems.push("no COMPACT snapshot landed");
    if (compaction.compactedLiveFiles === 0) problems.push("no live file came from a compaction");
    if (max > bound) problems.push(`a bucket ends with ${max} live files (bound ${bound}): ${JSON.stringify(liveFilesPerBucket)}`);
    inv["compaction"] = {
      ok: problems.length === 0,
      detail:
        problems.length === 0
          ? `${compaction.compactSnapshots} COMPACT snapshots landed; at the end at most ${max} live files per bucket (bound ${bound}), ${compaction.compactedLiveFiles} of ${liveEntries.length} written by compactions`
          : problems.join("; "),
    };
  }

  // ---- I5: recovery
  const recoveryProblems: string[] = [];
  // Events of the other faults (a crash's own restart does not restart its clock).
  const eventsOf = (f: FaultRecord): number[] => [f.injectedAt, ...(f.healedAt === undefined ? [] : [f.healedAt])];
  const buckets = [...new Set([...rows.values()].filter((r) => r.bucket >= 0).map((r) => r.bucket))];
  // Snapshots the leader expired are known from their notifications (offsets and link time), so recovery is measured
  // to the first snapshot that committed a post-fault row even when its file is gone.
  const onDisk = new Set(snaps.map((x) => x.id));
  const recoverySnaps = [
    ...subscriber.notifications
      .filter((n) => !onDisk.has(n.snapshotId) && n.snapshotId < (ids[0] ?? 1))
      .map((n) => ({ id: n.snapshotId, timeMillis: n.linkedAtMillis, epoch: n.epoch, offsets: new Map(Object.entries(n.offsets).map(([b, o]) => [Number(b), o])) })),
    ...snaps,
  ].sort((a, b) => a.id - b.id);
  for (const f of v.faults) {
    if (f.fired === false) continue;
    const ref = refTime(f);
    let end = 0;
    let measured = 0;
    for (const b of buckets) {
      let first: RowInfo | undefined;
      for (const r of rows.values()) {
        if (r.bucket !== b || r.src !== "client" || !acked(r.status) || r.seq === undefined || r.at < ref) continue;
        if (!first || r.at < first.at || (r.at === first.at && r.seq < first.seq!)) first = r;
      }
      if (!first) continue;
      const s = recoverySnaps.find((x) => (x.offsets.get(b) ?? 0) >= first.seq!);
      if (!s) continue;
      measured++;
      end = Math.max(end, s.timeMillis);
    }
    if (measured === 0 || measured < buckets.length) {
      recoveryProblems.push(`${f.name} on ${f.target}: ${measured === 0 ? "no bucket" : `only ${measured} of ${buckets.length} buckets`} committed a row published after it`);
      continue;
    }
    f.recoveryMs = Math.max(0, end - ref);
    const others = v.faults.filter((g) => g !== f && g.fired !== false).flatMap(eventsOf);
    const latestEvent = Math.max(ref, ...others.filter((t) => t >= ref && t <= end));
    f.effectiveRecoveryMs = Math.max(0, end - latestEvent);
    if (f.effectiveRecoveryMs > v.recoveryBudgetMs) recoveryProblems.push(`${f.name} on ${f.target}: recovered after ${f.effectiveRecoveryMs} ms (budget ${v.recoveryBudgetMs} ms)`);
  }
  const fired = v.faults.filter((f) => f.fired !== false);
  inv["I5"] = {
    ok: recoveryProblems.length === 0,
    detail:
      recoveryProblems.length === 0
        ? fired.length === 0
          ? "no fault"
          : `every fault recovered within ${v.recoveryBudgetMs} ms (max ${Math.max(...fired.map((f) => f.effectiveRecoveryMs ?? 0))} ms)`
        : recoveryProblems.join("; "),
  };

  // ---- I6: the subscriber
  const gaps: number[] = [];
  let disorder = 0;
  for (let i = 1; i < subscriber.ids.length; i++) {
    const a = subscriber.ids[i - 1]!;
    const b = subscriber.ids[i]!;
    if (b <= a) disorder++;
    else for (let g = a + 1; g < b && gaps.length < 1000; g++) gaps.push(g);
  }
  const lastId = subscriber.ids[subscriber.ids.length - 1] ?? null;
  const i6: string[] = [];
  if (subscriber.ids.length === 0 && ids.length > 0) i6.push("the subscriber received no notification");
  if (disorder > 0) i6.push(`${disorder} notifications not in increasing order`);
  if (gaps.length > 0) i6.push(`${gaps.length} snapshot ids never notified: ${gaps.slice(0, 10).join(", ")}`);
  if (latest && lastId !== null && lastId !== latest.id) i6.push(`the last notification is snapshot ${lastId}, the table is at ${latest.id}`);
  inv["I6"] = { ok: i6.length === 0, detail: i6.length === 0 ? `${subscriber.ids.length} notifications, strictly increasing from ${subscriber.ids[0] ?? "-"} to ${lastId ?? "-"} without a gap` : i6.join("; ") };

  inv["I7"] = {
    ok: streamsMissing.length === 0 && infraMissing === 0,
    detail:
      streamsMissing.length === 0 && infraMissing === 0
        ? "every stream exists; no acknowledged message went missing from JetStream before natslake committed it"
        : [streamsMissing.length > 0 ? `streams missing: ${streamsMissing.join(", ")}` : "", infraMissing > 0 ? `JetStream lost ${infraMissing} acknowledged rows (infra-loss, not natslake): ${infraWhy.join("; ")}` : ""].filter(Boolean).join("; "),
  };

  // ---- orphans (reported only)
  // Files added by snapshots the leader expired are still read by those on disk.
  const referencedFiles = new Set([...addedPaths, ...readBy.keys()]);
  let orphanFiles = 0;
  let tempFiles = 0;
  for (const p of listRecursive(table.root)) {
    const name = p.slice(p.lastIndexOf("/") + 1);
    if (name.startsWith(".") && name.endsWith(".tmp")) tempFiles++;
    else if (/\/bucket-[^/]+\//.test(p) && !referencedFiles.has(p)) orphanFiles++;
  }
  let orphanManifests = 0;
  for (const name of readdirSync(table.paths.manifestDir)) if (!name.startsWith(".") && !referencedManifests.has(name)) orphanManifests++;

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
    filesChecked: added.length + inherited.length,
    orphanFiles,
    orphanManifests,
    tempFiles,
    subscriber: { notifications: subscriber.ids.length, firstId: subscriber.ids[0] ?? null, lastId, gaps: gaps.slice(0, 100) },
    invariants: inv,
    pypaimonRows,
    recoveryBudgetMs: v.recoveryBudgetMs,
    compaction,
  };
}

/** When recovery is measured from: the injection for crashes, pauses and node loss, the healing otherwise. */
export function refTime(f: FaultRecord): number {
  return f.recoveryFrom === "healed" && f.healedAt !== undefined ? f.healedAt : f.injectedAt;
}

function readSubscriber(file: string): { ids: number[]; notifications: SnapshotNotification[] } {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return { ids: [], notifications: [] };
  }
  const ids: number[] = [];
  const notifications: SnapshotNotification[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const o = JSON.parse(line) as { n?: SnapshotNotification };
      if (o.n && typeof o.n.snapshotId === "number") {
        ids.push(o.n.snapshotId);
        notifications.push(o.n);
      }
    } catch {
      // a torn last line (the subscriber is stopped by signal)
    }
  }
  return { ids, notifications };
}
