// node callers.mjs FILE FROM TO FNNAME  -> inclusive time of FNNAME grouped by its caller chain (3 frames up)
import { readFileSync } from "node:fs";
const [file, from, to, fn, depthArg] = process.argv.slice(2);
const depth = Number(depthArg ?? 3);
const p = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;
const agg = new Map();
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  if (t < Number(from) || t > Number(to)) continue;
  const chain = [];
  for (let id = p.samples[i]; id !== undefined; id = parent.get(id)) chain.push(byId.get(id));
  const k = chain.findIndex((n) => n.callFrame.functionName === fn);
  if (k < 0) continue;
  const key = chain.slice(k, k + depth + 1).map(name).join(" <- ");
  agg.set(key, (agg.get(key) ?? 0) + p.timeDeltas[i] / 1000);
}
for (const [k, v] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(v.toFixed(0).padStart(7), "ms ", k);
