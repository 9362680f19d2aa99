/**
 * The npm package: `npm pack` makes a tarball whose exports and bin point at compiled JavaScript with type
 * declarations; installed into an empty project (dependencies from the registry), plain Node — no TypeScript
 * loader — imports `natslake`, `natslake/producer`, `natslake/snapshots` and `natslake/consumer`, publishes rows
 * to a live cluster and sees them committed; `npx natslake --help` runs; the install warns about no engine; a strict
 * TypeScript project, without skipLibCheck, type-checks a typed use of all five entry points (`natslake`,
 * `natslake/producer`, `natslake/consumer`, `natslake/snapshots`, `natslake/admin`) and refuses wrongly typed calls
 * of each. The wire contracts resolve as `natslake/schemas/<file>`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { producerWhenRegistered, startCluster, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** A TypeScript file using every entry point as a service would: the library, producer, snapshots, consumer, admin, lookup. */
const TYPED_USE = `import { connect } from "@nats-io/transport-node";
import { BatchWriter, Catalog, formatDecimal, parseColumnList, parseIdentifier, readRows, type Row, type Table } from "natslake";
import { createProducer, type BatchOutcome, type ProducerOptions } from "natslake/producer";
import { openConsumer, type ConsumedSnapshot } from "natslake/consumer";
import { subscribeSnapshots, type SnapshotSubscription } from "natslake/snapshots";
import { adminRequest } from "natslake/admin";
import { createLookupClient, LookupError, type LookupResult } from "natslake/lookup";

export async function typedUse(url: string, warehouse: string): Promise<string[]> {
  const out: string[] = [];
  const table: Table = await new Catalog(warehouse).createTable(parseIdentifier("pkg.typed"), {
    columns: parseColumnList("id BIGINT NOT NULL, amount DECIMAL(10, 2)"),
    options: { bucket: "1", "bucket-key": "id" },
  });
  const writer = await BatchWriter.open(table);
  await writer.write([{ id: 1, amount: "9.99" }]);
  const committed = await writer.commit();
  const snapshotId: number | undefined = committed.snapshot?.id;
  out.push(\`snapshot \${snapshotId}\`);
  for await (const row of readRows(table, { projection: ["amount"] })) {
    const r: Row = row;
    const amount = r["amount"];
    if (typeof amount === "bigint") out.push(formatDecimal(amount, 2));
  }
  const nc = await connect({ servers: url });
  const opts: ProducerOptions = { nc, table: "pkg.t", maxBatchRows: 100 };
  const producer = await createProducer(opts);
  const outcome: BatchOutcome = await producer.write({ id: 1, s: "typed" });
  const status: "ok" | "duplicate" | "failed" | "unknown" = outcome.status;
  out.push(status);
  await producer.close();
  const sub: SnapshotSubscription = await subscribeSnapshots(nc, "pkg.t", (n) => {
    const id: number = n.snapshotId;
    out.push(\`notified \${id}\`);
  });
  sub.stop();
  const consumer = await openConsumer({ nc, table: "pkg.t", from: "full", window: 4 });
  for await (const snapshot of consumer) {
    const s: ConsumedSnapshot = snapshot;
    for await (const batch of s.batches) out.push(\`rows \${batch.numRows}\`);
    await s.ack();
    break;
  }
  await consumer.close();
  const tables: unknown = await adminRequest(nc, "lake", { type: "list-tables" });
  out.push(JSON.stringify(tables));
  const lookups = await createLookupClient({ nc });
  const found: LookupResult | LookupError = await lookups.get("pkg.t", [{ id: 1 }], { columns: ["s"], atLeastSnapshot: 1 }).catch((e: unknown) => e as LookupError);
  out.push(found instanceof LookupError ? found.code : String(found.rows.length));
  await nc.close();
  return out;
}
`;

/** Calls the declarations must refuse, one per line, and the lines they are on. */
const WRONG_USE = ((): { text: string; lines: number[] } => {
  const head = [
    'import type { NatsConnection } from "@nats-io/transport-node";',
    'import { BatchWriter, formatDecimal, readRows, type Table } from "natslake";',
    'import { createProducer } from "natslake/producer";',
    'import { openConsumer } from "natslake/consumer";',
    'import { subscribeSnapshots } from "natslake/snapshots";',
    'import { adminRequest } from "natslake/admin";',
    'import { createLookupClient } from "natslake/lookup";',
    "declare const nc: NatsConnection;",
    "declare const table: Table;",
    "export async function wrong(): Promise<void> {",
  ];
  const calls = [
    "  await createProducer({ nc, table: 42 });", // a table is named by a string
    "  await (await BatchWriter.open(table)).write({ id: 1 });", // rows come as an array
    '  await subscribeSnapshots(nc, "pkg.t", (n: string) => void n);', // the handler gets a notification
    '  await openConsumer({ nc, table: "pkg.t", window: "8" });', // the window is a number
    '  await adminRequest(nc, "lake", { type: "drop-everything" });', // no such admin request
    "  formatDecimal(999, 2);", // the unscaled value is a bigint
    '  await readRows(table, { limit: "10" }).next();', // the limit is a number
    '  await (await createLookupClient({ nc })).get("pkg.t", [42]);', // keys are objects
  ];
  return { text: [...head, ...calls, "}", ""].join("\n"), lines: calls.map((_, i) => head.length + i + 1) };
})();

const run = (cmd: string, args: string[], cwd: string, timeout = 240_000) => spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, env: { ...process.env, npm_config_loglevel: "warn", npm_config_fund: "false", npm_config_audit: "false", npm_config_prefer_offline: "true" } });

test("package - npm pack, install into an empty project: plain Node imports it, publishes to a cluster, runs the CLI; no engine warnings; its types check", { timeout: 420_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "natslake-pkg-"));
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const pack = run("npm", ["pack", "--pack-destination", dir], ROOT);
      assert.equal(pack.status, 0, pack.stderr);
      const tgz = readdirSync(dir).find((f) => f.endsWith(".tgz"));
      assert.ok(tgz, "a tarball was written");
      const list = run("tar", ["-tzf", join(dir, tgz)], dir);
      assert.match(list.stdout, /package\/dist\/cluster\/producer\.js/);
      assert.match(list.stdout, /package\/dist\/cluster\/producer\.d\.ts/);
      // The hand-written declarations of the .mjs modules the compiled declarations import.
      assert.match(list.stdout, /package\/dist\/src\/codec\/parquet-wasm-ops\.d\.mts/);
      assert.match(list.stdout, /package\/dist\/src\/codec\/parquet-footer\.d\.mts/);
      assert.doesNotMatch(list.stdout, /package\/cluster\/producer\.ts/, "sources are not shipped");
      assert.match(list.stdout, /package\/schemas\/dead-letter\.schema\.json/, "the wire contracts are shipped");
      const app = join(dir, "app");
      run("mkdir", ["-p", app], dir);
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
      const install = run("npm", ["install", join(dir, tgz)], app);
      assert.equal(install.status, 0, install.stderr);
      assert.doesNotMatch(install.stdout + install.stderr, /EBADENGINE/, `no engine warnings on ${process.version}`);

      await new Catalog(c.warehouse).createTable(parseIdentifier("pkg.t"), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      // The node registers the table on NATS at its next table scan: the packaged producer needs that.
      await (await producerWhenRegistered(c.nc, "pkg.t")).close();
      writeFileSync(
        join(app, "main.mjs"),
        `import { connect } from "@nats-io/transport-node";
import * as lake from "natslake";
import { createProducer } from "natslake/producer";
import { subscribeSnapshots } from "natslake/snapshots";
import { openConsumer } from "natslake/consumer";
import { createRequire } from "node:module";
const contracts = createRequire(import.meta.url)("natslake/schemas/subjects.json");
const snapSchema = createRequire(import.meta.url)("natslake/schemas/snapshot-notification.schema.json");
const nc = await connect({ servers: process.argv[2] });
const producer = await createProducer({ nc, table: "pkg.t" });
for (let i = 0; i < 10; i++) await producer.write({ id: i, s: "row-" + i });
await producer.flush();
const seen = await producer.waitVisible(producer.token(), 30000);
await producer.close();
const sub = await subscribeSnapshots(nc, "pkg.t", () => {});
sub.stop();
const consumer = await openConsumer({ nc, table: "pkg.t", from: "full" });
let rows = 0;
for await (const s of consumer) { for await (const b of s.batches) rows += b.numRows; break; }
await consumer.close();
await nc.close();
console.log(JSON.stringify({ library: typeof lake.Catalog, snapshot: seen.snapshotId, rows, subjects: contracts.subjects.length, snapTitle: snapSchema.title }));
`,
      );
      const main = run(process.execPath, ["main.mjs", c.nats.url], app, 60_000);
      assert.equal(main.status, 0, main.stderr);
      const out = JSON.parse(main.stdout.trim().split("\n").pop()!) as { library: string; snapshot: number; rows: number; subjects: number; snapTitle: string };
      assert.equal(out.library, "function", "the library's Catalog is exported");
      assert.ok(out.snapshot >= 1, "the rows became visible");
      assert.equal(out.rows, 10, "a consumer over NATS read them back");
      assert.ok(out.subjects > 10, "natslake/schemas/subjects.json resolves through the package's exports");
      assert.equal(out.snapTitle, "SnapshotNotification");
      const help = run("npx", ["--no-install", "natslake", "--help"], app, 60_000);
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, /Usage: natslake/);
      const version = run("npx", ["--no-install", "natslake", "--version"], app, 60_000);
      assert.match(version.stdout, /0\.1\.0 \(dist\)/, "the installed CLI runs the compiled build");
      // Types: a strict TypeScript project WITHOUT --skipLibCheck (so the package's declarations are checked whole: a
      // .d.ts importing a file that is not shipped fails with TS7016) type-checks a real use of every entry point,
      // and wrongly typed calls of each fail — the declarations are not `any`. @types/node is what any TypeScript
      // project on Node has; the package's declarations refer to Node's types.
      const nodeTypes = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["@types/node"];
      const typesInstall = run("npm", ["install", "--save-dev", `@types/node@${nodeTypes}`], app);
      assert.equal(typesInstall.status, 0, typesInstall.stderr);
      writeFileSync(join(app, "typed.ts"), TYPED_USE);
      const tsc = (file: string) => run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node", file], app, 120_000);
      const typed = tsc("typed.ts");
      assert.equal(typed.status, 0, typed.stdout + typed.stderr);
      writeFileSync(join(app, "wrong.ts"), WRONG_USE.text);
      const wrong = tsc("wrong.ts");
      assert.notEqual(wrong.status, 0, "the wrongly typed calls do not compile");
      const flagged = new Set([...wrong.stdout.matchAll(/^wrong\.ts\((\d+),\d+\): error TS\d+/gm)].map((m) => Number(m[1])));
      assert.deepEqual([...flagged].sort((a, b) => a - b), WRONG_USE.lines, `each wrong call is an error, nothing else is:\n${wrong.stdout}`);
    }, 40);
  } finally {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
