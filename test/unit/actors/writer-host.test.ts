/**
 * A writer host follows the table's assignment — but only that of the newest leader it has seen: a coordinator that
 * outlived its leadership (frozen past its lease, then resumed mid-round) must not make hosts stop the writers its
 * successor placed (seen once in the leader-pause test: a bucket left without a writer for good).
 */
import { test } from "node:test";
import { metrics } from "@opentelemetry/api";
import assert from "node:assert/strict";
import { ActorSystem, noopLogger, type ActorRef } from "../../../actors/runtime/index.ts";
import { WriterHostActor } from "../../../actors/writer-host.ts";
import type { WriterDeps, WriterMsg } from "../../../actors/writer.ts";
import type { ClusterState } from "../../../actors/ports.ts";
import type { TableAssignment } from "../../../actors/wire/messages.ts";
import { waitFor } from "../../helpers/cluster.ts";

const assignment = (leaderEpoch: number, buckets: TableAssignment["buckets"]): TableAssignment => ({ v: 1, table: "t.events", leaderEpoch, leader: `leader-${leaderEpoch}`, buckets });

test("writer host - an older leader's assignment is ignored; the newest leader's is followed", async () => {
  const system = new ActorSystem({ log: noopLogger });
  const spawned: string[] = [];
  const stopped: string[] = [];
  const refs = new Map<ActorRef<WriterMsg>, string>();
  const host = new WriterHostActor({
    nodeId: "me",
    cluster: {} as ClusterState, // not reached: no bucket is revoked here
    writerDeps: { table: { name: "t.events" }, meter: metrics.getMeter("writer-host-test") } as unknown as Omit<WriterDeps, "bucket" | "ownerEpoch">,
    // Stand-ins for bucket writers: the host's decisions are what is tested, not the writers.
    spawnWriter: (ctx, name) => {
      spawned.push(name);
      const ref = ctx.spawn<WriterMsg>(name, () => ({ receive: () => undefined }));
      refs.set(ref, name);
      return ref;
    },
    stopWriter: (ref) => {
      stopped.push(refs.get(ref)!);
      return system.stop(ref);
    },
  });
  const ref = system.spawn("host", () => host);
  try {
    ref.tell({ type: "assignment", assignment: assignment(2, { "0": { node: "me", epoch: 3, state: "active" }, "1": { node: "other", epoch: 1, state: "active" } }) });
    await waitFor("the writer of bucket 0", () => (spawned.length === 1 ? true : undefined), 5000, 10);
    assert.deepEqual(spawned, ["writer-t.events-0-3"]);

    // The leader of epoch 1 finishes a late round: bucket 0 to another node, bucket 1 to this one.
    ref.tell({ type: "assignment", assignment: assignment(1, { "0": { node: "other", epoch: 2, state: "active" }, "1": { node: "me", epoch: 2, state: "active" } }) });
    // The newest leader keeps bucket 0 here and gives bucket 1 here too, at its own epoch.
    ref.tell({ type: "assignment", assignment: assignment(2, { "0": { node: "me", epoch: 3, state: "active" }, "1": { node: "me", epoch: 5, state: "active" } }) });
    await waitFor("bucket 1's writer", () => (spawned.includes("writer-t.events-1-5") ? true : undefined), 5000, 10);
    assert.deepEqual(spawned, ["writer-t.events-0-3", "writer-t.events-1-5"], "nothing was started for the older leader's assignment");
    assert.deepEqual(stopped, [], "nothing was stopped for the older leader's assignment");
    assert.equal(host.ownedBuckets, 2);

    // A new leader (epoch 3) is followed.
    ref.tell({ type: "assignment", assignment: assignment(3, {}) });
    await waitFor("every writer stopped", () => (host.ownedBuckets === 0 ? true : undefined), 5000, 10);
    assert.deepEqual(stopped.sort(), ["writer-t.events-0-3", "writer-t.events-1-5"]);

    // The entry deleted (the table's assignment starts over): a leader of a lower epoch is followed again.
    ref.tell({ type: "assignment", assignment: null });
    ref.tell({ type: "assignment", assignment: assignment(1, { "2": { node: "me", epoch: 1, state: "active" } }) });
    await waitFor("bucket 2's writer", () => (spawned.includes("writer-t.events-2-1") ? true : undefined), 5000, 10);
  } finally {
    await system.shutdown();
  }
});
