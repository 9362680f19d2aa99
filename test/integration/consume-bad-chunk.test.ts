/**
 * A chunk the consumer client cannot decode (here forged onto its inbox: bytes that are no Arrow IPC stream) fails
 * that consumer with the reason — and nothing else: the NATS connection it shares stays usable (a throw from a
 * subscription callback would end nats.js's read loop for the whole connection), so another consumer on it still
 * gets its rows.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, headers as natsHeaders } from "@nats-io/transport-node";
import { openConsumer } from "../../cluster/consumer.ts";
import { CONSUME_HEADER } from "../../actors/wire/consume.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";

test("consume - an undecodable chunk fails its consumer with the reason; the shared connection and its other consumers go on", { timeout: 120_000 }, async () => {
  const c = await startCluster({ nodes: 1 });
  const tap = await connect({ servers: c.nats.url });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "bad.chunk";
      await new Catalog(c.warehouse).createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "1", "bucket-key": "id" } });
      const p = await producerWhenRegistered(c.nc, name);
      let next = 0;
      const round = async (): Promise<void> => {
        for (let k = 0; k < 10; k++, next++) void p.write({ id: next, s: `s${next}` });
        await p.flush();
        await p.waitVisible(p.token(), 60_000);
      };
      await round();
      // The chunks readers send to consumers' inboxes, seen on a wire tap: the victim's inbox and its last chunk number.
      const chunks: Array<{ subject: string; chunk: number; snapshot: string }> = [];
      const sub = tap.subscribe("_INBOX.>", {
        callback: (_e, m) => {
          if (m.headers?.get(CONSUME_HEADER.type) === "chunk") chunks.push({ subject: m.subject, chunk: Number(m.headers.get(CONSUME_HEADER.chunk)), snapshot: m.headers.get(CONSUME_HEADER.snapshot) });
        },
      });
      await tap.flush();
      const victim = await openConsumer({ nc: c.nc, table: name, from: "full" });
      const it = victim[Symbol.asyncIterator]();
      const first = await it.next();
      assert.equal(first.done, false);
      for await (const _ of first.value!.batches); // the table's rows, taken
      await waitFor("the victim's chunk seen on the tap", () => (chunks.length > 0 ? true : undefined), 10_000, 20);
      const seen = chunks.at(-1)!;
      const h = natsHeaders();
      h.set(CONSUME_HEADER.type, "chunk");
      h.set(CONSUME_HEADER.chunk, String(seen.chunk + 1));
      h.set(CONSUME_HEADER.snapshot, String(Number(seen.snapshot) + 1));
      h.set(CONSUME_HEADER.kind, "delta");
      h.set(CONSUME_HEADER.last, "1");
      tap.publish(seen.subject, Uint8Array.from({ length: 64 }, (_, i) => (i * 37) & 0xff), { headers: h });
      await tap.flush();
      await assert.rejects(
        (async () => {
          const r = await it.next();
          if (r.done !== true) for await (const _ of r.value.batches);
        })(),
        /a message of the consume session could not be read/,
      );
      sub.unsubscribe();
      // The connection the victim shared still reads: another consumer on it gets the next snapshot's rows.
      assert.equal(c.nc.isClosed(), false);
      const other = await openConsumer({ nc: c.nc, table: name, from: "latest" });
      const writing = round();
      let rows = 0;
      for await (const s of other) {
        for await (const b of s.batches) rows += b.numRows;
        break;
      }
      await writing;
      assert.equal(rows, 10, "the other consumer received the new snapshot's rows over the same connection");
      await other.close();
      await victim.close().catch(() => undefined);
      await p.close();
    });
  } finally {
    await tap.close();
    await c.stop();
  }
});
