/**
 * The router recovers from a failed publish of a routed group (found by the chaos suite's nats-node-kill scenario:
 * a publish failed while a NATS node was down, and the router then waited forever for messages it had already taken
 * from its reader). Supervision restarts it from its recorded intent; the group is routed again under the same
 * message ids, so the stream de-duplicates whatever the failed attempt stored — every raw row is routed once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { RouterActor } from "../../../actors/router.ts";
import { systemClock, type Bus, type RawLog, type RawMessage, type RouterProgress } from "../../../actors/ports.ts";
import type { RowBatch } from "../../../actors/wire/messages.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

test("router - a failed routed publish does not stall the router: it restarts from its intent and routes every row once", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.raw", "id BIGINT NOT NULL, n INT", { options: { bucket: "2", "bucket-key": "id" } });
    const enc = new TextEncoder();
    const raw: RawMessage[] = [1, 2, 3].map((seq) => ({ seq, data: enc.encode(JSON.stringify(Array.from({ length: 5 }, (_, k) => ({ id: seq * 10 + k, n: k })))) }));
    let progress: RouterProgress = { through: 0, intent: null };
    let revision = 0;
    let failures = 1;
    const stored = new Map<string, RowBatch>(); // msgId → batch: the stream's de-duplication
    const rawLog: RawLog = {
      maxPayload: 1024 * 1024,
      liveStream: () => Promise.resolve({ identity: "S#1", firstSeq: 1, lastSeq: 3 }),
      streamIdentity: () => Promise.resolve("S#1"),
      readProgress: () => Promise.resolve({ progress, revision }),
      writeProgress: (_t, p, rev) => {
        if (rev !== revision) return Promise.reject(new Error("wrong last sequence"));
        progress = p;
        return Promise.resolve(++revision);
      },
      open: (_t, afterSeq) => {
        let next = afterSeq;
        return Promise.resolve({
          fetch: async (max: number, waitMs: number) => {
            const out = raw.filter((m) => m.seq > next).slice(0, max);
            if (out.length === 0) await new Promise((r) => setTimeout(r, Math.min(waitMs, 20)));
            next = out[out.length - 1]?.seq ?? next;
            return out;
          },
          close: () => Promise.resolve(),
        });
      },
      publishRouted: (_t, _b, batch, msgId) => {
        stored.set(msgId, batch);
        // The first publish "times out" after the server stored it (as when a NATS node dies mid-request).
        if (failures-- > 0) return Promise.reject(new Error("TIMEOUT"));
        return Promise.resolve();
      },
      purgeRaw: () => Promise.resolve(),
    };
    const bus: Bus = { publishRejection: () => {}, publishSnapshot: () => Promise.resolve(), lastSnapshotNotified: () => Promise.resolve(0), publishDeadLetters: (_t, letters) => Promise.resolve(letters.length) };
    system.spawn("router", () => new RouterActor({ table, raw: rawLog, bus, clock: systemClock, meter: metrics.getMeter("test"), fetchBatch: 2 }), {
      supervision: { minBackoffMs: 10, maxBackoffMs: 50, maxRestarts: 20, withinMs: 60_000 },
    });
    const deadline = Date.now() + 10_000;
    while (progress.through < 3) {
      if (Date.now() > deadline) assert.fail(`the router stalled at ${JSON.stringify(progress)} after a failed publish`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const ids = [...stored.values()].flatMap((b) => b.rows.map((r) => Number(r[0]))).sort((a, b) => a - b);
    assert.deepEqual(ids, raw.flatMap((m) => Array.from({ length: 5 }, (_, k) => m.seq * 10 + k)));
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});

for (const [name, recorded] of [
  ["progress recorded against another stream", { stream: "LAKE_IN_t_raw#old", through: 50, intent: null }],
  ["progress of an older version (no stream) past the live stream's last sequence", { through: 50, intent: null }],
] as const) {
  test(`router - ${name}: it routes nothing and opens no reader (a re-created stream's messages would be skipped)`, async () => {
    const dir = tempDir();
    const system = new ActorSystem({ log: noopLogger });
    try {
      const table = await createTable(dir.path, "t.raw", "id BIGINT NOT NULL, n INT", { options: { bucket: "2", "bucket-key": "id" } });
      let checks = 0;
      let opened = 0;
      let writes = 0;
      const rawLog: RawLog = {
        maxPayload: 1024 * 1024,
        liveStream: () => {
          checks++;
          return Promise.resolve({ identity: "LAKE_IN_t_raw#new", firstSeq: 1, lastSeq: 3 });
        },
        streamIdentity: () => Promise.resolve("LAKE_IN_t_raw#new"),
        readProgress: () => Promise.resolve({ progress: recorded, revision: 7 }),
        writeProgress: () => Promise.resolve(++writes),
        open: () => {
          opened++;
          return Promise.reject(new Error("must not open"));
        },
        publishRouted: () => Promise.resolve(),
        purgeRaw: () => Promise.resolve(),
      };
      const bus: Bus = { publishRejection: () => {}, publishSnapshot: () => Promise.resolve(), lastSnapshotNotified: () => Promise.resolve(0), publishDeadLetters: (_t, letters) => Promise.resolve(letters.length) };
      system.spawn("router", () => new RouterActor({ table, raw: rawLog, bus, clock: systemClock, meter: metrics.getMeter("test"), fetchBatch: 2 }));
      const deadline = Date.now() + 5000;
      while (checks === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(checks >= 1, "the router checked the live stream");
      assert.equal(opened, 0, "no reader opened on a stream the progress does not belong to");
      assert.equal(writes, 0, "no progress written");
    } finally {
      await system.shutdown();
      dir.cleanup();
    }
  });
}
