/**
 * DeltaFeed: the rows each new snapshot of a table added, read and encoded ONCE on a reader node for every consume
 * session that wants them the same way — one feed per (table schema, projection, partition) — and shared by every
 * session positioned at that snapshot. Without it, N sessions read and Arrow-encode every snapshot N times, and the
 * reader's CPU grows with the number of consumers (issue 11's benchmark: p99 in seconds with 10 consumers).
 *
 * What a session gets for a snapshot it is at (`FeedCursor.get`):
 * - the shared entry (the encoded chunk bodies) when the feed holds it, is reading it, or the snapshot is newer than
 *   any the feed has read (then this session's request reads it, once, for everyone), or when other sessions are at
 *   or behind it too (then it is read once more, for all of them);
 * - null — read it yourself, through the table, as before — when the snapshot is behind the feed's head, no longer
 *   held, and this session is alone back there (catching up, or fallen behind), or when the snapshot is too large to
 *   hold in memory (see `maxEntryFileBytes`), or when reading it failed here (the session's own read reports why).
 *
 * When the table's notification announces a snapshot and a session waits at the feed's head for it, the feed reads
 * it at once (`prefetch`), before any session asks: a session's own look at the snapshot chain comes later (after it
 * sent the snapshot before, its wake-up, a stat and a read of the snapshot file), and the read is what every session
 * waits for.
 *
 * Earlier still: the files of the next snapshots are named by the committables writers send the leader, which the
 * reader node reads along (`announce`); while a session waits at the head, the feed decodes them during the commit,
 * and the load after the notification takes those decodes (`earlyRead`) instead of reading the files.
 *
 * Memory: an entry is released as soon as no attached session still needs it (every cursor moved past it), and the
 * entries held never exceed `maxBytes` in all: beyond that the oldest are dropped, so a slow or stalled session never
 * grows the reader's memory — it reads its backlog itself later, and joins the shared entries again once it reaches
 * them. Flow control stays per session: a session takes an entry's bodies by reference and sends them at its own
 * consumer's pace; the feed never waits for a session.
 */
import { dataFileReader, planSnapshotDelta, readPlanMessages, type DataFileReader, type FileRows } from "../src/scan/read.ts";
import { sharedParquetPool } from "../src/codec/parquet-pool.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../src/format/binary-row.ts";
import type { DataFileMeta } from "../src/format/manifest.ts";
import { ensureError } from "../src/errors.ts";
import type { Snapshot } from "../src/format/snapshot.ts";
import { deliversRows } from "../src/scan/incremental.ts";
import type { Value } from "../src/format/values.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { ChunkPacker } from "./consume-chunks.ts";

/** One snapshot's rows (its delta), projected and filtered, as chunk bodies. */
export interface FeedEntry {
  readonly snapshotId: number;
  /** IPC stream bodies, each within the payload limit; empty when the snapshot added no rows that pass the filter. */
  readonly bodies: readonly Uint8Array[];
  readonly bytes: number;
  readonly rows: number;
}

export interface DeltaFeedOptions {
  table: Table;
  projection?: string[];
  partition?: Value[];
  /** The largest chunk body (the server's max_payload less header room). */
  payloadLimit: number;
  /** Encoded bytes held at most, all entries together (default 32 MiB). */
  maxBytes?: number;
  /**
   * A snapshot whose added data files are larger than this (Parquet bytes, default 4 MiB), or whose encoded rows grow
   * past half of `maxBytes`, is not held: sessions read it themselves, each within its own window.
   */
  maxEntryFileBytes?: number;
  /** Manifest caches shared with the table's other feeds. */
  store?: ManifestStore;
  /** Told when reading a snapshot for sharing failed (the sessions then read it themselves). */
  onLoadError?: (snapshotId: number, error: Error) => void;
  /** Told of each count added to `stats` (metrics): `read`, `shared` (served), `own` (declined), `evicted`. */
  onEvent?: (outcome: "read" | "shared" | "own" | "evicted") => void;
  /** Told of each announced file decoded ahead (`early`) and each a load took instead of reading it (`taken`). */
  onFile?: (outcome: "early" | "taken") => void;
  /** Told how long each stage of a shared read took (metrics: where a reader's part of the latency goes). */
  onStage?: (stage: FeedStage, ms: number) => void;
  /** Monotonic milliseconds (the node's clock; default `performance.now`). */
  now?: () => number;
}

/**
 * The stages of a shared read: `snapshot` (a prefetch reading the announced snapshot's file), `plan` (its delta's
 * manifest list and manifests), `read` (decoding its data files and packing the chunk bodies, until the entry is
 * ready for the sessions).
 */
export type FeedStage = "snapshot" | "plan" | "read";

export const DEFAULT_FEED_MAX_BYTES = 32 * 1024 * 1024;
export const DEFAULT_FEED_MAX_ENTRY_FILE_BYTES = 4 * 1024 * 1024;
/** Data files one load decodes ahead of the batch it encodes (a new snapshot has one small file per bucket written). */
const READ_AHEAD_FILES = 16;
/** What an entry costs at least (its bookkeeping), so that entries without rows are bounded too. */
const ENTRY_OVERHEAD = 1024;

/** A snapshot not held (too large to share). */
const TOO_LARGE = "too-large";

/** A data file a writer announced (its committable), before the snapshot that adds it links. */
export interface AnnouncedFile {
  /** Framed BinaryRow of its partition. */
  partition: Uint8Array;
  bucket: number;
  meta: DataFileMeta;
}

/** Parquet bytes of announced files decoded ahead and not taken yet, at most (all of a feed's). */
const EARLY_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** An announced file not taken by a load within this long is dropped (its committable was rejected, or it is late). */
const EARLY_TTL_MS = 10_000;

/** Counts since the feed was made: what the fan-out saved, for metrics and tests. */
export interface FeedStats {
  /** Snapshots read and encoded for sharing. */
  reads: number;
  /** Entries handed to sessions (a read shared by 10 sessions counts 10 here). */
  served: number;
  /** Requests answered "read it yourself". */
  declined: number;
  /** Entries dropped because the feed held `maxBytes` (not because every session had moved past them). */
  evicted: number;
  /** Announced files decoded ahead (`announce`), and those a load then took instead of reading them. */
  early: number;
  earlyTaken: number;
  /** Files of shared reads whose decoder messages went into chunks as they were (not decoded and encoded again here). */
  forwarded: number;
}

export class DeltaFeed {
  /** Entries held, by snapshot id. */
  private readonly entries = new Map<number, FeedEntry | typeof TOO_LARGE>();
  private readonly loading = new Map<number, Promise<FeedEntry | null>>();
  /** The newest snapshot the feed has read or is reading (0: none yet). */
  private head = 0;
  private heldBytes = 0;
  private readonly cursors = new Set<FeedCursor>();
  private readonly store: ManifestStore;
  readonly stats: FeedStats = { reads: 0, served: 0, declined: 0, evicted: 0, early: 0, earlyTaken: 0, forwarded: 0 };
  /** Announced files decoded ahead, by file name (names are unique), until a load takes them or they go stale. */
  private readonly early = new Map<string, { read: Promise<FileRows>; bytes: number; at: number }>();
  private earlyBytes = 0;
  private fileReader: DataFileReader | null = null;
  /** The feed's partition filter as framed BinaryRow bytes (hex), to match announced files; null: every partition. */
  private readonly partitionHex: string | null;

  private readonly now: () => number;
  /** The size of record batch messages to ask decoders for (the chunk packer's: about one per chunk). */
  private readonly messageBytes: number;

  constructor(private readonly o: DeltaFeedOptions) {
    this.messageBytes = new ChunkPacker(o.payloadLimit).messageBytes;
    this.store = o.store ?? new ManifestStore(o.table);
    this.now = o.now ?? (() => performance.now());
    this.partitionHex = o.partition === undefined ? null : Buffer.from(serializeBinaryRow(o.table.partitionTypes, o.partition)).toString("hex");
  }

  /**
   * Files a writer announced (the committable it sent the leader), before the snapshot that adds them links: when a
   * session waits at the feed's head, they are decoded now — projected as the feed reads — while the leader commits,
   * and the load of that snapshot takes them instead of reading them after the link (the read was the largest part of
   * a reader's share of the latency: issue 11's benchmark, read stage p99 75–300 ms). A file whose committable is
   * rejected is never asked for and goes stale; one a load never takes costs only its decode. At most
   * EARLY_MAX_FILE_BYTES of Parquet bytes wait.
   */
  announce(files: readonly AnnouncedFile[]): void {
    if (!this.waitingAtHeadFor(Number.MAX_SAFE_INTEGER)) return; // any session at the head, whatever it waits for
    const now = this.now();
    this.dropStaleEarly(now);
    for (const f of files) {
      if (this.early.has(f.meta.fileName)) continue;
      if (this.partitionHex !== null && Buffer.from(f.partition).toString("hex") !== this.partitionHex) continue;
      if (this.earlyBytes + f.meta.fileSize > EARLY_MAX_FILE_BYTES) return;
      const reader = (this.fileReader ??= dataFileReader(this.o.table, this.o.projection));
      const split = { partitionValues: deserializeBinaryRow(this.o.table.partitionTypes, f.partition), bucket: f.bucket };
      const read = reader.readMessages(split, f.meta, sharedParquetPool(), this.messageBytes);
      read.catch(() => undefined); // a failed early read is read again by the load that wants it
      this.early.set(f.meta.fileName, { read, bytes: f.meta.fileSize, at: now });
      this.earlyBytes += f.meta.fileSize;
      this.stats.early++;
      this.o.onFile?.("early");
    }
  }

  /** Announced files decoded ahead and not taken yet (for tests). */
  get earlyFiles(): number {
    return this.early.size;
  }

  private takeEarly(fileName: string): Promise<FileRows> | undefined {
    const e = this.early.get(fileName);
    if (e === undefined) return undefined;
    this.early.delete(fileName);
    this.earlyBytes -= e.bytes;
    this.stats.earlyTaken++;
    this.o.onFile?.("taken");
    return e.read;
  }

  private dropStaleEarly(now: number): void {
    for (const [name, e] of this.early) {
      if (now - e.at <= EARLY_TTL_MS) continue;
      this.early.delete(name);
      this.earlyBytes -= e.bytes;
    }
  }


  /** A session's position on this feed; detach it when the session ends. */
  attach(): FeedCursor {
    const c = new FeedCursor(this);
    this.cursors.add(c);
    return c;
  }

  /** The table it reads (`db.table`). */
  get tableName(): string {
    return this.o.table.name;
  }

  get sessions(): number {
    return this.cursors.size;
  }

  /** Encoded bytes held now. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** @internal (FeedCursor) */
  detachCursor(c: FeedCursor): void {
    this.cursors.delete(c);
    this.release();
    if (this.cursors.size === 0) {
      this.early.clear();
      this.earlyBytes = 0;
    }
  }

  /** @internal (FeedCursor) The shared entry of an APPEND snapshot, or null: read it yourself. */
  async entry(requester: FeedCursor, snapshot: Snapshot): Promise<FeedEntry | null> {
    const snapshotId = snapshot.id;
    const held = this.entries.get(snapshotId);
    if (held !== undefined) return this.hand(held);
    let pending = this.loading.get(snapshotId);
    if (pending === undefined) {
      // Behind the head and not held (released once every session had passed it, or evicted): a session back there
      // alone reads it alone, streamed; when others are at or behind it too, it is read once again for all of them
      // (when every consumer is slow — an overloaded machine — they must not all fall back to reading alone).
      if (snapshotId <= this.head && !this.othersAtOrBefore(requester, snapshotId)) return this.hand(null);
      this.head = Math.max(this.head, snapshotId);
      pending = this.load(snapshot);
      this.loading.set(snapshotId, pending);
    }
    return this.hand(await pending);
  }

  /**
   * A new snapshot was announced (the table's notification): when a session is waiting at the feed's head for it,
   * it is read now, before any session asks. Its sessions would otherwise start it only once one of them had looked
   * at the snapshot chain again — after sending the snapshot before, its own wake-up, a stat and a read of the
   * snapshot file — so every load waited behind the previous one and behind the event loop's queue (issue 11's
   * benchmark: notification → read started p99 ~100-190 ms on a loaded machine). Sessions behind the head (a stalled
   * or slow one) start nothing here: they are served as before.
   */
  prefetch(snapshotId: number): void {
    if (snapshotId <= this.head || !this.waitingAtHeadFor(snapshotId)) return;
    this.head = snapshotId;
    const from = this.now();
    const pending = this.o.table.snapshots.snapshot(snapshotId).then(
      (snapshot) => {
        this.o.onStage?.("snapshot", this.now() - from);
        if (deliversRows(this.o.table, snapshot)) return this.load(snapshot);
        this.loading.delete(snapshotId); // no rows: nothing to hold, and sessions pass over it without asking
        return null;
      },
      (e: unknown) => {
        this.loading.delete(snapshotId);
        this.o.onLoadError?.(snapshotId, ensureError(e));
        return null;
      },
    );
    this.loading.set(snapshotId, pending);
  }

  /**
   * Whether a session is at the head (taking the newest snapshot read, or waiting for the next) and will want
   * `snapshotId`. A session further behind is catching up or stalled: a feed whose sessions are all behind reads
   * at most one snapshot ahead of them.
   */
  private waitingAtHeadFor(snapshotId: number): boolean {
    for (const c of this.cursors) if (c.next >= this.head && c.next <= snapshotId) return true;
    return false;
  }

  private othersAtOrBefore(requester: FeedCursor, snapshotId: number): boolean {
    for (const c of this.cursors) if (c !== requester && c.next <= snapshotId) return true;
    return false;
  }

  /** @internal (FeedCursor) A cursor's next need changed: entries below every cursor's need are released. */
  release(): void {
    let floor = Infinity;
    for (const c of this.cursors) floor = Math.min(floor, c.next);
    for (const [id, e] of this.entries) if (id < floor) this.drop(id, e);
  }

  private hand(e: FeedEntry | typeof TOO_LARGE | null): FeedEntry | null {
    if (e === null || e === TOO_LARGE) {
      this.stats.declined++;
      this.o.onEvent?.("own");
      return null;
    }
    this.stats.served++;
    this.o.onEvent?.("shared");
    return e;
  }

  private async load(snapshot: Snapshot): Promise<FeedEntry | null> {
    const snapshotId = snapshot.id;
    try {
      const { table, projection, partition } = this.o;
      const planFrom = this.now();
      const plan = await planSnapshotDelta(table, snapshot, partition ? { partition } : {}, this.store);
      const readFrom = this.now();
      this.o.onStage?.("plan", readFrom - planFrom);
      let fileBytes = 0;
      for (const split of plan.splits) for (const f of split.files) fileBytes += f.fileSize;
      if (fileBytes > (this.o.maxEntryFileBytes ?? DEFAULT_FEED_MAX_ENTRY_FILE_BYTES)) {
        this.keep(snapshotId, TOO_LARGE);
        return null;
      }
      const packer = new ChunkPacker(this.o.payloadLimit);
      const bodies: Uint8Array[] = [];
      let rows = 0;
      let bytes = 0;
      // Compressed files can hide many more bytes than they take: an entry that grows past half of what the feed may
      // hold is given up (the generator's return() stops the reads), and its sessions read it themselves.
      const most = (this.o.maxBytes ?? DEFAULT_FEED_MAX_BYTES) / 2;
      // Every file decodes in the worker pool, several at once, while this thread packs (and sends for the others).
      // All of a snapshot's files (up to READ_AHEAD_FILES) are asked for at once: with the pool's default (workers + 1)
      // a snapshot of 6-12 small files went to the workers in rounds, each waiting for this thread to ask again. The
      // decoders' record batch messages are forwarded as they are when a file's columns are the feed's (see
      // src/codec/ipc-stream.ts): no decode into Arrow objects and no re-encode on this thread, which every session's
      // delivery waits for.
      const earlyRead = (_: unknown, file: DataFileMeta): Promise<FileRows> | undefined => this.takeEarly(file.fileName);
      for await (const file of readPlanMessages(table, plan, { ...(projection ? { projection } : {}), messageBytes: this.messageBytes, readAheadFiles: READ_AHEAD_FILES, earlyRead })) {
        if (file.kind === "messages") this.stats.forwarded++;
        rows += file.kind === "messages" ? file.rows : file.batches.reduce((n, b) => n + b.numRows, 0);
        for (const body of packer.addFile(file)) {
          bodies.push(body);
          bytes += body.length;
        }
        if (bytes > most) {
          this.keep(snapshotId, TOO_LARGE);
          return null;
        }
      }
      for (const body of packer.flush()) {
        bodies.push(body);
        bytes += body.length;
      }
      const entry: FeedEntry = { snapshotId, bodies, rows, bytes };
      this.o.onStage?.("read", this.now() - readFrom);
      this.stats.reads++;
      this.o.onEvent?.("read");
      this.keep(snapshotId, entry);
      return entry;
    } catch (e) {
      this.o.onLoadError?.(snapshotId, e as Error);
      return null;
    } finally {
      this.loading.delete(snapshotId);
    }
  }

  /** Holds an entry (unless every session is past it already), then keeps the total within `maxBytes`. */
  private keep(snapshotId: number, e: FeedEntry | typeof TOO_LARGE): void {
    this.entries.set(snapshotId, e);
    this.heldBytes += cost(e);
    this.release();
    const max = this.o.maxBytes ?? DEFAULT_FEED_MAX_BYTES;
    while (this.heldBytes > max && this.entries.size > 1) {
      // The oldest goes: the sessions that still need it are the slowest, and they can read it themselves.
      const oldest = Math.min(...this.entries.keys());
      this.drop(oldest, this.entries.get(oldest)!);
      this.stats.evicted++;
      this.o.onEvent?.("evicted");
    }
  }

  private drop(id: number, e: FeedEntry | typeof TOO_LARGE): void {
    this.entries.delete(id);
    this.heldBytes -= cost(e);
  }
}

const cost = (e: FeedEntry | typeof TOO_LARGE): number => ENTRY_OVERHEAD + (e === TOO_LARGE ? 0 : e.bytes);

/** One session's position on a feed. */
export class FeedCursor {
  /** The lowest snapshot this session may still ask for (Infinity: none it knows of yet). */
  next = Infinity;
  private detached = false;

  constructor(private readonly feed: DeltaFeed) {}

  /** The shared entry of an APPEND snapshot, or null: read it yourself. */
  get(snapshot: Snapshot): Promise<FeedEntry | null> {
    this.need(snapshot.id);
    return this.feed.entry(this, snapshot);
  }

  /** This session will ask for nothing below `snapshotId` (it took the entry before it, or starts there). */
  need(snapshotId: number): void {
    if (this.detached) return;
    this.next = snapshotId;
    this.feed.release();
  }

  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.feed.detachCursor(this);
  }
}
