/**
 * BucketCompactor: the compaction of one bucket by the writer that owns it (as Paimon's writers compact their own
 * buckets), one job at a time, off the writer's ingest path — the writer starts a job and goes on reading and
 * flushing; a job that takes long only delays the next job.
 *
 * A job: plan against the latest snapshot (src/maintenance/compact.ts, this bucket only; the size-ratio rule keeps
 * rewrites incremental), rewrite the picked files in the shared Parquet pool (decoding and encoding happen in worker
 * threads, under a node-wide CompactionSlots permit that bounds memory), and append one CompactionEntry to the
 * commit stream. The leader lands it as a COMPACT snapshot or rejects it and deletes its outputs
 * (src/commit/compaction-commit.ts).
 *
 * Inputs of a job sent are not planned again until they left the live set (accepted) or IN_FLIGHT_MS passed (the job
 * was rejected, or is still unread by a leader that is starting): re-planning them earlier would only send a change
 * the leader rejects as `inputs-gone`. Nothing here is durable: a writer that dies forgets its jobs; the leader still
 * decides what reached the commit stream, and outputs never sent become orphans for orphan-file cleanup.
 */
import { randomUUID } from "node:crypto";
import { failpointAsync } from "../src/failpoints.ts";
import { abortCompaction, compactionRules, planCompaction, rewrite, type CompactResult } from "../src/maintenance/compact.ts";
import type { DataFileMeta } from "../src/spec/manifest.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { encodeMsg } from "./wire/codec.ts";
import { payloadLimit } from "./wire/limits.ts";
import type { CompactionEntry } from "./wire/messages.ts";
import type { CommitLog } from "./ports.ts";
import type { CompactionSlots } from "./compaction-slots.ts";

/**
 * One manifest cache per table object, i.e. per table on a node, shared by the compactors of all its buckets there:
 * each plans against the latest snapshot every few commits, and with a cache each a new manifest was fetched once per
 * bucket (on an object store, most of a cluster's GETs per commit).
 */
const sharedManifests = new WeakMap<Table, ManifestStore>();

/** How long the inputs of a job sent stay out of planning unless they leave the live set first. */
export const IN_FLIGHT_MS = 60_000;

export interface BucketCompactorDeps {
  table: Table;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  commitLog: CommitLog;
  slots: CompactionSlots;
  /** Monotonic ms. */
  now: () => number;
}

export interface CompactionJobResult {
  /** The entry sent (null: nothing worth compacting). */
  entry: CompactionEntry | null;
  inputFiles: number;
  outputFiles: number;
  inputBytes: number;
}

export class BucketCompactor {
  private readonly manifests: ManifestStore;
  /** Input file name → until when it stays out of planning. */
  private readonly inFlight = new Map<string, number>();
  private stopped = false;

  constructor(private readonly d: BucketCompactorDeps) {
    let store = sharedManifests.get(d.table);
    if (store === undefined) sharedManifests.set(d.table, (store = new ManifestStore(d.table)));
    this.manifests = store;
  }

  /** Jobs in progress finish without sending (their outputs are removed). */
  stop(): void {
    this.stopped = true;
  }

  /** Plans, rewrites and sends one job. Throws on failure (outputs written by it are removed unless sent). */
  async runOnce(): Promise<CompactionJobResult> {
    const table = this.d.table;
    const now = this.d.now();
    const rules = {
      maxSchemaId: table.schema.id,
      sizeRatio: table.options.int("compaction.size-ratio"),
      exclude: (f: DataFileMeta) => (this.inFlight.get(f.fileName) ?? 0) > now,
    };
    const plan = await planCompaction(table, { bucket: this.d.bucket, rules }, this.manifests);
    // Inputs no longer live were decided; expired ones are planned again.
    for (const [name, until] of this.inFlight) if (until <= now || !plan.liveFileNames.has(name)) this.inFlight.delete(name);
    const none: CompactionJobResult = { entry: null, inputFiles: 0, outputFiles: 0, inputBytes: 0 };
    if (plan.tasks.length === 0 || plan.snapshotId === null || this.stopped) return none;
    // One job rewrites about one target file's worth: a long backlog is worked off job by job.
    const tasks = [];
    let bytes = 0;
    const targetFileSize = compactionRules(table).targetFileSize;
    for (const t of plan.tasks) {
      if (tasks.length > 0 && bytes >= targetFileSize) break;
      tasks.push(t);
      bytes += t.files.reduce((n, f) => n + f.fileSize, 0);
    }
    const release = await this.d.slots.acquire();
    const results: CompactResult[] = [];
    try {
      for (const t of tasks) {
        if (this.stopped) break;
        results.push(await rewrite(table, t, { rules }));
      }
    } catch (e) {
      await abortCompaction(table, results);
      throw e;
    } finally {
      release();
    }
    if (this.stopped || results.length === 0) {
      await abortCompaction(table, results);
      return none;
    }
    const entry = this.fitting(results, plan.snapshotId);
    const sent = results.slice(0, entry.changes.length);
    await abortCompaction(table, results.slice(entry.changes.length));
    if (sent.length === 0) return none;
    await failpointAsync("writer.compaction-before-send");
    try {
      await this.d.commitLog.append(entry, `compaction-${entry.compactionId}`);
    } catch (e) {
      // Unknown outcome: the entry may be in the commit stream, so its outputs stay (the leader decides them, or
      // orphan-file cleanup removes them); its inputs stay out of planning until that is known.
      this.markInFlight(sent);
      throw e;
    }
    this.markInFlight(sent);
    return {
      entry,
      inputFiles: sent.reduce((n, r) => n + r.inputs.length, 0),
      outputFiles: sent.reduce((n, r) => n + r.outputs.length, 0),
      inputBytes: sent.reduce((n, r) => n + r.inputs.reduce((m, f) => m + f.fileSize, 0), 0),
    };
  }

  private markInFlight(results: readonly CompactResult[]): void {
    const until = this.d.now() + IN_FLIGHT_MS;
    for (const r of results) for (const f of r.inputs) this.inFlight.set(f.fileName, until);
  }

  /** The entry for the longest prefix of `results` whose encoding fits in one message (maybe none). */
  private fitting(results: readonly CompactResult[], planSnapshotId: number): CompactionEntry {
    const limit = payloadLimit(this.d.commitLog.maxPayload);
    const entryOf = (rs: readonly CompactResult[]): CompactionEntry => ({
      type: "compaction",
      v: 1,
      table: this.d.table.name,
      bucket: this.d.bucket,
      ownerEpoch: this.d.ownerEpoch,
      writerId: this.d.writerId,
      compactionId: randomUUID(),
      planSnapshotId,
      changes: rs.map((r) => ({ partition: r.task.partition, totalBuckets: r.task.totalBuckets, before: r.inputs, after: r.outputs })),
    });
    for (let n = results.length; n > 0; n--) {
      const e = entryOf(results.slice(0, n));
      if (encodeMsg(e).length <= limit) return e;
    }
    return entryOf([]);
  }
}
