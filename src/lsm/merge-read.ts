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
 * A bucket's files are held decoded (Arrow) while it merges; the merge itself looks at the key, sequence and kind
 * columns only, and only the surviving rows are gathered, a batch at a time. A streaming merge of the bucket's sorted
 * runs would bound the decoded files too.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { compareValues } from "../codec/stats.ts";
import type { DataField } from "../format/data-types.ts";
import type { Value } from "../format/values.ts";
import type { Table } from "../table/table.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "./key-value-fields.ts";

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

/** A bucket's versions as the merge sees them: `n` of them in file order, each with its key, sequence and kind. */
export interface BucketVersions {
  readonly n: number;
  /** The value of key field `k` of version `i` (canonical; null only in files that break Paimon's NOT NULL keys). */
  key(i: number, k: number): Value;
  sequence(i: number): bigint;
  kind(i: number): number;
}

/**
 * Which versions of one bucket survive the merge, in key order: per key the version with the highest sequence number
 * (on a tie the one read later: files come in sequence order), none when it retracts the key — unless `ignoreDelete`:
 * retractions are then passed over. Returns indexes into `v`.
 */
export function mergeBucket(v: BucketVersions, keyFields: readonly DataField[], opts: { ignoreDelete: boolean }): number[] {
  const compareKeys = (i: number, j: number): number => {
    for (let k = 0; k < keyFields.length; k++) {
      const x = v.key(i, k);
      const y = v.key(j, k);
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1;
        continue;
      }
      const c = compareValues(keyFields[k]!.type, x, y);
      if (c !== 0) return c;
    }
    return 0;
  };
  const order = Array.from({ length: v.n }, (_, i) => i);
  order.sort((i, j) => {
    const c = compareKeys(i, j);
    if (c !== 0) return c;
    const si = v.sequence(i);
    const sj = v.sequence(j);
    return si < sj ? -1 : si > sj ? 1 : i - j;
  });
  const out: number[] = [];
  let at = 0;
  while (at < order.length) {
    let end = at + 1;
    while (end < order.length && compareKeys(order[at]!, order[end]!) === 0) end++;
    // The key's versions, oldest first: the latest decides (or, ignoring deletes, the latest that is no retraction).
    for (let k = end - 1; k >= at; k--) {
      const kind = v.kind(order[k]!);
      const retracts = kind === UPDATE_BEFORE || kind === DELETE;
      if (retracts && opts.ignoreDelete) continue;
      if (!retracts) out.push(order[k]!);
      break;
    }
    at = end;
  }
  return out;
}

/** `ignore-delete` as Paimon reads it (with its deduplicate-specific fallback key). */
export function ignoreDeleteOf(table: Table): boolean {
  return table.options.bool("ignore-delete") || table.options.bool("deduplicate.ignore-delete");
}
