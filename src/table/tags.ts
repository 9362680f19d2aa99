/**
 * Tags (`tag/tag-<name>`): a snapshot's JSON plus Paimon's optional `tagCreateTime` and `tagTimeRetained`. Reading
 * them only, so far: expiration must never delete what a tag holds, whoever made the tag (Java, Spark, pypaimon).
 */
import { join } from "node:path";
import { snapshotFromJson, type Snapshot } from "../spec/snapshot.ts";
import { parseJson } from "../spec/wire/json.ts";
import type { Table } from "./table.ts";

const TAG_NAME = /^tag-(.+)$/;

export interface Tag {
  name: string;
  snapshot: Snapshot;
}

/** Every tag of the table, by name. */
export async function listTags(table: Table): Promise<Tag[]> {
  const dir = join(table.root, "tag");
  const out: Tag[] = [];
  for (const file of (await table.io.list(dir)).sort()) {
    const m = TAG_NAME.exec(file);
    if (m === null) continue;
    out.push({ name: m[1]!, snapshot: snapshotFromJson(parseJson(await table.io.readText(join(dir, file)))) });
  }
  return out;
}
