/**
 * Publishes rows to a natslake table with the producer client (`natslake/producer`), and shows an idempotent
 * publish: the same rows sent again under the same producer id are stored once.
 *
 * Run it in the repository folder while `npm run up` runs:
 *
 *   npx tsx --conditions=development examples/typescript/producer.ts [--nats nats://127.0.0.1:4222]
 *       [--table demo.events] [--rows 100] [--first-id 1000] [--producer-id ID]
 *
 * `--conditions=development` makes `natslake/producer` resolve to the TypeScript sources (package.json's "exports");
 * without it, to the compiled dist/ that `npm run build` writes. In a project that installed the package, plain
 * `npx tsx producer.ts` runs it (with example-cli.ts beside it: the command line and connection the examples share).
 *
 * What it does:
 * 1. creates the table through the cluster when it does not exist — the demo table's columns (id BIGINT NOT NULL,
 *    msg STRING, at TIMESTAMP(3)), 4 buckets by id — and waits until the cluster has registered it;
 * 2. publishes --rows rows with ids from --first-id and prints how their batches were acknowledged;
 * 3. waits until the rows are visible in a snapshot (read-your-writes) and prints its id;
 * 4. publishes the same rows again from a second producer with the same producer id, as a service restarted after a
 *    crash re-sends what it is not sure about: the batches get the same message ids (`<producer id>-<bucket>-<n>`),
 *    so the stream acknowledges them as duplicates and stores nothing twice — within its duplicate window (2 minutes
 *    by default). Running the example again with the same --producer-id within the window is de-duplicated too.
 *
 * Exit 0 when every row was stored exactly once; 1 when a row was not acknowledged (failed, or unknown: no answer)
 * or the re-publish stored rows again; 2 for a bad command line.
 */
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, isLakeError } from "natslake";
import { adminRequest } from "natslake/admin";
import { createProducer, waitVisible, type BatchOutcome, type Producer } from "natslake/producer";
import { connectTo, flags, run } from "./example-cli.ts";

const o = flags("producer.ts", { rows: "100", "first-id": "1000", "producer-id": `example-${randomBytes(4).toString("hex")}` }, (v) => {
  const rows = Number(v.rows);
  const firstId = Number(v["first-id"]);
  if (!Number.isSafeInteger(rows) || rows <= 0) throw new Error(`--rows must be a positive integer, got '${v.rows}'`);
  if (!Number.isSafeInteger(firstId)) throw new Error(`--first-id must be an integer, got '${v["first-id"]}'`);
  return { nats: v.nats, table: v.table, rows, firstId, producerId: v["producer-id"] };
});

/** Creates the table through the cluster unless it exists. */
async function ensureTable(nc: NatsConnection, table: string): Promise<void> {
  try {
    await adminRequest(nc, "lake", { type: "create-table", table, columns: "id BIGINT NOT NULL, msg STRING, at TIMESTAMP(3)", options: { bucket: "4", "bucket-key": "id" } });
    console.log(`created ${table} (id BIGINT NOT NULL, msg STRING, at TIMESTAMP(3); 4 buckets by id)`);
  } catch (e) {
    if (!isLakeError(e, ErrorKind.AlreadyExists)) throw e;
  }
}

/** A producer for the table once the cluster has registered it (bounded: a table just created takes a moment). */
async function producerFor(nc: NatsConnection, table: string, producerId: string): Promise<Producer> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await createProducer({ nc, table, producerId });
    } catch (e) {
      // The table's metadata reaches NATS KV when its leader registers it.
      if (!isLakeError(e, ErrorKind.NotFound) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Rows per outcome, e.g. "100 ok" or "60 duplicate, 40 ok". */
function tally(outcomes: BatchOutcome[]): { text: string; rows: Map<string, number> } {
  const rows = new Map<string, number>();
  for (const o of outcomes) rows.set(o.status, (rows.get(o.status) ?? 0) + o.rows);
  return { text: [...rows].map(([status, n]) => `${n} ${status}`).join(", "), rows };
}

async function publish(producer: Producer, rows: Array<Record<string, unknown>>): Promise<BatchOutcome[]> {
  // writeMany validates every row first (a bad one throws, naming it, and nothing is sent) and cuts the same batches
  // for the same rows — what makes the re-publish below reuse the message ids. Its promise settles with the outcome
  // of every batch that carried the rows; flush sends the partly filled ones now instead of after the linger.
  const outcomes = producer.writeMany(rows);
  await producer.flush();
  return outcomes;
}

run("producer.ts", async () => {
  const nc = await connectTo(o.nats);
  try {
    await ensureTable(nc, o.table);
    const first = await producerFor(nc, o.table, o.producerId);
    const at = Date.now();
    const rows = Array.from({ length: o.rows }, (_, i) => ({ id: o.firstId + i, msg: `example row ${o.firstId + i}`, at }));
    const sent = await publish(first, rows);
    const token = first.token();
    await first.close();
    const s = tally(sent);
    console.log(`published ${o.rows} rows (ids ${o.firstId}..${o.firstId + o.rows - 1}) to ${o.table} in ${sent.length} batches as producer ${o.producerId}: ${s.text}`);
    if ((s.rows.get("duplicate") ?? 0) > 0) console.log(`  (duplicates: producer ${o.producerId} published these batches before, within the duplicate window)`);

    const started = Date.now();
    const visible = await waitVisible(nc, token, 60_000).catch(() => null);
    if (visible === null) console.log(`no snapshot covering the rows within 60 s (is a node running for ${o.table}?)`);
    else console.log(`visible in snapshot ${visible.snapshotId} of ${o.table} (${Date.now() - started} ms after the last acknowledgement)`);

    const again = await producerFor(nc, o.table, o.producerId);
    const resent = await publish(again, rows);
    await again.close();
    const r = tally(resent);
    console.log(`published the same ${o.rows} rows again as producer ${o.producerId} (a restarted producer re-sending): ${r.text}`);
    const storedTwice = (r.rows.get("ok") ?? 0) > 0;
    console.log(storedTwice ? "  some rows were stored a second time (the batches differed from the first publish)" : "  the stream stored nothing twice");

    const lost = [s, r].reduce((n, t) => n + (t.rows.get("failed") ?? 0) + (t.rows.get("unknown") ?? 0), 0);
    return lost === 0 && !storedTwice && visible !== null ? 0 : 1;
  } finally {
    await nc.close();
  }
});
