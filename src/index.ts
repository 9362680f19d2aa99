/**
 * natslake's table library: read and write Apache Paimon tables on a local-filesystem warehouse.
 * This is the public surface; modules inside src/ never import it (no barrels from inside).
 */
export { LakeError, ErrorKind, isLakeError } from "./errors.ts";
export { Catalog, parseIdentifier } from "./table/catalog.ts";
// `validateName`: the name this check had before src/names.ts (kept for callers of earlier versions).
export { checkName, checkNewName, checkName as validateName, NEW_NAME_RULES, type NameKind } from "./names.ts";
export { Table, type Identifier } from "./table/table.ts";
export { parseColumnList, parseSqlType, typeToSql, T, type DataType, type DataField } from "./format/data-types.ts";
export { Timestamp, formatDecimal, toCanonical, toJsonValue, type Row, type Value } from "./format/values.ts";
export type { TableSchema, SchemaInput } from "./format/schema.ts";
export type { AddColumn } from "./format/schema-change.ts";
export type { Snapshot } from "./format/snapshot.ts";
export { BatchWriter, describeOverwrite, type OverwriteSpec } from "./write/batch-writer.ts";
export { TableWrite } from "./write/table-write.ts";
export { FileStoreCommit, type CommitRequest, type CommitResult } from "./commit/file-store-commit.ts";
export type { CommitMessage } from "./commit/commit-message.ts";
export { planScan, tableForRead, type DataSplit, type ScanPlan, type ScanSpec } from "./scan/plan.ts";
export { readBatches, readRows, readAllRows, planRead, readPlanRows, readColumns, type ReadSpec } from "./scan/read.ts";
export { KeyLookup, lookupKeys, LruDecodedFileCache, DecodedFile, type LookupKey, type LookupSpec, type LookupStats, type DecodedFileCache } from "./scan/lookup.ts";
export { createBucketFunction } from "./format/bucket.ts";
export { createTag, deleteTag, getTag, listTags, type Tag } from "./table/tags.ts";
export { expireSnapshots, type ExpireOptions, type ExpireResult } from "./maintenance/expire-snapshots.ts";
export { expirePartitions } from "./maintenance/expire-partitions.ts";
export { removeOrphans } from "./maintenance/remove-orphans.ts";
export { rollback } from "./maintenance/rollback.ts";
export { parseIncrementalRange, planIncremental, type IncrementalRange } from "./scan/incremental.ts";
export { compactTable, planCompaction, rewrite, commitCompaction, abortCompaction, type CompactionTask, type CompactResult, type CompactSummary } from "./maintenance/compact.ts";
