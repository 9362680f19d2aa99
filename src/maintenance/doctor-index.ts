/**
 * `natslake doctor`'s check of the index files of tables Java wrote with deletion vectors (or a hash index): every
 * retained snapshot's index manifest decodes, and every index file it lists exists with the size the manifest says;
 * a deletion vector file's version byte and each of its vectors (frame, CRC, bitmap, cardinality) decode too. Each
 * manifest and file is read once, with the snapshots that use it. Problems come back with the error that names them;
 * doctor.ts turns them into findings.
 */
import { dataInvalid, ErrorKind, isLakeError } from "../errors.ts";
import { DELETION_VECTORS_INDEX, type IndexManifestEntry } from "../format/index-manifest.ts";
import { FileKind } from "../format/manifest.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { checkIndexFileVersion, readDeletionVector } from "../format/wire/deletion-vectors.ts";
import { decodeTableFile, missingFile } from "../table/damaged-file.ts";
import { indexFilePath, readIndexManifest } from "../table/deletion-vectors.ts";
import type { Table } from "../table/table.ts";

export interface IndexProblem {
  check: "index-manifest" | "index-file";
  path: string;
  /** The snapshots that use the file. */
  snapshots: number[];
  /** The error reading it gave (a damaged-file or missing-file error). */
  error: unknown;
}

/** Checks the index manifests and index files `snapshots` use; how many index files were checked, and the problems. */
export async function checkIndexFiles(table: Table, snapshots: Iterable<Snapshot>): Promise<{ indexFiles: number; problems: IndexProblem[] }> {
  const byManifest = new Map<string, number[]>();
  for (const s of snapshots) if (s.indexManifest !== null) byManifest.set(s.indexManifest, [...(byManifest.get(s.indexManifest) ?? []), s.id]);
  const problems: IndexProblem[] = [];
  const files = new Map<string, { entry: IndexManifestEntry; snapshots: Set<number> }>();
  for (const [name, users] of byManifest) {
    let entries: IndexManifestEntry[];
    try {
      entries = await readIndexManifest(table, { indexManifest: name });
    } catch (e) {
      if (!isLakeError(e)) throw e;
      problems.push({ check: "index-manifest", path: table.paths.manifestPath(name), snapshots: users, error: e });
      continue;
    }
    for (const e of entries) {
      if (e.kind !== FileKind.ADD) continue;
      const path = indexFilePath(table, e);
      const held = files.get(path) ?? { entry: e, snapshots: new Set<number>() };
      for (const id of users) held.snapshots.add(id);
      files.set(path, held);
    }
  }
  for (const [path, { entry, snapshots: users }] of files) {
    const error = await indexFileError(table, path, entry);
    if (error !== null) problems.push({ check: "index-file", path, snapshots: [...users].sort((a, b) => a - b), error });
  }
  return { indexFiles: files.size, problems };
}

/** What is wrong with one index file, or null. */
async function indexFileError(table: Table, path: string, entry: IndexManifestEntry): Promise<unknown> {
  const uri = table.io.uriOf(path);
  const remedy = "restore it from a backup";
  let bytes: Uint8Array;
  try {
    bytes = await table.io.readFile(path);
  } catch (e) {
    if (!isLakeError(e)) throw e;
    return isLakeError(e, ErrorKind.NotFound) ? missingFile("index-file", path, remedy, e, uri) : e;
  }
  const f = entry.indexFile;
  try {
    decodeTableFile(
      "index-file",
      path,
      () => {
        if (bytes.length !== f.fileSize) throw dataInvalid(`it has ${bytes.length} bytes, its index manifest says ${f.fileSize}`);
        if (f.indexType !== DELETION_VECTORS_INDEX) return;
        checkIndexFileVersion(bytes, `index file ${uri}`);
        for (const range of f.dvRanges ?? []) readDeletionVector(bytes, range, Infinity, `index file ${uri}`);
      },
      remedy,
      uri,
    );
    return null;
  } catch (e) {
    return e;
  }
}
