/**
 * Routed messages stay under the server's max_payload (issue 9): the router cuts a bucket's rows by encoded bytes,
 * not only by count, and dead-letters a row that does not fit in a message even alone — a routed publish the server
 * refuses would be retried forever.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { RouterActor, splitByBytes } from "../../../actors/router.ts";
import { systemClock, type Bus, type RawLog, type RawMessage, type RouterProgress } from "../../../actors/ports.ts";
import { payloadLimit } from "../../../actors/wire/limits.ts";
import type { DeadLetter, RowBatch } from "../../../actors/wire/messages.ts";
import { encodeRowBatch } from "../../../actors/wire/row-batch.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

test("router - splitByBytes: runs fit the limit, a row larger than the rest goes alone, at most 1000 rows per run", () => {
  const rows = Array.from({ length: 7 }, (_, i) => [i]);
  assert.deepEqual(splitByBytes(rows, [10, 10, 10, 80, 10, 10, 10], 10, 40), [[0, 3], [3, 4], [4, 7]]);
  const many = Array.from({ length: 2500 }, (_, i) => [i]);
  assert.deepEqual(splitByBytes(many, many.map(() => 1), 0, 1e9), [[0, 1000], [1000, 2000], [2000, 2500]]);
  assert.deepEqual(splitByBytes([], [], 0, 10), []);
});

test("router - large raw rows are routed in messages under max_payload; a row too large even alone is dead-lettered", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.big", "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
    const maxPayload = 16 * 1024;
    const enc = new TextEncoder();
    // One raw message of five rows of 5 KB (25 KB: more than max_payload once routed together), then one 20 KB row.
    const raw: RawMessage[] = [
      { seq: 1, data: enc.encode(JSON.stringify(Array.from({ length: 5 }, (_, k) => ({ id: k, s: String(k).repeat(5000) })))) },
      { seq: 2, data: enc.encode(JSON.stringify({ id: 9, s: "z".repeat(20_000) })) },
    ];
    let progress: RouterProgress = { through: 0, intent: null };
    let revision = 0;
    const published: Array<{ id: string; batch: RowBatch; bytes: number }> = [];
    const letters: DeadLetter[] = [];
    const rawLog: RawLog = {
      maxPayload,
      liveStream: () => Promise.resolve({ identity: "S#1", firstSeq: 1, lastSeq: 2 }),
      streamIdentity: () => Promise.resolve("S#1"),
      readProgress: () => Promise.resolve({ progress, revision }),
      writeProgress: (_t, p) => {
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
        published.push({ id: msgId, batch, bytes: encodeRowBatch(batch).length });
        return Promise.resolve();
      },
      purgeRaw: () => Promise.resolve(),
    };
    const bus: Bus = {
      publishRejection: () => {},
      publishSnapshot: () => Promise.resolve(),
      lastSnapshotNotified: () => Promise.resolve(0),
      publishDeadLetters: (_t, ls) => Promise.resolve(letters.push(...ls) && ls.length),
    };
    system.spawn("router", () => new RouterActor({ table, raw: rawLog, bus, clock: systemClock, meter: metrics.getMeter("test"), fetchBatch: 10 }));
    const deadline = Date.now() + 10_000;
    while (progress.through < 2) {
      if (Date.now() > deadline) assert.fail(`the router stalled at ${JSON.stringify(progress)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const p of published) assert.ok(p.bytes <= payloadLimit(maxPayload), `${p.id}: ${p.bytes} bytes`);
    assert.deepEqual(published.flatMap((p) => p.batch.rows.map((r) => Number(r[0]))), [0, 1, 2, 3, 4]);
    assert.ok(published.length >= 2, "split into several messages");
    assert.equal(new Set(published.map((p) => p.id)).size, published.length, "distinct message ids");
    assert.equal(letters.length, 1);
    assert.equal(letters[0]!.streamSeq, 2);
    assert.equal(letters[0]!.rowIndex, 0);
    assert.match(letters[0]!.reason, /row too large for one routed message/);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});
