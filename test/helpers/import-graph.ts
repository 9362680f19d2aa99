/**
 * The repository's import graph, read from the source text with the TypeScript parser (nothing is run): every
 * .ts/.mts/.mjs/.js file outside node_modules, build output and hidden folders, and for each the modules it imports —
 * `import` and `export … from` (type-only ones included), `import()` and `require()` with a literal name, and
 * `import("…")` types. Relative names resolve to files of the repository; `dist/X.js` (what bin/ runs when built)
 * resolves to the source `X.ts` it is compiled from. Used by test/unit/layout.test.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

/** One import of one file. */
export interface ImportEdge {
  /** The importing file, relative to the repository root with `/` separators. */
  from: string;
  /** The module name as written. */
  specifier: string;
  /** The imported file (repository-relative) for a relative name; null for a package or a name that resolves to no file. */
  target: string | null;
  /** 1-based line of the import in `from`. */
  line: number;
}

const SOURCE = /\.(ts|mts|cts|mjs|cjs|js)$/;
/** Folders that hold no project source: dependencies, the Python venv, build and run output (see .gitignore). */
const SKIPPED = (name: string): boolean =>
  name.startsWith(".") || name === "node_modules" || name === "dist" || name.startsWith("dist.") || name === "tmp" || name === "chaos-reports" || name === "bench-results";

const toPosix = (p: string): string => p.split(sep).join("/");

/** Every source file under `root`, repository-relative, sorted. */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (!SKIPPED(name)) walk(p);
      } else if (SOURCE.test(name)) out.push(toPosix(relative(root, p)));
    }
  };
  walk(root);
  return out;
}

/** The module names one file imports, with their lines, in source order. */
export function importSpecifiers(fileName: string, text: string): Array<{ specifier: string; line: number }> {
  const kind = /\.(mjs|cjs|js)$/.test(fileName) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, kind);
  const found: Array<{ specifier: string; line: number }> = [];
  const add = (node: ts.Node | undefined): void => {
    if (node !== undefined && ts.isStringLiteralLike(node))
      found.push({ specifier: node.text, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === "require")))
      add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The repository file a relative module name names, or null when it names none. */
function resolveRelative(root: string, from: string, specifier: string): string | null {
  const abs = resolve(root, dirname(from), specifier);
  const rel = toPosix(relative(root, abs));
  const candidates = [rel];
  // The compiled build mirrors the sources: dist/cluster/main.js is cluster/main.ts.
  if (rel.startsWith("dist/") && rel.endsWith(".js")) candidates.push(rel.slice("dist/".length, -".js".length) + ".ts");
  if (rel.endsWith(".js")) candidates.push(rel.slice(0, -".js".length) + ".ts");
  for (const c of candidates) {
    const p = join(root, c);
    if (existsSync(p) && statSync(p).isFile()) return c;
  }
  return null;
}

/** Every import of every source file under `root`. */
export function importGraph(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of sourceFiles(root)) {
    for (const { specifier, line } of importSpecifiers(from, readFileSync(join(root, from), "utf8"))) {
      const target = specifier.startsWith(".") ? resolveRelative(root, from, specifier) : null;
      edges.push({ from, specifier, target, line });
    }
  }
  return edges;
}

/**
 * The import cycles among the files of `edges`: one per strongly connected component of more than one file (or a
 * file importing itself), each given as a closed path of files `a → b → … → a` found inside the component.
 */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (e.target === null) continue;
    const list = next.get(e.from) ?? [];
    if (!list.includes(e.target)) list.push(e.target);
    next.set(e.from, list);
  }
  // Tarjan's strongly connected components, iteratively (the graph has ~500 files; recursion would do too).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  const nodes = [...new Set([...next.keys(), ...[...next.values()].flat()])].sort();
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; child: number }> = [{ node: start, child: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const children = next.get(top.node) ?? [];
      if (top.child < children.length) {
        const c = children[top.child++]!;
        if (!index.has(c)) {
          index.set(c, counter);
          low.set(c, counter++);
          stack.push(c);
          onStack.add(c);
          work.push({ node: c, child: 0 });
        } else if (onStack.has(c)) low.set(top.node, Math.min(low.get(top.node)!, index.get(c)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let n: string;
        do {
          n = stack.pop()!;
          onStack.delete(n);
          component.push(n);
        } while (n !== top.node);
        const selfImport = (next.get(top.node) ?? []).includes(top.node);
        if (component.length > 1 || selfImport) components.push(component.sort());
      }
    }
  }
  return components.map((component) => cycleWithin(component, next));
}

/** A closed path through the first file of a strongly connected component, by breadth-first search inside it. */
function cycleWithin(component: readonly string[], next: ReadonlyMap<string, readonly string[]>): string[] {
  const members = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const n = queue.shift()!;
    for (const c of next.get(n) ?? []) {
      if (!members.has(c)) continue;
      if (c === start) {
        const path = [start];
        for (let p: string | undefined = n; p !== undefined && p !== start; p = cameFrom.get(p)) path.splice(1, 0, p);
        return [...path, start];
      }
      if (!cameFrom.has(c)) {
        cameFrom.set(c, n);
        queue.push(c);
      }
    }
  }
  return [...component];
}
