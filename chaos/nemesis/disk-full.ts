/**
 * A small disk that can be filled: a tmpfs of a given size mounted at a directory (the warehouse, or a JetStream
 * store), falling back to a loop-mounted ext4 image when tmpfs is refused. Needs root (mount(2)).
 *
 *   const disk = await mountSmallDisk({ sizeBytes: 32 << 20 });   // disk.dir: an empty, mounted directory
 *   await disk.fill();          // writes filler files until nothing is free (or `leaveBytes` are)
 *   ...                         // writes now fail with ENOSPC
 *   await disk.free();          // deletes the filler files
 *   await disk.unmount();       // unmounts, removes the image and the directory it created
 *
 * If neither mount works, `mountSmallDisk` throws `DiskMountUnavailable` listing every attempt and its error.
 * Filler files are hidden (`.natslake-filler-<n>`) at the mount's root, so a warehouse there does not list them.
 * A process `exit` hook lazily unmounts (`umount -l`) anything still mounted, so a crashed test leaves no mount.
 */
import { execFileSync } from "node:child_process";
import { promises as fs, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, sleep } from "./run.ts";

export type SmallDiskKind = "tmpfs" | "ext4-loop";

export interface SmallDiskOptions {
  /** Mount point; created if missing (and then removed by `unmount`). Default: a new directory under the OS tmpdir. */
  dir?: string;
  /** Default 32 MiB. The ext4 fallback needs at least 8 MiB. */
  sizeBytes?: number;
  /** `auto` (default): tmpfs, then ext4-loop. */
  kind?: SmallDiskKind | "auto";
}

export interface FillResult {
  /** Bytes this call wrote into filler files. */
  written: number;
  /** Bytes still available to an unprivileged writer afterwards. */
  freeBytes: number;
}

export interface SmallDisk {
  readonly dir: string;
  readonly kind: SmallDiskKind;
  readonly sizeBytes: number;
  /** Bytes available (statfs f_bavail × f_bsize). */
  freeBytes(): Promise<number>;
  /** Writes filler until at most `leaveBytes` are free (0: until the filesystem returns ENOSPC). */
  fill(leaveBytes?: number): Promise<FillResult>;
  /** Deletes the filler files; resolves with the bytes free afterwards. */
  free(): Promise<number>;
  /** Unmounts (retrying a busy mount, then lazily) and removes what `mountSmallDisk` created. Idempotent. */
  unmount(): Promise<void>;
}

export class DiskMountUnavailable extends Error {
  override readonly name = "DiskMountUnavailable";
  constructor(
    readonly dir: string,
    readonly attempts: Array<{ kind: SmallDiskKind; error: string }>,
  ) {
    super(
      `cannot mount a small disk at ${dir} on this machine (root and mount(2) are needed): ` +
        attempts.map((a) => `${a.kind}: ${a.error}`).join("; "),
    );
  }
}

const FILLER_PREFIX = ".natslake-filler-";
const CHUNK = 1 << 20;

const stillMounted = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const dir of stillMounted) {
      try {
        execFileSync("umount", ["-l", dir], { stdio: "ignore", timeout: 5000 });
      } catch {
        // best effort at exit
      }
    }
  });
}

/** Whether `dir` is a mount point (listed in /proc/self/mountinfo). */
export async function isMountPoint(dir: string): Promise<boolean> {
  const info = await fs.readFile("/proc/self/mountinfo", "utf8");
  // Field 5 is the mount point, with spaces etc. escaped as octal.
  const escaped = dir.replace(/[ \t\n\\]/g, (c) => "\\" + c.charCodeAt(0).toString(8).padStart(3, "0"));
  return info.split("\n").some((line) => line.split(" ")[4] === escaped);
}

async function statFree(dir: string): Promise<number> {
  const st = await fs.statfs(dir);
  return st.bavail * st.bsize;
}

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

export async function mountSmallDisk(opts: SmallDiskOptions = {}): Promise<SmallDisk> {
  const sizeBytes = opts.sizeBytes ?? 32 << 20;
  if (!Number.isInteger(sizeBytes) || sizeBytes < 1 << 20) throw new RangeError(`sizeBytes must be an integer >= 1 MiB (got ${sizeBytes})`);
  const createdDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-disk-"));
  if (!createdDir) await fs.mkdir(dir, { recursive: true });
  const kinds: SmallDiskKind[] = opts.kind === undefined || opts.kind === "auto" ? ["tmpfs", "ext4-loop"] : [opts.kind];
  const attempts: Array<{ kind: SmallDiskKind; error: string }> = [];
  if (process.getuid?.() !== 0) attempts.push({ kind: kinds[0]!, error: `not running as root (uid ${process.getuid?.()})` });
  else {
    for (const kind of kinds) {
      try {
        let imageDir: string | undefined;
        if (kind === "tmpfs") await run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0755`, "natslake-chaos", dir]);
        else imageDir = await mountExt4(dir, sizeBytes);
        if (!(await isMountPoint(dir))) {
          if (imageDir) rmSync(imageDir, { recursive: true, force: true });
          throw new Error(`mount reported success but ${dir} is not a mount point`);
        }
        stillMounted.add(dir);
        installExitHook();
        return new MountedDisk(dir, kind, sizeBytes, createdDir, imageDir);
      } catch (e) {
        attempts.push({ kind, error: errText(e) });
      }
    }
  }
  if (createdDir) rmSync(dir, { recursive: true, force: true });
  throw new DiskMountUnavailable(dir, attempts);
}

/** Creates an ext4 image (no reserved blocks) in its own temp directory and loop-mounts it; returns that directory. */
async function mountExt4(dir: string, sizeBytes: number): Promise<string> {
  if (sizeBytes < 8 << 20) throw new Error(`an ext4 image needs at least 8 MiB (asked for ${sizeBytes} bytes)`);
  const imageDir = mkdtempSync(join(tmpdir(), "natslake-disk-img-"));
  const image = join(imageDir, "disk.img");
  try {
    const fh = await fs.open(image, "w");
    await fh.truncate(sizeBytes);
    await fh.close();
    await run("mkfs.ext4", ["-q", "-F", "-m", "0", "-E", "nodiscard", image], 30_000);
    await run("mount", ["-o", "loop", image, dir]);
    return imageDir;
  } catch (e) {
    rmSync(imageDir, { recursive: true, force: true });
    throw e;
  }
}

class MountedDisk implements SmallDisk {
  private fillers = 0;
  private unmounting: Promise<void> | undefined;

  constructor(
    readonly dir: string,
    readonly kind: SmallDiskKind,
    readonly sizeBytes: number,
    private readonly createdDir: boolean,
    private readonly imageDir: string | undefined,
  ) {}

  freeBytes(): Promise<number> {
    return statFree(this.dir);
  }

  async fill(leaveBytes = 0): Promise<FillResult> {
    if (!(leaveBytes >= 0)) throw new RangeError(`leaveBytes must be >= 0 (got ${leaveBytes})`);
    const zeros = Buffer.alloc(CHUNK);
    let written = 0;
    // A second pass catches block rounding and metadata the first pass's estimate did not see.
    for (let pass = 0; pass < 3; pass++) {
      let want = (await statFree(this.dir)) - leaveBytes;
      if (want <= 0) break;
      const fh = await fs.open(join(this.dir, `${FILLER_PREFIX}${this.fillers++}`), "wx");
      let full = false;
      try {
        while (want > 0) {
          const n = Math.min(want, CHUNK);
          try {
            const { bytesWritten } = await fh.write(zeros, 0, n);
            written += bytesWritten;
            want -= bytesWritten;
            if (bytesWritten < n) full = true;
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
            full = true;
          }
          if (full) break;
        }
      } finally {
        await fh.close();
      }
      if (full) break;
    }
    return { written, freeBytes: await statFree(this.dir) };
  }

  async free(): Promise<number> {
    for (const name of await fs.readdir(this.dir)) {
      if (name.startsWith(FILLER_PREFIX)) await fs.rm(join(this.dir, name), { force: true });
    }
    return statFree(this.dir);
  }

  unmount(): Promise<void> {
    this.unmounting ??= this.doUnmount();
    return this.unmounting;
  }

  private async doUnmount(): Promise<void> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 10 && (await isMountPoint(this.dir)); attempt++) {
      try {
        await run("umount", [this.dir]);
      } catch (e) {
        lastError = e;
        await sleep(100);
      }
    }
    if (await isMountPoint(this.dir)) {
      // Still busy (an open file somewhere): detach it now, the kernel frees it when the last user goes.
      await run("umount", ["-l", this.dir]).catch((e: unknown) => {
        throw new Error(`cannot unmount ${this.dir}: ${errText(e)} (earlier: ${errText(lastError)})`);
      });
    }
    stillMounted.delete(this.dir);
    if (this.imageDir) rmSync(this.imageDir, { recursive: true, force: true });
    if (this.createdDir) rmSync(this.dir, { recursive: true, force: true });
  }
}
