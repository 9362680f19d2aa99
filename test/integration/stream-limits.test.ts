/**
 * A table's `natslake.stream.max-bytes` bounds its ingest stream (issue 29): the node creates the stream with the
 * table's own bound, not its `streamMaxBytes` default. With the table's only writer stopped (SIGSTOP), the stream
 * fills and refuses new batches (`discard: new`): the producer client and `natslake publish` say that the ingest
 * stream is full, and nothing is lost — once the writer runs again every acknowledged row is in the table exactly
 * once, no refused row is, and producers are taken again. A producer asking for batches larger than the writers take
 * (`natslake.ingest.max-message-rows`) is refused at once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { clusterPerFile, currentNatsServer, producerWhenRegistered, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { verifyExactlyOnce, type RowOutcome } from "../helpers/load.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { createProducer, type BatchOutcome, type Producer } from "../../cluster/producer.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const MAX_BYTES = 48 * 1024;
const cluster = clusterPerFile({ nodes: 1, ...currentNatsServer() });

/** Writes rows `from` … `from + n − 1` (about 60 bytes each on the wire) and records each row's outcome. */
async function publishRange(p: Producer, from: number, n: number, outcomes: Map<number, RowOutcome>): Promise<BatchOutcome[]> {
  const pending: Array<Promise<BatchOutcome>> = [];
  for (let id = from; id < from + n; id++) {
    pending.push(
      p.write({ id, src: "client", pad: `row-${id}-${"x".repeat(32)}` }).then((o) => {
        outcomes.set(id, o.status);
        return o;
      }),
    );
  }
  await p.flush();
  return Promise.all(pending);
}

test("a table's natslake.stream.max-bytes bounds its stream; a stopped writer pushes back on producers, and nothing acknowledged is lost", { timeout: 120_000 }, async () => {
  assert.ok(process.env["NATSLAKE_NATS_SERVER_CURRENT"], "needs the current nats-server (scripts/setup.sh builds it; scripts/run-tests.mjs finds it)");
  const c = cluster();
  const name = "lim.full";
  const catalog = new Catalog(c.warehouse);
  await catalog.createTable(parseIdentifier(name), {
    columns: parseColumnList("id BIGINT NOT NULL, src STRING, pad STRING"),
    options: { bucket: "2", "bucket-key": "id", "natslake.stream.max-bytes": `${MAX_BYTES / 1024} kb` },
  });
  const p = await producerWhenRegistered(c.nc, name);
  // Batches larger than the writers take (natslake.ingest.max-message-rows) are refused before anything is sent.
  await assert.rejects(createProducer({ nc: c.nc, table: name, maxBatchRows: 200_000 }), /maxBatchRows 200000 is above lim\.full's natslake\.ingest\.max-message-rows \(100000\): its writers would dead-letter such batches/);
  const jsm = await jetstreamManager(c.nc);
  // The node's default (1 GiB) does not override the table's own bound.
  assert.equal((await jsm.streams.info("LAKE_IN_lim_full")).config.max_bytes, MAX_BYTES);

  const outcomes = new Map<number, RowOutcome>();
  await withNodeLogsOnFailure(c, async () => {
    // Running: rows go through.
    const first = await publishRange(p, 0, 200, outcomes);
    assert.ok(first.every((o) => o.status === "ok"), JSON.stringify(first.find((o) => o.status !== "ok")));
    await p.waitVisible(p.token(), 30_000);

    // The writer stops: the stream fills and refuses, and the producer says why.
    c.signal("n1", "SIGSTOP");
    let next = 200;
    let refused: BatchOutcome | undefined;
    for (let round = 0; round < 40 && refused === undefined; round++) {
      const out = await publishRange(p, next, 200, outcomes);
      next += 200;
      refused = out.find((o) => o.status === "failed");
    }
    assert.ok(refused, "the stream refused a batch before 8000 rows (~480 KB) were sent to a 48 KB stream");
    assert.match(refused.error ?? "", /ingest stream is full .*maximum bytes exceeded.*writers are behind or stopped/);
    const info = await jsm.streams.info("LAKE_IN_lim_full");
    assert.ok(info.state.bytes <= MAX_BYTES, `the stream holds ${info.state.bytes} bytes, at most ${MAX_BYTES}`);

    // `natslake publish` says so too, and exits 1.
    const file = join(c.dir, "more.jsonl");
    writeFileSync(file, Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: 100_000 + i, src: "cli", pad: "y".repeat(40) })).join("\n") + "\n");
    const cli = spawnSync(process.execPath, [BIN, "publish", name, file, "--nats", c.nats.url, "--no-progress"], { encoding: "utf8", timeout: 60_000 });
    assert.equal(cli.signal, null, "publish ended by itself");
    assert.equal(cli.status, 1, `${cli.stdout}\n${cli.stderr}`);
    assert.match(cli.stdout, /failed: \d+ rows in \d+ batches; first error: the table's ingest stream is full/);
    assert.match(cli.stderr, /lim\.full's ingest stream is full \(its writers are behind or stopped\): \d+ of 2000 rows were not acknowledged/);
    assert.doesNotMatch(cli.stderr, /\n\s+at /, "no stack trace");

    // The writer runs again: what was acknowledged lands, the stream drains as it commits, and producers are taken.
    c.signal("n1", "SIGCONT");
    await p.waitVisible(p.token(), 60_000);
    const after = await waitFor("the stream takes batches again", async () => {
      const out = await publishRange(p, next, 200, outcomes);
      next += 200;
      return out.every((o) => o.status === "ok") ? out : undefined;
    }, 60_000, 500);
    assert.ok(after.length > 0);
    await p.waitVisible(p.token(), 60_000);
  });

  const cliRows = new Set<number>();
  for (let i = 0; i < 2000; i++) cliRows.add(100_000 + i);
  const report = await verifyExactlyOnce(await catalog.getTable(parseIdentifier(name)), outcomes);
  // The CLI's rows are the only others in the table: those it got acknowledged before the stream was full.
  const unexpected = report.unexpected.filter((id) => !cliRows.has(id));
  assert.deepEqual({ lost: report.lost, duplicated: report.duplicated, failedButPresent: report.failedButPresent, unexpected }, { lost: [], duplicated: [], failedButPresent: [], unexpected: [] });
  assert.ok(report.failed > 0 && report.acked > 400, JSON.stringify({ acked: report.acked, failed: report.failed }));
  await p.close();
});
