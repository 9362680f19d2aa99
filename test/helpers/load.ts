/**
 * A bounded load generator and an exactly-once verifier for cluster tests.
 *
 * `startLoad` publishes numbered rows (`id`, `src`, `n`) for `durationMs` (and at most `maxRows`) at about
 * `ratePerSec`, through the producer client and (a share of them) raw to the bare subject, and records each row's
 * outcome: ok / duplicate (acknowledged), failed (a definite error), unknown (no answer). It stops by itself.
 * `onOutcome` also reports where each acknowledged row is stored (bucket and stream sequence; bucket −1 for raw rows,
 * whose sequence is the raw message's) and when it was handed to the client — the chaos suite records these.
 * `verifyExactlyOnce` reads the table and checks: every acknowledged row exactly once, unknown rows at most once,
 * failed rows never, and no row that was never published.
 */
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { createProducer, publishWithRetry, type BatchOutcome } from "../../cluster/producer.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import type { Table } from "../../src/table/table.ts";
import { readRows } from "../../src/scan/read.ts";

export type RowOutcome = "ok" | "duplicate" | "failed" | "unknown";

export interface Load {
  outcomes: Map<number, RowOutcome>;
  /** Resolves when every publish has an outcome. */
  done: Promise<void>;
  stop(): void;
  /** The producer's visibility token, once done. */
  token(): unknown;
  waitVisible(timeoutMs: number): Promise<void>;
}

/** What `onOutcome` reports for a group of rows that travelled together. */
export interface LoadOutcome {
  status: RowOutcome;
  src: "client" | "raw";
  /** The bucket subject it went to (−1: the bare subject, routed by the cluster). */
  bucket: number;
  /** Stream sequence of the acknowledged message (of the earlier copy for a duplicate). */
  seq?: number;
  /** When the rows were handed to the client (epoch ms). */
  at: number;
}

export interface LoadOptions {
  nc: NatsConnection;
  table: string;
  ratePerSec: number;
  durationMs: number;
  /** Stop after this many rows (default: no bound but the duration). */
  maxRows?: number;
  rawShare?: number;
  firstId?: number;
  batch?: number;
  onOutcome?: (ids: readonly number[], o: LoadOutcome) => void;
}

/** Raw rows are retried with the same message id inside the (default 2 min) duplicate window, like the producer's. */
const RAW_POLICY = { timeoutMs: 5000, retries: 3, duplicateWindowMs: 120_000 };

export function startLoad(opts: LoadOptions): Load {
  const outcomes = new Map<number, RowOutcome>();
  let stopped = false;
  let producerRef: Awaited<ReturnType<typeof createProducer>> | null = null;
  const js = jetstream(opts.nc);
  const raw = new Subjects().ingestRaw(parseIdentifier(opts.table));
  const done = (async () => {
    const producer = await createProducer({ nc: opts.nc, table: opts.table });
    producerRef = producer;
    const pending: Array<Promise<void>> = [];
    const started = Date.now();
    const per = opts.batch ?? 100;
    let id = opts.firstId ?? 0;
    let tick = 0;
    const maxRows = opts.maxRows ?? Number.POSITIVE_INFINITY;
    while (!stopped && Date.now() - started < opts.durationMs && id - (opts.firstId ?? 0) < maxRows) {
      const rawNow = opts.rawShare !== undefined && opts.rawShare > 0 && tick % Math.round(1 / opts.rawShare) === 0;
      tick++;
      const ids = Array.from({ length: Math.min(per, maxRows - (id - (opts.firstId ?? 0))) }, () => id++);
      const at = Date.now();
      if (rawNow) {
        const rows = ids.map((i) => ({ id: i, src: "raw", n: i % 100 }));
        for (const i of ids) outcomes.set(i, "unknown");
        // Never throws: timeouts are retried with the same id; only a definite refusal is "failed".
        pending.push(
          publishWithRetry(js, raw, new TextEncoder().encode(JSON.stringify(rows)), `load-raw-${ids[0]}`, RAW_POLICY).then((o) => {
            ids.forEach((i) => outcomes.set(i, o.status));
            opts.onOutcome?.(ids, { status: o.status, src: "raw", bucket: -1, ...(o.seq === undefined ? {} : { seq: o.seq }), at });
          }),
        );
      } else {
        for (const i of ids) {
          outcomes.set(i, "unknown");
          pending.push(
            producer.write({ id: i, src: "client", n: i % 100 }).then((o: BatchOutcome) => {
              outcomes.set(i, o.status);
              opts.onOutcome?.([i], { status: o.status, src: "client", bucket: o.bucket, ...(o.seq === undefined ? {} : { seq: o.seq }), at });
            }),
          );
        }
      }
      // Pace: rows published so far vs. the rate.
      const ahead = id - (opts.firstId ?? 0) - ((Date.now() - started) / 1000) * opts.ratePerSec;
      if (ahead > 0) await new Promise((r) => setTimeout(r, (ahead / opts.ratePerSec) * 1000));
    }
    await producer.flush();
    await Promise.all(pending);
  })();
  return {
    outcomes,
    done,
    stop: () => {
      stopped = true;
    },
    token: () => producerRef?.token(),
    async waitVisible(timeoutMs) {
      await done;
      await producerRef!.waitVisible(producerRef!.token(), timeoutMs);
    },
  };
}

export interface ExactlyOnceReport {
  acked: number;
  unknown: number;
  failed: number;
  found: number;
  lost: number[];
  duplicated: number[];
  unexpected: number[];
  failedButPresent: number[];
}

export async function verifyExactlyOnce(table: Table, outcomes: Map<number, RowOutcome>): Promise<ExactlyOnceReport> {
  const counts = new Map<number, number>();
  for await (const row of readRows(table, { projection: ["id"] })) {
    const id = Number(row["id"]);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const r: ExactlyOnceReport = { acked: 0, unknown: 0, failed: 0, found: 0, lost: [], duplicated: [], unexpected: [], failedButPresent: [] };
  for (const [id, o] of outcomes) {
    const n = counts.get(id) ?? 0;
    if (o === "ok" || o === "duplicate") {
      r.acked++;
      if (n === 0) r.lost.push(id);
    } else if (o === "unknown") r.unknown++;
    else {
      r.failed++;
      if (n > 0) r.failedButPresent.push(id);
    }
    if (n > 1) r.duplicated.push(id);
  }
  for (const [id, n] of counts) {
    r.found += n;
    if (!outcomes.has(id)) r.unexpected.push(id);
  }
  return r;
}
