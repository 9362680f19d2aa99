/**
 * The primary-key workload per merge engine: the table each engine's load writes (columns, options), the row a change
 * publishes, and the model of what the table must hold — written from Paimon's documented semantics
 * (docs/guide/primary-key-tables.md "Merge engines"; ../shared/pk-tables.md §3), not by calling
 * src/lsm/merge-functions, which is what the model judges.
 *
 * deduplicate is test/helpers/pk-model.ts (`judgePkRows`, retractions included). The other engines load no
 * retractions (`-U`/`-D`): first-row and partial-update without `remove-record-on-delete` refuse them at ingest (dead
 * letters), a partial-update delete's merge leaves values that depend on which files a compaction met (Paimon's
 * quirk: not a function of the changes alone), and pypaimon — the second reader — raises on retractions of
 * partial-update and aggregation tables. What each engine's table holds for key K, every acknowledged change of K
 * applied in stream order:
 * - partial-update (no options): each column the last non-null value any change set; every change sets `v` and a
 *   non-empty subset of `a`, `b`, `c` (by its version), so the merge fills a row in from parts;
 * - aggregation: `total` the sum of the changes' (signed) `total`s, `hi` their maximum, `v` and `note`
 *   last_non_null_value (the default; `note` is null in two changes of three, so an older non-null value stays) —
 *   each result exact, and a change applied twice or lost changes `total`;
 * - first-row: the first change's row, for good.
 *
 * Unacknowledged changes (`unknown`) may have been stored, anywhere in the stream: a key's state may be the model's
 * or one any subset of its unknown changes, placed anywhere, gives (`mayHold`). For aggregation the subsets are
 * enumerated (up to `MAX_ENUMERATED_UNKNOWNS` unknown changes of one key; more: the key is `unverifiable`); for
 * partial-update each column is checked on its own (the allowed set is a little wider than the exact one), for
 * first-row an unknown change may have been the first.
 */
import { countOutcomes, histories, PK_COLUMNS, PK_KEY, pkRow, rowsByKey, sameRow, type PkChange, type PkChangeOutcome, type PkJudgement } from "./pk-model.ts";

export const PK_ENGINES = ["deduplicate", "partial-update", "aggregation", "first-row"] as const;
export type PkEngine = (typeof PK_ENGINES)[number];

type Row = Record<string, unknown>;

/** Unknown changes of one key whose subsets an aggregation key's judge enumerates (2^10 states at most). */
export const MAX_ENUMERATED_UNKNOWNS = 10;

/** What one engine's load writes to and how its table is judged. */
export interface PkEngineWorkload {
  engine: PkEngine;
  /** The table: columns (DDL), primary key, table options beside `bucket`. */
  columns: string;
  primaryKeys: string[];
  options: Record<string, string>;
  /** Column names, as the readers are asked for them. */
  names: string[];
  /** Whether the load retracts keys (`-U`, `-D`): only deduplicate's does. */
  retractions: boolean;
  /** The row change `c` publishes (its values follow from its key, version and producer). */
  row(c: PkChange): Row;
}

/** A well-mixed 32-bit number of a version: which parts a change sets and its values follow from it. */
export function mix(v: number): number {
  let h = Math.imul(v ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** partial-update: every change sets `v` and the columns of a non-empty subset of `a`, `b`, `c`. */
function partialRow(c: PkChange): Row {
  const parts = 1 + (mix(c.v) % 7);
  return { id: c.key, v: c.v, ...(parts & 1 ? { a: `p${c.producer}.${c.v}` } : {}), ...(parts & 2 ? { b: c.v % 100_000 } : {}), ...(parts & 4 ? { c: c.v * 3 } : {}) };
}

/** aggregation: a signed `total` (summed), a `hi` (maxed) and, in one change of three, a `note`. */
function aggregateRow(c: PkChange): Row {
  const m = mix(c.v);
  return { id: c.key, v: c.v, total: (m % 2001) - 1000, hi: m % 1_000_000, note: m % 3 === 0 ? `n${c.v}` : null };
}

export const ENGINE_WORKLOADS: Record<PkEngine, PkEngineWorkload> = {
  deduplicate: { engine: "deduplicate", columns: PK_COLUMNS, primaryKeys: PK_KEY, options: {}, names: ["id", "v", "src", "n"], retractions: true, row: pkRow },
  "partial-update": {
    engine: "partial-update",
    columns: "id BIGINT NOT NULL, v BIGINT NOT NULL, a STRING, b INT, c BIGINT",
    primaryKeys: PK_KEY,
    options: { "merge-engine": "partial-update" },
    names: ["id", "v", "a", "b", "c"],
    retractions: false,
    row: partialRow,
  },
  aggregation: {
    engine: "aggregation",
    columns: "id BIGINT NOT NULL, v BIGINT NOT NULL, total BIGINT, hi BIGINT, note STRING",
    primaryKeys: PK_KEY,
    options: { "merge-engine": "aggregation", "fields.total.aggregate-function": "sum", "fields.hi.aggregate-function": "max" },
    names: ["id", "v", "total", "hi", "note"],
    retractions: false,
    row: aggregateRow,
  },
  "first-row": { engine: "first-row", columns: PK_COLUMNS, primaryKeys: PK_KEY, options: { "merge-engine": "first-row" }, names: ["id", "v", "src", "n"], retractions: false, row: pkRow },
};

/** The row `w` holds for a key after `stored` (in stream order), each column present (null when unset); null: no row. */
export function foldRows(w: PkEngineWorkload, stored: readonly PkChange[]): Row | null {
  if (stored.length === 0) return null;
  const rows = stored.map((c) => w.row(c));
  const full = (r: Row): Row => Object.fromEntries(w.names.map((n) => [n, r[n] ?? null]));
  switch (w.engine) {
    case "first-row":
      return full(rows[0]!);
    case "deduplicate":
      return full(rows[rows.length - 1]!);
    case "partial-update":
      return full(Object.assign({}, ...rows.map((r) => Object.fromEntries(Object.entries(r).filter(([, x]) => x !== null && x !== undefined)))) as Row);
    case "aggregation": {
      const out = full(rows[rows.length - 1]!);
      out["total"] = rows.reduce((s, r) => s + (r["total"] as number), 0);
      out["hi"] = Math.max(...rows.map((r) => r["hi"] as number));
      out["note"] = rows.reduceRight<unknown>((found, r) => found ?? r["note"], null);
      return out;
    }
  }
}

/** Column `n` of a read row and of a model row hold the same value (a BIGINT may be read as bigint or number). */
const sameValue = (a: unknown, b: unknown): boolean => (a ?? null) === (b ?? null) || (a !== null && a !== undefined && b !== null && b !== undefined && String(a) === String(b));

/** Every subset of `xs` (2^n of them). */
function subsets<T>(xs: readonly T[]): T[][] {
  return xs.reduce<T[][]>((all, x) => [...all, ...all.map((s) => [...s, x])], [[]]);
}

/**
 * Whether `found` is a state key K may hold when, beside its acknowledged changes `acked` (stream order), any of its
 * unknown changes was stored too, each anywhere in the stream; "unverifiable" when too many to enumerate.
 */
export function mayHold(w: PkEngineWorkload, acked: readonly PkChange[], unknowns: readonly PkChange[], found: Row | null): boolean | "unverifiable" {
  const model = foldRows(w, acked);
  if (found === null) return model === null; // an unknown change never removes a row: none is a retraction
  const col = (n: string): unknown => found[n] ?? null;
  switch (w.engine) {
    case "deduplicate":
    case "first-row":
      // The last (deduplicate) or first (first-row) change stored may be any unknown one.
      return [model, ...unknowns.map((u) => foldRows(w, [u]))].some((r) => r !== null && w.names.every((n) => sameValue(col(n), r[n])));
    case "partial-update":
      // Each column: the model's value, or one an unknown change set (it may have been stored after the others).
      return w.names.every((n) => sameValue(col(n), model?.[n] ?? null) || unknowns.some((u) => (w.row(u)[n] ?? null) !== null && sameValue(col(n), w.row(u)[n])));
    case "aggregation": {
      if (unknowns.length > MAX_ENUMERATED_UNKNOWNS) return "unverifiable";
      return subsets(unknowns).some((s) => {
        const whole = foldRows(w, [...acked, ...s]);
        if (whole === null) return false;
        // Sum and max do not depend on where the unknown ones sit; the last (non-null) values may be theirs.
        const lastV = [...(model === null ? [] : [model["v"]]), ...s.map((u) => u.v)];
        const notes = s.map((u) => w.row(u)["note"] ?? null).filter((x) => x !== null);
        const lastNote = notes.length === 0 ? [model?.["note"] ?? null] : [...notes, ...(model?.["note"] == null ? [] : [model["note"]])];
        return sameValue(col("total"), whole["total"]) && sameValue(col("hi"), whole["hi"]) && lastV.some((x) => sameValue(col("v"), x)) && lastNote.some((x) => sameValue(col("note"), x));
      });
    }
  }
}

/** The row `found` names by its `v`: the change of the key that wrote it, if any. */
const sourceOf = (changes: readonly PkChangeOutcome[], found: Row): PkChangeOutcome | undefined => changes.find((c) => c.v === Number(found["v"]));

/**
 * Judges `rows` (a whole read of the table, every column of `w.names`) against the model of `changes` for an engine
 * whose load has no retractions (partial-update, aggregation, first-row). Findings: `missing` (no row where an
 * acknowledged change left one), `stale` (a row whose values no allowed history gives: an acknowledged change lost,
 * applied twice or out of order — for aggregation a sum off), `unexpected` (a row of a key with no stored change, a
 * `v` never published for the key, or a refused change's), `duplicateKeys`; `unverifiable` keys are counted apart.
 * Pure.
 */
export function judgeEngineRows(w: PkEngineWorkload, changes: Iterable<PkChangeOutcome>, rows: Iterable<Row>): PkJudgement {
  if (w.retractions) throw new Error(`judgeEngineRows judges loads without retractions; ${w.engine}'s is judged by judgePkRows`);
  const byKey = histories(changes);
  const { read, rowsRead } = rowsByKey(rows);
  const j = { missing: [] as number[], resurrected: [] as number[], stale: [] as number[], unexpected: [] as number[], failedLanded: [] as number[], duplicateKeys: [] as number[], unverifiable: [] as number[] };
  for (const [key, list] of read) {
    if (list.length > 1) j.duplicateKeys.push(key);
    if (!byKey.has(key)) j.unexpected.push(key);
  }
  let ambiguous = 0;
  let expectedRows = 0;
  for (const [key, h] of byKey) {
    const model = foldRows(w, h.acked);
    if (model !== null) expectedRows++;
    const found = read.get(key)?.[0] ?? null;
    if (found === null ? model === null : model !== null && sameRow(found, model)) continue;
    const unknowns = h.changes.filter((c) => c.status === "unknown");
    const may = unknowns.length === 0 ? false : mayHold(w, h.acked, unknowns, found);
    if (may === true) ambiguous++;
    else if (may === "unverifiable") j.unverifiable.push(key);
    else if (found === null) j.missing.push(key);
    else {
      const source = sourceOf(h.changes, found);
      if (source?.status === "failed") j.failedLanded.push(key);
      if (model === null || source === undefined || source.status === "failed") j.unexpected.push(key);
      else j.stale.push(key);
    }
  }
  const findings = j.missing.length + j.stale.length + j.unexpected.length + j.duplicateKeys.length;
  const describe = (): string => {
    const unverified = j.unverifiable.length === 0 ? "" : `; ${j.unverifiable.length} keys unverifiable (more than ${MAX_ENUMERATED_UNKNOWNS} unacknowledged changes each), e.g. keys ${j.unverifiable.slice(0, 8).join(", ")}`;
    if (findings === 0) return `every one of ${byKey.size - j.unverifiable.length} keys holds the ${w.engine} state of its acknowledged changes in stream order${ambiguous > 0 ? ` (${ambiguous} with unacknowledged ones, which may have been stored)` : ""}; no key twice${unverified}`;
    const part = (name: string, keys: number[], what: string): string => (keys.length === 0 ? "" : `${keys.length} ${name} (${what}), e.g. keys ${keys.slice(0, 8).join(", ")}`);
    return [
      part("missing", j.missing, "an acknowledged change left no row"),
      part("stale", j.stale, `values no ${w.engine} fold of the acknowledged changes gives: one lost, applied twice or out of order`),
      part("unexpected", j.unexpected, "a row no stored change wrote, or a failed publish's"),
      part("duplicate keys", j.duplicateKeys, "read more than once"),
    ]
      .filter(Boolean)
      .join("; ") + unverified;
  };
  return { keys: byKey.size, changes: countOutcomes(byKey), rowsRead, expectedRows, ambiguous, ...j, findings, describe };
}
