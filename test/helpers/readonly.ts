/**
 * A real read-only directory for tests, even as root (root ignores permission bits, so chmod proves nothing): a
 * read-only bind mount of a directory. Needs mount rights (root with CAP_SYS_ADMIN); `null` when they are missing,
 * so the caller can skip and say why. `cleanup` unmounts (lazily, if something still holds it) and removes the
 * mount point.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ReadOnlyView {
  /** The read-only view of `source`. */
  path: string;
  cleanup: () => void;
}

export function readOnlyView(source: string): ReadOnlyView | null {
  const path = mkdtempSync(join(tmpdir(), "natslake-ro-"));
  const r = spawnSync("mount", ["--bind", "-o", "ro", source, path], { encoding: "utf8" });
  if (r.status !== 0) {
    rmdirSync(path);
    return null;
  }
  // Older mount(8) binds read-write and ignores `ro` on a bind: remount to be sure, then check it took.
  spawnSync("mount", ["-o", "remount,bind,ro", path]);
  const probe = spawnSync("mkdir", [join(path, ".natslake-ro-probe")]);
  if (probe.status === 0) {
    spawnSync("rmdir", [join(path, ".natslake-ro-probe")]);
    spawnSync("umount", [path]);
    rmdirSync(path);
    return null;
  }
  return {
    path,
    cleanup: () => {
      if (spawnSync("umount", [path]).status !== 0) spawnSync("umount", ["-l", path]);
      rmdirSync(path);
    },
  };
}

/** Whether this process may mount (tests needing a read-only view skip without it). */
export const canMount = (): boolean => {
  const probe = mkdtempSync(join(tmpdir(), "natslake-ro-probe-"));
  try {
    const v = readOnlyView(probe);
    v?.cleanup();
    return v !== null;
  } finally {
    rmdirSync(probe);
  }
};
