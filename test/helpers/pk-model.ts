/**
 * The model of a primary-key table under a load of changes (test/helpers/pk-load.ts), and the judge of a table read
 * against it — shared by the chaos suite's `pk-upserts` verifier and the cluster's primary-key fault tests.
 *
 * A change is one row given to the producer client: an upsert (+I), an update (+U, alone or after its -U), or a
 * retraction (-U, -D). Every change has a version `v` (1, 2, …), unique over the run and increasing in the order the
 * load handed changes to the producer; an acknowledged change also has the stream sequence of the message that holds
 * it (`seq`; a message holds several changes, in `v` order).
 *
 * The model applies every acknowledged change in stream order — by (seq, v) — so what the table must hold for key K
 * is the state after the last acknowledged change of K in that order: its row, or nothing after a retraction or when
 * no change of K was acknowledged. Which changes were stored is known from their outcomes:
 * - acknowledged (`ok`, `duplicate`): stored — once, whatever the retries (JetStream de-duplicates by message id);
 * - `failed`: a definite refusal — never stored;
 * - `unknown`: no answer within the retry budget — stored or not, and where in the stream is not known: such a
 *   batch's last attempt may even reach the stream after later batches of its bucket (an attempt delayed in a route
 *   while the client reconnected), so it may be the last stored change of its key.
 * Hence the allowed final states of K: the model's, or the state after any of K's unknown changes. Anything else is
 * a finding, classified by what is read:
 * - `missing`: nothing, where the model has a row (an acknowledged upsert lost);
 * - `resurrected`: a row, where the model has none — the key's last change was a retraction, which was lost, or an
 *   older upsert was applied again after it;
 * - `stale`: another acknowledged version of K than the model's (a later change lost, an older one applied again
 *   after it, or two applied out of stream order);
 * - `unexpected`: a version never published for that key, one whose values are not the ones published, or one
 *   whose publish definitely failed;
 * - `duplicateKeys`: a key read more than once (a merge that let two versions through).
 *
 * Each key has one publisher (keys are partitioned between producers), whose client keeps a bucket's batches in
 * call order, so a key's acknowledged changes should also be in the stream in `v` order: `publishOrderBreaks` names
 * the keys where they are not (the producer's guarantee, judged apart from the table).
 */
import type { RowOutcome } from "./load.ts";

/** The row kinds a change may carry. */
export type ChangeOp = "+I" | "+U" | "-U" | "-D";

/** One change as the load handed it to a producer. */
export interface PkChange {
  key: number;
  /** Version, from 1: unique in the run, increasing in hand-over order (so per key: publish order). */
  v: number;
  op: ChangeOp;
  /** The producer that published it (each key has one). */
  producer: number;
}

/** A change with its outcome: the batch's status and, when acknowledged, where it is stored. */
export interface PkChangeOutcome extends PkChange {
  status: RowOutcome;
  /** The bucket subject it went to. */
  bucket: number;
  /** Stream sequence of the acknowledged batch (of the earlier copy for a duplicate). */
  seq?: number;
  /** When the change was handed to the producer (epoch ms). */
  at: number;
}

/** The primary-key table the model describes (columns and key). */
export const PK_COLUMNS = "id BIGINT NOT NULL, v BIGINT NOT NULL, src STRING, n INT";
export const PK_KEY = ["id"];

/**
 * The row an upsert or update of `key` at version `v` writes (a delete that carries its row writes it too): its values
 * follow from the key, version and producer. A retraction by key alone stores zeros in the value columns, so a row's
 * `v` names the change that wrote it, 0 none.
 */
export function pkRow(c: Pick<PkChange, "key" | "v" | "producer">): { id: number; v: number; src: string; n: number } {
  return { id: c.key, v: c.v, src: `p${c.producer}`, n: c.v % 1000 };
}

export const isAcked = (s: RowOutcome): boolean => s === "ok" || s === "duplicate";
const leavesRow = (op: ChangeOp): boolean => op === "+I" || op === "+U";

/** What one engine's read of the table looks like next to the model. */
export interface PkJudgement {
  /** Keys any change touched. */
  keys: number;
  changes: { published: number; acknowledged: number; unknown: number; failed: number };
  /** Rows read, and keys whose expected state (after the last acknowledged change in stream order) is a row. */
  rowsRead: number;
  expectedRows: number;
  /** Keys whose state read is allowed only because an unknown change may have been stored last. */
  ambiguous: number;
  missing: number[];
  resurrected: number[];
  stale: number[];
  unexpected: number[];
  /** Rows from a change whose publish definitely failed (also counted in `unexpected`). */
  failedLanded: number[];
  duplicateKeys: number[];
  /**
   * Keys not judged: so many of their changes are unacknowledged that the states they allow were not enumerated (an
   * aggregate's result depends on which of them were stored). Never a deduplicate key; 0 in normal runs.
   */
  unverifiable: number[];
  /** Findings of all kinds (each list above holds every key it names). */
  findings: number;
  /** One line per finding kind with a few examples, for reports and assertion messages. */
  describe(): string;
}

/** Stream order of acknowledged changes: by the message's sequence, then by version within a message. */
export function streamOrder(a: PkChangeOutcome, b: PkChangeOutcome): number {
  return a.seq! - b.seq! || a.v - b.v;
}

export interface KeyHistory {
  /** Every change of the key, in version order. */
  changes: PkChangeOutcome[];
  /** The acknowledged ones, in stream order. */
  acked: PkChangeOutcome[];
}

/** Each key's changes (version order) and acknowledged ones (stream order). Throws on an acknowledged change without a sequence. */
export function histories(changes: Iterable<PkChangeOutcome>): Map<number, KeyHistory> {
  const byKey = new Map<number, KeyHistory>();
  for (const c of changes) {
    if (isAcked(c.status) && c.seq === undefined) throw new Error(`change v${c.v} of key ${c.key} is acknowledged without a stream sequence: the history cannot place it`);
    let h = byKey.get(c.key);
    if (h === undefined) byKey.set(c.key, (h = { changes: [], acked: [] }));
    h.changes.push(c);
    if (isAcked(c.status)) h.acked.push(c);
  }
  for (const h of byKey.values()) {
    h.changes.sort((a, b) => a.v - b.v);
    h.acked.sort(streamOrder);
  }
  return byKey;
}

/**
 * Keys whose acknowledged changes are not in the stream in the order they were handed to the producer (`v` order):
 * the producer client broke its per-bucket order. The table is judged by stream order either way.
 */
export function publishOrderBreaks(changes: Iterable<PkChangeOutcome>): number[] {
  const out: number[] = [];
  for (const [key, h] of histories(changes)) if (h.acked.some((c, i) => i > 0 && c.v < h.acked[i - 1]!.v)) out.push(key);
  return out;
}

/** The same row, compared as JSON values (BIGINTs may come back as bigint or number). */
export function sameRow(read: Record<string, unknown>, expected: Record<string, unknown>): boolean {
  const keys = Object.keys(expected);
  if (Object.keys(read).filter((k) => read[k] !== undefined).length !== keys.length) return false;
  return keys.every((k) => {
    const a = read[k];
    const b = expected[k];
    return typeof a === "bigint" || typeof b === "bigint" ? String(a) === String(b) : a === b;
  });
}

/** How many changes were published, and with which outcome. */
export function countOutcomes(byKey: ReadonlyMap<number, KeyHistory>): PkJudgement["changes"] {
  const counts = { published: 0, acknowledged: 0, unknown: 0, failed: 0 };
  for (const h of byKey.values())
    for (const c of h.changes) {
      counts.published++;
      if (isAcked(c.status)) counts.acknowledged++;
      else if (c.status === "unknown") counts.unknown++;
      else counts.failed++;
    }
  return counts;
}

/** The rows read, grouped by key (`id`). */
export function rowsByKey(rows: Iterable<Record<string, unknown>>): { read: Map<number, Array<Record<string, unknown>>>; rowsRead: number } {
  const read = new Map<number, Array<Record<string, unknown>>>();
  let rowsRead = 0;
  for (const r of rows) {
    rowsRead++;
    const key = Number(r["id"]);
    let list = read.get(key);
    if (list === undefined) read.set(key, (list = []));
    list.push(r);
  }
  return { read, rowsRead };
}

/**
 * Judges `rows` (a whole table read: natslake's or pypaimon's, every column of PK_COLUMNS) against the model of
 * `changes`. Pure.
 */
export function judgePkRows(changes: Iterable<PkChangeOutcome>, rows: Iterable<Record<string, unknown>>): PkJudgement {
  const byKey = histories(changes);
  const counts = countOutcomes(byKey);
  const { read, rowsRead } = rowsByKey(rows);
  const j = { missing: [] as number[], resurrected: [] as number[], stale: [] as number[], unexpected: [] as number[], failedLanded: [] as number[], duplicateKeys: [] as number[] };
  let ambiguous = 0;
  let expectedRows = 0;
  for (const [key, list] of read) {
    if (list.length > 1) j.duplicateKeys.push(key);
    if (!byKey.has(key)) j.unexpected.push(key);
  }
  for (const [key, h] of byKey) {
    const lastAcked = h.acked[h.acked.length - 1];
    const expectRow = lastAcked !== undefined && leavesRow(lastAcked.op);
    if (expectRow) expectedRows++;
    const found = read.get(key)?.[0];
    // The allowed states: after the last acknowledged change in stream order, or after any unknown one.
    const unknowns = h.changes.filter((c) => c.status === "unknown");
    const allowed = (c: PkChangeOutcome | undefined): boolean => (found === undefined ? c === undefined || !leavesRow(c.op) : c !== undefined && leavesRow(c.op) && sameRow(found, pkRow(c)));
    if (allowed(lastAcked)) continue;
    if (unknowns.some((u) => allowed(u))) {
      ambiguous++;
      continue;
    }
    if (found === undefined) {
      j.missing.push(key);
      continue;
    }
    const source = h.changes.find((c) => c.v === Number(found["v"]) && leavesRow(c.op));
    if (source === undefined || !sameRow(found, pkRow(source))) j.unexpected.push(key);
    else if (source.status === "failed") {
      j.unexpected.push(key);
      j.failedLanded.push(key);
    } else if (!expectRow) j.resurrected.push(key);
    else j.stale.push(key);
  }
  const findings = j.missing.length + j.resurrected.length + j.stale.length + j.unexpected.length + j.duplicateKeys.length;
  const describe = (): string => {
    if (findings === 0) return `every one of ${byKey.size} keys holds the state after its last acknowledged change in stream order${ambiguous > 0 ? ` (${ambiguous} after an unacknowledged one, which may have been stored last)` : ""}; no key twice`;
    const part = (name: string, keys: number[], what: string): string => (keys.length === 0 ? "" : `${keys.length} ${name} (${what}), e.g. keys ${keys.slice(0, 8).join(", ")}`);
    return [
      part("missing", j.missing, "an acknowledged upsert left no row"),
      part("resurrected", j.resurrected, "deleted by the last acknowledged change, yet a row is there"),
      part("stale", j.stale, "another acknowledged version than the last in stream order"),
      part("unexpected", j.unexpected, "a version never published for the key, other values, or a failed publish"),
      part("duplicate keys", j.duplicateKeys, "read more than once"),
    ]
      .filter(Boolean)
      .join("; ");
  };
  return { keys: byKey.size, changes: counts, rowsRead, expectedRows, ambiguous, ...j, unverifiable: [], findings, describe };
}
