/**
 * The repository's layout, checked from the files themselves (no servers): every top-level folder and every folder
 * of src/, actors/ and cluster/ opens with a README.md; the one-way layers hold in the actual imports of every source
 * file (test/helpers/import-graph.ts reads them with the TypeScript parser); and no import cycle exists among the
 * project's modules, type-only imports included. A failure names the files and lines to mend.
 *
 * The layers: src/ is a library that knows no NATS, Redis or actors; actors/ reach the outside only through the ports
 * the node injects (actors/ports.ts, actors/lease-port.ts); cluster/ wires them; nothing imports chaos/.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { importCycles, importGraph, importSpecifiers, type ImportEdge } from "../helpers/import-graph.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

const TOP_FOLDERS = ["src", "actors", "cluster", "chaos", "test", "bench", "scripts", "examples", "compose", "schemas", "bin", "docs"];
/** Folders whose every subfolder, at any depth, has its own README.md too. */
const LAYERED_FOLDERS = ["src", "actors", "cluster"];

/** Every folder that must open with a README.md, repository-relative. */
function foldersNeedingReadme(): string[] {
  const out = [...TOP_FOLDERS];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(REPO, dir)).sort()) {
      const rel = `${dir}/${name}`;
      if (statSync(join(REPO, rel)).isDirectory()) {
        out.push(rel);
        walk(rel);
      }
    }
  };
  for (const d of LAYERED_FOLDERS) walk(d);
  return out;
}

const under = (path: string | null, folder: string): boolean => path !== null && path.startsWith(`${folder}/`);
const NATS_OR_REDIS_CLIENT = /^(@nats-io\/|nats$|nats\/|ioredis$|ioredis\/|redis$|redis\/)/;
const PRODUCT = ["src", "actors", "cluster", "bin"];

interface LayerRule {
  rule: string;
  /** Whether the rule speaks about imports made by this file. */
  appliesTo: (from: string) => boolean;
  forbids: (edge: ImportEdge) => boolean;
}

const LAYER_RULES: LayerRule[] = [
  {
    rule: "src/ is a library: it imports nothing from actors/, cluster/ or chaos/, and no NATS or Redis client",
    appliesTo: (from) => under(from, "src"),
    forbids: (e) => ["actors", "cluster", "chaos"].some((f) => under(e.target, f)) || NATS_OR_REDIS_CLIENT.test(e.specifier),
  },
  {
    rule: "actors/ reach the outside only through ports: they import nothing from cluster/ or chaos/, and no NATS or Redis client",
    appliesTo: (from) => under(from, "actors"),
    forbids: (e) => ["cluster", "chaos"].some((f) => under(e.target, f)) || NATS_OR_REDIS_CLIENT.test(e.specifier),
  },
  {
    rule: "nothing imports chaos/ but chaos/ itself and its tests",
    appliesTo: (from) => !under(from, "chaos") && !under(from, "test"),
    forbids: (e) => under(e.target, "chaos"),
  },
  {
    rule: "the product (src/, actors/, cluster/, bin/) imports nothing from test/ or bench/",
    appliesTo: (from) => PRODUCT.some((f) => under(from, f)),
    forbids: (e) => under(e.target, "test") || under(e.target, "bench"),
  },
];

/** One line per import that breaks a layer rule: `file:line imports 'name' — rule`. */
function layerViolations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const e of edges)
    for (const r of LAYER_RULES) if (r.appliesTo(e.from) && r.forbids(e)) out.push(`${e.from}:${e.line} imports '${e.specifier}' — ${r.rule}`);
  return out;
}

const formatCycle = (cycle: readonly string[]): string => cycle.join(" → ");

/** The repository's imports, read once for the tests below (parsing ~400 files takes a few seconds). */
let graph: ImportEdge[] | undefined;
const repoImports = (): ImportEdge[] => (graph ??= importGraph(REPO));

test("layout - every top-level folder and every folder of src/, actors/, cluster/ opens with a README.md", () => {
  const folders = foldersNeedingReadme();
  assert.ok(folders.includes("src/codec/columns") && folders.includes("actors/runtime"), "the walk reaches nested folders");
  const missing = folders.filter((d) => !existsSync(join(REPO, d, "README.md")));
  assert.deepEqual(missing, [], `folders without a README.md saying what lives there and what it may import:\n  ${missing.join("\n  ")}`);
  const empty = folders.filter((d) => readFileSync(join(REPO, d, "README.md"), "utf8").trim() === "");
  assert.deepEqual(empty, [], `empty README.md files:\n  ${empty.join("\n  ")}`);
});

test("layout - the import reader sees every kind of import, type-only ones included, and nothing in strings", () => {
  const text = [
    `import type { A } from "./a.ts";`,
    `import { b, type B } from "./b.ts";`,
    `export { c } from "./c.ts";`,
    `export type * from "./d.ts";`,
    `import "./e.ts";`,
    `const f = await import("./f.ts");`,
    `type G = import("./g.ts").G;`,
    `const h = require("./h.cjs");`,
    `const notAnImport = 'import x from "./nope.ts"';`,
    `// import y from "./nope-either.ts";`,
    `const dynamic = await import(someName);`,
  ].join("\n");
  assert.deepEqual(
    importSpecifiers("x.ts", text).map((s) => `${s.line}:${s.specifier}`),
    ["1:./a.ts", "2:./b.ts", "3:./c.ts", "4:./d.ts", "5:./e.ts", "6:./f.ts", "7:./g.ts", "8:./h.cjs"],
  );
  assert.deepEqual(
    importSpecifiers("x.mjs", `import { a } from "../src/a.ts";\nexport * from "ioredis";\n`).map((s) => s.specifier),
    ["../src/a.ts", "ioredis"],
  );
});

test("layout - the layer rules and the cycle search catch what they are meant to (made-up imports)", () => {
  const edge = (from: string, specifier: string, target: string | null): ImportEdge => ({ from, specifier, target, line: 1 });
  const bad = [
    edge("src/scan/read.ts", "../../actors/ports.ts", "actors/ports.ts"),
    edge("src/io/s3.ts", "ioredis", null),
    edge("actors/writer.ts", "@nats-io/jetstream", null),
    edge("actors/writer.ts", "../cluster/node.ts", "cluster/node.ts"),
    edge("cluster/node.ts", "../chaos/types.ts", "chaos/types.ts"),
    edge("bench/x.bench.ts", "../chaos/faults.ts", "chaos/faults.ts"),
    edge("cluster/node.ts", "../test/helpers/servers.ts", "test/helpers/servers.ts"),
  ];
  assert.equal(layerViolations(bad).length, bad.length, layerViolations(bad).join("\n"));
  const fine = [
    edge("src/io/s3.ts", "@aws-sdk/client-s3", null),
    edge("actors/writer.ts", "../src/errors.ts", "src/errors.ts"),
    edge("actors/writer.ts", "./ports.ts", "actors/ports.ts"),
    edge("cluster/node.ts", "ioredis", null),
    edge("test/chaos/x.test.ts", "../../chaos/types.ts", "chaos/types.ts"),
    edge("chaos/runner.ts", "../test/helpers/python.ts", "test/helpers/python.ts"),
  ];
  assert.deepEqual(layerViolations(fine), []);

  const cyclic = [
    edge("a.ts", "./b.ts", "b.ts"),
    edge("b.ts", "./c.ts", "c.ts"),
    edge("c.ts", "./a.ts", "a.ts"),
    edge("d.ts", "./a.ts", "a.ts"),
    edge("e.ts", "./e.ts", "e.ts"),
    edge("f.ts", "./g.ts", "g.ts"),
  ];
  assert.deepEqual(importCycles(cyclic).map(formatCycle).sort(), ["a.ts → b.ts → c.ts → a.ts", "e.ts → e.ts"]);
  assert.deepEqual(importCycles(cyclic.slice(0, 2)), []);
});

test("layout - every relative import names a file of the repository (a moved file leaves no stale import)", () => {
  const unresolved = repoImports()
    .filter((e) => e.specifier.startsWith(".") && e.target === null)
    .map((e) => `${e.from}:${e.line} imports '${e.specifier}'`);
  assert.deepEqual(unresolved, []);
});

test("layout - the one-way layers hold in the imports of every source file", () => {
  const edges = repoImports();
  // A sanity floor, so a reader that silently found nothing cannot pass: the project has hundreds of imports.
  assert.ok(edges.length > 1000, `only ${edges.length} imports read`);
  const violations = layerViolations(edges);
  assert.deepEqual(violations, [], `imports that break the layers:\n  ${violations.join("\n  ")}`);
});

test("layout - no import cycle among the project's modules (type-only imports included)", () => {
  const cycles = importCycles(repoImports());
  assert.deepEqual(cycles.map(formatCycle), [], `import cycles (break each by moving the shared name down a layer):\n  ${cycles.map(formatCycle).join("\n  ")}`);
});
