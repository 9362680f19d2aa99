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
