/**
 * The rules of lookup compaction (Java Paimon 1.4.2's LookupMergeFunction, LookupChangelogMergeFunctionWrapper and
 * FirstRowMergeFunctionWrapper), without any IO: which of a key's versions a lookup table merges, and which
 * changelog rows (`changelog-producer = lookup`) a compaction that takes level-0 files emits for the key.
 *
 * A lookup table (`changelog-producer = lookup`, `force-lookup`; first-row tables have rules of their own, below)
 * keeps one invariant: a version at a level ≥ 1 is the key's whole merged value as of its compaction — a compaction
 * that takes level-0 versions of a key merges them with the key's value BEFORE it, found in the compaction's own
 * higher-level files or looked up in the levels above its output. The older versions further down are then states
 * that value already holds, so every merge (reads, lookups, compactions) takes a key's versions at level 0 and only
 * the newest one above (the lowest level ≥ 1) — Java's LookupMergeFunction. For deduplicate this changes nothing;
 * for partial-update and aggregation it is what keeps a value from being counted twice.
 *
 * The changelog of a key with level-0 versions compares that before-value with the merged result:
 * no before (or a retraction) and a row → +I(result); a before and no row → -D(before); a before and a row →
 * -U(before), +U(result), left out when `changelog-producer.row-deduplicate` finds the values equal (but for the
 * `changelog-producer.row-deduplicate-ignore-fields`). First-row tables emit +I for a key nothing above holds, and
 * drop the level-0 version of a key that is held above (its first row is that one).
 */
import { isDeepStrictEqual } from "node:util";
import { dataInvalid } from "../errors.ts";
import type { TableSchema } from "../format/schema.ts";
import type { Value } from "../format/values.ts";
import { TableOptions } from "../options.ts";
import { isRetract, RowKind } from "./row-kind.ts";

/** How the lookup of a table's compaction works, from its options (null: not a lookup table). */
export interface LookupCompaction {
  /** First-row: a level-0 version only survives for a key nothing above holds (Java's FirstRowMergeFunctionWrapper). */
  readonly firstRow: boolean;
  /** `changelog-producer = lookup`: the compaction writes changelog files (else it only looks before-values up). */
  readonly produceChangelog: boolean;
  /** `changelog-producer.row-deduplicate`: whether two value rows (the table's columns) count as equal; null: off. */
  readonly equal: ((before: readonly Value[], after: readonly Value[]) => boolean) | null;
}

/** Whether the table needs lookup (Java's CoreOptions.needLookup): lookup changelog, first-row, deletion vectors or force-lookup. */
export function needsLookup(options: TableOptions): boolean {
  const engine = (options.get("merge-engine") ?? "deduplicate").trim().toLowerCase();
  return changelogProducerOf(options) === "lookup" || engine === "first-row" || options.bool("deletion-vectors.enabled") || options.bool("force-lookup");
}

/** `changelog-producer`, lower case (default none). */
export function changelogProducerOf(options: TableOptions): string {
  return (options.get("changelog-producer") ?? "none").trim().toLowerCase();
}

/** The lookup compaction of a primary-key table, or null when it needs none. */
export function lookupCompactionOf(schema: TableSchema): LookupCompaction | null {
  const options = new TableOptions(schema.options);
  if (!needsLookup(options)) return null;
  const firstRow = (options.get("merge-engine") ?? "deduplicate").trim().toLowerCase() === "first-row";
  const produceChangelog = changelogProducerOf(options) === "lookup";
  return { firstRow, produceChangelog, equal: produceChangelog && !firstRow ? rowDeduplicateOf(schema, options) : null };
}

/**
 * `changelog-producer.row-deduplicate` (false) with `changelog-producer.row-deduplicate-ignore-fields`: equality of two
 * value rows on every column but the ignored ones (a field not in the table is DataInvalid). Values compare by their
 * canonical form (NaN equals NaN; −0.0 and 0.0 differ, as their bits do).
 */
export function rowDeduplicateOf(schema: TableSchema, options: TableOptions): ((a: readonly Value[], b: readonly Value[]) => boolean) | null {
  if (!options.bool("changelog-producer.row-deduplicate")) return null;
  const ignored = (options.get("changelog-producer.row-deduplicate-ignore-fields") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const name of ignored) {
    if (!schema.fields.some((f) => f.name === name)) throw dataInvalid(`changelog-producer.row-deduplicate-ignore-fields names '${name}', which is not a field of the table`, { option: "changelog-producer.row-deduplicate-ignore-fields" });
  }
  const compared = schema.fields.map((f, i) => (ignored.includes(f.name) ? -1 : i)).filter((i) => i >= 0);
  return (a, b) => compared.every((i) => isDeepStrictEqual(a[i] ?? null, b[i] ?? null));
}

/** The newest of a key's versions above level 0: the one at the lowest level ≥ 1 (Java's pickHighLevel), or null. */
export function highLevelOf<V>(versions: readonly V[], level: (v: V) => number): V | null {
  let high: V | null = null;
  for (const v of versions) if (level(v) > 0 && (high === null || level(v) < level(high))) high = v;
  return high;
}

/** The versions a lookup table merges (Java's LookupMergeFunction): those at level 0, and the newest above. */
export function lookupMergeVersions<V>(versions: readonly V[], level: (v: V) => number): V[] {
  const high = highLevelOf(versions, level);
  return versions.filter((v) => level(v) <= 0 || v === high);
}

/** One changelog row: a kind and the version (or merged row) whose key, sequence number and values it carries. */
export interface Change<R> {
  readonly kind: RowKind;
  readonly row: R;
}

/**
 * The changelog of a key whose versions include level 0 (Java's LookupChangelogMergeFunctionWrapper.setChangelog):
 * `before` is its value before the compaction (null: none), `after` the merged result (null: nothing survives);
 * `kindOf` tells their kinds and `equal` (row-deduplicate) compares their values.
 */
export function lookupChangelog<R>(before: R | null, after: R | null, kindOf: (r: R) => number, equal: ((before: R, after: R) => boolean) | null): Change<R>[] {
  const isAdd = (r: R | null): r is R => r !== null && !isRetract(kindOf(r));
  if (!isAdd(before)) return isAdd(after) ? [{ kind: RowKind.INSERT, row: after }] : [];
  if (!isAdd(after)) return [{ kind: RowKind.DELETE, row: before }];
  if (equal !== null && equal(before, after)) return [];
  return [
    { kind: RowKind.UPDATE_BEFORE, row: before },
    { kind: RowKind.UPDATE_AFTER, row: after },
  ];
}

/** What a first-row compaction keeps of a key and emits for it (Java's FirstRowMergeFunctionWrapper). */
export interface FirstRowOutcome<R> {
  /** The version written to the output (null: none — the key's first row is held above). */
  readonly result: R | null;
  /** Its changelog: the result itself (kind as stored) for a key new to the table, else nothing. */
  readonly changelog: readonly R[];
}

/**
 * First-row: `result` is the first version of the key in the compaction; `hasHighLevel` whether one of its versions
 * is at a level ≥ 1; `heldAbove` whether a level above the output holds the key (asked only when needed).
 */
export function firstRowOutcome<R>(result: R | null, hasHighLevel: boolean, heldAbove: () => boolean): FirstRowOutcome<R> {
  if (result === null || hasHighLevel) return { result, changelog: [] };
  if (heldAbove()) return { result: null, changelog: [] };
  return { result, changelog: [result] };
}
