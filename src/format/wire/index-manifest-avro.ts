/**
 * Index manifests as Avro container files (Java's IndexManifestEntrySerializer, `_VERSION` 1): read only — natslake
 * writes no index. Fields by name from the file's writer schema: `_KIND, _PARTITION, _BUCKET, _INDEX_TYPE, _FILE_NAME,
 * _FILE_SIZE, _ROW_COUNT`, `_DELETIONS_VECTORS_RANGES` (nullable array of {f0 data file, f1 offset, f2 length,
 * `_CARDINALITY` nullable}), `_EXTERNAL_PATH` (nullable); `_GLOBAL_INDEX` and fields of later versions are ignored.
 */
import { decodeAvroFile } from "../../codec/avro.ts";
import { LakeError, ErrorKind } from "../../errors.ts";
import type { DeletionVectorRange, IndexManifestEntry } from "../index-manifest.ts";
import { FileKind } from "../manifest.ts";
import { Fields } from "./avro-fields.ts";

/** `_VERSION` of index manifest entries (Java `IndexManifestEntrySerializer.getVersion`). */
export const INDEX_MANIFEST_FORMAT_VERSION = 1;

export function decodeIndexManifest(bytes: Uint8Array): IndexManifestEntry[] {
  return decodeAvroFile(bytes).records.map((raw, i) => {
    const r = new Fields(raw, `index manifest entry ${i}`);
    const version = r.optional("_VERSION", (k) => r.int(k));
    if (version !== null && version !== INDEX_MANIFEST_FORMAT_VERSION) {
      throw new LakeError(ErrorKind.Unsupported, `${r.where}: unsupported index manifest _VERSION ${version} (expected ${INDEX_MANIFEST_FORMAT_VERSION})`);
    }
    const kind = r.int("_KIND");
    if (kind !== FileKind.ADD && kind !== FileKind.DELETE) r.invalid("_KIND", `is an unknown file kind ${kind}`);
    return {
      kind: kind as FileKind,
      partition: r.bytes("_PARTITION"),
      bucket: r.int("_BUCKET"),
      indexFile: {
        indexType: r.string("_INDEX_TYPE"),
        fileName: r.string("_FILE_NAME"),
        fileSize: r.number("_FILE_SIZE"),
        rowCount: r.number("_ROW_COUNT"),
        dvRanges: r.optional("_DELETIONS_VECTORS_RANGES", (k) => r.array(k).map((x, j) => rangeFromWire(new Fields(x, r.where, `${k}[${j}].`)))),
        externalPath: r.optional("_EXTERNAL_PATH", (k) => r.string(k)),
      },
    };
  });
}

function rangeFromWire(f: Fields): DeletionVectorRange {
  const offset = f.int("f1");
  const length = f.int("f2");
  if (offset < 0) f.invalid("f1", `is a negative offset ${offset}`);
  if (length < 0) f.invalid("f2", `is a negative length ${length}`);
  return { dataFileName: f.string("f0"), offset, length, cardinality: f.optional("_CARDINALITY", (k) => f.number(k)) };
}
