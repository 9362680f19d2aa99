/**
 * SchemaManager owns `schema/`: reads schema versions (cached: a schema file never changes) and creates new ones
 * exclusively, so two processes creating the same table cannot both win.
 */
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import type { FileIO } from "../io/file-io.ts";
import type { PathFactory } from "../io/paths.ts";
import { schemaFromJson, schemaToJson, type TableSchema } from "../format/schema.ts";
import { parseJson, stringifyJson } from "../format/wire/json.ts";
import { decodeTableFile } from "./damaged-file.ts";

const SCHEMA_NAME = /^schema-(\d+)$/;

export class SchemaManager {
  private readonly cache = new Map<number, TableSchema>();

  constructor(
    private readonly io: FileIO,
    private readonly paths: PathFactory,
  ) {}

  async listIds(): Promise<number[]> {
    const ids: number[] = [];
    for (const name of await this.io.list(this.paths.schemaDir)) {
      const m = SCHEMA_NAME.exec(name);
      if (m) ids.push(Number(m[1]));
    }
    return ids.sort((a, b) => a - b);
  }

  async latest(): Promise<TableSchema | null> {
    const ids = await this.listIds();
    return ids.length === 0 ? null : this.schema(ids[ids.length - 1]!);
  }

  async schema(id: number): Promise<TableSchema> {
    const hit = this.cache.get(id);
    if (hit) return hit;
    const path = this.paths.schemaPath(id);
    let text: string;
    try {
      text = await this.io.readText(path);
    } catch (e) {
      if (isLakeError(e, ErrorKind.NotFound)) throw new LakeError(ErrorKind.NotFound, `schema ${id} does not exist`, { context: { path }, cause: e });
      throw e;
    }
    const s = decodeTableFile("schema", path, () => schemaFromJson(parseJson(text)), `restore the file from a backup (the table's snapshots of schema ${id} cannot be read without it)`, this.io.uriOf(path));
    this.cache.set(id, s);
    return s;
  }

  /** Creates `schema-<id>`; false when it already exists. */
  async tryCreate(schema: TableSchema): Promise<boolean> {
    const ok = await this.io.createExclusive(this.paths.schemaPath(schema.id), stringifyJson(schemaToJson(schema)));
    if (ok) this.cache.set(schema.id, schema);
    return ok;
  }
}
