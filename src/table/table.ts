/**
 * A Table handle: where the table lives, its schema (the latest at load time), its options, and the managers of
 * its directories. Handles are cheap; reload one to see a newer schema. `inSchema` gives the handle a read of an
 * older snapshot uses: that snapshot's own schema (time travel).
 */
import type { FileIO } from "../io/file-io.ts";
import { PathFactory } from "../io/paths.ts";
import { TableOptions } from "../options.ts";
import type { DataType } from "../format/data-types.ts";
import { bucketKeys, fieldByName, type TableSchema } from "../format/schema.ts";
import { createBucketFunctionOfType, type BucketFunction, type BucketFunctionType } from "../format/bucket.ts";
import { SchemaManager } from "./schema-manager.ts";
import { SnapshotManager } from "./snapshot-manager.ts";

export interface Identifier {
  database: string;
  table: string;
}

export const identifierText = (id: Identifier): string => `${id.database}.${id.table}`;

export class Table {
  readonly paths: PathFactory;
  readonly options: TableOptions;
  readonly snapshots: SnapshotManager;
  readonly schemas: SchemaManager;

  constructor(
    readonly identifier: Identifier,
    /** The table's directory as its FileIO names it (on S3 `/prefix/<db>.db/<table>`, no bucket: see `location`). */
    readonly root: string,
    readonly io: FileIO,
    readonly schema: TableSchema,
  ) {
    this.paths = new PathFactory(root);
    this.options = new TableOptions(schema.options);
    this.snapshots = new SnapshotManager(io, this.paths);
    this.schemas = new SchemaManager(io, this.paths);
  }

  /**
   * This table as a read of an older snapshot sees it: the columns, field ids and keys of `schema` (the snapshot's
   * `schemaId`), with this handle's options — Paimon's time travel copies the snapshot's schema with the table's
   * current options. This handle itself when `schema` is its own.
   */
  inSchema(schema: TableSchema): Table {
    if (schema.id === this.schema.id) return this;
    return new Table(this.identifier, this.root, this.io, { ...schema, options: this.schema.options });
  }

  get name(): string {
    return identifierText(this.identifier);
  }
  /** Where the table lives, as a user names it: its directory, or `s3://bucket/prefix/<db>.db/<table>`. */
  get location(): string {
    return this.io.uriOf(this.root);
  }
  get isPrimaryKeyTable(): boolean {
    return this.schema.primaryKeys.length > 0;
  }
  get bucket(): number {
    return this.options.bucket;
  }
  get bucketKeys(): string[] {
    return bucketKeys(this.schema);
  }
  get partitionKeys(): string[] {
    return this.schema.partitionKeys;
  }
  /**
   * The bucket of a row from its bucket-key values (in `bucketKeys` order), by the table's `bucket-function.type` —
   * the writer's function, so it agrees with Java's. `numBuckets`: a partition's own count when it was written with
   * another than the table's option says now.
   */
  bucketFunction(numBuckets = this.bucket): BucketFunction {
    const type = (this.options.get("bucket-function.type") ?? "default") as BucketFunctionType;
    return createBucketFunctionOfType(type, this.bucketKeys.map((k) => this.typeOf(k)), numBuckets);
  }
  typeOf(column: string): DataType {
    return fieldByName(this.schema, column).type;
  }
  get partitionTypes(): DataType[] {
    return this.schema.partitionKeys.map((k) => this.typeOf(k));
  }
}
