/**
 * `natslake node drain <node-id> --nats URL` against a real 3-node cluster under load: the table's leader, which
 * also owns buckets, hands everything off as on SIGTERM — without a signal — and stays up holding nothing (a
 * drained member); the leadership and its buckets move, every acknowledged row is in the table exactly once and the
 * snapshot chain is sound. Asked again, it reports that one drain; a SIGTERM then stops it at once. An unknown node
 * id is a one-line error, exit 2. `--exit` makes the drained node exit 0 as after SIGTERM.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Kvm } from "@nats-io/kv";
import { startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { startLoad, verifyExactlyOnce } from "../helpers/load.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import type { MemberHeartbeat, TableAssignment } from "../../actors/wire/messages.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

/** Runs the CLI without blocking this process (the load generator runs here meanwhile). */
function cli(args: string[], timeoutMs = 90_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`natslake ${args.join(" ")} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    p.on("exit", (status) => {
      clearTimeout(t);
      resolve({ status, stdout, stderr });
    });
  });
}

async function assignment(c: TestCluster, name: string): Promise<TableAssignment | null> {
  const e = await (await new Kvm(c.nc).open("lake_assign")).get(name);
  return e && e.operation === "PUT" ? (e.json() as TableAssignment) : null;
}

async function member(c: TestCluster, id: string): Promise<MemberHeartbeat | null> {
  const e = await (await new Kvm(c.nc).open("lake_members")).get(id);
  return e && e.operation === "PUT" ? (e.json() as MemberHeartbeat) : null;
}

const running = (c: TestCluster, id: string): boolean => {
  const p = c.nodes.get(id)!.proc;
  return p.exitCode === null && p.signalCode === null;
};

test("node drain - the leader hands off buckets and lease without a signal and stays up drained; rows exactly once; unknown id exit 2; --exit stops the node", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 3, commitInterval: "100ms", leaseTtl: "2s" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "nd.t";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, src STRING, n INT"), options: { bucket: "6", "bucket-key": "id" } });
      const before = await waitFor("buckets spread over the three nodes", async () => {
        const a = await assignment(c, name);
        const owners = new Set(Object.values(a?.buckets ?? {}).map((b) => b.node));
        return a && Object.keys(a.buckets).length === 6 && Object.values(a.buckets).every((b) => b.state === "active") && owners.size === 3 ? a : undefined;
      }, 60_000, 200);
      const victim = before.leader;
      const owned = Object.values(before.buckets).filter((b) => b.node === victim).length;
      assert.ok(owned > 0, "the leader owns buckets too");

      // Rows flow before, during and after the drain (bounded: it stops 3 s after the drain, at 60 s at the latest).
      const load = startLoad({ nc: c.nc, table: name, ratePerSec: 5000, durationMs: 60_000 });
      await new Promise((r) => setTimeout(r, 2000));
      const drained = await cli(["node", "drain", victim, "--nats", c.nats.url]);
      assert.equal(drained.status, 0, `drain: ${drained.stderr}`);
      const handedOff = Number(new RegExp(`^${victim} drained: (\\d+) bucket\\(s\\) handed off; it stays up holding no buckets and no leases`, "m").exec(drained.stdout)?.[1]);
      assert.equal(handedOff, owned, `every bucket it owned was handed off: ${drained.stdout}`);
      assert.match(drained.stderr, new RegExp(`draining ${victim}: \\d+ bucket\\(s\\), leading ${name.replace(".", "\\.")}`), "progress on stderr");
      assert.ok(running(c, victim), "the drained node stays up");
      const logs = c.logs(victim);
      assert.match(logs, /"msg":"drain requested"/);
      assert.match(logs, /"msg":"bucket released"/, "its buckets were handed off, not taken after a lease timeout");
      assert.doesNotMatch(logs, /drain timed out/);
      assert.match(logs, /"msg":"stepped down"/, "it released its leadership");

      // Its buckets and its leadership moved to the two others, and stay there.
      const after = await waitFor("the leader and every bucket elsewhere", async () => {
        const a = await assignment(c, name);
        return a && a.leader !== victim && Object.values(a.buckets).every((b) => b.node !== victim && b.state === "active") ? a : undefined;
      }, 30_000, 200);
      assert.equal(Object.keys(after.buckets).length, 6);
      const hb = await member(c, victim);
      assert.equal(hb?.draining, true);
      assert.equal(hb?.drained, true, "a drained member, so coordinators give it nothing back");
      assert.deepEqual(hb?.leading ?? [], []);
      const status = await cli(["status", "--nats", c.nats.url]);
      assert.equal(status.status, 0, status.stderr);
      assert.match(status.stdout, new RegExp(`^${victim}\\s+\\| writer,committer,reader \\| drained`, "m"));

      await new Promise((r) => setTimeout(r, 3000));
      load.stop();
      await load.done;
      await load.waitVisible(60_000);
      const t = await catalog.getTable(parseIdentifier(name));
      const r = await verifyExactlyOnce(t, load.outcomes);
      assert.ok(r.acked > 10_000, `rows acknowledged during the drain: ${r.acked}`);
      assert.deepEqual({ lost: r.lost.slice(0, 5), duplicated: r.duplicated.slice(0, 5), unexpected: r.unexpected.slice(0, 5), failedButPresent: r.failedButPresent }, { lost: [], duplicated: [], unexpected: [], failedButPresent: [] });
      // The snapshot chain: contiguous ids, epochs and per-bucket offsets never going back across the leader change.
      const ids = await t.snapshots.listIds();
      assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => i + 1));
      let epoch = 0;
      const offsets = new Map<number, bigint>();
      for (const id of ids) {
        const st = natslakeState(await t.snapshots.snapshot(id))!;
        assert.ok(st.epoch >= epoch, `snapshot ${id}: epoch ${st.epoch} after ${epoch}`);
        epoch = st.epoch;
        for (const [b, p] of st.buckets) {
          assert.ok(p.offset >= (offsets.get(b) ?? 0n), `snapshot ${id} bucket ${b}: offset went back`);
          offsets.set(b, p.offset);
        }
      }
      // Rows published after the drain were committed by the new leader, at a higher epoch.
      let rowsAfter = 0;
      for (const id of ids) {
        const sn = await t.snapshots.snapshot(id);
        if (natslakeState(sn)!.epoch > before.leaderEpoch) rowsAfter += sn.deltaRecordCount;
      }
      assert.ok(rowsAfter > 0, "the new leader committed rows");

      // Again: the drain happened once; the node reports it.
      const again = await cli(["node", "drain", victim, "--nats", c.nats.url, "--json"]);
      assert.equal(again.status, 0, again.stderr);
      const report = JSON.parse(again.stdout) as { node: string; handedOff: number; stillOwned: number; then: string };
      assert.deepEqual({ node: report.node, handedOff: report.handedOff, stillOwned: report.stillOwned, then: report.then }, { node: victim, handedOff, stillOwned: 0, then: "stay" }, "the report of the one drain");
      assert.match(again.stderr, /a drain was already under way/);

      // An id no running node has.
      const unknown = await cli(["node", "drain", "no-such-node", "--nats", c.nats.url]);
      assert.equal(unknown.status, 2);
      const others = ["n1", "n2", "n3"].join(", ");
      assert.equal(unknown.stderr, `error: no running node has id 'no-such-node' (running: ${others}; see natslake status)\n`);

      // A drained node stops at once on SIGTERM: nothing left to hand off.
      c.signal(victim, "SIGTERM");
      assert.equal(await c.waitExit(victim, 15_000), 0);

      // --exit: the node ends as after SIGTERM, its buckets on the last node.
      const second = [...new Set(Object.values(after.buckets).map((b) => b.node))].find((n) => n !== after.leader)!;
      const exiting = await cli(["node", "drain", second, "--nats", c.nats.url, "--exit"]);
      assert.equal(exiting.status, 0, exiting.stderr);
      assert.match(exiting.stdout, new RegExp(`^${second} drained: \\d+ bucket\\(s\\) handed off; it is stopping`, "m"));
      assert.equal(await c.waitExit(second, 30_000), 0, "exited 0 after the drain");
      const last = await waitFor("every bucket on the last node", async () => {
        const a = await assignment(c, name);
        return a && Object.values(a.buckets).every((b) => b.node === after.leader && b.state === "active") ? a : undefined;
      }, 30_000, 200);
      assert.equal(Object.keys(last.buckets).length, 6);
    }, 60);
  } finally {
    await c.stop();
  }
});
