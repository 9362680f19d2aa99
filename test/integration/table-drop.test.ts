/**
 * Dropping a table a running cluster serves (cluster/table-drop.ts), with real node processes, NATS and Redis:
 * - `natslake table drop --nats`: every node stops serving it, then its files, its streams, its keys in the KV
 *   buckets and its dead letters go; maintenance then says the cluster does not serve it (not "no leader"), and a
 *   table created again under the name starts clean — no old rows, snapshots, letters or router progress;
 * - `natslake table drop` on the warehouse alone: the nodes notice at their table scan, stop it and remove the same;
 * - names through the admin path: what a new name may not hold is refused with its rule (exit 2), and so is a table
 *   whose streams would be another's.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { clusterPerFile, producerWhenRegistered, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { runNatslake } from "../helpers/warehouse-cli.ts";
import { startWireTap } from "../helpers/wire-tap.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { letterCount } from "../../cluster/dlq.ts";
import { adminRequest } from "../../cluster/admin-client.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { isLakeError } from "../../src/errors.ts";

const cluster = clusterPerFile({ nodes: 2, commitInterval: "100ms" });
const subjects = new Subjects("lake");
const NAME = "drop.t";
const id = parseIdentifier(NAME);

/** The table's keys that hold a value, bucket by bucket (`released.*` and its buckets' read attempts included). */
async function kvKeysOf(): Promise<string[]> {
  const kvm = new Kvm(cluster().nc);
  const key = subjects.tableKey(id);
  const out: string[] = [];
  for (const [bucket, pattern] of [
    [subjects.tablesKv, key],
    [subjects.assignKv, key],
    [subjects.assignKv, `released.${key}.*`],
    [subjects.snapKv, key],
    [subjects.routerKv, key],
    [subjects.attemptsKv, `${key}.*`],
  ] as const) {
    for await (const k of await (await kvm.open(bucket)).keys(pattern)) out.push(`${bucket}/${k}`);
  }
  return out.sort();
}

async function streamsOf(): Promise<string[]> {
  const jsm = await jetstreamManager(cluster().nc);
  const out: string[] = [];
  for (const s of [subjects.ingestStream(id), subjects.commitStream(id)]) if (await jsm.streams.info(s).then(() => true, () => false)) out.push(s);
  return out;
}

async function served(): Promise<{ kv: string[]; streams: string[]; letters: number; files: boolean }> {
  return { kv: await kvKeysOf(), streams: await streamsOf(), letters: await letterCount(await jetstreamManager(cluster().nc), subjects, id), files: existsSync(join(cluster().warehouse, "drop.db", "t")) };
}

const nats = (): string => cluster().nats.url;

/** Creates the table through the cluster, lands `rows` rows and one dead letter. */
async function createAndFill(columns: string, rows: number): Promise<void> {
  const c = cluster();
  const created = await runNatslake(["table", "create", NAME, "--columns", columns, "--option", "bucket=2", "--option", "bucket-key=id", "--nats", nats()]);
  assert.equal(created.code, 0, created.stderr);
  const producer = await producerWhenRegistered(c.nc, NAME);
  for (let i = 0; i < rows; i++) void producer.write({ id: i });
  await producer.flush();
  await producer.waitVisible(producer.token(), 60_000);
  await producer.close();
  await jetstream(c.nc).publish(subjects.ingestRaw(id), JSON.stringify({ id: "not a number" }));
  await waitFor("the router dead-lettered the bad row", async () => ((await letterCount(await jetstreamManager(c.nc), subjects, id)) === 1 ? true : undefined), 30_000, 200);
}

test("table drop --nats - every node stops the table, then its files, streams, KV keys and dead letters go; a table created again starts clean", { timeout: 240_000 }, async (t) => {
  const c = cluster();
  await withNodeLogsOnFailure(c, async () => {
    await createAndFill("id BIGINT NOT NULL, v STRING", 20);
    const before = await served();
    assert.ok(before.kv.includes(`${subjects.tablesKv}/${NAME}`) && before.kv.includes(`${subjects.assignKv}/${NAME}`), `the cluster serves it: ${before.kv.join(", ")}`);
    assert.deepEqual(before.streams, ["LAKE_IN_drop_t", "LAKE_COMMIT_drop_t"]);

    // What the drop sends on the wire validates against the published schemas (stop-table requests and replies too).
    const tap = await startWireTap(nats());
    const startedAt = Date.now();
    const drop = await runNatslake(["table", "drop", NAME, "--nats", nats()]);
    t.diagnostic(`table drop --nats took ${Date.now() - startedAt} ms (the CLI process's start included)`);
    await tap.stop();
    assert.deepEqual(tap.failures, []);
    for (const name of ["admin-request", "admin-reply", "stop-table-request", "stop-table-reply", "kv-delete"]) assert.ok((tap.counts.get(name) ?? 0) > 0, `${name} seen: ${JSON.stringify([...tap.counts])}`);
    assert.equal(drop.code, 0, drop.stderr);
    assert.match(drop.stdout, /^dropped drop\.t through the cluster at .*: its files at .*, streams LAKE_IN_drop_t, LAKE_COMMIT_drop_t, \d+ KV keys, 1 dead letter \(served by n[12](, n[12])?, stopped first\)$/m);
    assert.deepEqual(await served(), { kv: [], streams: [], letters: 0, files: false });
    assert.match(c.logs("n1") + c.logs("n2"), /table dropped: its services here stopped/);

    // Maintenance no longer looks for a leader; and a few table scans later nothing was registered or written again.
    const compact = await runNatslake(["compact", NAME, "--nats", nats()]);
    assert.equal(compact.code, 2, compact.stderr);
    assert.match(compact.stderr, /drop\.t is not served by the cluster at .* \(no metadata in KV lake_tables\)/);
    assert.doesNotMatch(compact.stderr, /no leader/);
    await new Promise((r) => setTimeout(r, 4500));
    assert.deepEqual(await served(), { kv: [], streams: [], letters: 0, files: false });
    const again = await runNatslake(["table", "drop", NAME, "--nats", nats()]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /table 'drop\.t' does not exist: neither in the warehouse .* nor on NATS/);
    assert.equal((await runNatslake(["table", "drop", NAME, "--nats", nats(), "--if-exists"])).stdout.trim(), "drop.t does not exist (--if-exists): nothing dropped");

    // The same name again, with other columns: only its own rows, snapshots from 1, no letters.
    await createAndFill("id BIGINT NOT NULL, w INT", 5);
    const table = await new Catalog(c.warehouse).getTable(id);
    assert.deepEqual(table.schema.fields.map((f) => f.name), ["id", "w"]);
    assert.deepEqual((await readAllRows(table)).map((r) => Number(r["id"])).sort((a, b) => a - b), [0, 1, 2, 3, 4]);
    assert.equal(await table.snapshots.earliestId(), 1);
    assert.equal((await served()).letters, 1, "only the new table's letter");
  });
});

test("table drop on the warehouse alone - the nodes notice at their table scan, stop the table and remove what the cluster kept", { timeout: 180_000 }, async () => {
  const c = cluster();
  await withNodeLogsOnFailure(c, async () => {
    if (!existsSync(join(c.warehouse, "drop.db", "t"))) await createAndFill("id BIGINT NOT NULL, w INT", 5);
    const drop = await runNatslake(["table", "drop", NAME, "--warehouse", c.warehouse]);
    assert.equal(drop.code, 0, drop.stderr);
    const after = await waitFor("the nodes removed the dropped table's streams and keys", async () => {
      const s = await served();
      return s.kv.length === 0 && s.streams.length === 0 && s.letters === 0 ? s : undefined;
    }, 60_000, 250);
    assert.equal(after.files, false, "nothing was written again into the dropped directory");
    assert.match(c.logs("n1") + c.logs("n2"), /removed what the cluster kept for a table dropped from the warehouse/);
    const compact = await runNatslake(["compact", NAME, "--nats", nats()]);
    assert.equal(compact.code, 2, compact.stderr);
    assert.match(compact.stderr, /is not served by the cluster/);
  });
});

test("names through the cluster - a new name that would break a subject or alias another table is refused with its rule; nothing is made", { timeout: 120_000 }, async () => {
  const c = cluster();
  for (const [table, re] of [
    ["names.>", /invalid table name '>': '>' is a NATS subject wildcard/],
    ["names.t x", /invalid table name 't x': whitespace is not allowed/],
    ["names.T", /invalid table name 'T': uppercase 'T' is not allowed/],
  ] as const) {
    await assert.rejects(
      adminRequest(c.nc, "lake", { type: "create-table", table, columns: "id BIGINT NOT NULL" }),
      (e: unknown) => isLakeError(e, "DataInvalid") && re.test((e as Error).message),
      table,
    );
  }
  const cli = await runNatslake(["table", "create", "names.*", "--columns", "id INT", "--nats", nats()]);
  assert.equal(cli.code, 2, cli.stderr);
  assert.match(cli.stderr, /^error: invalid table name '\*': '\*' is a NATS subject wildcard; new table names are/);
  await adminRequest(c.nc, "lake", { type: "create-table", table: "tw_a.b", columns: "id BIGINT NOT NULL" });
  await assert.rejects(adminRequest(c.nc, "lake", { type: "create-table", table: "tw.a_b", columns: "id BIGINT NOT NULL" }), /both would be named 'tw_a_b' in the cluster's NATS streams/);
  assert.deepEqual(
    (await new Catalog(c.warehouse).listDatabases()).filter((d) => d.startsWith("names") || d === "tw"),
    [],
    "no database was made for a refused name",
  );
});
