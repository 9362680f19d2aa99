#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time and the most inclusive time,
// optionally only over the samples taken between two CLOCK_MONOTONIC instants in µs (bench/consumer-profile.ts prints
// them per run).
//   node bench/cpuprofile-summary.mjs FILE [FROM_US TO_US] [--top N]
import { readFileSync } from "node:fs";
import process from "node:process";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "30" } } });
const [file, from, to] = positionals;
if (file === undefined || (from !== undefined && to === undefined)) {
  process.stderr.write("usage: node bench/cpuprofile-summary.mjs FILE [FROM_US TO_US] [--top N]\n");
  process.exit(2);
}
const top = Number(values.top);
const lo = from === undefined ? -Infinity : Number(from);
const hi = to === undefined ? Infinity : Number(to);

const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;

const self = new Map();
const inclusive = new Map();
let t = profile.startTime;
let sampled = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  if (t < lo || t > hi) continue;
  const dt = profile.timeDeltas[i];
  sampled += dt;
  const leaf = byId.get(profile.samples[i]);
  self.set(name(leaf), (self.get(name(leaf)) ?? 0) + dt);
  // Each function once per sample, however deep it recurses.
  const seen = new Set();
  for (let id = profile.samples[i]; id !== undefined; id = parent.get(id)) {
    const k = name(byId.get(id));
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
  }
}
const ms = (us) => (us / 1000).toFixed(0).padStart(7);
const list = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `${ms(v)} ms  ${k}`).join("\n");
process.stdout.write(`${file}: ${ms(sampled).trim()} ms sampled${from === undefined ? "" : ` between ${from} and ${to}`}\n-- self\n${list(self)}\n-- inclusive\n${list(inclusive)}\n`);
