/**
 * The primary-key workload's look inside the flushed files (part of I3): each level-0 file an APPEND snapshot added
 * holds the changes of one flush, and the workload's rows name the change that wrote them (`v`, the change's
 * version; 0 for a retraction by key alone, which names none). From the versions pyarrow read in those files
 * (chaos/snapshot-chain.ts) and the load's history:
 * - no change is in two flushed files — a flush committed twice, or messages consumed again after their commit and
 *   flushed again, would put it there (a flush keeps one version per key, so a change may be in none: merged away);
 * - each acknowledged change sits in a file of its own bucket, added by a snapshot whose offset range for that bucket
 *   — (previous snapshot's offset, this one's] — holds the change's stream sequence: flushes are committed in stream
 *   order, none ahead of or behind the offsets it advanced;
 * - no version that was never published, none whose publish definitely failed.
 * Files of COMPACT snapshots (compaction outputs, upgrades) are not flushes and are skipped; so are files of expired
 * snapshots (gone from the walk).
 */
import type { PkChangeOutcome } from "../test/helpers/pk-model.ts";
import { pushSample, type AddedFile, type FileCheck, type SnapInfo } from "./snapshot-chain.ts";

export interface FlushedChanges {
  /** Flushed files looked into. */
  files: number;
  /** Changes found in them by version (retractions by key alone are not counted: they name no change). */
  changes: number;
  /** Every finding (count) and a few of them (samples). */
  problems: number;
  samples: string[];
}

/** Judges the flushed files of `added` (read as `files`, the version column) against `changes`. Pure. */
export function judgeFlushedChanges(added: readonly AddedFile[], files: ReadonlyMap<string, FileCheck>, snaps: readonly SnapInfo[], changes: readonly PkChangeOutcome[]): FlushedChanges {
  const byV = new Map(changes.map((c) => [c.v, c]));
  const snapById = new Map(snaps.map((s) => [s.id, s]));
  const flushedBy = new Map<number, number>();
  const out: FlushedChanges = { files: 0, changes: 0, problems: 0, samples: [] };
  const problem = (text: string): void => {
    out.problems++;
    pushSample(out.samples, text);
  };
  for (const a of added) {
    const f = files.get(a.path);
    const cur = snapById.get(a.snap);
    if (a.compacted || f === undefined || !f.ok || cur === undefined) continue;
    out.files++;
    const lo = snapById.get(a.snap - 1)?.offsets.get(a.bucket) ?? 0;
    const hi = cur.offsets.get(a.bucket) ?? 0;
    for (const raw of f.ids) {
      const v = Number(raw);
      if (v === 0) continue;
      out.changes++;
      const c = byV.get(v);
      if (c === undefined) {
        problem(`snapshot ${a.snap}'s file of bucket ${a.bucket} holds version ${v}, which was never published`);
        continue;
      }
      const before = flushedBy.get(v);
      if (before !== undefined) problem(`change v${v} (key ${c.key}) flushed twice: in files of snapshots ${before} and ${a.snap}`);
      flushedBy.set(v, a.snap);
      if (c.status === "failed") problem(`change v${v} (key ${c.key}) was refused, yet snapshot ${a.snap} flushed it`);
      else if (c.bucket !== a.bucket) problem(`change v${v} (key ${c.key}) went to bucket ${c.bucket}, yet is in a file of bucket ${a.bucket}`);
      else if (c.seq !== undefined && (c.seq <= lo || c.seq > hi)) problem(`change v${v} (key ${c.key}, seq ${c.seq}) is in snapshot ${a.snap}'s flush of bucket ${a.bucket}, which covers (${lo}, ${hi}]`);
    }
  }
  return out;
}
