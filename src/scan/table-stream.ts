/**
 * TableStream: a table read as a queue — a starting scan chosen by Paimon's `scan.mode`, then every new snapshot's
 * rows in snapshot order — with the consumer's progress kept in Paimon's consumer files (src/table/consumers.ts).
 *
 * Scan modes, with Paimon's meanings for a streaming read (CoreOptions.StartupMode):
 * - `latest-full` (Paimon's default, also called `full`): the whole table as of the latest snapshot, then the rows
 *   of every later snapshot;
 * - `latest`: only the rows of snapshots after the latest one at the start;
 * - `from-snapshot` N: the rows of snapshot N and every later one;
 * - `from-snapshot-full` N: the whole table as of snapshot N, then the rows of every later snapshot;
 * - `from-timestamp` T: the rows of snapshots committed after the last snapshot at or before T (from the earliest
 *   when none is that old), as Paimon's `scan.timestamp-millis`.
 * A consumer id with recorded progress overrides the mode (as `consumer-id` does in Paimon): the stream resumes at
 * the consumer's `nextSnapshot` — the first snapshot it did not acknowledge — unless `consumer.ignore-progress`.
 *
 * Schema: every item is read in the table's current schema (the handle's) — a `-full` mode's starting snapshot too,
 * though a time-travel read of that snapshot is in its own schema (src/scan/plan.ts): the stream goes on into newer
 * snapshots and keeps one schema throughout, as Paimon's streaming reads keep the table's.
 *
 * What a delta is: the files an APPEND snapshot added (src/scan/incremental.ts); of a primary-key table, its changes
 * with their kinds (`_row_kind`: the changelog files with `changelog-producer = input`, else its level-0 files read
 * without merging), after a full scan whose rows come as "+I". COMPACT snapshots add no rows and
 * OVERWRITE ones are not followed (as Paimon's DeltaFollowUpScanner, without `streaming-read-overwrite`): both are
 * passed over, never delivered. A snapshot the stream needs that was expired is an error naming the earliest one
 * retained — never a silent skip.
 *
 * Waiting: `next()` looks for the next snapshot; when it does not exist yet it waits until `wake()` is called (the
 * cluster's snapshot notification) or `pollMs` passes, then reads the snapshot chain again — so a missed notification
 * costs at most one poll interval, and nothing is skipped.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { deliversRows } from "./incremental.ts";
import { checkConsumerIdFor, getConsumer, writeConsumer } from "../table/consumers.ts";
import { checkName } from "../names.ts";
import type { Table } from "../table/table.ts";
import type { ReadSpec } from "./read.ts";

export type ScanMode =
  | { mode: "latest" }
  | { mode: "latest-full" }
  | { mode: "from-snapshot"; snapshotId: number }
  | { mode: "from-snapshot-full"; snapshotId: number }
  | { mode: "from-timestamp"; timestampMillis: number };

/** Parses `latest`, `latest-full` / `full`, `snapshot:N`, `snapshot-full:N`, `time:<ISO or epoch ms>`. */
export function parseScanMode(text: string): ScanMode {
  const t = text.trim();
  if (t === "latest") return { mode: "latest" };
  if (t === "latest-full" || t === "full") return { mode: "latest-full" };
  const m = /^(snapshot|snapshot-full|from-snapshot|from-snapshot-full):(\d+)$/.exec(t);
  if (m !== null) {
    const snapshotId = Number(m[2]);
    if (!(snapshotId >= 1)) throw new LakeError(ErrorKind.DataInvalid, `snapshot ids start at 1, got '${t}'`);
    return m[1]!.endsWith("full") ? { mode: "from-snapshot-full", snapshotId } : { mode: "from-snapshot", snapshotId };
  }
  const ts = /^(?:time|from-timestamp):(.+)$/.exec(t);
  if (ts !== null) {
    const v = ts[1]!;
    const millis = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
    if (!Number.isFinite(millis)) throw new LakeError(ErrorKind.DataInvalid, `'${v}' is not a timestamp (ISO 8601 or epoch milliseconds)`);
    return { mode: "from-timestamp", timestampMillis: millis };
  }
  throw new LakeError(ErrorKind.DataInvalid, `unknown scan mode '${text}': use latest, latest-full (full), snapshot:N, snapshot-full:N or time:T`);
}

export interface StreamItem {
  snapshotId: number;
  /** `full`: the whole table as of the snapshot (a -full mode's starting scan); `delta`: the rows the snapshot added. */
  kind: "full" | "delta";
  snapshot: Snapshot;
  /** How to read its rows (`readBatches` / `readRows`, with a projection or partition added by the caller). */
  read: ReadSpec;
}

export interface TableStreamOptions {
  mode: ScanMode;
  /** Resume from, and record progress in, `consumer/consumer-<id>`. */
  consumerId?: string;
  /** Start by `mode` even when the consumer has progress (Paimon's `consumer.ignore-progress`); default: the table option. */
  ignoreProgress?: boolean;
  /** Longest wait between looks at the snapshot chain when no wake() comes (default 1000 ms). */
  pollMs?: number;
}

export class TableStream {
  /** The next snapshot whose delta may be delivered (null: not started). */
  private nextDelta: number | null = null;
  private pendingFull: number | null = null;
  private closed = false;
  private waker: (() => void) | null = null;
  private woken = false;
  /** The newest snapshot a wake-up announced (`wake(id)`, from the table's notifications); null: none yet. */
  private announced: number | null = null;
  /** Look at the snapshot chain on the next turn whatever was announced (the start, a poll, a wake-up without an id). */
  private lookAnyway = true;
  /** Where the stream started (for logs): `consumer`, or the mode. */
  startedBy: string | null = null;

  constructor(
    readonly table: Table,
    private readonly opts: TableStreamOptions,
  ) {
    if (opts.consumerId !== undefined) checkName("consumer id", opts.consumerId);
  }

  /** The snapshot the next item is about (a pending full scan's, else the next delta's); null before it started. */
  get nextSnapshotId(): number | null {
    return this.pendingFull ?? this.nextDelta;
  }

  /**
   * A new snapshot may exist: the waiting `next()` looks now. `snapshotId` is the one a notification announced: a
   * stream waiting for a later one then does not look at the chain (see `next`); without it, it always looks.
   */
  wake(snapshotId?: number): void {
    if (snapshotId === undefined) this.lookAnyway = true;
    else this.announced = Math.max(this.announced ?? 0, snapshotId);
    this.woken = true;
    const w = this.waker;
    this.waker = null;
    w?.();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /**
   * Takes the starting position now (it is otherwise taken by the first `next()`): a start that cannot be served — an
   * expired snapshot, one that does not exist — fails here, before anything is delivered.
   */
  async prepare(): Promise<void> {
    if (this.nextDelta === null) await this.start();
  }

  /** The next item, waiting for a snapshot when there is none yet; null once closed. */
  async next(): Promise<StreamItem | null> {
    await this.prepare();
    for (;;) {
      if (this.closed) return null;
      if (this.pendingFull !== null) {
        const id = this.pendingFull;
        this.pendingFull = null;
        // In the current schema like the deltas after it: a stream has one schema (not the snapshot's own, as a
        // time-travel read of it has), as Paimon's streaming reads keep the table's (copyWithoutTimeTravel).
        // A primary-key table's rows carry their kind throughout (`_row_kind`): the full scan's as "+I".
        return { snapshotId: id, kind: "full", snapshot: await this.table.snapshots.snapshot(id), read: { snapshotId: id, inCurrentSchema: true, ...(this.table.isPrimaryKeyTable ? { rowKind: true } : {}) } };
      }
      const id = this.nextDelta!;
      // Whether snapshot `id` may be on the chain: announced, or not known otherwise (the start, a poll, a wake-up
      // without an id). A stream waiting at the head for the next snapshot would otherwise look (a stat) and check for
      // expiration (a hint read and two stats) at every wake-up and after every delivery — on a reader node, for
      // every session, ~7 file-system calls a snapshot each, its main thread's largest cost after the sends (issue
      // 11's profile). A notification that never came is caught up by the poll, as before.
      const look = this.lookAnyway || this.announced === null || id <= this.announced;
      this.woken = false;
      this.lookAnyway = false;
      if (look) {
        if (await this.table.snapshots.snapshotExists(id)) {
          const s = await this.table.snapshots.snapshot(id);
          this.nextDelta = id + 1;
          if (!deliversRows(this.table, s)) continue;
          return { snapshotId: id, kind: "delta", snapshot: s, read: { incremental: { from: id - 1, to: id } } };
        }
        const earliest = await this.table.snapshots.earliestId();
        if (earliest !== null && id < earliest) throw this.expired(id, earliest);
      }
      await this.sleep();
    }
  }

  /**
   * Records that every item up to `snapshotId` was processed: a consumer that restarts resumes after it (Paimon's
   * `nextSnapshot` = id + 1). A no-op without a consumer id.
   */
  async ack(snapshotId: number): Promise<void> {
    if (this.opts.consumerId === undefined) return;
    await writeConsumer(this.table, this.opts.consumerId, snapshotId + 1);
  }

  /** Async iteration over the items (until close()). */
  async *[Symbol.asyncIterator](): AsyncGenerator<StreamItem> {
    for (;;) {
      const item = await this.next();
      if (item === null) return;
      yield item;
    }
  }

  private async start(): Promise<void> {
    const snaps = this.table.snapshots;
    const ignore = this.opts.ignoreProgress ?? this.table.options.bool("consumer.ignore-progress");
    // A consumer this stream would make takes a new name's rules; one that exists keeps its id.
    if (this.opts.consumerId !== undefined) await checkConsumerIdFor(this.table, this.opts.consumerId);
    if (this.opts.consumerId !== undefined && !ignore) {
      const c = await getConsumer(this.table, this.opts.consumerId);
      if (c !== null) {
        const earliest = await snaps.earliestId();
        if (earliest !== null && c.nextSnapshot < earliest) throw this.expired(c.nextSnapshot, earliest, `consumer '${c.id}' resumes at snapshot ${c.nextSnapshot}, which`);
        this.nextDelta = Math.max(1, c.nextSnapshot);
        this.startedBy = "consumer";
        return;
      }
    }
    const m = this.opts.mode;
    this.startedBy = m.mode;
    const latest = await snaps.latestId();
    const earliest = (await snaps.earliestId()) ?? 1;
    switch (m.mode) {
      case "latest":
        this.nextDelta = (latest ?? 0) + 1;
        return;
      case "latest-full":
        if (latest !== null) this.pendingFull = latest;
        this.nextDelta = (latest ?? 0) + 1;
        return;
      case "from-snapshot":
        if (latest !== null && m.snapshotId < earliest) throw this.expired(m.snapshotId, earliest);
        this.nextDelta = m.snapshotId;
        return;
      case "from-snapshot-full":
        if (!(await snaps.snapshotExists(m.snapshotId))) {
          if (latest !== null && m.snapshotId < earliest) throw this.expired(m.snapshotId, earliest);
          throw new LakeError(ErrorKind.NotFound, `snapshot ${m.snapshotId} of ${this.table.name} does not exist (latest: ${latest ?? "none"})`);
        }
        this.pendingFull = m.snapshotId;
        this.nextDelta = m.snapshotId + 1;
        return;
      case "from-timestamp": {
        const before = latest === null ? null : await this.lastAtOrBefore(m.timestampMillis, earliest, latest);
        this.nextDelta = before === null ? earliest : before + 1;
        return;
      }
    }
  }

  /** The newest snapshot committed at or before `t`, or null when even the earliest is younger (binary search). */
  private async lastAtOrBefore(t: number, earliest: number, latest: number): Promise<number | null> {
    let lo = earliest;
    let hi = latest;
    let found: number | null = null;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      const s = await this.table.snapshots.snapshot(mid);
      if (s.timeMillis <= t) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  private expired(id: number, earliest: number, what = `snapshot ${id}`): LakeError {
    return new LakeError(
      ErrorKind.NotFound,
      `${what} of ${this.table.name} was expired: the earliest snapshot retained is ${earliest}; start again with snapshot:${earliest} (or latest-full), and keep a consumer id so expiration keeps what it still needs`,
      { context: { snapshotId: id, earliest } },
    );
  }

  private async sleep(): Promise<void> {
    if (this.woken || this.closed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.waker = null;
        this.lookAnyway = true; // the poll: a notification may have been lost
        resolve();
      }, this.opts.pollMs ?? 1000);
      this.waker = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
