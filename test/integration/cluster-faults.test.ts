/**
 * Faults against a running 3-node cluster (real processes, real servers), each under a bounded load:
 * a writer node SIGKILLed, the leader SIGKILLed (its router too), the leader SIGSTOPped past its lease, a writer
 * SIGSTOPped until its buckets moved (its late committables are stale). After each, every acknowledged row is in the
 * table exactly once, and the snapshot chain is sound (contiguous ids, non-decreasing epochs, growing offsets).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Kvm } from "@nats-io/kv";
import { startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { startLoad, verifyExactlyOnce } from "../helpers/load.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import type { Table } from "../../src/table/table.ts";
import type { MemberHeartbeat, TableAssignment } from "../../actors/wire/messages.ts";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SnapshotNotification } from "../../actors/wire/messages.ts";

const SUBSCRIBER = fileURLToPath(new URL("../helpers/subscriber-child.ts", import.meta.url));
let c: TestCluster;
let nextNode = 4;
before(async () => {
  c = await startCluster({ nodes: 3, commitInterval: "100ms", leaseTtl: "2s" });
});
after(async () => {
  await c.stop();
});

async function newTable(name: string): Promise<Table> {
  const catalog = new Catalog(c.warehouse);
  await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, src STRING, n INT"), options: { bucket: "4", "bucket-key": "id" } });
  // The cluster picks the table up (scan every 2 s), assigns its buckets and spreads them over the live writers.
  await waitFor("buckets assigned and balanced", async () => {
    const a = await assignment(name);
    const live = (await members()).filter((m) => Date.now() - m.at < 2000).length;
    const owners = new Set(Object.values(a?.buckets ?? {}).map((b) => b.node));
    return a && Object.keys(a.buckets).length === 4 && Object.values(a.buckets).every((b) => b.state === "active") && owners.size >= Math.min(4, live) ? a : undefined;
  }, 60_000, 200);
  return catalog.getTable(parseIdentifier(name));
}

async function assignment(name: string): Promise<TableAssignment | null> {
  const kv = await new Kvm(c.nc).open("lake_assign");
  const e = await kv.get(name);
  return e && e.operation === "PUT" ? (e.json() as TableAssignment) : null;
}

async function members(): Promise<MemberHeartbeat[]> {
  const kv = await new Kvm(c.nc).open("lake_members");
  const out: MemberHeartbeat[] = [];
  for await (const k of await kv.keys()) {
    const e = await kv.get(k);
    if (e && e.operation === "PUT") out.push(e.json() as MemberHeartbeat);
  }
  return out;
}

/** I3: contiguous ids, non-decreasing epochs, per-bucket offsets and owner epochs never going back. */
async function checkChain(t: Table): Promise<void> {
  const ids = await t.snapshots.listIds();
  assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => i + 1), "snapshot ids are contiguous");
  let epoch = 0;
  const offsets = new Map<number, bigint>();
  const owners = new Map<number, number>();
  for (const id of ids) {
    const st = natslakeState(await t.snapshots.snapshot(id));
    assert.ok(st, `snapshot ${id} carries natslake state`);
    assert.ok(st.epoch >= epoch, `snapshot ${id}: epoch ${st.epoch} after ${epoch}`);
    epoch = st.epoch;
    for (const [b, p] of st.buckets) {
      assert.ok(p.offset >= (offsets.get(b) ?? 0n), `snapshot ${id} bucket ${b}: offset went back`);
      assert.ok(p.ownerEpoch >= (owners.get(b) ?? 0), `snapshot ${id} bucket ${b}: owner epoch went back`);
      offsets.set(b, p.offset);
      owners.set(b, p.ownerEpoch);
    }
  }
}

async function assertExactlyOnce(t: Table, load: ReturnType<typeof startLoad>): Promise<void> {
  const r = await verifyExactlyOnce(t, load.outcomes);
  assert.deepEqual(r.lost.slice(0, 10), [], `lost acknowledged rows (${r.lost.length})`);
  assert.deepEqual(r.duplicated.slice(0, 10), [], `duplicated rows (${r.duplicated.length})`);
  assert.deepEqual(r.unexpected.slice(0, 10), [], "rows never published");
  assert.ok(r.acked > 0);
}

async function reloaded(t: Table): Promise<Table> {
  return new Catalog(c.warehouse).getTable(t.identifier);
}

test("faults - SIGKILL a writer node mid-run: its buckets move, every acknowledged row exactly once", { timeout: 120_000 }, async () => {
  const t = await newTable("f.kill_writer");
  const a = (await assignment(t.name))!;
  const victim = [...new Set(Object.values(a.buckets).map((b) => b.node))].find((n) => n !== a.leader)!;
  assert.ok(victim, "a writer that is not the leader");
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 20_000, durationMs: 6000 });
  await new Promise((r) => setTimeout(r, 2000));
  c.signal(victim, "SIGKILL");
  await load.done;
  await load.waitVisible(60_000);
  const after = (await assignment(t.name))!;
  assert.ok(Object.values(after.buckets).every((b) => b.node !== victim), "no bucket left on the killed node");
  await checkChain(await reloaded(t));
  await assertExactlyOnce(await reloaded(t), load);
  c.startNode(`n${nextNode++}`);
});

test("faults - SIGKILL the leader (and its router) mid-run: a standby commits within 3 s; client and raw rows exactly once", { timeout: 120_000 }, async () => {
  const t = await newTable("f.kill_leader");
  const leader = (await assignment(t.name))!.leader;
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 10_000, durationMs: 7000, rawShare: 0.3 });
  await new Promise((r) => setTimeout(r, 2000));
  const before = natslakeState((await waitFor("a snapshot", () => t.snapshots.latest().then((s) => s ?? undefined))))?.epoch ?? 0;
  const killedAt = Date.now();
  c.signal(leader, "SIGKILL");
  const taken = await waitFor("a snapshot by a new leader", async () => {
    const s = await (await reloaded(t)).snapshots.latest();
    const st = s ? natslakeState(s) : null;
    return st && st.epoch > before && s!.timeMillis >= killedAt ? s! : undefined;
  }, 15_000, 20);
  const gap = taken.timeMillis - killedAt;
  assert.ok(gap < 3000, `the standby committed ${gap} ms after the leader died (budget 3000 ms)`);
  await load.done;
  await load.waitVisible(60_000);
  await waitFor("raw rows committed", async () => {
    const s = await (await reloaded(t)).snapshots.latest();
    const acked = [...load.outcomes.values()].filter((o) => o === "ok" || o === "duplicate").length;
    return s && s.totalRecordCount >= acked ? s : undefined;
  }, 60_000, 250);
  await checkChain(await reloaded(t));
  await assertExactlyOnce(await reloaded(t), load);
  c.startNode(`n${nextNode++}`);
});

test("faults - SIGSTOP the leader past its lease, then SIGCONT: epochs never go back, nothing twice, the old leader steps down", { timeout: 120_000 }, async () => {
  const t = await newTable("f.pause_leader");
  const leader = (await assignment(t.name))!.leader;
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 10_000, durationMs: 8000 });
  await new Promise((r) => setTimeout(r, 1500));
  c.signal(leader, "SIGSTOP");
  await waitFor("a new leader", async () => {
    const a = await assignment(t.name);
    return a && a.leader !== leader ? a : undefined;
  }, 15_000, 100);
  await new Promise((r) => setTimeout(r, 1000));
  c.signal(leader, "SIGCONT");
  await load.done;
  // Seen once under the whole suite's load: rows not visible within 60 s. The nodes' logs say why, next time.
  await withNodeLogsOnFailure(c, () => load.waitVisible(60_000));
  await new Promise((r) => setTimeout(r, 1000));
  const t2 = await reloaded(t);
  await checkChain(t2);
  await assertExactlyOnce(t2, load);
  const logs = c.logs(leader);
  assert.match(logs, /"msg":"(fenced|lease lost|stepped down)"/, "the paused leader stepped down");
});

test("faults - a writer paused until its buckets move: its stale committables are rejected, no row twice", { timeout: 120_000 }, async () => {
  const t = await newTable("f.pause_writer");
  const a = (await assignment(t.name))!;
  const victim = [...new Set(Object.values(a.buckets).map((b) => b.node))].find((n) => n !== a.leader)!;
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 10_000, durationMs: 8000 });
  await new Promise((r) => setTimeout(r, 1500));
  c.signal(victim, "SIGSTOP");
  await withNodeLogsOnFailure(c, () =>
    waitFor("its buckets reassigned", async () => {
      const x = await assignment(t.name);
      return x && Object.values(x.buckets).every((b) => b.node !== victim) ? x : undefined;
    }, 20_000, 100),
  );
  c.signal(victim, "SIGCONT");
  await load.done;
  await load.waitVisible(60_000);
  await new Promise((r) => setTimeout(r, 1000));
  const t2 = await reloaded(t);
  await checkChain(t2);
  await assertExactlyOnce(t2, load);
});

test("faults - lease renew lag stays below a third of the TTL under full load; subscribers see every snapshot in order, pushed", { timeout: 120_000 }, async () => {
  const t = await newTable("f.lag");
  // The subscriber runs in its own process, as a consumer would: the load generator's CPU must not delay its receipt.
  const sub = spawn(process.execPath, ["--import", "tsx", SUBSCRIBER, c.nats.url, t.name, "12000"], { stdio: ["ignore", "pipe", "inherit"] });
  let text = "";
  sub.stdout.on("data", (b: Buffer) => (text += b.toString()));
  const subDone = new Promise((r) => sub.once("exit", r));
  await new Promise((r) => setTimeout(r, 1500));
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 60_000, durationMs: 6000, batch: 500 });
  // Sample every node's renew lag (renewals since its previous heartbeat) while the writers encode under load.
  let maxLag = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    void members().then((ms) => {
      samples++;
      for (const m of ms) maxLag = Math.max(maxLag, m.leaseRenewLagMsRecent ?? 0);
    });
  }, 250);
  await load.done;
  await load.waitVisible(60_000);
  clearInterval(sampler);
  await subDone;
  const got = text.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { n: SnapshotNotification; at: number });
  const ids = got.map((g) => g.n.snapshotId);
  assert.ok(ids.length > 10, `notifications received: ${ids.length}`);
  for (let i = 1; i < ids.length; i++) assert.equal(ids[i], ids[i - 1]! + 1, `notification ${ids[i]} after ${ids[i - 1]}: gap or reorder`);
  // Pushed, not polled: every notification arrives within a commit interval's order of magnitude even on a loaded
  // machine. The latency target itself (p99 ≤ 50 ms) is measured by the cluster benchmark (npm run bench), not here.
  const lat = got.slice(1).map((g) => g.at - g.n.linkedAtMillis).sort((x, y) => x - y);
  assert.ok(lat[lat.length - 1]! < 2000, `notification latency max ${lat[lat.length - 1]} ms (a notification was held back, or polled for)`);
  assert.ok(samples > 10, "renew lag was sampled during the load");
  assert.ok(maxLag < 2000 / 3, `lease renew lag ${Math.round(maxLag)} ms under load (budget ${Math.round(2000 / 3)} ms)`);
  await assertExactlyOnce(await reloaded(t), load);
});

test("faults - SIGTERM drains a node: it flushes and hands its buckets off, releases what it holds, exits 0; nothing lost or doubled", { timeout: 120_000 }, async () => {
  const t = await newTable("f.drain");
  const a = (await assignment(t.name))!;
  const victim = [...new Set(Object.values(a.buckets).map((b) => b.node))].find((n) => n !== a.leader)!;
  const load = startLoad({ nc: c.nc, table: t.name, ratePerSec: 10_000, durationMs: 6000 });
  await new Promise((r) => setTimeout(r, 2000));
  const termAt = Date.now();
  c.signal(victim, "SIGTERM");
  const code = await c.waitExit(victim, 30_000).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; its log ends:\n${c.logs(victim).slice(-3000)}`);
  });
  assert.equal(code, 0, `drained node exit code (logs: ${c.logs(victim).slice(-2000)})`);
  assert.ok(Date.now() - termAt < 20_000, "drained within the drain timeout");
  assert.match(c.logs(victim), /"msg":"bucket released"/, "its buckets were released by hand-off, not taken after a timeout");
  assert.doesNotMatch(c.logs(victim), /drain timed out/);
  await load.done;
  await load.waitVisible(60_000);
  const t2 = await reloaded(t);
  await checkChain(t2);
  await assertExactlyOnce(t2, load);
  c.startNode(`n${nextNode++}`);
});
