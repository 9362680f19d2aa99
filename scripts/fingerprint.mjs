// The product sources' fingerprint: path, size and modification time of every file under the product directories,
// hashed. Cheap enough for every CLI start (a stat per file), and any edit changes it.
import { createHash } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export const PRODUCT_DIRS = ["src", "actors", "cluster"];

/** Files under `dirs` of `root`, relative, sorted. */
export function sourceFiles(root, dirs) {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(relative(root, p));
    }
  };
  for (const d of dirs) walk(join(root, d));
  return out.sort();
}

export function sourceFingerprint(root) {
  const h = createHash("sha256");
  for (const rel of sourceFiles(root, PRODUCT_DIRS)) {
    const st = statSync(join(root, rel));
    h.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
  }
  // tsconfig and the lockfile change what the build produces too.
  for (const f of ["tsconfig.json", "tsconfig.build.json", "package-lock.json"]) {
    try {
      const st = statSync(join(root, f));
      h.update(`${f}\0${st.size}\0${st.mtimeMs}\n`);
    } catch {
      h.update(`${f}\0missing\n`);
    }
  }
  return h.digest("hex");
}
