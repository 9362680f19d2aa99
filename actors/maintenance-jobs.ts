/**
 * One maintenance job — compact, expire-snapshots, expire-partitions, remove-orphans, restore — from its parsed options to
 * the summary object the CLI prints. The CLI runs it on the warehouse (`--local`) and the table's leader runs it for
 * a request from the CLI (`--nats`): one function for both, so the checks, the library calls and the summary are the
 * same whichever path ran, and the CLI's output cannot tell them apart.
 */
import type { ExclusiveCommitTurn } from "../src/commit/file-store-commit.ts";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { dataInvalid } from "../src/errors.ts";
import { compactTable, type CompactSummary } from "../src/maintenance/compact.ts";
import { expirePartitions, type ExpirePartitionsResult } from "../src/maintenance/expire-partitions.ts";
import { expireSnapshots, type ExpireResult } from "../src/maintenance/expire-snapshots.ts";
import { compileFormatter } from "../src/maintenance/partition-time.ts";
import { COMMITTABLE_BODIES_DIR, dataFilePathOf, removeOrphans, type RemoveOrphansResult } from "../src/maintenance/remove-orphans.ts";
import { restoreTable, type RestoreResult } from "../src/maintenance/restore.ts";
import { parsePartitionSpec } from "../src/format/partition.ts";
import type { Table } from "../src/table/table.ts";
import { decodeCommittable } from "./wire/codec.ts";
import type { MaintenanceTaskName, MaintenanceTaskOptions } from "./wire/messages.ts";

/** What each job returns: the object `--json` prints. */
export interface MaintenanceResults {
  compact: CompactSummary;
  "expire-snapshots": ExpireResult & { table: string };
  "expire-partitions": ExpirePartitionsResult;
  "remove-orphans": RemoveOrphansResult & { table: string };
  restore: RestoreResult;
}

/** Progress of a long job (compact: per task; remove-orphans: per file deleted), for the CLI's bar. */
export interface JobProgress {
  done: number;
  total: number;
  /** compact: input files rewritten so far. */
  files?: number;
}

export interface JobHooks {
  onProgress?: (p: JobProgress) => void;
  /** Epoch ms (tests); default Date.now(). */
  now?: number;
  /**
   * On the cluster's leader: takes the table's commit turn from its commit rounds (see CommitRequest.exclusive), for
   * the jobs that commit a snapshot (compact, expire-partitions, restore) once they have lost races to them.
   */
  exclusive?: ExclusiveCommitTurn;
}

export type MaintenanceJob = { [K in MaintenanceTaskName]: { task: K; options: MaintenanceTaskOptions[K] } }[MaintenanceTaskName];

/** Runs `job` on `table`; bad options (a bucket the table does not have, …) fail as DataInvalid before any work. */
export async function runMaintenanceJob<K extends MaintenanceTaskName>(table: Table, job: { task: K; options: MaintenanceTaskOptions[K] }, hooks?: JobHooks): Promise<MaintenanceResults[K]>;
export async function runMaintenanceJob(table: Table, job: MaintenanceJob, hooks: JobHooks = {}): Promise<MaintenanceResults[MaintenanceTaskName]> {
  switch (job.task) {
    case "compact":
      return compact(table, job.options, hooks);
    case "expire-snapshots": {
      const o = job.options;
      const r = await expireSnapshots(table, {
        ...(o.retainMin !== undefined ? { retainMin: o.retainMin } : {}),
        ...(o.retainMax !== undefined ? { retainMax: o.retainMax } : {}),
        ...(o.olderThanMs !== undefined ? { timeRetainedMs: o.olderThanMs } : {}),
        ...(o.maxDeletes !== undefined ? { limit: o.maxDeletes } : {}),
        ...(hooks.now !== undefined ? { now: hooks.now } : {}),
        dryRun: o.dryRun === true,
      });
      return { table: table.name, ...r };
    }
    case "expire-partitions": {
      const o = job.options;
      if (o.timestampFormatter !== undefined) compileFormatter(o.timestampFormatter); // says what is wrong with it
      return expirePartitions(table, {
        ...(o.expirationTimeMs !== undefined ? { expirationTimeMs: o.expirationTimeMs } : {}),
        ...(o.timestampFormatter !== undefined ? { timestampFormatter: o.timestampFormatter } : {}),
        ...(o.timestampPattern !== undefined ? { timestampPattern: o.timestampPattern } : {}),
        ...(hooks.now !== undefined ? { now: hooks.now } : {}),
        ...(hooks.exclusive !== undefined ? { exclusive: hooks.exclusive } : {}),
        dryRun: o.dryRun === true,
      });
    }
    case "remove-orphans": {
      const o = job.options;
      const olderThanMs = o.olderThanMs ?? table.options.duration("natslake.orphan-older-than");
      const now = hooks.now ?? Date.now();
      const r = await removeOrphans(table, {
        now,
        olderThanMs,
        dryRun: o.dryRun === true,
        inFlightFiles: () => youngBodyFiles(table, now - olderThanMs),
        onProgress: (done, total) => hooks.onProgress?.({ done, total }),
      });
      return { table: table.name, ...r };
    }
    case "restore": {
      const o = job.options;
      return restoreTable(table, {
        ...(o.toSnapshot !== undefined ? { toSnapshot: o.toSnapshot } : {}),
        ...(o.toTag !== undefined ? { toTag: o.toTag } : {}),
        ...(hooks.exclusive !== undefined ? { exclusive: hooks.exclusive } : {}),
        dryRun: o.dryRun === true,
      });
    }
  }
}

async function compact(table: Table, o: MaintenanceTaskOptions["compact"], hooks: JobHooks): Promise<CompactSummary> {
  if (o.partition !== undefined && table.partitionKeys.length === 0) throw dataInvalid(`${table.name} is not partitioned: --partition does not apply`);
  if (o.bucket !== undefined && table.bucket <= 0) throw dataInvalid(`${table.name} has no fixed buckets (bucket = ${table.bucket}): --bucket does not apply`);
  if (o.bucket !== undefined && o.bucket >= table.bucket) throw dataInvalid(`--bucket ${o.bucket}: ${table.name} has buckets 0..${table.bucket - 1}`);
  const partition = o.partition === undefined ? undefined : parsePartitionSpec(o.partition, table.partitionKeys, table.partitionTypes, { defaultName: table.options.partitionDefaultName });
  let files = 0;
  // A primary-key table is compacted by its LSM levels (one universal pick per bucket, or all to the top with `full`);
  // `full` on an append table is refused by the library with what to do instead.
  return compactTable(table, {
    ...(partition !== undefined ? { partition } : {}),
    ...(o.bucket !== undefined ? { bucket: o.bucket } : {}),
    ...(o.full === true ? { full: true } : {}),
    ...(hooks.exclusive !== undefined ? { exclusive: hooks.exclusive } : {}),
    dryRun: o.dryRun === true,
    // A fresh commit user per run, as every CLI write: a second compaction is never taken for a retry of the first.
    commitUser: randomUUID(),
    onProgress: (done, total, task) => {
      files += task.files.length;
      hooks.onProgress?.({ done, total, files });
    },
  });
}

/**
 * Files of the committable bodies younger than the bound: committables still in flight (sent by reference, not
 * decided yet) may commit them, so an orphan run must keep them whatever their age.
 */
export async function youngBodyFiles(table: Table, cutoff: number): Promise<string[]> {
  const out: string[] = [];
  const dir = join(table.root, COMMITTABLE_BODIES_DIR);
  for (const s of await table.io.listStatus(dir)) {
    if (s.kind !== "file" || s.name.startsWith(".") || s.mtime < cutoff) continue;
    try {
      const c = decodeCommittable(await table.io.readFile(join(dir, s.name)));
      for (const f of c.files) out.push(dataFilePathOf(table, f.partition, c.bucket, f.meta.fileName, f.meta.externalPath));
    } catch {
      // Gone since the listing (decided and removed) or not a committable: nothing it names needs protecting.
    }
  }
  return out;
}
