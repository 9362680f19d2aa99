#!/usr/bin/env node
// The `natslake` command. It runs the compiled JavaScript in dist/ (`npm run build`) while dist/ matches the sources
// (scripts/fingerprint.mjs), and otherwise the TypeScript sources through tsx — never a stale build.
// NATSLAKE_FROM_SOURCE=1 always runs the sources. An installed package has no sources and runs dist/.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { sourceFingerprint } from "../scripts/fingerprint.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

function builtAndCurrent() {
  if (process.env.NATSLAKE_FROM_SOURCE === "1") return false;
  // An installed package (npm install natslake) ships dist/ and no sources: dist/ is what there is to run.
  if (!existsSync(new URL("../cluster/main.ts", import.meta.url))) return true;
  try {
    const info = JSON.parse(readFileSync(new URL("../dist/BUILD.json", import.meta.url), "utf8"));
    return info.fingerprint === sourceFingerprint(root);
  } catch {
    return false;
  }
}

if (builtAndCurrent()) {
  process.env.NATSLAKE_RUNNING_FROM = "dist";
  await import("../dist/cluster/main.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  process.env.NATSLAKE_RUNNING_FROM = "sources";
  await import("../cluster/main.ts");
}
