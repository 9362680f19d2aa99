/**
 * The topology of compose/docker-compose.yml, started for real as local processes (Docker does not run here): three
 * clustered nats-servers loading compose/nats/nats.conf with its users and their permissions, redis-server with the
 * compose ACL (default user off), and the seven natslake nodes with exactly the command lines and environment of
 * their services (places made local: test/helpers/compose.ts). Each node passes its compose healthcheck and runs as
 * its role's NATS user; the table is created as the operator, rows published as the producer (through the client and
 * raw) land exactly once (natslake read, pypaimon, a consumer over NATS as the consumer user), and no server logged a
 * permission violation; every metric the Grafana dashboard queries is in the nodes' /metrics.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { composeClientEnv, composeConfig, startComposeTopology, type ComposeTopology } from "../helpers/compose.ts";
import { freePort } from "../helpers/servers.ts";
import { dashboardQueries, exposedMetricNames, parsePromQL } from "../helpers/dashboard.ts";
import { producerWhenRegistered, waitFor } from "../helpers/cluster.ts";
import { PAIMON_READ_PY, parseJsonLines, runPython } from "../helpers/python.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import { connectNats } from "../../cluster/nats/connect.ts";
import type { Role } from "../../cluster/nats/permissions.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { readAllRows } from "../../src/scan/read.ts";
import type { MemberHeartbeat } from "../../actors/wire/messages.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const PUBLISH_PY = fileURLToPath(new URL("../../examples/python/publish.py", import.meta.url));
const TABLE = "compose.events";
const PRODUCED = 6000;
const RAW = 100;

let topo: ComposeTopology | undefined;
/** A connection per client role, each as compose/README.md tells a process on the host to log in. */
const clients = new Map<Role, NatsConnection>();
let serversAfterMs = 0;
let readyAfterMs = 0;

/** `natslake …` on the host; `env`: the user it logs in as (composeClientEnv). */
function cli(args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`natslake ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

async function metricsOf(port: number): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (!r.ok) throw new Error(`/metrics on ${port}: ${r.status}`);
  return r.text();
}

/** Prints the end of every node's log when `fn` fails, so a failure under CI load can be diagnosed. */
async function withLogs<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    for (const s of topo?.nodes.keys() ?? []) process.stderr.write(`--- last lines of ${s} ---\n${topo!.logs(s).split("\n").slice(-25).join("\n")}\n`);
    throw e;
  }
}

before(async () => {
  const started = Date.now();
  topo = await startComposeTopology(composeConfig());
  serversAfterMs = Date.now() - started;
  // Polled with a fetch of /readyz (starting a process per node and poll would take the CPU the nodes start with);
  // then each service's own healthcheck command, as Docker runs it, must pass.
  await withLogs(async () => {
    await waitFor("every node ready (/readyz)", async () => {
      const ready = await Promise.all([...topo!.nodes.values()].map((n) => fetch(`http://127.0.0.1:${n.metricsPort}/readyz`, { signal: AbortSignal.timeout(3000) }).then((r) => r.ok, () => false)));
      return ready.every(Boolean) ? true : undefined;
    }, 90_000, 500);
    for (const s of topo!.nodes.keys()) assert.ok(await topo!.healthy(s), `${s}: its compose healthcheck passes`);
    // And it can fail: where no node answers, it exits non-zero.
    assert.equal(await topo!.healthy("writer-1", { NATSLAKE_METRICS_PORT: String(await freePort()) }), false);
  });
  readyAfterMs = Date.now() - started;
  for (const role of ["operator", "producer", "consumer"] as const) {
    clients.set(role, await connectNats(topo.natsUrls, {}, { maxReconnectAttempts: -1, reconnectTimeWait: 100 }, composeClientEnv(topo.compose, role)));
  }
}, { timeout: 150_000 });

after(async () => {
  for (const c of clients.values()) await c.close().catch(() => undefined);
  await topo?.stop();
});

/** The connection of a client role. */
const as = (role: Role): NatsConnection => clients.get(role)!;

test("compose topology - the nodes run with their services' roles on the NATS cluster of nats.conf; rows published land exactly once", { timeout: 240_000 }, async (tc) => {
  const t = topo!;
  const started = Date.now();
  // Where the time goes, in the test's output (it runs on a shared, loaded machine).
  const phase = (what: string): void => tc.diagnostic(`${what} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
  tc.diagnostic(`servers up and nodes spawned in ${(serversAfterMs / 1000).toFixed(1)} s, every node healthy in ${(readyAfterMs / 1000).toFixed(1)} s`);
  await withLogs(async () => {
    // The servers run compose/nats/nats.conf: its cluster name (not given on the command line) and fsync always.
    for (const n of t.nats.nodes) {
      const varz = (await (await fetch(`${n.monitorUrl}/varz`)).json()) as { cluster: { name: string }; jetstream: { config: { sync_always?: boolean } } };
      assert.equal(varz.cluster.name, "natslake", n.name);
      assert.equal(varz.jetstream.config.sync_always, true, n.name);
    }
    // Every node logged in as the user of its role (its connections are named natslake-<node id>), and nothing else
    // connected without a user.
    const users = new Map<string, Set<string>>();
    for (const n of t.nats.nodes) {
      const connz = (await (await fetch(`${n.monitorUrl}/connz?auth=true&limit=1024`)).json()) as { connections: Array<{ name?: string; authorized_user?: string }> };
      for (const c of connz.connections) {
        assert.ok(c.authorized_user, `a connection without a user: ${c.name ?? "(no name)"}`);
        users.set(c.name ?? "", new Set([...(users.get(c.name ?? "") ?? []), c.authorized_user]));
      }
    }
    for (const [service, n] of t.nodes) assert.deepEqual([...(users.get(`natslake-${service}`) ?? [])], [n.env["NATSLAKE_NATS_USER"]], service);
    assert.deepEqual(new Set([...t.nodes.values()].map((n) => n.env["NATSLAKE_NATS_USER"])), new Set(["writer", "committer", "reader"]));
    // Redis: its default user is off, and the compose healthcheck logs in as the committers' user (a wrong password fails).
    const noAuth = spawnSync("redis-cli", ["-p", String(t.redis.port), "ping"], { encoding: "utf8" });
    assert.match(noAuth.stdout + noAuth.stderr, /NOAUTH/, "redis without a user");
    assert.equal(await t.redisHealthy(), true, "redis's compose healthcheck");
    assert.equal(await t.redisHealthy({ REDISCLI_AUTH: "not-the-password" }), false, "redis's healthcheck with a wrong password");

    // Every node announced itself with the roles of its compose command line.
    const kv = await new Kvm(as("operator")).open("lake_members");
    for (const [service, s] of Object.entries(t.compose.services)) {
      if (!t.nodes.has(service)) continue;
      const e = await kv.get(service);
      assert.ok(e !== null, `${service} heartbeats`);
      const hb = JSON.parse(new TextDecoder().decode(e.value)) as MemberHeartbeat;
      assert.deepEqual(hb.roles, [s.command![s.command!.indexOf("--roles") + 1]], service);
    }

    // As compose/README.md does it: the table is created through the cluster as the operator (a reader node serves
    // the request).
    cli(["table", "create", TABLE, "--nats", t.natsUrls, "--columns", "id BIGINT NOT NULL, src STRING",
      "--option", "bucket=6", "--option", "bucket-key=id",
      // Few snapshots retained, so the short load below gives expiration work (its metrics are on the dashboard).
      "--option", "snapshot.num-retained.min=5", "--option", "snapshot.num-retained.max=10"], composeClientEnv(t.compose, "operator"));
    phase("table created");
    const producer = await producerWhenRegistered(as("producer"), TABLE);
    // A steady trickle (many small commits: compaction and expiration have work), bounded in rows and time.
    const deadline = Date.now() + 60_000;
    for (let id = 0; id < PRODUCED && Date.now() < deadline; ) {
      for (let k = 0; k < 400; k++, id++) void producer.write({ id, src: "producer" });
      await producer.flush();
      await new Promise((r) => setTimeout(r, 300));
    }
    await producer.waitVisible(producer.token(), 60_000);
    await producer.close();
    phase("produced rows visible");
    // Raw rows from a service without the client (the Python example, logged in as compose/README.md says), routed by
    // the leader; one that does not fit is a dead letter.
    const raw = Array.from({ length: RAW }, (_, i) => JSON.stringify({ id: PRODUCED + i, src: "raw" })).join("\n");
    const published = JSON.parse(await runPython(PUBLISH_PY, ["--nats", t.nats.urls[0]!, "--table", TABLE, "--shape", "array"], { input: raw, env: composeClientEnv(t.compose, "producer") })) as { rows: number };
    assert.equal(published.rows, RAW);
    await jetstream(as("producer")).publish(`lake.in.${TABLE}`, JSON.stringify({ id: "not a number", src: "raw" }));
    const total = PRODUCED + RAW;
    const want = Array.from({ length: total }, (_, i) => i);

    const table = await new Catalog(t.warehouse).getTable(parseIdentifier(TABLE));
    await waitFor("the raw rows committed", async () => ((await readAllRows(table, { projection: ["id"] })).length >= total ? true : undefined), 60_000, 250);
    const read = parseJsonLines(cli(["read", TABLE, "--warehouse", t.warehouse, "--format", "jsonl", "--columns", "id"])).map((r) => Number(r["id"]));
    assert.deepEqual(read.sort((a, b) => a - b), want, "natslake read: every row once");
    phase("natslake read");
    const py = parseJsonLines(await runPython(PAIMON_READ_PY, [t.warehouse, TABLE, "--columns", "id"])).map((r) => Number(r["id"]));
    assert.deepEqual(py.sort((a, b) => a - b), want, "pypaimon: every row once");
    phase("pypaimon read");

    // A consumer over NATS (reader nodes serve it) gets the same rows, once.
    const consumer = await openConsumer({ nc: as("consumer"), table: TABLE, from: "full", consumerId: "compose-test" });
    const got: number[] = [];
    for await (const s of consumer) {
      for await (const b of s.batches) got.push(...[...b.getChild("id")!.toArray()].map(Number));
      await s.ack();
      if (got.length >= total) break;
    }
    assert.ok(["reader-1", "reader-2"].includes(consumer.reader), `served by ${consumer.reader}`);
    await consumer.close();
    assert.deepEqual(got.sort((a, b) => a - b), want, "consumer: every row once");
    phase("consumer read");

    // The writers did the writing, each on buckets of its own; the committers and readers read no rows.
    for (const [service, n] of t.nodes) {
      const rowsIn = (await metricsOf(n.metricsPort)).split("\n").filter((l) => l.startsWith("natslake_rows_in_total{")).reduce((a, l) => a + Number(l.split(" ").at(-1)), 0);
      if (service.startsWith("writer-")) assert.ok(rowsIn > 0, `${service} read rows`);
      else assert.equal(rowsIn, 0, `${service} reads no rows`);
    }
    // The operator's view (compose/README.md: `natslake status` on the host).
    assert.match(cli(["status", "--nats", t.natsUrls], composeClientEnv(t.compose, "operator")), /reader-1/);

    // Under the permissions, nobody was refused anything: no process needed more than its role's user allows.
    assert.deepEqual(t.natsViolations(), [], "permission violations in the NATS servers' logs");
  });
});

test("compose topology - every metric the Grafana dashboard queries is exported by the nodes", { timeout: 120_000 }, async () => {
  const t = topo!;
  const queries = dashboardQueries();
  const wanted = new Map<string, string[]>();
  for (const q of queries) for (const m of parsePromQL(q.expr).metrics) wanted.set(m, [...(wanted.get(m) ?? []), q.where]);
  assert.ok(wanted.size >= 20, `${wanted.size} metrics`);
  let missing: string[] = [];
  // The leader measures files and consumer lag every 5-10 s: wait for a round of each, not for a chosen moment.
  await withLogs(() =>
    waitFor("every dashboard metric in /metrics", async () => {
      const exposed = new Set<string>();
      for (const n of t.nodes.values()) for (const m of exposedMetricNames(await metricsOf(n.metricsPort))) exposed.add(m);
      missing = [...wanted.keys()].filter((m) => !exposed.has(m));
      return missing.length === 0 ? true : undefined;
    }, 60_000, 1000).catch((e: unknown) => {
      throw new Error(`not exported: ${missing.map((m) => `${m} (${wanted.get(m)!.join("; ")})`).join(", ")}`, { cause: e });
    }),
  );
  // The router's dead letter (the raw row above) is counted by stage.
  const all = (await Promise.all([...t.nodes.values()].map((n) => metricsOf(n.metricsPort)))).join("\n");
  assert.match(all, /^natslake_dlq_total\{[^}]*stage="router"[^}]*\} 1$/m);
});
