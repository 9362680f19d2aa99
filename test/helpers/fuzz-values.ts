/**
 * Arbitraries of valid metadata values for the fuzz suites (test/fuzz/): data-file metadata, manifest entries,
 * manifest-list records and snapshots — what a valid encoding is made of before test/helpers/fuzz.ts's `mutated`
 * breaks it, and what round trips must return exactly.
 */
import fc from "fast-check";
import type { DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats } from "../../src/format/manifest.ts";
import type { Snapshot } from "../../src/format/snapshot.ts";

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const count = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const name = fc.stringMatching(/^[a-z0-9-]{1,24}\.parquet$/);

export const simpleStats: fc.Arbitrary<SimpleStats> = fc.record({
  minValues: fc.uint8Array({ maxLength: 24 }),
  maxValues: fc.uint8Array({ maxLength: 24 }),
  nullCounts: fc.array(fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n })), { maxLength: 4 }),
}, { noNullPrototype: true });

export const dataFileMeta: fc.Arbitrary<DataFileMeta> = fc.record({
  fileName: name,
  fileSize: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  rowCount: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  minKey: fc.uint8Array({ maxLength: 24 }),
  maxKey: fc.uint8Array({ maxLength: 24 }),
  keyStats: simpleStats,
  valueStats: simpleStats,
  minSequenceNumber: int64,
  maxSequenceNumber: int64,
  schemaId: fc.integer({ min: 0, max: 1000 }),
  level: fc.integer({ min: 0, max: 9 }),
  extraFiles: fc.array(name, { maxLength: 2 }),
  creationTimeMillis: fc.option(fc.integer({ min: 0, max: 2 ** 45 })),
  deleteRowCount: fc.option(count),
  embeddedIndex: fc.option(fc.uint8Array({ maxLength: 8 })),
  fileSource: fc.option(fc.constantFrom(0, 1)),
  valueStatsCols: fc.option(fc.array(fc.stringMatching(/^[a-z_]{1,8}$/), { maxLength: 3 })),
  externalPath: fc.option(fc.constantFrom("s3://b/x/data-1.parquet", "/tmp/ext/data-2.parquet")),
  firstRowId: fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n })),
  writeCols: fc.option(fc.array(fc.stringMatching(/^[a-z_]{1,8}$/), { maxLength: 3 })),
}, { noNullPrototype: true });

export const manifestEntry: fc.Arbitrary<ManifestEntry> = fc.record({
  kind: fc.constantFrom(0 as const, 1 as const),
  partition: fc.uint8Array({ maxLength: 24 }),
  bucket: fc.integer({ min: 0, max: 1024 }),
  totalBuckets: fc.integer({ min: -2, max: 1024 }),
  file: dataFileMeta,
}, { noNullPrototype: true });

export const manifestFileMeta: fc.Arbitrary<ManifestFileMeta> = fc.record({
  fileName: fc.stringMatching(/^manifest-[a-z0-9-]{1,20}$/),
  fileSize: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  numAddedFiles: fc.integer({ min: 0, max: 2 ** 40 }),
  numDeletedFiles: fc.integer({ min: 0, max: 2 ** 40 }),
  partitionStats: simpleStats,
  schemaId: fc.integer({ min: 0, max: 1000 }),
  minBucket: fc.option(fc.integer({ min: 0, max: 1024 })),
  maxBucket: fc.option(fc.integer({ min: 0, max: 1024 })),
  minLevel: fc.option(fc.integer({ min: 0, max: 9 })),
  maxLevel: fc.option(fc.integer({ min: 0, max: 9 })),
  minRowId: fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n })),
  maxRowId: fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n })),
}, { noNullPrototype: true });

export const snapshot: fc.Arbitrary<Snapshot> = fc.record({
  version: fc.constant(3),
  id: fc.integer({ min: 1, max: 2 ** 40 }),
  schemaId: fc.integer({ min: 0, max: 1000 }),
  baseManifestList: fc.stringMatching(/^manifest-list-[a-z0-9-]{1,20}$/),
  baseManifestListSize: fc.option(fc.integer({ min: 0, max: 2 ** 40 })),
  deltaManifestList: fc.stringMatching(/^manifest-list-[a-z0-9-]{1,20}$/),
  deltaManifestListSize: fc.option(fc.integer({ min: 0, max: 2 ** 40 })),
  changelogManifestList: fc.option(fc.stringMatching(/^manifest-list-[a-z0-9-]{1,20}$/)),
  changelogManifestListSize: fc.option(fc.integer({ min: 0, max: 2 ** 40 })),
  indexManifest: fc.option(fc.stringMatching(/^index-manifest-[a-z0-9-]{1,20}$/)),
  commitUser: fc.string({ minLength: 1, maxLength: 20 }),
  commitIdentifier: int64,
  commitKind: fc.constantFrom("APPEND", "COMPACT", "OVERWRITE", "ANALYZE") as fc.Arbitrary<Snapshot["commitKind"]>,
  timeMillis: fc.integer({ min: 0, max: 2 ** 45 }),
  totalRecordCount: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  deltaRecordCount: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  changelogRecordCount: fc.option(fc.integer({ min: 0, max: 2 ** 40 })),
  watermark: fc.option(int64),
  statistics: fc.option(fc.string({ maxLength: 10 })),
  properties: fc.option(fc.dictionary(fc.stringMatching(/^[a-z.-]{1,20}$/), fc.string({ maxLength: 12 }), { minKeys: 1, maxKeys: 4, noNullPrototype: true })),
  nextRowId: fc.option(fc.integer({ min: 0, max: 2 ** 40 })),
  uuid: fc.option(fc.uuid()),
  operation: fc.option(fc.constantFrom("CREATE", "DROP")),
}, { noNullPrototype: true });
