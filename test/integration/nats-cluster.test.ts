/**
 * The 3-node JetStream cluster helper (test/helpers/nats-cluster.ts) with real nats-server processes: an R3 stream
 * survives the SIGKILL of its leader, keeps accepting publishes from the two survivors, and the restarted node
 * catches up from its kept store. Also: the current nats-server (NATSLAKE_NATS_SERVER_CURRENT, built by .ci/run)
 * accepts `jetstream { sync_interval: always }`, which Debian's 2.9.10 rejects.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { natsServerBin, natsServerVersion, startNatsCluster, supportsSyncInterval } from "../helpers/nats-cluster.ts";
import { startNats } from "../helpers/servers.ts";
import { natsPorts } from "../../cluster/nats/adapters.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureClusterKv } from "../../cluster/nats/table-infra.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Publishes with a message id and retries (e.g. during a leader election); the stream's dedup window absorbs repeats. */
async function publishRetrying(js: JetStreamClient, subject: string, body: string, deadlineMs = 20_000): Promise<number> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const ack = await js.publish(subject, enc.encode(body), { msgID: body, timeout: 2000 });
      return ack.seq;
    } catch (e) {
      if (Date.now() > until) throw e;
      await sleep(100);
    }
  }
}

interface JszStream {
  name: string;
  state: { messages: number; last_seq: number };
}
/** What one node's own store holds for a stream (its monitoring endpoint, not the leader's view). */
async function localStreamState(monitorUrl: string, stream: string): Promise<JszStream["state"] | undefined> {
  const res = await fetch(`${monitorUrl}/jsz?accounts=true&streams=true`);
  const body = (await res.json()) as { account_details?: { stream_detail?: JszStream[] }[] };
  for (const acc of body.account_details ?? []) {
    for (const s of acc.stream_detail ?? []) if (s.name === stream) return s.state;
  }
  return undefined;
}

test("nats cluster - R3 stream: kill the leader, publish on, restart it, every message readable and replicated", async (t) => {
  const cluster = await startNatsCluster();
  t.diagnostic(`nats-server ${cluster.version} (${cluster.bin}), nodes ${cluster.nodes.map((n) => `${n.name}:${n.port}`).join(" ")}`);
  const nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const js = jetstream(nc, { timeout: 5000 });
    const si = await jsm.streams.add({ name: "R3T", subjects: ["lake.test.>"], num_replicas: 3 });
    assert.equal(si.config.num_replicas, 3);
    for (let i = 0; i < 100; i++) assert.equal(await publishRetrying(js, "lake.test.a", `m-${i}`), i + 1);

    const leaderName = (await jsm.streams.info("R3T")).cluster?.leader;
    const victim = cluster.nodes.findIndex((n) => n.name === leaderName);
    assert.ok(victim >= 0, `stream leader ${leaderName} is one of the nodes`);
    await cluster.kill(victim);
    t.diagnostic(`killed the stream leader ${leaderName}`);

    for (let i = 100; i < 200; i++) assert.equal(await publishRetrying(js, "lake.test.b", `m-${i}`), i + 1);
    const during = await jsm.streams.info("R3T");
    assert.equal(during.state.messages, 200);
    assert.notEqual(during.cluster?.leader, leaderName, "a survivor leads");

    await cluster.restart(victim);
    const restarted = cluster.nodes[victim]!;
    // The restarted node catches up from its kept store plus the new leader: its own store holds all 200.
    const until = Date.now() + 30_000;
    let local = await localStreamState(restarted.monitorUrl, "R3T");
    while ((local?.messages !== 200 || local.last_seq !== 200) && Date.now() < until) {
      await sleep(200);
      local = await localStreamState(restarted.monitorUrl, "R3T");
    }
    assert.deepEqual({ messages: local?.messages, last_seq: local?.last_seq }, { messages: 200, last_seq: 200 });
    const after = await jsm.streams.info("R3T");
    assert.equal(after.cluster?.replicas?.length, 2);
    for (const p of after.cluster?.replicas ?? []) assert.ok(!p.offline, `replica ${p.name} online`);

    // Every message, in order, exactly once.
    for (let seq = 1; seq <= 200; seq++) {
      const m = await jsm.streams.getMessage("R3T", { seq });
      assert.ok(m, `seq ${seq}`);
      assert.equal(dec.decode(m.data), `m-${seq - 1}`);
      assert.equal(m.subject, seq <= 100 ? "lake.test.a" : "lake.test.b");
    }
  } finally {
    await nc.close();
    await cluster.stop();
  }
});

test("nats server - jetstream sync_interval: always needs the current server (NATSLAKE_NATS_SERVER_CURRENT)", async (t) => {
  const bin = natsServerBin("current");
  const version = natsServerVersion(bin).join(".");
  const syncConf = { sync_interval: "always" };
  if (!supportsSyncInterval(bin)) {
    // No current server on this machine (.ci/run reports why): what we have must refuse the key loudly, never
    // start silently without it.
    t.diagnostic(`WARNING: NATSLAKE_NATS_SERVER_CURRENT is not set or too old; ${bin} is ${version} and lacks sync_interval`);
    await assert.rejects(startNatsCluster({ bin, jetstream: syncConf, readyTimeoutMs: 5000 }), /unknown field "sync_interval"/);
    return;
  }
  t.diagnostic(`current nats-server ${version} at ${bin}`);
  const cluster = await startNatsCluster({ bin, jetstream: syncConf });
  try {
    assert.equal(cluster.version, version);
    for (const n of cluster.nodes) {
      const jsz = (await (await fetch(`${n.monitorUrl}/jsz`)).json()) as { config?: { sync_always?: boolean } };
      assert.equal(jsz.config?.sync_always, true, `${n.name} syncs every write`);
    }
  } finally {
    await cluster.stop();
  }
  // The single-server launcher takes the same binary through its `bin` option.
  const single = await startNats({ bin });
  try {
    const nc = await connect({ servers: single.url });
    const info = nc.info;
    await nc.close();
    assert.equal(info?.version, version);
  } finally {
    await single.stop();
  }
});

/** Fetches until `n` messages arrived (or 5 s passed); returns how many. */
async function fetchCount(r: { fetch(max: number, waitMs: number): Promise<unknown[]> }, n: number): Promise<number> {
  let got = 0;
  const until = Date.now() + 5000;
  while (got < n && Date.now() < until) got += (await r.fetch(n - got, 500)).length;
  return got;
}

test("nats cluster - natslake's stream readers survive the loss of the server hosting their consumer (found by chaos: nats-node-kill)", { timeout: 120_000 }, async (t) => {
  const cluster = await startNatsCluster({ bin: natsServerBin("current") });
  const nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  try {
    const subjects = new Subjects();
    await ensureClusterKv(nc, subjects, 3);
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    await jsm.streams.add({ name: "LAKE_IN_t_x", subjects: ["lake.in.t.x", "lake.in.t.x.*"], num_replicas: 3 });
    const js = jetstream(nc, { timeout: 5000 });
    for (let i = 1; i <= 10; i++) await publishRetrying(js, "lake.in.t.x.0", `m-${i}`);
    const ports = await natsPorts(nc, subjects);
    // Readers until one's consumer sits on a server other than the one this test's connection uses.
    const readers: Array<{ close(): Promise<void>; fetch(max: number, waitMs: number): Promise<unknown[]> }> = [];
    let victim = -1;
    for (let k = 0; k < 12 && victim < 0; k++) {
      const r = await ports.ingest.openBucket("t.x", 0, 0);
      readers.push(r);
      assert.equal(await fetchCount(r, 10), 10);
      const hosts = new Map<string, number>();
      for await (const ci of jsm.consumers.list("LAKE_IN_t_x")) hosts.set(ci.cluster?.leader ?? "", (hosts.get(ci.cluster?.leader ?? "") ?? 0) + 1);
      victim = cluster.nodes.findIndex((n) => hosts.has(n.name) && n.url !== nc.getServer().replace(/^(nats:\/\/)?/, "nats://"));
    }
    assert.ok(victim >= 0, "a consumer on a server the test is not connected to");
    t.diagnostic(`killing ${cluster.nodes[victim]!.name}, which hosts a reader's consumer`);
    await cluster.kill(victim);
    // Every reader whose consumer died fails within seconds instead of waiting for the node to come back.
    const failed = await Promise.all(
      readers.map(async (r) => {
        const until = Date.now() + 15_000;
        while (Date.now() < until) {
          try {
            await r.fetch(100, 500);
          } catch {
            return true;
          }
        }
        return false;
      }),
    );
    assert.ok(failed.some(Boolean), "a reader whose consumer died reports it");
    // A new reader from the last offset works while the node is still down, and sees new messages.
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        await publishRetrying(js, "lake.in.t.x.0", "m-11");
        const r = await ports.ingest.openBucket("t.x", 0, 10);
        const got = await fetchCount(r, 1);
        await r.close();
        if (got === 1) break;
      } catch (e) {
        if (Date.now() > until) throw e;
      }
      if (Date.now() > until) assert.fail("no working reader while the node is down");
    }
    for (const r of readers) await r.close();
  } finally {
    await nc.close();
    await cluster.stop();
  }
});
