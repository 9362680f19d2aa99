/**
 * Deduplicate (Paimon's default engine, DeduplicateMergeFunction): the last version in merge order survives as it
 * is; with `ignore-delete` retractions are passed over (a key whose every version retracts leaves nothing). A
 * surviving retraction is returned like any other version: a reader drops the key, a flush or a compaction that
 * keeps deletes writes it.
 */
import { isRetract } from "../row-kind.ts";
import type { MergeFunction, MergeResult, VersionAccess } from "./merge-function.ts";

export class DeduplicateFunction<V> implements MergeFunction<V> {
  private latest: V | null = null;

  constructor(
    private readonly access: VersionAccess<V>,
    private readonly ignoreDelete: boolean,
  ) {}

  reset(): void {
    this.latest = null;
  }

  add(v: V): void {
    if (this.ignoreDelete && isRetract(this.access.kind(v))) return;
    this.latest = v;
  }

  result(): MergeResult<V> {
    return this.latest;
  }
}
