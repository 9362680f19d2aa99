/**
 * The filesystem catalog: a warehouse directory (or object-store prefix) holding `<db>.db/<table>/` directories, as
 * Paimon's own filesystem catalog lays them out. A database is just its directory; a table exists when its `schema/schema-N`
 * exists. Names are checked before any path is built from them, and a new database or table takes only the names
 * src/names.ts allows new ones.
 */
import { validateChangelogProducer, validateRowKindField, validateWritableSchema } from "../lsm/table-rules.ts";
import { ingestFormatOf } from "../cdc/ingest-format.ts";
import { join } from "node:path";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import type { FileIO } from "../io/file-io.ts";
import { openWarehouse, parseWarehouse, type Warehouse } from "../io/warehouse.ts";
import { PathFactory } from "../io/paths.ts";
import { newTableSchema, type SchemaInput } from "../format/schema.ts";
import { SchemaManager } from "./schema-manager.ts";
import { withAddedColumns, type AddColumn } from "../format/schema-change.ts";
import { type Identifier, Table } from "./table.ts";
import { checkName, checkNewName, joinedNameTwins, showName } from "../names.ts";

const DB_SUFFIX = ".db";

/**
 * `db.table` → its identifier, both names checked by the rules of names already on disk (src/names.ts): tables
 * made before the rules for new names, or by Paimon's engines, keep being read. Creating checks the new-name rules.
 */
export function parseIdentifier(text: string): Identifier {
  const dot = text.indexOf(".");
  if (dot <= 0 || dot === text.length - 1) throw dataInvalid(`table name '${showName(text)}' must have the form <database>.<table>`);
  const id = { database: text.slice(0, dot), table: text.slice(dot + 1) };
  checkName("database", id.database);
  checkName("table", id.table);
  return id;
}

export class Catalog {
  /** The root path table paths are built from (a local directory, or `/prefix` in an S3 bucket). */
  readonly warehouse: string;
  /** The warehouse as the user names it (`/data/wh`, `s3://bucket/prefix`), for messages. */
  readonly uri: string;
  readonly io: FileIO;

  /**
   * `warehouse`: a directory, `file://` or `s3://bucket/prefix` URI (its FileIO made by openWarehouse), or a
   * Warehouse opened already. An explicit `io` serves the path given instead (tests wrapping a FileIO).
   */
  constructor(warehouse: string | Warehouse, io?: FileIO) {
    const wh = typeof warehouse !== "string" ? warehouse : io === undefined ? openWarehouse(warehouse) : undefined;
    if (wh !== undefined) {
      this.warehouse = wh.root;
      this.uri = wh.uri;
      this.io = wh.io;
    } else {
      const loc = parseWarehouse(warehouse as string);
      this.warehouse = loc.kind === "local" ? loc.path : `/${loc.prefix}`;
      this.uri = loc.kind === "local" ? loc.path : (warehouse as string);
      this.io = io!;
    }
  }

  databasePath(db: string): string {
    checkName("database", db);
    return join(this.warehouse, db + DB_SUFFIX);
  }

  tablePath(id: Identifier): string {
    checkName("table", id.table);
    return join(this.databasePath(id.database), id.table);
  }

  /** Creates the database directory; an existing one is left alone (ignoreIfExists) whatever its name. */
  async createDatabase(db: string, ignoreIfExists = true): Promise<void> {
    const path = this.databasePath(db);
    if (await this.io.exists(path)) {
      if (ignoreIfExists) return;
      throw new LakeError(ErrorKind.AlreadyExists, `database '${db}' already exists`);
    }
    checkNewName("database", db);
    await this.io.mkdirs(path);
  }

  async listDatabases(): Promise<string[]> {
    return (await this.io.list(this.warehouse))
      .filter((n) => n.endsWith(DB_SUFFIX) && !n.startsWith("."))
      .map((n) => n.slice(0, -DB_SUFFIX.length))
      .sort();
  }

  async listTables(db: string): Promise<string[]> {
    const dbPath = this.databasePath(db);
    if (!(await this.io.exists(dbPath))) throw new LakeError(ErrorKind.NotFound, `database '${db}' does not exist`);
    const out: string[] = [];
    for (const name of (await this.io.list(dbPath)).sort()) {
      if (name.startsWith(".")) continue;
      if ((await new SchemaManager(this.io, new PathFactory(join(dbPath, name))).listIds()).length > 0) out.push(name);
    }
    return out;
  }

  /**
   * The names under a database's directory, not checked to be tables (no schema listed): one listing, for a caller
   * that checks only the names it does not know yet (the node's periodic table scan, which on an object store would
   * otherwise LIST every table's schema/ every time). [] when the database is not there.
   */
  async listTableDirectories(db: string): Promise<string[]> {
    return (await this.io.list(this.databasePath(db))).filter((n) => !n.startsWith(".")).sort();
  }

  async tableExists(id: Identifier): Promise<boolean> {
    return (await new SchemaManager(this.io, new PathFactory(this.tablePath(id))).listIds()).length > 0;
  }

  /**
   * Creates the table (and its database). Two concurrent creators: exactly one wins, the other gets AlreadyExists.
   * Both names follow the rules of new names (src/names.ts) — the database's too, since the cluster's subjects,
   * streams and keys are made of both — and no other table may have the same `<db>_<table>` (see `joinedNameTwins`).
   */
  async createTable(id: Identifier, input: SchemaInput, opts: { ignoreIfExists?: boolean } = {}): Promise<Table> {
    try {
      checkNewName("database", id.database);
      checkNewName("table", id.table);
    } catch (e) {
      // A table made before these rules is there already: nothing new is named.
      if (opts.ignoreIfExists && (await this.tableExists(id))) return this.getTable(id);
      throw e;
    }
    await this.refuseJoinedNameTwin(id);
    const schema = newTableSchema(input);
    validateWritableSchema(`${id.database}.${id.table}`, schema);
    validateChangelogProducer(schema);
    validateRowKindField(`${id.database}.${id.table}`, schema);
    ingestFormatOf(`${id.database}.${id.table}`, schema);
    await this.createDatabase(id.database, true);
    const root = this.tablePath(id);
    const created = await new SchemaManager(this.io, new PathFactory(root)).tryCreate(schema);
    if (!created) {
      if (opts.ignoreIfExists) return this.getTable(id);
      throw new LakeError(ErrorKind.AlreadyExists, `table '${id.database}.${id.table}' already exists`);
    }
    return new Table(id, root, this.io, schema);
  }

  /** A table whose `<db>_<table>` is this one's (`a_b.c` and `a.b_c`): the cluster would give both one set of streams. */
  private async refuseJoinedNameTwin(id: Identifier): Promise<void> {
    const twins = joinedNameTwins(id);
    if (twins.length === 0) return;
    const dbs = new Set(await this.listDatabases());
    for (const twin of twins) {
      if (dbs.has(twin.database) && (await this.tableExists(twin)))
        throw new LakeError(
          ErrorKind.AlreadyExists,
          `table '${id.database}.${id.table}' cannot be created: table '${twin.database}.${twin.table}' exists, and both would be named '${id.database}_${id.table}' in the cluster's NATS streams`,
        );
    }
  }

  async getTable(id: Identifier): Promise<Table> {
    const root = this.tablePath(id);
    const schema = await new SchemaManager(this.io, new PathFactory(root)).latest();
    if (schema === null) throw new LakeError(ErrorKind.NotFound, `table '${id.database}.${id.table}' does not exist`);
    return new Table(id, root, this.io, schema);
  }

  /**
   * Adds columns: writes the next `schema-N` (exclusively, so of two concurrent changes each lands on its own version
   * or is re-applied on top of the winner's). A running cluster follows it within a table scan (see docs/guide/schema-changes.md).
   */
  async addColumns(id: Identifier, columns: readonly AddColumn[]): Promise<Table> {
    const root = this.tablePath(id);
    const schemas = new SchemaManager(this.io, new PathFactory(root));
    for (let attempt = 0; attempt < 10; attempt++) {
      const base = await schemas.latest();
      if (base === null) throw new LakeError(ErrorKind.NotFound, `table '${id.database}.${id.table}' does not exist`);
      const next = withAddedColumns(base, columns);
      if (await schemas.tryCreate(next)) return new Table(id, root, this.io, next);
    }
    throw new LakeError(ErrorKind.Conflict, `table '${id.database}.${id.table}': its schema kept changing under this change; try again`);
  }

  async dropTable(id: Identifier, ignoreIfMissing = false): Promise<void> {
    if (!(await this.tableExists(id))) {
      if (ignoreIfMissing) return;
      throw new LakeError(ErrorKind.NotFound, `table '${id.database}.${id.table}' does not exist`);
    }
    await this.io.deleteTree(this.tablePath(id));
  }
}
