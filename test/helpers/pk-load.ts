/**
 * A bounded load of changes to a primary-key table (test/helpers/pk-model.ts says what the table must end as): over
 * a bounded key space — keys repeat — it upserts (`upsert`), updates (+U, half of them after a -U of the key, through
 * `write` with `_row_kind`) and deletes (`delete`: half of them by key alone, half with a whole row that carries the
 * delete's own version, so a flushed file names it), through the producer client, for `durationMs` and at most
 * `maxChanges` changes at about `ratePerSec`, and records each change's outcome. It stops by itself.
 *
 * Per-key publish order: keys are partitioned between the producers (key % producers), so each key has one
 * publisher; a producer keeps one batch per bucket in flight (`ordered`, its default) and retries a batch with the
 * same message id, so a key's stored changes are in the order they were handed over — their versions' order.
 * Each producer has its own NATS connection (given by the caller), as separate services would.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { createProducer, type BatchOutcome, type Producer } from "../../cluster/producer.ts";
import { pkRow, type ChangeOp, type PkChange, type PkChangeOutcome } from "./pk-model.ts";

export interface PkLoadOptions {
  /** One connection per producer; keys are partitioned between them (key % producers). */
  connections: readonly NatsConnection[];
  table: string;
  /** Keys 0 … keys − 1. */
  keys: number;
  /** Share of changes that delete their key (default 0.2; half by key alone, half with a whole row). */
  deleteShare?: number;
  /** Share of changes that update their key with +U, half of them after a -U (default 0.1). */
  updateShare?: number;
  ratePerSec: number;
  durationMs: number;
  maxChanges: number;
  /** Uniform in [0, 1): the keys and kinds drawn (seeded by the caller, so a run can be replayed). */
  random: () => number;
  /** Changes handed over per pacing step (default 50). */
  step?: number;
  /**
   * Changes handed over and not yet answered at most (default: a quarter second's worth at the rate, at least 100):
   * when the producers fall behind, the load waits instead of queueing changes in them, so a change's hand-over time
   * stays close to its publish (what the chaos suite's recovery times are measured from).
   */
  maxUnanswered?: number;
  /**
   * The row change `c` publishes (default `pkRow`, the deduplicate table's): a merge engine's load writes its own
   * table's columns (test/helpers/pk-engines.ts).
   */
  row?: (c: PkChange) => Record<string, unknown>;
  /**
   * Whether changes may retract (`-U`, `-D`; default true). Without, `deleteShare` must be 0 and an update is a `+U`
   * alone — for engines that refuse retractions at ingest (first-row, partial-update) or whose model has none.
   */
  retractions?: boolean;
  /** Called once per change when its batch has an outcome. */
  onOutcome?: (c: PkChangeOutcome) => void;
}

export interface PkLoad {
  /** Every change with its outcome, in the order outcomes arrived. */
  readonly outcomes: PkChangeOutcome[];
  /** Resolves when every change handed over has an outcome (the producers are closed then). */
  readonly done: Promise<void>;
  /** Stops handing over changes (those handed over still get their outcome). */
  stop(): void;
  /** Changes handed over so far. */
  handedOver(): number;
  /** Waits (after `done`) until a snapshot covers every batch each producer got acknowledged. */
  waitVisible(timeoutMs: number): Promise<void>;
}

export function startPkLoad(o: PkLoadOptions): PkLoad {
  if (o.connections.length === 0) throw new Error("startPkLoad needs at least one connection");
  const deleteShare = o.deleteShare ?? 0.2;
  const updateShare = o.updateShare ?? 0.1;
  const retractions = o.retractions ?? true;
  if (!retractions && deleteShare > 0) throw new Error(`a load without retractions deletes nothing: deleteShare is ${deleteShare}`);
  const rowOf = o.row ?? pkRow;
  const outcomes: PkChangeOutcome[] = [];
  let stopped = false;
  let version = 0;
  const producers: Producer[] = [];
  const done = (async () => {
    for (const nc of o.connections) producers.push(await createProducer({ nc, table: o.table }));
    const pending: Array<Promise<void>> = [];
    const started = Date.now();
    const step = o.step ?? 50;
    const maxUnanswered = o.maxUnanswered ?? Math.max(100, Math.ceil(o.ratePerSec / 4));
    let answered = 0;
    /** Resolved by the next answer (the load waits on it while too many changes are unanswered). */
    let nextAnswer: { promise: Promise<void>; resolve: () => void } | null = null;
    /** Hands one row to its key's producer; records the outcome of the batch that carries it. */
    const send = (c: PkChange, call: (p: Producer) => Promise<BatchOutcome>): void => {
      const at = Date.now();
      pending.push(
        call(producers[c.producer]!).then((b) => {
          answered++;
          nextAnswer?.resolve();
          nextAnswer = null;
          const out: PkChangeOutcome = { ...c, status: b.status, bucket: b.bucket, at, ...(b.seq === undefined ? {} : { seq: b.seq }) };
          outcomes.push(out);
          o.onOutcome?.(out);
        }),
      );
    };
    const first = async (p: Promise<BatchOutcome[]>): Promise<BatchOutcome> => (await p)[0]!;
    while (!stopped && Date.now() - started < o.durationMs && version < o.maxChanges) {
      for (let i = 0; i < step && version < o.maxChanges; i++) {
        const key = Math.floor(o.random() * o.keys);
        const producer = key % producers.length;
        const r = o.random();
        const change = (op: ChangeOp): PkChange => ({ key, v: ++version, op, producer });
        if (r < deleteShare / 2) {
          send(change("-D"), (p) => first(p.delete([{ id: key }])));
        } else if (r < deleteShare) {
          const c = change("-D");
          send(c, (p) => first(p.delete([rowOf(c)])));
        } else if (r < deleteShare + updateShare) {
          if (retractions && r < deleteShare + updateShare / 2 && version + 1 < o.maxChanges) send(change("-U"), (p) => p.write({ id: key, _row_kind: "-U" }));
          const c = change("+U");
          send(c, (p) => p.write({ ...rowOf(c), _row_kind: "+U" }));
        } else {
          const c = change("+I");
          send(c, (p) => first(p.upsert([rowOf(c)])));
        }
      }
      // Producers behind: wait for answers.
      while (pending.length - answered > maxUnanswered) {
        if (nextAnswer === null) {
          let resolve!: () => void;
          const promise = new Promise<void>((r) => (resolve = r));
          nextAnswer = { promise, resolve };
        }
        await nextAnswer.promise;
      }
      // Pace: changes handed over so far vs. the rate.
      const ahead = version - ((Date.now() - started) / 1000) * o.ratePerSec;
      if (ahead > 0) await new Promise((r) => setTimeout(r, (ahead / o.ratePerSec) * 1000));
    }
    for (const p of producers) await p.flush();
    await Promise.all(pending);
  })();
  const closed = done.finally(async () => {
    for (const p of producers) await p.close().catch(() => undefined);
  });
  return {
    outcomes,
    done: closed,
    stop: () => {
      stopped = true;
    },
    handedOver: () => version,
    async waitVisible(timeoutMs) {
      await closed;
      for (const p of producers) await p.waitVisible(p.token(), timeoutMs);
    },
  };
}
