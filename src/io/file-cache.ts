/**
 * A local-disk cache of a remote warehouse's immutable files, in front of its FileIO: the second level of a reader
 * node's lookup cache (cluster/lookup-service.ts) when the warehouse is on an object store. The first level holds
 * decoded files in memory (`lookup.cache-max-memory-size`); a file that level dropped is decoded again from this
 * disk, not fetched again over the network.
 *
 * Only files that never change once written are cached, by name: data and changelog files (`data-*`,
 * `changelog-*`), index files (`index-*`: deletion vectors), manifests and manifest lists (`manifest-*`,
 * `index-manifest-*`). Paimon never rewrites a file under such a name — a name, once deleted from a table, is never
 * added again — so a cached copy is the file. Snapshots, hints, schemas and everything else go to the store.
 *
 * A cached file is fetched whole (one GET) at its first read, ranged or not, written under a temporary name and
 * renamed, and then read from the local disk: whole or by range (`prefersRangedReads` is false, as on a local disk).
 * Reads of one file that miss together share one fetch. The cache holds at most `maxBytes` (least recently used
 * files go first) and drops a file not read for `retentionMs` — Paimon's `lookup.cache-max-disk-size` and
 * `lookup.cache-file-retention`. A file removed from the directory behind its back is fetched again. The directory
 * is the cache's alone: what is in it at start is removed (its sizes and ages are not known).
 */
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import { mkdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import type { FileIO, FileStatus, ReadOptions, WriteOptions } from "./file-io.ts";
import { LocalFileIO } from "./local.ts";
import { ErrorKind, isLakeError } from "../errors.ts";

export interface FileCacheOptions {
  /** The directory the cached copies live in (made; emptied at start). */
  dir: string;
  /** Bytes of cached files at most. */
  maxBytes: number;
  /** A file not read for this long is dropped. */
  retentionMs: number;
  /** Wall-clock ms (tests). */
  now?: () => number;
}

/** Names of files Paimon never rewrites (see the module comment). */
const IMMUTABLE_NAME = /^(data-|changelog-|index-|manifest-)/;

export const isImmutableTableFile = (path: string): boolean => IMMUTABLE_NAME.test(basename(path));

interface Entry {
  local: string;
  bytes: number;
  lastRead: number;
}

/** What the cache did (the lookup metrics report it). */
export interface FileCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  bytes: number;
  files: number;
}

export class DiskCachedFileIO implements FileIO {
  readonly prefersRangedReads = false;
  /** Cached files by path, least recently read first (a Map keeps insertion order; a read moves its entry last). */
  private readonly entries = new Map<string, Entry>();
  private readonly fetching = new Map<string, Promise<Entry>>();
  private cachedBytes = 0;
  private readonly now: () => number;
  /** The cache's own directory, read and written as any local file (ranged reads, writes by rename). */
  private readonly disk = new LocalFileIO({ fsync: false });
  readonly stats = { hits: 0, misses: 0, evictions: 0 };

  constructor(
    private readonly inner: FileIO,
    private readonly o: FileCacheOptions,
  ) {
    if (!(o.maxBytes > 0)) throw new RangeError(`a file cache's maxBytes must be positive, got ${o.maxBytes}`);
    this.now = o.now ?? Date.now;
    rmSync(o.dir, { recursive: true, force: true });
    mkdirSync(o.dir, { recursive: true });
  }

  /** Bytes and files held now, and the counts so far. */
  snapshot(): FileCacheStats {
    return { ...this.stats, bytes: this.cachedBytes, files: this.entries.size };
  }

  async readFile(path: string, opts?: ReadOptions): Promise<Uint8Array> {
    if (!isImmutableTableFile(path)) return this.inner.readFile(path, opts);
    return this.fromDisk(path, (local) => this.disk.readFile(local));
  }

  async readRange(path: string, offset: number, length: number): Promise<Uint8Array> {
    if (!isImmutableTableFile(path)) return this.inner.readRange(path, offset, length);
    return this.fromDisk(path, (local) => this.disk.readRange(local, offset, length));
  }

  /** `read` of the cached copy of `path`, fetched first when missing (also when removed behind the cache's back). */
  private async fromDisk<T>(path: string, read: (local: string) => Promise<T>): Promise<T> {
    this.dropExpired();
    const cached = this.entries.get(path);
    if (cached !== undefined) {
      try {
        const out = await read(cached.local);
        this.stats.hits++;
        this.touch(path, cached);
        return out;
      } catch (e) {
        if (!(isLakeError(e) && e.kind === ErrorKind.NotFound)) throw e;
        this.forget(path, cached);
      }
    }
    this.stats.misses++;
    const entry = await this.fetch(path);
    return read(entry.local);
  }

  private fetch(path: string): Promise<Entry> {
    let pending = this.fetching.get(path);
    if (pending === undefined) {
      pending = this.fetchOnce(path).finally(() => this.fetching.delete(path));
      this.fetching.set(path, pending);
    }
    return pending;
  }

  private async fetchOnce(path: string): Promise<Entry> {
    const bytes = await this.inner.readFile(path);
    // A name of its own per fetch: the removal of an evicted copy of the same file, still under way, cannot hit it.
    const local = join(this.o.dir, `${createHash("sha256").update(path).digest("hex").slice(0, 32)}-${randomBytes(4).toString("hex")}`);
    // Written under a temporary name and renamed (LocalFileIO.writeFile); a cache needs no fsync.
    await this.disk.writeFile(local, bytes, { durable: false, syncDir: false });
    const entry: Entry = { local, bytes: bytes.byteLength, lastRead: this.now() };
    const old = this.entries.get(path);
    if (old !== undefined) this.forget(path, old);
    this.entries.set(path, entry);
    this.cachedBytes += entry.bytes;
    this.evictBeyond(this.o.maxBytes, path);
    return entry;
  }

  private touch(path: string, entry: Entry): void {
    entry.lastRead = this.now();
    this.entries.delete(path);
    this.entries.set(path, entry);
  }

  /** Least recently read first, until the cache holds at most `max` bytes; `keep` (just fetched) stays. */
  private evictBeyond(max: number, keep: string): void {
    for (const [path, entry] of this.entries) {
      if (this.cachedBytes <= max) return;
      if (path === keep) continue;
      this.evict(path, entry);
    }
  }

  /** Files not read for `retentionMs`: the oldest reads are first, so the sweep stops at the first one kept. */
  private dropExpired(): void {
    const oldest = this.now() - this.o.retentionMs;
    for (const [path, entry] of this.entries) {
      if (entry.lastRead >= oldest) return;
      this.evict(path, entry);
    }
  }

  private evict(path: string, entry: Entry): void {
    this.stats.evictions++;
    this.forget(path, entry);
    // A read of the copy under way keeps its open handle; the name goes now.
    void fs.rm(entry.local, { force: true }).catch(() => undefined);
  }

  private forget(path: string, entry: Entry): void {
    if (this.entries.get(path) !== entry) return;
    this.entries.delete(path);
    this.cachedBytes -= entry.bytes;
  }

  /** Removes the cached copies (the node stops). */
  close(): void {
    this.entries.clear();
    this.cachedBytes = 0;
    rmSync(this.o.dir, { recursive: true, force: true });
  }

  // Everything else is the store's.
  readText(path: string, opts?: ReadOptions): Promise<string> {
    return this.inner.readText(path, opts);
  }
  writeFile(path: string, data: Uint8Array | string, opts?: WriteOptions): Promise<void> {
    return this.inner.writeFile(path, data, opts);
  }
  syncDir(dir: string): Promise<void> {
    return this.inner.syncDir(dir);
  }
  createExclusive(path: string, data: Uint8Array | string): Promise<boolean> {
    return this.inner.createExclusive(path, data);
  }
  copyFile(from: string, to: string): Promise<void> {
    return this.inner.copyFile(from, to);
  }
  exists(path: string): Promise<boolean> {
    return this.inner.exists(path);
  }
  isFile(path: string): Promise<boolean> {
    return this.inner.isFile(path);
  }
  list(dir: string): Promise<string[]> {
    return this.inner.list(dir);
  }
  listStatus(dir: string): Promise<FileStatus[]> {
    return this.inner.listStatus(dir);
  }
  deleteEmptyDir(path: string): Promise<boolean> {
    return this.inner.deleteEmptyDir(path);
  }
  delete(path: string): Promise<boolean> {
    return this.inner.delete(path);
  }
  deleteTree(path: string): Promise<void> {
    return this.inner.deleteTree(path);
  }
  mkdirs(path: string): Promise<void> {
    return this.inner.mkdirs(path);
  }
  size(path: string): Promise<number> {
    return this.inner.size(path);
  }
  mtime(path: string): Promise<number> {
    return this.inner.mtime(path);
  }
  uriOf(path: string): string {
    return this.inner.uriOf(path);
  }
}
