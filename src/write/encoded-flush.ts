/**
 * A bucket's flush encoded away from its TableWrite (a cluster writer's worker thread keeps the rows and encodes
 * them there): an append table's data files, or a primary-key table's sorted run and changelog file. The TableWrite
 * writes them as files of its bucket (`commitEncoded`), with the sequence numbers a flush there would have given.
 */
import type { EncodedKeyValueFile } from "../lsm/key-value-file-writer.ts";
import type { EncodedFile } from "./data-file-writer.ts";

export type EncodedFlush =
  | { kind: "append"; files: EncodedFile[] }
  | {
      kind: "keyed";
      /** Rows flushed: each took one sequence number, `firstSeq` … `firstSeq + rows − 1`. */
      rows: number;
      /** The folded rows as one level-0 sorted run (null when nothing survived). */
      data: EncodedKeyValueFile | null;
      /** With `changelog-producer = input`: every row, unfolded. */
      changelog: EncodedKeyValueFile | null;
    };
