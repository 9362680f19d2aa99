/**
 * First-row (Paimon 1.4.2's FirstRowMergeFunction): the first version of a key in merge order survives as it is;
 * retractions are refused unless `ignore-delete` (passed over). A key whose every version was passed over leaves
 * nothing.
 *
 * Java's batch reads skip the level-0 files of first-row tables (CoreOptions.batchScanSkipLevel0): a row is visible
 * once a compaction has moved it up, which Java's writers do at every compaction trigger (ForceUpLevel0Compaction,
 * src/lsm/universal-compaction.ts) and natslake's cluster writers do the same. natslake's reads skip level 0 too
 * (src/scan/read.ts), so they show what Java shows.
 */
import { dataInvalid } from "../../errors.ts";
import { isRetract } from "../row-kind.ts";
import type { MergeFunction, MergeResult, VersionAccess } from "./merge-function.ts";

/** Why first-row refuses a retraction (Java's words). */
export const FIRST_ROW_RETRACTION = "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records.";

export class FirstRowFunction<V> implements MergeFunction<V> {
  private first: V | null = null;

  constructor(
    private readonly access: VersionAccess<V>,
    private readonly ignoreDelete: boolean,
  ) {}

  reset(): void {
    this.first = null;
  }

  add(v: V): void {
    if (isRetract(this.access.kind(v))) {
      if (this.ignoreDelete) return;
      throw dataInvalid(FIRST_ROW_RETRACTION, { reason: "retraction-refused" });
    }
    this.first ??= v;
  }

  result(): MergeResult<V> {
    return this.first;
  }
}
