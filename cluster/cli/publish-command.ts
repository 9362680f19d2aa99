/**
 * `natslake publish <table> <file>`: the rows of a JSONL or CSV file through the producer client.
 *
 * - Every row is counted under the outcome of the batch that carried it (ok / duplicate / failed / unknown), so the
 *   counts add up to the rows published; any row not acknowledged (failed or unknown) makes the exit code 1.
 * - A bad input (malformed JSON, a row that does not fit the schema, a row too large for a NATS message) stops the
 *   run at that line: `<file>:<line>: <why>`, exit 2, after reporting what the rows before it came to.
 * - An unknown table, an unreachable server: one line, a non-zero exit, the connection closed (the process never
 *   hangs on an open connection).
 * - `--idempotent`: batches are cut only by size (no linger), so the same file gives the same batches, and message
 *   ids come from the file's SHA-256: a re-publish within the stream's duplicate window is stored once.
 */
import { createHash } from "node:crypto";
import { createReadStream, statSync } from "node:fs";
import { SingleBar, Presets } from "cli-progress";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError, isLakeError } from "../../src/errors.ts";
import { createProducer, STREAM_FULL_WORDS, type BatchOutcome, type OutcomeStatus, type Producer } from "../producer.ts";
import { connectOrExplain, UsageError } from "./common.ts";
import { redactUrl } from "../nats/connect-errors.ts";
import { publishFormat, readRecords } from "./input.ts";
import { startTracingIfConfigured } from "../tracing.ts";

export interface PublishFlags {
  nats: string;
  prefix: string;
  progress: boolean;
  waitVisible?: boolean;
  idempotent?: boolean;
}

const STATUSES: OutcomeStatus[] = ["ok", "duplicate", "failed", "unknown"];
/** The longest a timer may wait (setTimeout's limit): with it, a batch is sealed only by its size or at the end. */
const NO_LINGER_MS = 2 ** 31 - 1;

/** The SHA-256 of the table name and the file's bytes: the identity of an idempotent publish. */
async function fileIdentity(table: string, file: string): Promise<string> {
  const h = createHash("sha256").update(`${table}\n`);
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex").slice(0, 24);
}

/** A failed batch's error in words a user can act on ("no responders" means no stream captures the subject). */
function explain(error: string | undefined, subject: string): string {
  if (error === undefined) return "no error reported";
  if (/no responders|jetstream is not enabled|503/i.test(error))
    return `no JetStream stream captures ${subject} (the table's ingest stream is missing: was the table dropped, or is JetStream off?) [${error}]`;
  return error;
}

async function openProducer(nc: NatsConnection, table: string, o: PublishFlags, producerId: string | undefined): Promise<Producer> {
  try {
    return await createProducer({ nc, table, prefix: o.prefix, ...(producerId !== undefined ? { producerId, lingerMs: NO_LINGER_MS } : {}) });
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) throw new LakeError(ErrorKind.NotFound, `unknown table '${table}': ${e.message}`, { cause: e });
    if (isLakeError(e)) throw e;
    throw new LakeError(ErrorKind.Io, `cannot read the metadata of '${table}' from NATS at ${redactUrl(o.nats)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

export async function publishFile(table: string, file: string, o: PublishFlags, out: (s: string) => void): Promise<void> {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new UsageError(`cannot read input file '${file}'`);
  }
  const producerId = o.idempotent ? `pub-${await fileIdentity(table, file)}` : undefined;
  // With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER) set, every batch's publish span is exported and its
  // context travels to the cluster in the `traceparent` header.
  let tracing;
  try {
    tracing = await startTracingIfConfigured(process.env, { serviceName: "natslake-publish" });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const nc = await connectOrExplain({ ...o, nats: o.nats }).catch(async (e: unknown) => {
    await tracing?.shutdown();
    throw e;
  });
  const bar = new SingleBar({ format: "publishing |{bar}| {percentage}% | {rows} rows", stream: process.stderr }, Presets.shades_classic);
  const tty = o.progress && process.stderr.isTTY === true;
  let barRunning = false;
  try {
    const producer = await openProducer(nc, table, o, producerId);
    if (producerId !== undefined) {
      const windowS = Math.round(producer.meta.duplicateWindowMs / 1000);
      out(`idempotent: message ids ${producerId}-<bucket>-<n> from this file's SHA-256; publishing it again to ${table} within the stream's duplicate window (${windowS} s) stores nothing twice`);
    }
    const rows = new Map<OutcomeStatus, number>(STATUSES.map((s) => [s, 0]));
    const batches = new Map<OutcomeStatus, number>(STATUSES.map((s) => [s, 0]));
    const firstError = new Map<OutcomeStatus, string>();
    // Each batch once (every row of a batch gets the same promise), counted when it settles.
    const open = new Map<Promise<BatchOutcome>, Promise<void>>();
    const count = (oc: BatchOutcome): void => {
      rows.set(oc.status, rows.get(oc.status)! + oc.rows);
      batches.set(oc.status, batches.get(oc.status)! + 1);
      if (oc.error !== undefined && !firstError.has(oc.status)) firstError.set(oc.status, oc.error);
    };
    // Read no further ahead than this many unsettled batches (those not yet sealed are at most one per bucket).
    const maxOpen = producer.numBuckets + 128;
    let bytes = 0;
    let written = 0;
    let bad: Error | undefined;
    if (tty) {
      bar.start(size, 0, { rows: 0 });
      barRunning = true;
    }
    try {
      for await (const { record, line } of readRecords(file, publishFormat(file), (n) => (bytes += n))) {
        let p: Promise<BatchOutcome>;
        try {
          p = producer.write(record);
        } catch (e) {
          bad = new UsageError(`${file}:${line}: ${e instanceof Error ? e.message : String(e)}`);
          break;
        }
        written++;
        if (!open.has(p)) {
          open.set(p, p.then(count).finally(() => open.delete(p)));
          if (open.size > maxOpen) await Promise.race(open.values());
        }
        if (tty && written % 1000 === 0) bar.update(Math.min(bytes, size), { rows: written });
      }
    } catch (e) {
      bad = e instanceof Error ? e : new Error(String(e));
    }
    await producer.flush();
    await Promise.all([...open.values()]);
    if (barRunning) {
      bar.update(bad === undefined ? size : Math.min(bytes, size), { rows: written });
      bar.stop();
      barRunning = false;
    }
    const summary = STATUSES.filter((s) => rows.get(s)! > 0).map((s) => `${rows.get(s)} ${s}`).join(", ");
    out(`published ${written} rows to ${table}${bad !== undefined ? " (stopped at the error below)" : ""}: ${summary || "nothing"}`);
    for (const s of ["failed", "unknown"] as const) {
      if (rows.get(s)! > 0) out(`  ${s}: ${rows.get(s)} rows in ${batches.get(s)} batches; first error: ${explain(firstError.get(s), producer.subjects.ingestAllBuckets(producer.identifier))}`);
    }
    if (bad !== undefined) throw bad;
    const notAcked = rows.get("failed")! + rows.get("unknown")!;
    if (notAcked > 0) {
      const full = (firstError.get("failed") ?? "").includes(STREAM_FULL_WORDS) ? `${table}'s ingest stream is full (its writers are behind or stopped): ` : "";
      throw new LakeError(
        ErrorKind.Io,
        `${full}${notAcked} of ${written} rows were not acknowledged (failed: not stored; unknown: may or may not be stored — publishing them again ` +
          `duplicates those that were stored${o.idempotent ? ", unless it is within the duplicate window: --idempotent uses the same message ids" : "; --idempotent avoids that within the duplicate window"})`,
      );
    }
    if (o.waitVisible) {
      await producer.waitVisible(producer.token(), 60_000);
      out("visible in a snapshot");
    }
    await producer.close();
  } finally {
    if (barRunning) bar.stop();
    await nc.close().catch(() => undefined);
    await tracing?.shutdown();
  }
}
