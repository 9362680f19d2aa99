/**
 * Least privilege, enforced by real servers: a nats-server whose users are generated from the role table
 * (cluster/nats/permissions.ts) and a redis-server whose only user is the committers' ACL (cluster/redis/acl.ts,
 * default user off). One writer, one committer and one reader node, each with its own user, run the whole pipeline:
 * tables created by the operator, rows published by a producer (the client and `natslake publish`), committed,
 * consumed by a consumer, compacted and expired through the leader, `status` and `dlq list` — and the server logs no
 * permission violation of any of them. Then what must be refused is: a producer
 * publishing into another table (the table is unchanged), a consumer publishing committables, answering consume-open
 * requests or opening sessions on another table, a consume-open that names a subject other than an inbox, a lookup
 * user looking up another table or publishing rows, a producer making lookups, and a Redis user without the
 * committers' ACL taking a table's lease.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startNats, startRedis, type ServerHandle } from "../helpers/servers.ts";
import { spawnNode, waitFor } from "../helpers/cluster.ts";
import { runNatslake } from "../helpers/warehouse-cli.ts";
import { permissionViolationsIn } from "../helpers/nats-violations.ts";
import { authorizationBlock, type Role, type UserSpec } from "../../cluster/nats/permissions.ts";
import { clientInboxPrefix, INBOX_PREFIX_ENV } from "../../cluster/nats/inbox.ts";
import { committerAclRules } from "../../cluster/redis/acl.ts";
import { connectLeaseRedis, leaseKey, RedisLease } from "../../cluster/redis/lease.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { connectNats } from "../../cluster/nats/connect.ts";
import { NATS_AUTH_ENV, NATS_PASSWORD_ENV } from "../../cluster/nats/connect-options.ts";
import { createProducer } from "../../cluster/producer.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import { createLookupClient, LookupError } from "../../cluster/lookup-client.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { readRows } from "../../src/scan/read.ts";

const PASSWORD = randomBytes(12).toString("hex");
const A = "lp.a";
const B = "lp.b";
const ROWS = 200;
const RAW = 5;
const ALL_A = Array.from({ length: ROWS + RAW }, (_, i) => i);
const subjects = new Subjects();

const user = (name: string, roles: Role[], tables: string[] | "*"): UserSpec => ({ user: name, password: { literal: PASSWORD }, roles, tables });
const USERS: UserSpec[] = [
  user("writer", ["writer"], "*"),
  user("committer", ["committer"], "*"),
  user("reader", ["reader"], "*"),
  user("operator", ["operator"], "*"),
  user("producer-a", ["producer"], [A]),
  user("consumer-a", ["consumer"], [A]),
  user("lookup-a", ["lookup"], [A]),
];

let nats: ServerHandle;
let redis: ServerHandle;
let dir: string;
let warehouse: string;
const nodes: ChildProcess[] = [];
const conns: NatsConnection[] = [];

// Each process as a deployment runs it: its user and password (cluster/nats/connect-options.ts) and its inbox prefix.
const natsUrl = (): string => nats.url;
const envOf = (name: string): Record<string, string> => ({ [NATS_AUTH_ENV.natsUser]: name, [NATS_PASSWORD_ENV]: PASSWORD, [INBOX_PREFIX_ENV]: clientInboxPrefix(name), NATSLAKE_FROM_SOURCE: "1" });

async function connectAs(name: string): Promise<NatsConnection> {
  const nc = await connectNats(natsUrl(), {}, {}, envOf(name));
  conns.push(nc);
  return nc;
}

/** The server's permission violations so far, as `user kind subject` lines. */
function violations(): string[] {
  return permissionViolationsIn([join(dir, "nats.log")]);
}

/** Rejects (or throws) with a NATS permissions violation. */
async function refused(what: string, attempt: () => Promise<unknown>): Promise<void> {
  await assert.rejects(attempt, /permissions violation/i, what);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "natslake-leastpriv-"));
  warehouse = join(dir, "warehouse");
  nats = await startNats({ config: authorizationBlock(USERS, subjects), logFile: join(dir, "nats.log") });
  redis = await startRedis({
    extraArgs: ["--user", "default", "off", "--user", "committer", "on", `>${PASSWORD}`, ...committerAclRules("lake"), "--user", "intruder", "on", `>${PASSWORD}`, "~intruder:*", "+@all"],
    probeAuth: { user: "committer", password: PASSWORD },
  });
  const node = (id: string, role: Role, extra: { redis?: string } = {}): void => {
    nodes.push(spawnNode({ id, nats: natsUrl(), warehouse, logFile: join(dir, `${id}.log`), extra: ["--roles", role], env: envOf(role), ...extra }));
  };
  node("w1", "writer");
  node("c1", "committer", { redis: `redis://committer:${PASSWORD}@127.0.0.1:${redis.port}` });
  node("r1", "reader");
  const op = await connectAs("operator");
  await waitFor("every node heartbeating", async () => {
    try {
      const kv = await new Kvm(op).open(subjects.membersKv);
      for (const id of ["w1", "c1", "r1"]) if ((await kv.get(id)) === null) return undefined;
      return true;
    } catch {
      return undefined;
    }
  }, 60_000, 200);
});

after(async () => {
  for (const p of nodes) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  await Promise.all(nodes.map((p) => (p.exitCode !== null || p.signalCode !== null ? undefined : new Promise((r) => p.once("exit", r)))));
  for (const nc of conns) await nc.close().catch(() => undefined);
  await nats?.stop();
  await redis?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

function nodeLogs(): string {
  return ["w1", "c1", "r1"].map((id) => `--- ${id}\n${readFileSync(join(dir, `${id}.log`), "utf8").split("\n").slice(-30).join("\n")}`).join("\n");
}

async function tableRows(name: string): Promise<number[]> {
  const catalog = new Catalog(warehouse);
  const out: number[] = [];
  for await (const r of readRows(await catalog.getTable(parseIdentifier(name)))) out.push(Number(r["id"]));
  return out.sort((x, y) => x - y);
}

test("least privilege - every role runs the pipeline with its own permissions, and nothing beyond them", { timeout: 240_000 }, async (t) => {
  await t.test("the operator creates tables through the cluster", async () => {
    for (const name of [A, B]) {
      const r = await runNatslake(["table", "create", name, "--columns", "id BIGINT NOT NULL, v STRING", "--option", "bucket=2", "--option", "bucket-key=id", "--nats", natsUrl()], envOf("operator"));
      assert.equal(r.code, 0, `${r.stderr}\n${nodeLogs()}`);
    }
  });

  await t.test("the producer publishes, the committer commits, the consumer reads, the operator compacts through the leader", async () => {
    const pnc = await connectAs("producer-a");
    const producer = await waitFor(`${A} registered`, async () => createProducer({ nc: pnc, table: A }), 60_000, 200).catch((e: unknown) => {
      throw new Error(`${String(e)}\nviolations: ${violations().join("\n")}`);
    });
    for (let i = 0; i < ROWS; i++) void producer.write({ id: i, v: `row ${i}` });
    await producer.flush();
    await producer.waitVisible(producer.token(), 60_000);
    await producer.close();
    // Raw rows through `natslake publish` (the bare subject; the leader's router routes them to their buckets).
    const file = join(dir, "raw.jsonl");
    writeFileSync(file, Array.from({ length: RAW }, (_, i) => JSON.stringify({ id: ROWS + i, v: "raw" })).join("\n"));
    const publish = await runNatslake(["publish", A, file, "--nats", natsUrl(), "--no-progress", "--wait-visible"], envOf("producer-a"));
    assert.equal(publish.code, 0, publish.stderr);
    assert.deepEqual(await tableRows(A), ALL_A);

    const cnc = await connectAs("consumer-a");
    const consumer = await openConsumer({ nc: cnc, table: A, from: "full" });
    let consumed = 0;
    for await (const snap of consumer) {
      for await (const b of snap.batches) consumed += b.numRows;
      await snap.ack();
      break;
    }
    await consumer.close();
    assert.equal(consumed, ALL_A.length, "the consumer read the table through a reader node");

    const compact = await runNatslake(["compact", A, "--nats", natsUrl()], envOf("operator"));
    assert.equal(compact.code, 0, compact.stderr);
    assert.match(compact.stderr, /ran on c1/);
    const expire = await runNatslake(["expire-snapshots", A, "--retain-min", "1", "--retain-max", "1", "--nats", natsUrl()], envOf("operator"));
    assert.equal(expire.code, 0, expire.stderr);
    assert.match(expire.stderr, /ran on c1/);

    for (const args of [["status", "--json"], ["dlq", "list", A]]) {
      const r = await runNatslake([...args, "--nats", natsUrl()], envOf("operator"));
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }

    assert.deepEqual(violations(), [], "no role was refused anything the pipeline needs");
  });

  await t.test("a producer cannot publish into another table, nor write its own table's stream marker", async () => {
    const op = await connectAs("operator");
    const jsm = await jetstreamManager(op);
    const before = (await jsm.streams.info(subjects.ingestStream(parseIdentifier(B)))).state.messages;
    const pnc = await connectAs("producer-a");
    const js = jetstream(pnc);
    await refused("raw rows into B", () => js.publish(subjects.ingestRaw(parseIdentifier(B)), JSON.stringify({ id: 1, v: "x" }), { timeout: 5000 }));
    await refused("a row batch into B's bucket", () => js.publish(subjects.ingestBucket(parseIdentifier(B), 0), new Uint8Array([1]), { timeout: 5000 }));
    await refused("A's stream marker", () => js.publish(subjects.ingestStreamId(parseIdentifier(A)), "{}", { timeout: 5000 }));
    await refused("another table's registration", async () => (await new Kvm(pnc).open(subjects.tablesKv, { allow_direct: true })).get(subjects.tableKey(parseIdentifier(B))));
    assert.ok(violations().includes(`producer-a Publish ${subjects.ingestRaw(parseIdentifier(B))}`), "the server names the refusal in its log");
    assert.equal((await jsm.streams.info(subjects.ingestStream(parseIdentifier(B)))).state.messages, before, "B's ingest stream is unchanged");
    assert.deepEqual(await tableRows(B), [], "B has no rows");
  });

  await t.test("a consumer cannot send committables, answer consume-open requests, or open sessions on another table", async () => {
    const nc = await connectAs("consumer-a");
    await refused("a committable", () => jetstream(nc).publish(subjects.commit(parseIdentifier(A)), new Uint8Array([0x80]), { timeout: 5000 }));
    const subRefused = new Promise<Error>((resolve) => nc.subscribe(subjects.consumeOpenTable(parseIdentifier(A)), { callback: (err) => void (err !== null && resolve(err)) }));
    assert.match((await subRefused).message, /permissions violation/i, "subscribing to consume-open requests");
    await refused("a consume-open on B", () => openConsumer({ nc, table: B, openTimeoutMs: 3000 }).then((c) => c.close()));
  });

  await t.test("a lookup user asks a reader about its tables only, and publishes no rows; a producer makes no lookups", async () => {
    const lookups = await createLookupClient({ nc: await connectAs("lookup-a"), defaults: { timeoutMs: 3000, retries: 0 } });
    // The request reaches a reader and its answer the lookup user's inbox (A has no primary key: a refusal, as an answer).
    const answer = await lookups.get(A, [{ id: 1 }]).catch((e: unknown) => e);
    assert.ok(answer instanceof LookupError && answer.code === "not-primary-key", String(answer));
    await refused("a lookup on B", () => lookups.get(B, [{ id: 1 }]));
    await refused("rows into A", () => jetstream(lookups.nc).publish(subjects.ingestRaw(parseIdentifier(A)), JSON.stringify({ id: 1, v: "x" }), { timeout: 5000 }));
    const producerLookups = await createLookupClient({ nc: await connectAs("producer-a"), defaults: { timeoutMs: 3000, retries: 0 } });
    await refused("a producer's lookup", () => producerLookups.get(A, [{ id: 1 }]));
    assert.deepEqual(await tableRows(A), ALL_A, "A is unchanged");
  });

  await t.test("a reader answers and sends rows to inboxes only, and a request on a table's subject must name that table", async () => {
    const nc = await connectAs("consumer-a");
    const open = async (table: string, inbox: string): Promise<{ ok: boolean; error?: string }> => {
      const req = { type: "consume-open", v: 1, table, inbox, from: "full", window: 4 };
      const m = await nc.request(subjects.consumeOpenTable(parseIdentifier(A)), JSON.stringify(req), { timeout: 10_000 });
      return m.json();
    };
    const purge = await open(A, `$JS.API.STREAM.PURGE.${subjects.ingestStream(parseIdentifier(A))}`);
    assert.equal(purge.ok, false);
    assert.match(purge.error!, /go to an inbox/);
    const other = await open(B, `${clientInboxPrefix("consumer-a")}.x`);
    assert.equal(other.ok, false);
    assert.match(other.error!, /is for table lp\.a, not lp\.b/);
    assert.deepEqual(await tableRows(A), ALL_A, "A still has every row");
  });

  await t.test("a Redis user without the committers' ACL cannot take a table's lease", async () => {
    const intruder = await connectLeaseRedis(`redis://intruder:${PASSWORD}@127.0.0.1:${redis.port}`);
    try {
      const lease = new RedisLease(intruder, leaseKey("lake", A), { ttlMs: 2000, safetyMarginMs: 200 });
      assert.equal(await lease.tryAcquire(), null);
      assert.match(lease.lastError()?.message ?? "", /NOPERM/);
    } finally {
      intruder.disconnect();
    }
  });
});
