#!/usr/bin/env node
// `npm run build`: compiles the product (src/, actors/, cluster/) to plain JavaScript in dist/ with tsc, copies the
// hand-written .mjs worker entries and their .d.mts declarations next to it (the compiled .d.ts files import them:
// without them a consumer's strict type check fails with TS7016 and the writer's types become `any`), and records
// the sources' fingerprint (scripts/fingerprint.mjs), so bin/natslake.mjs runs dist/ only while it matches the
// sources. A node from dist/ needs no TypeScript loader: ~50 MB less memory per process and a faster start. Exits
// non-zero with tsc's errors when the sources do not compile.
// `--if-stale`: only when dist/ does not match the sources (scripts/setup.sh and `npm run up`; a full build takes
// 20–90 s on two shared cores, the check a few milliseconds).
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PRODUCT_DIRS, sourceFingerprint, sourceFiles } from "./fingerprint.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");
if (process.argv.includes("--if-stale")) {
  let built = "";
  try {
    built = JSON.parse(readFileSync(join(dist, "BUILD.json"), "utf8")).fingerprint;
  } catch {
    // No build yet (or a broken one): build.
  }
  if (built === sourceFingerprint(root)) {
    console.log("build: skipped, dist/ matches the sources");
    process.exit(0);
  }
}
// Built beside dist/ and swapped in at the end: a CLI process started meanwhile finds either the old build whole or
// the new one, never a half-deleted tree.
console.error(`build: compiling ${PRODUCT_DIRS.join(", ")} to dist/ with tsc (20–90 s; once after each change of the sources)…`);
const next = join(root, `dist.next-${process.pid}`);
rmSync(next, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json"), "--outDir", next], { stdio: "inherit" });
if (tsc.status !== 0) {
  console.error("build: tsc failed; dist/ is not usable");
  rmSync(next, { recursive: true, force: true });
  rmSync(dist, { recursive: true, force: true });
  process.exit(tsc.status ?? 1);
}
let copied = 0;
for (const rel of sourceFiles(root, PRODUCT_DIRS).filter((f) => f.endsWith(".mjs") || f.endsWith(".d.mts"))) {
  mkdirSync(dirname(join(next, rel)), { recursive: true });
  cpSync(join(root, rel), join(next, rel));
  copied++;
}
// Declarations keep the sources' `.ts` specifiers (tsc rewrites them only in the JavaScript): point them at the
// `.js` files, which TypeScript resolves to their `.d.ts` beside them, so an installed package type-checks.
let declarations = 0;
for (const rel of readdirSync(next, { recursive: true, encoding: "utf8" })) {
  if (!rel.endsWith(".d.ts")) continue;
  const p = join(next, rel);
  const text = readFileSync(p, "utf8");
  const fixed = text.replace(/(from\s+["']|import\(\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g, "$1$2.js$3");
  if (fixed !== text) writeFileSync(p, fixed);
  declarations++;
}
writeFileSync(join(next, "BUILD.json"), JSON.stringify({ fingerprint: sourceFingerprint(root), builtAt: new Date().toISOString() }) + "\n");
const old = join(root, `dist.old-${process.pid}`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(next, dist);
rmSync(old, { recursive: true, force: true });
console.log(`build: dist/ compiled from ${PRODUCT_DIRS.join(", ")} (${copied} .mjs and .d.mts copied, ${declarations} declarations)`);
