/**
 * The chaos load generator, in its own process (its CPU must not slow the runner, and a fault never touches it):
 *
 *   node --import tsx chaos/load-child.ts <spec.json>
 *
 * Publishes numbered rows through the producer client and, a share of them, raw to the table's bare subject
 * (test/helpers/load.ts), bounded by `durationMs` and `maxRows`; with `poison`, it also publishes rows and payloads
 * that must end in the dead-letter stream: wrong types and unknown columns raw (rejected by the router or the
 * writer), bad RowBatches straight to a bucket subject (a wrong-typed row next to a good one, an unknown column),
 * and undecodable bytes on both paths. Every outcome goes to `out` as a JSON line (chaos/types.ts `LoadLine`),
 * flushed every 200 ms and at the end; SIGTERM stops publishing early (what was published still gets its outcome).
 */
import { connectNats } from "../cluster/nats/connect.ts";
import { jetstream } from "@nats-io/jetstream";
import { startLoad } from "../test/helpers/load.ts";
import { publishWithRetry, type RetryPolicy } from "../cluster/producer.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { readTableMeta } from "../cluster/nats/table-infra.ts";
import { encodeRowBatch } from "../actors/wire/row-batch.ts";
import { createBucketFunctionOfType, type BucketFunctionType } from "../src/format/bucket.ts";
import { compileConverter } from "../src/format/row-converter.ts";
import { schemaFromJson } from "../src/format/schema.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import { openHistory, readSpecArg, stoppedBy } from "./load-io.ts";
import type { LoadLine, LoadPoisonLine, LoadRowsLine } from "./types.ts";

export interface LoadSpec {
  urls: string[];
  table: string;
  out: string;
  ratePerSec: number;
  durationMs: number;
  maxRows: number;
  rawShare: number;
  poison: boolean;
  /** Rows per producer/raw message. */
  batch: number;
}

/** Id ranges: load rows from 0, poison rows and the good rows published next to them far above. */
export const POISON_ID_BASE = 2_000_000_000;
export const MIXED_ID_BASE = 3_000_000_000;

const spec = readSpecArg<LoadSpec>("load-child.ts");
const history = openHistory(spec.out);
const line = (l: LoadLine): void => history.line(l);

// Credentials and inbox prefix from the environment (the producer's with `chaos run --auth`).
const nc = await connectNats(spec.urls.join(","), {}, { maxReconnectAttempts: -1, reconnectTimeWait: 250, name: "chaos-load" });
const startedAt = Date.now();
let signalled = false;
const load = startLoad({
  nc,
  table: spec.table,
  ratePerSec: spec.ratePerSec,
  durationMs: spec.durationMs,
  maxRows: spec.maxRows,
  rawShare: spec.rawShare,
  batch: spec.batch,
  onOutcome: (ids, o) => {
    const l: LoadRowsLine = { kind: "rows", ids: [...ids], status: o.status, src: o.src, bucket: o.bucket, at: o.at };
    if (o.seq !== undefined) l.seq = o.seq;
    line(l);
  },
});
process.on("SIGTERM", () => {
  signalled = true;
  load.stop();
});

const poisonDone = spec.poison ? publishPoison() : Promise.resolve(0);
let failure: unknown = null;
try {
  await load.done;
} catch (e) {
  failure = e;
}
signalled = true; // the poison loop stops with the load
const poisonCount = await poisonDone.catch((e: unknown) => {
  failure ??= e;
  return 0;
});
const rows = load.outcomes.size;
line({ kind: "done", rows, startedAt, endedAt: Date.now(), stoppedBy: stoppedBy(rows, spec.maxRows, startedAt, spec.durationMs) });
history.close();
await nc.close().catch(() => undefined);
if (failure !== null) {
  process.stderr.write(`load failed: ${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}\n`);
  process.exit(1);
}
process.stderr.write(`load done: ${rows} rows, ${poisonCount} poison messages\n`);

/** One poison message about every 400 ms, cycling through the kinds; resolves with the number sent. */
async function publishPoison(): Promise<number> {
  const id = parseIdentifier(spec.table);
  const subjects = new Subjects();
  const meta = await readTableMeta(nc, subjects, id);
  const schema = schemaFromJson(meta.schema);
  const keyFields = meta.bucketKey.map((k) => schema.fields.find((f) => f.name === k)!);
  const fn = createBucketFunctionOfType((schema.options["bucket-function.type"] ?? "default") as BucketFunctionType, keyFields.map((f) => f.type), meta.bucket);
  const convs = keyFields.map((f) => compileConverter(f.type, f.name));
  const bucketOf = (rowId: number): number => fn(convs.map((c) => c(rowId)));
  const js = jetstream(nc);
  const policy: RetryPolicy = { timeoutMs: 5000, retries: 3, duplicateWindowMs: meta.duplicateWindowMs };
  const raw = subjects.ingestRaw(id);
  const enc = new TextEncoder();
  let k = 0;
  let mixed = MIXED_ID_BASE;
  const pending: Array<Promise<void>> = [];
  const send = (subject: string, payload: Uint8Array, bucket: number, poison: Omit<LoadPoisonLine, "kind" | "status" | "seq" | "at" | "bucket">, good: number[]): void => {
    const at = Date.now();
    const msgId = `chaos-poison-${startedAt}-${k}`;
    pending.push(
      publishWithRetry(js, subject, payload, msgId, policy).then((o) => {
        const seq = o.seq === undefined ? {} : { seq: o.seq };
        line({ kind: "poison", status: o.status, bucket, at, ...poison, ...seq });
        if (good.length > 0) line({ kind: "rows", ids: good, status: o.status, src: "raw", bucket, at, ...seq });
      }),
    );
  };
  const deadline = startedAt + spec.durationMs;
  while (!signalled && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 400));
    if (signalled) break;
    const p = POISON_ID_BASE + k;
    const marker = `poison-marker-${startedAt}-${k}#`;
    switch (k % 7) {
      case 0: {
        // A wrong type next to a good row, raw JSON: the router routes both, the writer rejects the bad one.
        const g = mixed++;
        send(raw, enc.encode(JSON.stringify([{ id: p, src: "poison", n: "not-an-int" }, { id: g, src: "mixed", n: 1 }])), -1, { ids: [p], markers: [], via: "raw", what: "raw wrong type" }, [g]);
        break;
      }
      case 1:
        send(raw, enc.encode(JSON.stringify({ id: p, src: "poison", n: 1, bogus: true })), -1, { ids: [p], markers: [], via: "raw", what: "raw unknown column" }, []);
        break;
      case 2:
        // A bucket key that is not a number: the router cannot route it.
        send(raw, enc.encode(JSON.stringify({ id: marker, src: "poison", n: 1 })), -1, { ids: [], markers: [marker], via: "raw", what: "raw bad bucket key" }, []);
        break;
      case 3:
        send(raw, Buffer.concat([Buffer.from([0xc1]), Buffer.from(marker)]), -1, { ids: [], markers: [marker], via: "raw", what: "raw undecodable" }, []);
        break;
      case 4: {
        // A bad RowBatch straight to the bucket subject: a wrong-typed row and a good row of that bucket.
        const b = bucketOf(p);
        let g = mixed++;
        while (bucketOf(g) !== b) g = mixed++;
        const batch = { v: 1 as const, schema: schema.id, cols: ["id", "src", "n"], rows: [[p, "poison", "NaN"], [g, "mixed", 2]] };
        send(subjects.ingestBucket(id, b), encodeRowBatch(batch), b, { ids: [p], markers: [], via: "batch", what: "batch wrong type" }, [g]);
        break;
      }
      case 5: {
        const b = bucketOf(p);
        const batch = { v: 1 as const, schema: schema.id, cols: ["id", "src", "n", "bogus"], rows: [[p, "poison", 1, true]] };
        send(subjects.ingestBucket(id, b), encodeRowBatch(batch), b, { ids: [p], markers: [], via: "batch", what: "batch unknown column" }, []);
        break;
      }
      case 6: {
        const b = k % meta.bucket;
        // 0xc1 is never used in msgpack: the writer cannot decode the message.
        send(subjects.ingestBucket(id, b), Buffer.concat([Buffer.from([0xc1]), Buffer.from(marker)]), b, { ids: [], markers: [marker], via: "batch", what: "batch undecodable" }, []);
        break;
      }
    }
    k++;
  }
  await Promise.all(pending);
  return k;
}
