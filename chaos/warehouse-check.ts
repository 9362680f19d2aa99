/**
 * What the verifier reports about the warehouse beside the snapshot chain, whatever the workload:
 * - writer-side compaction: COMPACT snapshots (notified, or still on disk), live files per bucket at the end and how
 *   many of them a compaction wrote — judged (invariant `compaction`) when the scenario sets `expectCompaction`;
 * - orphans: data files no snapshot references, unreferenced manifests, hidden temp files. Reported, never judged:
 *   crashed flushes and rejected committables leave them by design (reliability.md R6);
 * - the table's streams (ingest, commit, dead letters) still exist (part of I7), and which acknowledged messages
 *   JetStream itself lost; the table's dead letters.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { DeadLetter } from "../actors/wire/messages.ts";
import type { Subjects } from "../cluster/nats/subjects.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import { FileSource } from "../src/format/manifest.ts";
import { CommitKind, type Snapshot } from "../src/format/snapshot.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import type { SubscriberLog } from "./subscriber-check.ts";
import type { ChaosReport, CompactionExpectation, InvariantResult } from "./types.ts";

/** The compaction summary of the run and, with `expect`, the `compaction` invariant. */
export async function compactionCheck(table: Table, idsOnDisk: readonly number[], latest: Snapshot | null, sub: SubscriberLog, expect?: CompactionExpectation): Promise<{ summary: ChaosReport["compaction"]; invariant?: InvariantResult }> {
  const compactIds = new Set(sub.notifications.filter((n) => n.kind === CommitKind.COMPACT).map((n) => n.snapshotId));
  for (const sid of idsOnDisk) {
    const s = await table.snapshots.snapshot(sid).catch(() => null);
    if (s?.commitKind === CommitKind.COMPACT) compactIds.add(sid);
  }
  const liveEntries = latest ? await new ManifestStore(table).readLiveEntries(latest) : [];
  const liveFilesPerBucket: Record<string, number> = {};
  for (const e of liveEntries) liveFilesPerBucket[String(e.bucket)] = (liveFilesPerBucket[String(e.bucket)] ?? 0) + 1;
  const summary = {
    compactSnapshots: compactIds.size,
    liveFilesPerBucket,
    compactedLiveFiles: liveEntries.filter((e) => e.file.fileSource === FileSource.COMPACT).length,
  };
  if (!expect) return { summary };
  const max = Math.max(0, ...Object.values(liveFilesPerBucket));
  const bound = expect.maxLiveFilesPerBucket;
  const problems: string[] = [];
  if (summary.compactSnapshots === 0) problems.push("no COMPACT snapshot landed");
  if (summary.compactedLiveFiles === 0) problems.push("no live file came from a compaction");
  if (max > bound) problems.push(`a bucket ends with ${max} live files (bound ${bound}): ${JSON.stringify(liveFilesPerBucket)}`);
  return {
    summary,
    invariant: {
      ok: problems.length === 0,
      detail:
        problems.length === 0
          ? `${summary.compactSnapshots} COMPACT snapshots landed; at the end at most ${max} live files per bucket (bound ${bound}), ${summary.compactedLiveFiles} of ${liveEntries.length} written by compactions`
          : problems.join("; "),
    },
  };
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

/** Orphan data files, hidden temp files and unreferenced manifests under the table's directory. */
export function countOrphans(table: Table, referencedFiles: ReadonlySet<string>, referencedManifests: ReadonlySet<string>): { orphanFiles: number; tempFiles: number; orphanManifests: number } {
  let orphanFiles = 0;
  let tempFiles = 0;
  for (const p of listRecursive(table.root)) {
    const name = p.slice(p.lastIndexOf("/") + 1);
    if (name.startsWith(".") && name.endsWith(".tmp")) tempFiles++;
    else if (/\/bucket-[^/]+\//.test(p) && !referencedFiles.has(p)) orphanFiles++;
  }
  let orphanManifests = 0;
  for (const name of readdirSync(table.paths.manifestDir)) if (!name.startsWith(".") && !referencedManifests.has(name)) orphanManifests++;
  return { orphanFiles, tempFiles, orphanManifests };
}

/** The names of `streams` JetStream no longer has. */
export async function missingStreams(jsm: JetStreamManager, streams: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const name of streams) {
    try {
      await jsm.streams.info(name);
    } catch {
      out.push(name);
    }
  }
  return out;
}

/**
 * Whether the message at `seq` is still in `stream` (memoised). The proof that JetStream lost an acknowledged
 * message: natslake purges a bucket's subject only up to an offset committed in a snapshot, so a message above the
 * committed offset that the stream no longer holds was lost by JetStream.
 */
export function streamPresence(jsm: JetStreamManager, stream: string): (seq: number) => Promise<boolean> {
  const seen = new Map<number, boolean>();
  return async (seq) => {
    let p = seen.get(seq);
    if (p === undefined) {
      p = (await jsm.streams.getMessage(stream, { seq }).catch(() => null)) !== null;
      seen.set(seq, p);
    }
    return p;
  };
}

/** Every dead letter of the table in the DLQ stream. */
export async function readDeadLetters(jsm: JetStreamManager, subjects: Subjects, table: string): Promise<DeadLetter[]> {
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
