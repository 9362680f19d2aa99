/**
 * Starting a node. A table whose streams cannot be set up (here: its ingest stream exists with storage JetStream
 * cannot change) does not keep a node from starting, nor its other tables from running; once the conflict is gone,
 * the next table scan starts it. A node waits for JetStream, turns a SIGTERM during start-up into a drain, and
 * answers admin requests only once it serves consumers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { spawn } from "node:child_process";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { adminRequest } from "../../cluster/admin-client.ts";
import { openConsumer } from "../../cluster/consumer.ts";

async function landRows(nc: NatsConnection, catalog: Catalog, table: string, rows: number): Promise<void> {
  const producer = await producerWhenRegistered(nc, table, 60_000);
  const pending = Array.from({ length: rows }, (_, i) => producer.write({ id: i }));
  await producer.flush();
  assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0);
  await producer.waitVisible(producer.token(), 30_000);
  await producer.close();
  assert.equal((await (await catalog.getTable(parseIdentifier(table))).snapshots.latest())!.totalRecordCount, rows);
}

test("node start - a table whose streams conflict is retried at every scan; the node and its other tables run meanwhile", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0 });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const subjects = new Subjects();
      for (const name of ["it.good", "it.blocked"]) {
        await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id" } });
      }
      // The blocked table's ingest stream, made beforehand in memory: natslake needs file storage and cannot change it.
      const blocked = parseIdentifier("it.blocked");
      const jsm = await jetstreamManager(c.nc);
      await jsm.streams.add({ name: subjects.ingestStream(blocked), subjects: [subjects.ingestRaw(blocked)], storage: StorageType.Memory, retention: RetentionPolicy.Limits });

      c.startNode("n1");
      await landRows(c.nc, catalog, "it.good", 500);
      assert.equal(c.nodes.get("n1")!.proc.exitCode, null, "the node runs");
      assert.match(c.logs("n1"), /table not started; retrying at the next scan.*it\.blocked|it\.blocked.*table not started/);
      assert.match(c.logs("n1"), /exists with storage 'memory'/);

      await jsm.streams.delete(subjects.ingestStream(blocked));
      await landRows(c.nc, catalog, "it.blocked", 300);
    });
  } finally {
    await c.stop();
  }
});

/**
 * Runs `run` on a cluster whose NATS port is first served by a nats-server without JetStream (every JetStream API call
 * of a node fails); `enableJetStream()` replaces it with the cluster's own server on the same port and store, as a
 * restart with JetStream would. Node logs are printed when `run` fails.
 */
async function withJetStreamLater(run: (c: TestCluster, enableJetStream: () => Promise<void>) => Promise<void>): Promise<void> {
  const c = await startCluster({ nodes: 0 });
  const port = c.nats.port;
  await c.nats.stop({ keepData: true });
  const plain = spawn(process.env["NATSLAKE_NATS_SERVER"] || "nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  let withJetStream: ServerHandle | undefined;
  try {
    await withNodeLogsOnFailure(c, () =>
      run(c, async () => {
        plain.kill("SIGKILL");
        await new Promise((r) => plain.once("exit", r));
        withJetStream = await startNats({ port, dir: c.nats.dir });
      }),
    );
  } finally {
    plain.kill("SIGKILL");
    await withJetStream?.stop();
    await c.stop();
  }
}

const waitingForJetStream = (c: TestCluster): Promise<true> =>
  waitFor("the node waiting for JetStream", () => (/node start step failed; trying again/.test(c.logs("n1")) ? true : undefined), 60_000);

test("node start - a node whose NATS has no JetStream yet waits for it (logging each try) instead of exiting", { timeout: 180_000 }, async () => {
  await withJetStreamLater(async (c, enableJetStream) => {
    const catalog = new Catalog(c.warehouse);
    await catalog.createTable(parseIdentifier("it.later"), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id" } });
    c.startNode("n1");
    await waitingForJetStream(c);
    assert.equal(c.nodes.get("n1")!.proc.exitCode, null, "the node keeps trying");
    // JetStream arrives: the node reconnects and its next try succeeds.
    await enableJetStream();
    await landRows(c.nc, catalog, "it.later", 200);
    // Rows land once the writer is up; a node with the reader role too says "node started" after its decoders
    // warmed up (up to 5 s), which may be later.
    await waitFor("the node's start logged", () => (/node started/.test(c.logs("n1")) ? true : undefined), 30_000);
  });
});

test("node start - a SIGTERM while the node starts is a drain once it is up, not an abrupt exit", { timeout: 180_000 }, async () => {
  await withJetStreamLater(async (c, enableJetStream) => {
    c.startNode("n1");
    await waitingForJetStream(c);
    c.signal("n1", "SIGTERM");
    await waitFor("the signal noted", () => (/"during":"start"[^\n]*"msg":"signal received; draining"/.test(c.logs("n1")) ? true : undefined), 30_000);
    assert.equal(c.nodes.get("n1")!.proc.exitCode, null, "still starting");
    await enableJetStream();
    assert.equal(await c.waitExit("n1", 60_000), 0, "started, drained and exited 0");
    assert.match(c.logs("n1"), /"msg":"node started"[\s\S]*"msg":"node stopped"/);
  });
});

test("node start - a reader node answers admin requests only once it serves consumers: a consumer opened right after is taken, even with a plain subscriber on the prefix", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0 });
  // A plain subscriber to everything under the prefix (a wire tap, `nats sub 'lake.>'`): it gets a copy of every
  // consume-open and answers none, so a request sent while no reader listens is not refused ("no responders") but
  // waits out its timeout.
  const tap = c.nc.subscribe("lake.>", { callback: () => {} });
  try {
    await withNodeLogsOnFailure(c, async () => {
      // The reader's last start-up step takes 3 s (its decoders warming up on a loaded machine).
      c.startNode("n1", [], { FAILPOINTS: "node.before-reader:sleep(3000)" });
      await waitFor("the node answering admin requests", () => adminRequest(c.nc, "lake", { type: "list-tables" }, 1000).then(() => true), 60_000, 100);
      await adminRequest(c.nc, "lake", { type: "create-table", table: "start.events", columns: "id BIGINT NOT NULL", options: { bucket: "1", "bucket-key": "id" } });
      const t0 = Date.now();
      const consumer = await openConsumer({ nc: c.nc, table: "start.events", from: "latest", openTimeoutMs: 8000 });
      assert.ok(Date.now() - t0 < 5000, `the consume-open was answered at once (${Date.now() - t0} ms)`);
      await consumer.close();
      // The node's log is written asynchronously: the line may land a little after the reply (seen once in CI).
      await waitFor("the session's open in the node's log", () => (/"msg":"consume session opened"/.test(c.logs("n1")) ? true : undefined), 10_000, 50);
    });
  } finally {
    tap.unsubscribe();
    await c.stop();
  }
});
