#!/usr/bin/env node
// The `natslake` command. It runs the compiled JavaScript in dist/ (`npm run build`) while dist/ matches the sources
// (scripts/fingerprint.mjs), and otherwise the TypeScript sources through tsx — never a stale build.
// NATSLAKE_FROM_SOURCE=1 always runs the sources.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { sourceFingerprint } from "../scripts/fingerprint.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

function builtAndCurrent() {
  if (process.env.NATSLAKE_FROM_SOURCE === "1") return false;
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
