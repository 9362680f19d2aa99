/**
 * FileIO: the storage port of the table library. Paths are plain strings; implementations decide what they mean.
 *
 * Atomicity contract:
 * - `writeFile` makes the whole content visible at `path` at once (temp file, fsync, rename) and durable when it
 *   returns. It may replace an existing file: use it for data files (fresh names) and hints.
 * - `createExclusive` creates `path` with the content only if no file is there, atomically and durably; it returns
 *   false when the file already existed (a lost race). Never implemented as check-then-rename.
 */
export interface WriteOptions {
  /** fsync the file before it gets its name (default true). Hints that readers verify need not be durable. */
  durable?: boolean;
  /**
   * fsync the directory after the rename (default true). A caller writing several files into one directory may
   * pass false and call `syncDir` once before anything depends on the names.
   */
  syncDir?: boolean;
}

export interface ReadOptions {
  /**
   * A table metadata file (a snapshot, a hint, a manifest or manifest list): small, and read on a latency path. A
   * local file system reads it on the calling thread; an object store ignores it.
   */
  metadata?: boolean;
}

/** One entry of a directory listing (`listStatus`). Symbolic links and other special files are `other`. */
export interface FileStatus {
  name: string;
  kind: "file" | "directory" | "other";
  size: number;
  /** Modification time in epoch ms. */
  mtime: number;
}

export interface FileIO {
  readFile(path: string, opts?: ReadOptions): Promise<Uint8Array>;
  /**
   * `length` bytes of a file from `offset` (fewer only at its end). For reading the parts of a large file a caller
   * needs — a Parquet footer, the column chunks of a projection — without fetching the rest.
   */
  readRange(path: string, offset: number, length: number): Promise<Uint8Array>;
  /**
   * Reading a projection of a large file by ranges pays on this store (an object store: every byte crosses the
   * network); false where a whole read is as cheap (a local disk, read ahead by the kernel).
   */
  readonly prefersRangedReads: boolean;
  readText(path: string, opts?: ReadOptions): Promise<string>;
  writeFile(path: string, data: Uint8Array | string, opts?: WriteOptions): Promise<void>;
  /** Makes the names created in a directory durable. */
  syncDir(dir: string): Promise<void>;
  createExclusive(path: string, data: Uint8Array | string): Promise<boolean>;
  /**
   * Gives the content of the existing file `from` a second name `to`, durably — a hard link where the store has
   * them, a server-side copy otherwise — so either name can be deleted later without touching the other. `to` must
   * not exist. Used to bring an old snapshot's files back under new names (a restore), which Paimon needs because a
   * data file name, once deleted from a table, must never be added again (expiration deletes by name).
   */
  copyFile(from: string, to: string): Promise<void>;
  /** A file or a directory is at `path` (on an object store a directory costs a LIST: prefer `isFile` for files). */
  exists(path: string): Promise<boolean>;
  /** A file (not a directory) is at `path`: one metadata request, never a listing. */
  isFile(path: string): Promise<boolean>;
  /** Names (not paths) of the entries of a directory; [] when the directory does not exist. */
  list(dir: string): Promise<string[]>;
  /** Entries of a directory with their kind, size and mtime; [] when the directory does not exist. */
  listStatus(dir: string): Promise<FileStatus[]>;
  /** Removes a directory only if it is empty; false when it is not empty or not there. */
  deleteEmptyDir(path: string): Promise<boolean>;
  /** Removes a file; false when it did not exist. */
  delete(path: string): Promise<boolean>;
  /** Removes a directory tree. */
  deleteTree(path: string): Promise<void>;
  mkdirs(path: string): Promise<void>;
  size(path: string): Promise<number>;
  /** Modification time in epoch ms. */
  mtime(path: string): Promise<number>;
  /**
   * Where `path` is, as a user names it (messages, logs, `table describe`): the path itself on a local disk,
   * `s3://bucket/key` on an object store (whose paths alone, `/prefix/…`, name no bucket).
   */
  uriOf(path: string): string;
}
