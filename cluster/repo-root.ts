/**
 * The package's root directory, found from this file's location whether it runs from the sources (cluster/) or
 * from the compiled build (dist/cluster/): the nearest ancestor holding natslake's package.json.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "natslake") return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`natslake's package.json not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const REPO_ROOT = findRoot();
