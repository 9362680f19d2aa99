/**
 * The levels of a bucket above a compaction's output level, as a lookup compaction asks them for a key's value
 * before the compaction (Java's LookupLevels.lookup(key, outputLevel + 1)): level by level from the lowest, the
 * first level with a file whose key range holds the key and a row of it answers — that row as it is stored, a
 * retraction included (a retraction is then no before-value, but it still takes part in the merge, as in Java).
 *
 * A level ≥ 1 is one sorted run, so a key is in at most one file of it (found by binary search on the files' key
 * ranges). Which rows a file holds is the caller's (`rowsOf`: src/maintenance/compact-pk.ts decodes the file —
 * through a cache of decoded files when it has one — and binary-searches it, src/scan/lookup.ts `DecodedFile`).
 */
import type * as arrow from "apache-arrow";
import { columnReader } from "../codec/columns/value-readers.ts";
import type { DataField } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { Value } from "../format/values.ts";
import type { SerializedKeys } from "./key-comparator.ts";
import type { LevelsAbove, RowAbove } from "./merge-reader.ts";

/** A file's rows of these keys (ascending, each once), in key order: batches of the file's decoded columns. */
export type RowsOf = (file: DataFileMeta, keys: readonly Value[][]) => Promise<arrow.RecordBatch[]>;

interface Ranged {
  file: DataFileMeta;
  min: Value[];
  max: Value[];
}

/** The bucket files at levels above `outputLevel`, asked through `rowsOf`. */
export function levelsAbove(files: readonly DataFileMeta[], outputLevel: number, keys: SerializedKeys, keyFields: readonly DataField[], rowsOf: RowsOf): LevelsAbove {
  const byLevel = new Map<number, Ranged[]>();
  for (const file of files) {
    if (file.level <= outputLevel) continue;
    const list = byLevel.get(file.level) ?? [];
    byLevel.set(file.level, list);
    list.push({ file, min: keys.decode(file.minKey), max: keys.decode(file.maxKey) });
  }
  const levels = [...byLevel.keys()].sort((a, b) => a - b).map((l) => byLevel.get(l)!.sort((a, b) => keys.compare(a.min, b.min)));
  const compare = keys.compare;

  /** The file of a sorted run whose range holds `key`, or null. */
  const fileOf = (run: readonly Ranged[], key: Value[]): Ranged | null => {
    let lo = 0;
    let hi = run.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(run[mid]!.max, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    const f = run[lo];
    return f !== undefined && compare(f.min, key) <= 0 ? f : null;
  };

  return {
    async find(wanted) {
      const answers: Array<RowAbove | null> = wanted.map(() => null);
      let open = wanted.map((_, i) => i);
      for (const run of levels) {
        if (open.length === 0) break;
        const asked = new Map<Ranged, number[]>();
        for (const i of open) {
          const f = fileOf(run, wanted[i]!);
          if (f !== null) asked.set(f, [...(asked.get(f) ?? []), i]);
        }
        await Promise.all(
          [...asked].map(async ([f, idx]) => {
            const batches = await rowsOf(f.file, idx.map((i) => wanted[i]!));
            // The rows come in key order, each one of the keys asked: walk both.
            let at = 0;
            for (const batch of batches) {
              const readers = keyFields.map((k) => {
                const column = batch.schema.fields.findIndex((x) => x.name === k.name);
                return columnReader(k.type, batch.data.children[column]!);
              });
              for (let row = 0; row < batch.numRows; row++) {
                const key = readers.map((read) => read(row));
                while (at < idx.length && compare(wanted[idx[at]!]!, key) < 0) at++;
                if (at < idx.length && compare(wanted[idx[at]!]!, key) === 0) answers[idx[at++]!] = { batch, row, level: f.file.level };
              }
            }
          }),
        );
        open = open.filter((i) => answers[i] === null);
      }
      return answers;
    },
  };
}
