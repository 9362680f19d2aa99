/**
 * FileIO over the local filesystem.
 *
 * `createExclusive` writes a hidden temp file (`.<name>.<uuid>.tmp`, Paimon's convention, so listings that look for
 * `snapshot-N` never see it), fsyncs it, then `link()`s it to the final name: link fails with EEXIST when the name
 * exists, which `rename()` would silently overwrite. The directory is fsynced so the new name survives a crash.
 */
import { randomUUID } from "node:crypto";
import { constants as fsc, promises as fs, readFile as readFileCallback, readFileSync, statSync, type Stats } from "node:fs";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { ErrorKind, LakeError } from "../errors.ts";
import { failpoint, failpointArmed } from "../failpoints.ts";
import type { FileIO, FileStatus, ReadOptions, WriteOptions } from "./file-io.ts";

const isCode = (e: unknown, code: string): boolean => (e as NodeJS.ErrnoException | undefined)?.code === code;

/** The errno codes a user meets on a bad warehouse, in words. */
const ERRNO_WORDS: Record<string, string> = {
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  ENOTDIR: "a parent is not a directory",
  EISDIR: "is a directory",
};

export const tempPathFor = (path: string): string => join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);

/**
 * Whole-file reads through the callback API: Node 20's `fs.promises.readFile` goes through a FileHandle (open, fstat,
 * read, close as separate promise round trips) and measured about twice the CPU and 3–4× the latency per small file
 * (~110 vs ~55 µs CPU for a 6 KB data file) — a cost every data file of a scan pays.
 */
const readWholeFile = promisify(readFileCallback);

/** Metadata reads on the calling thread between two turns of the event loop (see `readFile`). */
const METADATA_READS_PER_TURN = 16;

export class LocalFileIO implements FileIO {
  private metadataReads = 0;

  /** `fsync: false` trades durability for speed (tests and benchmarks that measure the format, not the disk). */
  constructor(private readonly opts: { fsync: boolean } = { fsync: true }) {}

  /**
   * Metadata files (`opts.metadata`: snapshots, hints, manifests) are read on this thread: a whole-file read through
   * the thread pool is four round trips (open, fstat, read, close), and on a busy node each waits for a pool thread
   * and then for the event loop — a reader node's snapshot and plan stages reached p99 30–50 ms for two or three
   * files of a few KB that take ~20 µs to read here (issue 11's benchmark). Data files stay asynchronous.
   */
  async readFile(path: string, opts?: ReadOptions): Promise<Uint8Array> {
    const metadata = opts?.metadata === true;
    // A loop of reads that all complete at once never lets the event loop turn (an orphan scan over thousands of
    // manifests, an expiration run): every METADATA_READS_PER_TURN reads, it does.
    if (metadata && ++this.metadataReads % METADATA_READS_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      return metadata ? readFileSync(path) : await readWholeFile(path);
    } catch (e) {
      throw this.wrap(e, "read", path);
    }
  }

  readonly prefersRangedReads = false;

  async readRange(path: string, offset: number, length: number): Promise<Uint8Array> {
    let handle: fs.FileHandle | undefined;
    try {
      handle = await fs.open(path, "r");
      const buf = Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await handle.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break; // the end of the file
        got += bytesRead;
      }
      return buf.subarray(0, got);
    } catch (e) {
      throw this.wrap(e, "read", path);
    } finally {
      await handle?.close();
    }
  }

  async readText(path: string, opts?: ReadOptions): Promise<string> {
    return Buffer.from(await this.readFile(path, opts)).toString("utf8");
  }

  async writeFile(path: string, data: Uint8Array | string, opts: WriteOptions = {}): Promise<void> {
    const tmp = await this.writeTemp(path, data, opts.durable ?? true);
    try {
      await fs.rename(tmp, path);
    } catch (e) {
      await fs.rm(tmp, { force: true });
      throw this.wrap(e, "rename", path);
    }
    if (opts.syncDir ?? true) await this.syncDir(dirname(path));
  }

  async createExclusive(path: string, data: Uint8Array | string): Promise<boolean> {
    const tmp = await this.writeTemp(path, data);
    try {
      await fs.link(tmp, path);
      await this.syncDir(dirname(path));
      return true;
    } catch (e) {
      if (isCode(e, "EEXIST")) return false;
      throw this.wrap(e, "link", path);
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  async copyFile(from: string, to: string): Promise<void> {
    await this.mkdirs(dirname(to));
    try {
      // A hard link: no bytes copied, and the file stays immutable under both names.
      await fs.link(from, to);
    } catch (e) {
      // Another file system (EXDEV) or one without hard links (EPERM): a copy into a temp name, then link() it in.
      if (!isCode(e, "EXDEV") && !isCode(e, "EPERM") && !isCode(e, "ENOTSUP")) throw this.wrap(e, "link", to);
      const tmp = tempPathFor(to);
      try {
        await fs.copyFile(from, tmp, fsc.COPYFILE_EXCL);
        if (this.opts.fsync) {
          const fh = await fs.open(tmp, "r+");
          await fh.sync().finally(() => fh.close());
        }
        await fs.link(tmp, to);
      } catch (e2) {
        throw this.wrap(e2, "copy", to);
      } finally {
        await fs.rm(tmp, { force: true });
      }
    }
    await this.syncDir(dirname(to));
  }

  async exists(path: string): Promise<boolean> {
    try {
      await fs.access(path, fsc.F_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** On this thread, as metadata reads are (see `readFile`): the leader and the readers ask before every snapshot. */
  async isFile(path: string): Promise<boolean> {
    try {
      return statSync(path).isFile();
    } catch (e) {
      if (isCode(e, "ENOENT") || isCode(e, "ENOTDIR")) return false;
      throw this.wrap(e, "stat", path);
    }
  }

  async list(dir: string): Promise<string[]> {
    try {
      return await fs.readdir(dir);
    } catch (e) {
      if (isCode(e, "ENOENT")) return [];
      throw this.wrap(e, "list", dir);
    }
  }

  async listStatus(dir: string): Promise<FileStatus[]> {
    const out: FileStatus[] = [];
    for (const name of await this.list(dir)) {
      let st: Awaited<ReturnType<typeof fs.lstat>>;
      try {
        st = await fs.lstat(join(dir, name));
      } catch (e) {
        if (isCode(e, "ENOENT")) continue; // removed while listed
        throw this.wrap(e, "stat", join(dir, name));
      }
      out.push({ name, kind: st.isFile() ? "file" : st.isDirectory() ? "directory" : "other", size: st.size, mtime: st.mtimeMs });
    }
    return out;
  }

  async deleteEmptyDir(path: string): Promise<boolean> {
    try {
      await fs.rmdir(path);
      return true;
    } catch (e) {
      if (isCode(e, "ENOENT") || isCode(e, "ENOTEMPTY") || isCode(e, "EEXIST")) return false;
      throw this.wrap(e, "rmdir", path);
    }
  }

  async delete(path: string): Promise<boolean> {
    try {
      await fs.unlink(path);
      return true;
    } catch (e) {
      if (isCode(e, "ENOENT")) return false;
      throw this.wrap(e, "delete", path);
    }
  }

  async deleteTree(path: string): Promise<void> {
    await fs.rm(path, { recursive: true, force: true });
  }

  /**
   * `mkdir -p`, one level at a time. Not `fs.mkdir(path, { recursive: true })`: under /proc (and other virtual
   * filesystems) mkdir answers ENOENT while the parent exists, and Node's recursive mkdir then re-creates the parent
   * (EEXIST) and retries the child forever, at 100% CPU. Here each level is tried at most twice: once, and once more
   * after its parent was made (or found: a concurrent creator may have made it); an ENOENT then is the answer.
   */
  async mkdirs(path: string): Promise<void> {
    const first = await this.mkdirOnce(path);
    if (first === undefined) return;
    const parent = dirname(path);
    if (!isCode(first, "ENOENT") || parent === path) throw this.wrapMkdir(first, path);
    await this.mkdirs(parent); // the parent exists afterwards (made here or by a concurrent creator), or this threw
    const second = await this.mkdirOnce(path); // once: an ENOENT now, with the parent there, is the answer
    if (second !== undefined) throw this.wrapMkdir(second, path);
  }

  /** mkdir without `recursive`: undefined when the directory exists afterwards, else the error. */
  private async mkdirOnce(path: string): Promise<unknown> {
    try {
      await fs.mkdir(path);
      return undefined;
    } catch (e) {
      if (!isCode(e, "EEXIST")) return e;
      await this.mustBeDirectory(path, e);
      return undefined;
    }
  }

  private async mustBeDirectory(path: string, e: unknown): Promise<void> {
    if (!(await fs.stat(path)).isDirectory()) throw new LakeError(ErrorKind.Io, `cannot create directory ${path}: a file of that name exists`, { cause: e, context: { path }, retryable: false });
  }

  /** A directory that cannot be made: the reason in words, never retryable (a read-only or virtual filesystem). */
  private wrapMkdir(e: unknown, path: string): LakeError {
    const code = (e as NodeJS.ErrnoException | undefined)?.code;
    const why =
      code === "ENOENT" ? "the parent directory refuses new entries (read-only or virtual file system?)" : code !== undefined && code in ERRNO_WORDS ? ERRNO_WORDS[code]! : (e as Error).message;
    return new LakeError(ErrorKind.Io, `cannot create directory ${path}: ${why}${code ? ` (${code})` : ""}`, { cause: e, context: { path, op: "mkdir" }, retryable: false });
  }

  async size(path: string): Promise<number> {
    return (await this.stat(path)).size;
  }

  async mtime(path: string): Promise<number> {
    return (await this.stat(path)).mtimeMs;
  }

  /** A missing file is NotFound, as on an object store (consumers and doctor tell it from an IO error). */
  private async stat(path: string): Promise<Stats> {
    try {
      return await fs.stat(path);
    } catch (e) {
      throw this.wrap(e, "stat", path);
    }
  }

  uriOf(path: string): string {
    return path;
  }

  private async writeTemp(path: string, data: Uint8Array | string, durable = true): Promise<string> {
    const tmp = tempPathFor(path);
    let fh: fs.FileHandle | undefined;
    try {
      fh = await fs.open(tmp, "wx");
    } catch (e) {
      if (!isCode(e, "ENOENT")) throw this.wrap(e, "create", tmp);
      await this.mkdirs(dirname(path));
      try {
        fh = await fs.open(tmp, "wx");
      } catch (e2) {
        throw this.wrap(e2, "create", tmp);
      }
    }
    try {
      if (failpointArmed("io.write.mid")) {
        // Chaos: half the bytes are in the file when the point fires (a crash in the middle of a write).
        const bytes = typeof data === "string" ? Buffer.from(data) : data;
        const half = bytes.length >> 1;
        await fh.writeFile(bytes.subarray(0, half));
        failpoint("io.write.mid");
        await fh.writeFile(bytes.subarray(half));
      } else {
        await fh.writeFile(data);
      }
      if (this.opts.fsync && durable) await fh.sync();
    } catch (e) {
      await fh.close();
      await fs.rm(tmp, { force: true });
      throw this.wrap(e, "write", path);
    }
    await fh.close();
    return tmp;
  }

  async syncDir(dir: string): Promise<void> {
    if (!this.opts.fsync) return;
    const fh = await fs.open(dir, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  private wrap(e: unknown, op: string, path: string): LakeError {
    if (isCode(e, "ENOENT")) return new LakeError(ErrorKind.NotFound, `${op} ${path}: no such file`, { cause: e, context: { path } });
    const code = (e as NodeJS.ErrnoException | undefined)?.code;
    const why = code !== undefined && code in ERRNO_WORDS ? `: ${ERRNO_WORDS[code]}` : "";
    return new LakeError(ErrorKind.Io, `${op} ${path} failed${why}${code ? ` (${code})` : ""}`, {
      cause: e,
      context: { path, op },
      retryable: code !== "ENOSPC" && code !== "EACCES" && code !== "EROFS",
    });
  }
}
