/**
 * Reads a natslake table's rows as they land, with the consumer client (`natslake/consumer`): snapshots over NATS
 * from a reader node, no access to the warehouse. Each snapshot is acknowledged once its rows were taken; with a
 * consumer id that progress is durable (Paimon's consumer file), so the next run resumes after it.
 *
 * Run it in the repository folder while `npm run up` runs:
 *
 *   npx tsx --conditions=development examples/typescript/consumer.ts [--nats nats://127.0.0.1:4222]
 *       [--table demo.events] [--consumer-id example] [--from full] [--rows 1000] [--timeout 30]
 *
 * (`--conditions=development` and example-cli.ts: see producer.ts.)
 *
 * --from is where a consumer without progress starts: `full` (the table as of the latest snapshot, then each new
 * snapshot's rows), `latest` (only snapshots from now on), `snapshot:N`, `time:<ISO time>`. A consumer id that has
 * acknowledged snapshots before resumes after them whatever --from says.
 *
 * For each snapshot it prints its id, whether it is the table as a whole (`full`) or one snapshot's new rows
 * (`delta`), its row count and its first row. It stops after the snapshot that brings the rows it received to
 * --rows or more, or after --timeout seconds, whichever comes first (exit 0 either way; it says which), and prints
 * a summary. Exit 1 when the consumer fails (no reader node, an unknown table), 2 for a bad command line.
 */
import { openConsumer } from "natslake/consumer";
import { connectTo, flags, run } from "./example-cli.ts";

const o = flags("consumer.ts", { "consumer-id": "example", from: "full", rows: "1000", timeout: "30" }, (v) => {
  const rows = Number(v.rows);
  const timeoutS = Number(v.timeout);
  if (!Number.isSafeInteger(rows) || rows <= 0) throw new Error(`--rows must be a positive integer, got '${v.rows}'`);
  if (!(timeoutS > 0)) throw new Error(`--timeout must be a positive number of seconds, got '${v.timeout}'`);
  return { nats: v.nats, table: v.table, consumerId: v["consumer-id"], from: v.from, rows, timeoutS };
});

/** A row as JSON text: 64-bit integers (bigint in Arrow) as exact numbers. */
const rowText = (row: unknown): string => JSON.stringify(row, (_, v: unknown) => (typeof v === "bigint" ? Number.isSafeInteger(Number(v)) ? Number(v) : v.toString() : v));

run("consumer.ts", async () => {
  const nc = await connectTo(o.nats);
  try {
    const consumer = await openConsumer({ nc, table: o.table, consumerId: o.consumerId, from: o.from });
    console.log(`consuming ${o.table} as consumer ${o.consumerId} (from ${o.from} unless it has progress) through reader ${consumer.reader}`);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void consumer.close(); // ends the loop below; the snapshot being read stays unacknowledged
    }, o.timeoutS * 1000);
    let rows = 0;
    let snapshots = 0;
    let lastAcked: number | null = null;
    for await (const snapshot of consumer) {
      let inSnapshot = 0;
      let first: unknown;
      for await (const batch of snapshot.batches) {
        if (first === undefined && batch.numRows > 0) first = batch.get(0)?.toJSON();
        inSnapshot += batch.numRows;
      }
      if (timedOut) break;
      // Every row of the snapshot was taken: record it (a restart resumes after it).
      await snapshot.ack();
      lastAcked = snapshot.snapshotId;
      snapshots++;
      rows += inSnapshot;
      console.log(`snapshot ${snapshot.snapshotId} (${snapshot.kind}): ${inSnapshot} rows${first !== undefined ? `, first ${rowText(first)}` : ""}; acknowledged`);
      if (rows >= o.rows) break;
    }
    clearTimeout(timer);
    await consumer.close();
    const why = rows >= o.rows ? `reached --rows ${o.rows}` : timedOut ? `--timeout ${o.timeoutS} s passed` : "the consumer ended";
    const progress = lastAcked !== null ? `acknowledged through snapshot ${lastAcked}` : "nothing new to acknowledge";
    console.log(`received ${rows} rows in ${snapshots} snapshot(s); ${progress}; stopped: ${why}`);
  } finally {
    await nc.close();
  }
});
