/**
 * Partition expiration, by the rules of Paimon's PartitionExpire (see ../shared/paimon-format.md §9.5): the
 * operators' case is daily `dt` partitions kept 7 days (`partition.expiration-time = 7 d`,
 * `partition.timestamp-formatter = yyyy-MM-dd`).
 *
 * Which partitions (`partition.expiration-strategy`):
 * - `values-time` (default): the partition's time, extracted from its values (partition-time.ts:
 *   `partition.timestamp-pattern`, `partition.timestamp-formatter`), is before now − `partition.expiration-time`.
 *   A partition whose values do not parse, or hold a null, is kept and reported as skipped (Paimon logs a warning
 *   and keeps it).
 * - `update-time`: the newest file of the partition was created before now − `partition.expiration-time`.
 * Times are local wall-clock times, as in Paimon (Java `LocalDateTime.now()`). At most
 * `partition.expiration-max-num` partitions (default 100) go per run, the first ones in the order of their values
 * joined by ","; the rest are left for the next run.
 *
 * How: ONE snapshot of kind OVERWRITE (Java `dropPartitions`) that DELETEs every live file of the expired partitions
 * — with `partition.expiration-batch-size` set, one such snapshot per batch. It is built on the latest snapshot at
 * commit time and carries that snapshot's properties forward unchanged (natslake's stream offsets and epochs), so a
 * cluster committing beside it continues from it; a lost race retries on top of the winner. The files stay on disk
 * until snapshot expiration removes the files DELETEd by expired snapshots, so time travel to an earlier snapshot
 * still reads the partitions.
 *
 * Concurrent appends, as in Paimon: the DELETEs are computed at commit time, from the snapshot the commit builds on,
 * so rows appended to an expired partition before the drop's snapshot lands are dropped with it (no conflict: they
 * belong to a partition past its retention); an append landing after it re-creates the partition, which the next
 * run expires again. Appends to other partitions are never affected.
 */
import { randomUUID } from "node:crypto";
import { dataInvalid } from "../errors.ts";
import { FileStoreCommit, type ExclusiveCommitTurn } from "../commit/file-store-commit.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../format/binary-row.ts";
import type { DataType } from "../format/data-types.ts";
import { FileKind } from "../format/manifest.ts";
import { partitionPath, partitionValueString } from "../format/partition.ts";
import { CommitKind } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import { parseDuration } from "../options.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import { refuseDeletionVectors } from "../table/deletion-vectors.ts";
import type { Table } from "../table/table.ts";
import { localWallClockMillis } from "../write/data-file-writer.ts";
import { formatWallClock, PartitionTimeExtractor, PartitionTimeParseError } from "./partition-time.ts";

export type PartitionExpirationStrategy = "values-time" | "update-time";

export interface ExpirePartitionsOptions {
  /** Now, in epoch ms (tests pass their own clock); compared as local wall-clock time, as Paimon does. */
  now?: number;
  /** Compute and report what would go, commit nothing. */
  dryRun?: boolean;
  /** Overrides of the table's options (e.g. from the CLI). */
  expirationTimeMs?: number;
  timestampFormatter?: string | null;
  timestampPattern?: string | null;
  strategy?: PartitionExpirationStrategy;
  maxNum?: number;
  batchSize?: number | null;
  /** The commit user of the drop (default: a fresh one). */
  commitUser?: string;
  /** The drop takes the table's turn after losing races (see CommitRequest.exclusive). */
  exclusive?: ExclusiveCommitTurn;
}

export interface PartitionReport {
  /** `dt=2026-11-24/hour=10`. */
  path: string;
  /** Partition key → value as Paimon renders it (null for a null value). */
  spec: Record<string, string | null>;
  files: number;
  rows: number;
  /** The partition's time (values-time) or its newest file's creation time (update-time), local, ISO without zone. */
  time: string | null;
}

export interface SkippedPartition {
  path: string;
  spec: Record<string, string | null>;
  reason: string;
}

export interface ExpirePartitionsResult {
  table: string;
  strategy: PartitionExpirationStrategy;
  /** Partitions whose time is before this (local wall clock, ISO without zone) are expired. */
  cutoff: string;
  /** The snapshot the plan was made on (null: the table has no snapshot). */
  planSnapshotId: number | null;
  /** The OVERWRITE snapshots committed (one, or one per batch); empty for a dry run or when nothing expired. */
  snapshotIds: number[];
  /** Expired partitions: for a dry run, what would go; otherwise what went (files and rows as dropped at commit). */
  partitions: PartitionReport[];
  files: number;
  rows: number;
  /** Partitions kept because their values do not parse (values-time) or their files have no creation time. */
  skipped: SkippedPartition[];
  /** Expired partitions left for the next run by `partition.expiration-max-num`. */
  deferred: number;
  dryRun: boolean;
}

interface Policy {
  expirationTimeMs: number;
  checkIntervalMs: number;
  strategy: PartitionExpirationStrategy;
  maxNum: number;
  batchSize: number | null;
  extractor: PartitionTimeExtractor;
}

const STRATEGIES: readonly PartitionExpirationStrategy[] = ["values-time", "update-time"];

function policyOf(table: Table, o: ExpirePartitionsOptions): Policy {
  if (table.partitionKeys.length === 0) throw dataInvalid(`table ${table.name} is not partitioned: there are no partitions to expire`);
  const rawTime = table.options.raw["partition.expiration-time"];
  if (o.expirationTimeMs === undefined && rawTime === undefined)
    throw dataInvalid(`table ${table.name} has no partition.expiration-time: set the option (e.g. 7 d) or pass an expiration time`);
  const expirationTimeMs = o.expirationTimeMs ?? parseDuration(rawTime!);
  if (!(expirationTimeMs >= 0)) throw dataInvalid(`partition.expiration-time must not be negative, got ${expirationTimeMs} ms`);
  const strategy = (o.strategy ?? table.options.get("partition.expiration-strategy") ?? "values-time") as PartitionExpirationStrategy;
  if (!STRATEGIES.includes(strategy)) throw dataInvalid(`partition.expiration-strategy '${String(strategy)}': expected one of ${STRATEGIES.join(", ")}`);
  const maxNum = o.maxNum ?? table.options.int("partition.expiration-max-num");
  if (!(maxNum >= 1)) throw dataInvalid(`partition.expiration-max-num must be at least 1, got ${maxNum}`);
  const rawBatch = table.options.raw["partition.expiration-batch-size"];
  const batchSize = o.batchSize !== undefined ? o.batchSize : rawBatch === undefined ? null : Number.parseInt(rawBatch, 10);
  if (batchSize !== null && !(batchSize >= 1)) throw dataInvalid(`partition.expiration-batch-size must be at least 1, got ${batchSize}`);
  const pattern = o.timestampPattern !== undefined ? o.timestampPattern : (table.options.raw["partition.timestamp-pattern"] ?? null);
  const formatter = o.timestampFormatter !== undefined ? o.timestampFormatter : (table.options.raw["partition.timestamp-formatter"] ?? null);
  return {
    expirationTimeMs,
    checkIntervalMs: table.options.duration("partition.expiration-check-interval"),
    strategy,
    maxNum,
    batchSize,
    extractor: new PartitionTimeExtractor(pattern, formatter),
  };
}

/** Whether the table expires partitions at all: partitioned, with `partition.expiration-time` set. */
export function partitionExpirationEnabled(table: Table): boolean {
  return table.partitionKeys.length > 0 && table.options.raw["partition.expiration-time"] !== undefined;
}

/**
 * Whether a scheduled check is due (for the leader's schedule): expiration is enabled, and
 * `partition.expiration-check-interval` (default 1 h; 0 = every time) has passed since `lastCheck` (epoch ms; null =
 * never checked: due). Paimon starts its clock at a random point of the first interval so that short jobs still
 * expire; a long-running leader may simply check at start.
 */
export function partitionExpirationDue(table: Table, lastCheck: number | null, now: number = Date.now()): boolean {
  if (!partitionExpirationEnabled(table)) return false;
  if (lastCheck === null) return true;
  const interval = table.options.duration("partition.expiration-check-interval");
  return interval === 0 || now > lastCheck + interval;
}

interface Candidate {
  key: string;
  values: Value[];
  texts: Array<string | null>;
  path: string;
  files: number;
  rows: number;
  newestFile: number | null;
}

/** Expires partitions by the table's `partition.*` options (or the overrides); see the module comment. */
export async function expirePartitions(table: Table, o: ExpirePartitionsOptions = {}): Promise<ExpirePartitionsResult> {
  refuseDeletionVectors(table, "partition-expiration");
  const p = policyOf(table, o);
  const cutoff = localWallClockMillis(o.now ?? Date.now()) - p.expirationTimeMs;
  const types = table.partitionTypes;
  const keys = table.partitionKeys;
  const pathOpts = { defaultName: table.options.partitionDefaultName, legacyName: table.options.partitionLegacyName };
  const result: ExpirePartitionsResult = {
    table: table.name,
    strategy: p.strategy,
    cutoff: formatWallClock(cutoff),
    planSnapshotId: null,
    snapshotIds: [],
    partitions: [],
    files: 0,
    rows: 0,
    skipped: [],
    deferred: 0,
    dryRun: o.dryRun === true,
  };
  const latest = await table.snapshots.latest();
  if (latest === null) return result;
  result.planSnapshotId = latest.id;

  // Live partitions of the latest snapshot, keyed by their canonical BinaryRow (other engines may frame them apart).
  const canonical = canonicalKey(table);
  const byPartition = new Map<string, Candidate>();
  for (const e of await new ManifestStore(table).readLiveEntries(latest)) {
    const key = canonical(e.partition);
    let c = byPartition.get(key);
    if (!c) {
      const values = deserializeBinaryRow(types, e.partition);
      c = { key, values, texts: values.map((v, i) => javaString(types[i]!, v)), path: partitionPath(keys, types, values, pathOpts), files: 0, rows: 0, newestFile: null };
      byPartition.set(key, c);
    }
    c.files++;
    c.rows += e.file.rowCount;
    if (e.file.creationTimeMillis !== null) c.newestFile = Math.max(c.newestFile ?? -Infinity, e.file.creationTimeMillis);
  }

  const expired: Array<{ c: Candidate; time: number }> = [];
  for (const c of byPartition.values()) {
    const spec = Object.fromEntries(keys.map((k, i) => [k, c.texts[i]!]));
    if (p.strategy === "update-time") {
      if (c.newestFile === null) result.skipped.push({ path: c.path, spec, reason: "its files have no creation time" });
      else if (cutoff > c.newestFile) expired.push({ c, time: c.newestFile });
      continue;
    }
    try {
      const time = p.extractor.extract(keys, c.texts);
      if (cutoff > time) expired.push({ c, time });
    } catch (e) {
      if (!(e instanceof PartitionTimeParseError)) throw e;
      result.skipped.push({ path: c.path, spec, reason: `cannot extract a time: ${e.message}` });
    }
  }
  // Paimon's order and limit: by the values joined with ",", null values as the default partition name.
  const joined = (c: Candidate): string => c.texts.map((t) => t ?? table.options.partitionDefaultName).join(",");
  expired.sort((a, b) => (joined(a.c) < joined(b.c) ? -1 : joined(a.c) > joined(b.c) ? 1 : 0));
  result.deferred = Math.max(0, expired.length - p.maxNum);
  const chosen = expired.slice(0, p.maxNum);
  result.skipped.sort((a, b) => a.path.localeCompare(b.path));

  const report = (x: { c: Candidate; time: number }, files: number, rows: number): PartitionReport => ({
    path: x.c.path,
    spec: Object.fromEntries(keys.map((k, i) => [k, x.c.texts[i]!])),
    files,
    rows,
    time: formatWallClock(x.time),
  });
  if (o.dryRun === true || chosen.length === 0) {
    result.partitions = chosen.map((x) => report(x, x.c.files, x.c.rows));
    result.files = chosen.reduce((n, x) => n + x.c.files, 0);
    result.rows = chosen.reduce((n, x) => n + x.c.rows, 0);
    return result;
  }

  const batches: Array<typeof chosen> = [];
  const size = p.batchSize ?? chosen.length;
  for (let i = 0; i < chosen.length; i += size) batches.push(chosen.slice(i, i + size));
  const commitUser = o.commitUser ?? randomUUID();
  const commit = new FileStoreCommit(table);
  const dropped = new Map<string, { files: number; rows: number }>();
  for (const batch of batches) {
    const wanted = new Set(batch.map((x) => x.c.key));
    const res = await commit.commit({
      commitUser,
      ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}),
      kind: CommitKind.OVERWRITE,
      messages: [],
      overwrite: { matches: (part) => wanted.has(canonical(part)), readSnapshotId: null, atCommitTime: true },
    });
    if (res.snapshot === null) continue;
    result.snapshotIds.push(res.snapshot.id);
    // What went, as committed (files appended after the plan included).
    for (const e of await new ManifestStore(table).readDeltaEntries(res.snapshot)) {
      if (e.kind !== FileKind.DELETE) continue;
      const key = canonical(e.partition);
      const d = dropped.get(key) ?? { files: 0, rows: 0 };
      d.files++;
      d.rows += e.file.rowCount;
      dropped.set(key, d);
    }
  }
  result.partitions = chosen.map((x) => {
    const d = dropped.get(x.c.key) ?? { files: 0, rows: 0 };
    return report(x, d.files, d.rows);
  });
  result.files = result.partitions.reduce((n, x) => n + x.files, 0);
  result.rows = result.partitions.reduce((n, x) => n + x.rows, 0);
  return result;
}

/** A partition's identity: its BinaryRow as natslake serializes it (cached per distinct framing). */
function canonicalKey(table: Table): (partition: Uint8Array) => string {
  const types = table.partitionTypes;
  const cache = new Map<string, string>();
  return (partition) => {
    const raw = Buffer.from(partition).toString("hex");
    let key = cache.get(raw);
    if (key === undefined) {
      key = Buffer.from(serializeBinaryRow(types, deserializeBinaryRow(types, partition))).toString("hex");
      cache.set(raw, key);
    }
    return key;
  };
}

/**
 * The text Paimon's extractor sees for a value: Java's `toString()` of the internal value (a STRING's text, an INT's
 * digits; a DATE is its day number, so DATE partitions need update-time), null for a null value.
 */
function javaString(type: DataType, v: Value): string | null {
  try {
    return partitionValueString(type, v, true);
  } catch {
    return null;
  }
}
