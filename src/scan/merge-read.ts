/**
 * Merge-on-read of primary-key tables, as Paimon's batch read does it with the `deduplicate` merge engine.
 *
 * A primary-key table's data files hold, besides the row (every field, key fields included), Paimon's system columns:
 * `_KEY_<k>` (a copy of each key field), `_SEQUENCE_NUMBER` (per bucket, increasing in write order) and `_VALUE_KIND`
 * (the row kind: 0 `+I`, 1 `-U`, 2 `+U`, 3 `-D`). The files of one bucket may hold several versions of a key (level-0
 * files overlap; an update is a new version). A read keeps, per key, the version with the highest sequence number, and
 * drops the key when that version is a retraction (`-U`, `-D`); with `ignore-delete` retractions are skipped instead,
 * so the latest insert or update stays. Rows come out in key order within a bucket.
 *
 * What is not read (a clear Unsupported error, never rows that would be wrong): the other merge engines
 * (`partial-update`, `aggregation`, `first-row`), a `sequence.field`, deletion vectors, and reads of what snapshots
 * added (incremental reads, consumers: a primary-key table's changes are a changelog, not appended rows).
 *
 * A bucket's versions are merged in memory (its files' rows, of the columns read); a streaming merge of the bucket's
 * sorted runs would bound that by the number of files.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { compareValues } from "../codec/stats.ts";
import { parseColumnList, type DataField } from "../spec/data-types.ts";
import type { Row, Value } from "../spec/values.ts";
import type { Table } from "../table/table.ts";

/** Paimon's system fields of primary-key data files, with their reserved ids (Integer.MAX_VALUE − 1, − 2). */
const [SEQ, KIND] = parseColumnList("_SEQUENCE_NUMBER BIGINT NOT NULL, _VALUE_KIND TINYINT NOT NULL");
export const SEQUENCE_NUMBER_FIELD: DataField = { id: 2147483646, name: SEQ!.name, type: SEQ!.type };
export const VALUE_KIND_FIELD: DataField = { id: 2147483645, name: KIND!.name, type: KIND!.type };

/** Whether `f` is one of the system fields above (read from a data file by name: no table schema has them). */
export function isSystemField(f: DataField): boolean {
  return f.id === SEQUENCE_NUMBER_FIELD.id || f.id === VALUE_KIND_FIELD.id;
}

/** Row kinds that retract a key's earlier version. */
const UPDATE_BEFORE = 1;
const DELETE = 3;

/** Throws Unsupported, naming the option, when a primary-key table needs more than the deduplicate merge. */
export function checkMergeReadable(table: Table): void {
  const o = table.options;
  const engine = o.get("merge-engine") ?? "deduplicate";
  const refuse = (why: string): never => {
    throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key and ${why}: natslake reads primary-key tables with the deduplicate merge engine only`);
  };
  if (engine !== "deduplicate") refuse(`merge-engine = ${engine}`);
  if (o.get("sequence.field") !== undefined) refuse(`a sequence.field (${o.get("sequence.field")})`);
  if (o.bool("deletion-vectors.enabled")) refuse("deletion vectors enabled");
}

/** The fields a merge needs besides the wanted ones: every key field, then the two system fields. */
export function mergeReadFields(table: Table, wanted: readonly DataField[]): DataField[] {
  const out = [...wanted];
  for (const k of table.schema.primaryKeys) {
    if (out.some((f) => f.name === k)) continue;
    out.push(table.schema.fields.find((f) => f.name === k)!);
  }
  return [...out, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
}

/**
 * The rows of one bucket after the merge: per key the version with the highest `_SEQUENCE_NUMBER` (on a tie the one
 * read later: files come in sequence order), none when it retracts the key (unless `ignoreDelete`: retractions are
 * then passed over), in key order. `rows` are the bucket's versions in file order, with the key fields and the system
 * fields; the result keeps them (the caller projects).
 */
export function mergeBucketRows(rows: readonly Row[], keyFields: readonly DataField[], opts: { ignoreDelete: boolean }): Row[] {
  const compareKeys = (a: Row, b: Row): number => {
    for (const f of keyFields) {
      const x = a[f.name] ?? null;
      const y = b[f.name] ?? null;
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1; // a nullable key (primary keys are NOT NULL in Paimon, but files decide)
        continue;
      }
      const c = compareValues(f.type, x, y);
      if (c !== 0) return c;
    }
    return 0;
  };
  const seqOf = (r: Row): bigint => BigInt(r[SEQUENCE_NUMBER_FIELD.name] as Value as number | bigint);
  const order = rows.map((_, i) => i);
  // Stable: versions of one key with one sequence number keep their file order.
  order.sort((i, j) => {
    const c = compareKeys(rows[i]!, rows[j]!);
    if (c !== 0) return c;
    const si = seqOf(rows[i]!);
    const sj = seqOf(rows[j]!);
    return si < sj ? -1 : si > sj ? 1 : i - j;
  });
  const out: Row[] = [];
  let at = 0;
  while (at < order.length) {
    let end = at + 1;
    while (end < order.length && compareKeys(rows[order[at]!]!, rows[order[end]!]!) === 0) end++;
    // The key's versions, oldest first: the latest decides (or, ignoring deletes, the latest that is no retraction).
    let pick: Row | null = null;
    for (let k = end - 1; k >= at; k--) {
      const r = rows[order[k]!]!;
      const kind = Number(r[VALUE_KIND_FIELD.name]);
      const retracts = kind === UPDATE_BEFORE || kind === DELETE;
      if (retracts && opts.ignoreDelete) continue;
      if (!retracts) pick = r;
      break;
    }
    if (pick !== null) out.push(pick);
    at = end;
  }
  return out;
}

/** `ignore-delete` as Paimon reads it (with its deduplicate-specific fallback key). */
export function ignoreDeleteOf(table: Table): boolean {
  return table.options.bool("ignore-delete") || table.options.bool("deduplicate.ignore-delete");
}
