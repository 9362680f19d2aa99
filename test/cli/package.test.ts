/**
 * The npm package: `npm pack` makes a tarball whose exports and bin point at compiled JavaScript with type
 * declarations; installed into an empty project (dependencies from the registry), plain Node — no TypeScript
 * loader — imports `natslake`, `natslake/producer`, `natslake/snapshots` and `natslake/consumer`, publishes rows
 * to a live cluster and sees them committed; `npx natslake --help` runs; the install warns about no engine; and a
 * TypeScript file using the package's types type-checks. The wire contracts resolve as `natslake/schemas/<file>`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { producerWhenRegistered, startCluster, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const run = (cmd: string, args: string[], cwd: string, timeout = 240_000) => spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, env: { ...process.env, npm_config_loglevel: "warn", npm_config_fund: "false", npm_config_audit: "false" } });

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
      // Types: a TypeScript consumer of the package type-checks with the project's compiler.
      writeFileSync(join(app, "typed.ts"), `import { createProducer, type ProducerOptions } from "natslake/producer";\nconst o: Partial<ProducerOptions> = { table: "pkg.t" };\nvoid createProducer;\nvoid o;\n`);
      const tsc = run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "typed.ts"], app, 120_000);
      assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    }, 40);
  } finally {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
