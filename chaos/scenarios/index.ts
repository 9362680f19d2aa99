/**
 * Every scenario: each file of this directory (except this one) that exports `scenarios: Scenario[]`. A new
 * scenario is a new file here; nothing to register. `FULL_SUITE_ORDER` only orders the full suite's run.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Scenario } from "../types.ts";

const FULL_SUITE_ORDER = [
  "writer-failpoints",
  "committer-failpoints",
  "leader-pause",
  "redis-restart",
  "redis-outage",
  "nats-node-kill",
  "writer-partition",
  "disk-full",
  "slow-fsync",
  "clock-skew",
  "poison",
  "soak",
];

export async function loadScenarios(): Promise<Scenario[]> {
  const dir = fileURLToPath(new URL(".", import.meta.url));
  const out: Scenario[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".ts") && n !== "index.ts" && !n.endsWith(".d.ts")).sort()) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { scenarios?: unknown };
    if (!Array.isArray(mod.scenarios)) continue;
    for (const s of mod.scenarios as Scenario[]) {
      if (out.some((x) => x.name === s.name)) throw new Error(`scenario '${s.name}' is defined twice (second time in chaos/scenarios/${f})`);
      out.push(s);
    }
  }
  const rank = (s: Scenario): number => {
    const i = FULL_SUITE_ORDER.indexOf(s.name);
    return i < 0 ? FULL_SUITE_ORDER.length : i;
  };
  return out.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}

/**
 * The scenarios `names` select: exact names, or prefixes (`writer-kill` selects every `writer-kill@…`); no names:
 * the CI subset with `ci`, else the full suite. Throws naming the unknown ones.
 */
export function selectScenarios(all: Scenario[], names: string[], ci: boolean): Scenario[] {
  if (names.length === 0) return all.filter((s) => (ci ? s.ci === true : s.suite !== false));
  const out: Scenario[] = [];
  const unknown: string[] = [];
  for (const n of names) {
    const exact = all.find((s) => s.name === n);
    const matches = exact ? [exact] : all.filter((s) => s.name.startsWith(n));
    if (matches.length === 0) unknown.push(n);
    for (const m of matches) if (!out.includes(m)) out.push(m);
  }
  if (unknown.length > 0) throw new Error(`unknown scenario${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => `'${u}'`).join(", ")}; known: ${all.map((s) => s.name).join(", ")}`);
  return out;
}
