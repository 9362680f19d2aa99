/**
 * Tags (`tag/tag-<name>`), in Paimon's format (Java `org.apache.paimon.tag.Tag` / `TagManager`, pypaimon
 * `tag/tag.py`, `tag/tag_manager.py`): the tagged snapshot's JSON, plus — only when the tag has a retention —
 * `tagCreateTime` (Jackson's LocalDateTime array `[y, M, d, h, m]`, then `s` when seconds or nanos are not 0, then
 * `nanos` when not 0; local wall-clock time, as Java's `LocalDateTime.now()`) and `tagTimeRetained` (a Duration as
 * decimal seconds). Java leaves both out when there is no retention, so that readers older than Paimon 0.8 can read
 * the tag; natslake does the same. Any engine's tags are read (Java, Spark, pypaimon); expiration
 * (src/maintenance/expire-snapshots.ts) never deletes what a tag holds.
 *
 * Creating: `createExclusive`, so of two creators of one name exactly one wins (Java and pypaimon check, then
 * overwrite). Deleting: as Java's `TagManager.deleteTag` — when the tagged snapshot still exists (or another tag names
 * the same snapshot), only the tag file goes: the snapshot's expiration takes care of the files. When the snapshot was
 * expired, the tag was the last holder of some files: those not used by the neighbouring tag on the left nor by the
 * nearest snapshot or tag on the right are deleted too (history is linear, so a file the tag shares with anything
 * else is in one of those two), and so are the changelog files the tagged snapshot added (primary-key tables with
 * `changelog-producer = input`: a changelog file belongs to the one snapshot that added it, which natslake's
 * expiration left to the tag). The tag file goes first: a crash after it leaves at most unreferenced files behind,
 * which orphan cleanup removes, never a tag that names missing files.
 */
import { join } from "node:path";
import { LosslessNumber } from "lossless-json";
import { dataInvalid, ErrorKind, ifPresent, isLakeError, LakeError } from "../errors.ts";
import { snapshotFromJson, snapshotToJson, type Snapshot } from "../format/snapshot.ts";
import { parseJson, stringifyJson } from "../format/wire/json.ts";
import { ManifestStore } from "./manifest-store.ts";
import type { Table } from "./table.ts";
import { checkName, checkNewName } from "../names.ts";
import { changelogFilesOf, dataFilePath, fileKey, manifestListsOf } from "./file-refs.ts";

const TAG_PREFIX = "tag-";

export interface Tag {
  name: string;
  snapshot: Snapshot;
  /** `tagCreateTime` as epoch ms (read as local time, as Java wrote it), or null when the file has none. */
  createTimeMillis: number | null;
  /** `tagTimeRetained` in ms, or null (kept until deleted). */
  timeRetainedMs: number | null;
}

const tagDir = (table: Table): string => join(table.root, "tag");
const tagPath = (table: Table, name: string): string => join(tagDir(table), TAG_PREFIX + name);

/** Jackson's LocalDateTime array of a local wall-clock time (trailing zero second/nanos left out). */
export function localDateTimeArray(ms: number): number[] {
  const d = new Date(ms);
  const out = [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes()];
  const nanos = d.getMilliseconds() * 1_000_000;
  if (d.getSeconds() !== 0 || nanos !== 0) out.push(d.getSeconds());
  if (nanos !== 0) out.push(nanos);
  return out;
}

function fromLocalDateTimeArray(v: unknown): number | null {
  if (!Array.isArray(v) || v.length < 3) return null;
  const n = v.map((x) => Number(x));
  const [y, mo, d, h = 0, mi = 0, s = 0, nanos = 0] = n;
  const ms = new Date(y!, mo! - 1, d!, h, mi, s, Math.floor(nanos / 1_000_000)).getTime();
  return Number.isNaN(ms) ? null : ms;
}

/** A tag file's content (snapshot JSON, create time, retention); a file that is not one is a DataInvalid. */
export function tagFromText(name: string, text: string): Tag {
  let parsed: unknown;
  try {
    parsed = parseJson(text);
  } catch (e) {
    throw dataInvalid(`tag '${name}' is damaged: ${(e as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw dataInvalid(`tag '${name}' is damaged: its file is not a JSON object`);
  const json = parsed as Record<string, unknown>;
  const retained = json["tagTimeRetained"];
  return {
    name,
    snapshot: snapshotFromJson(json),
    createTimeMillis: fromLocalDateTimeArray(json["tagCreateTime"]),
    timeRetainedMs: retained === undefined || retained === null ? null : retainedMillis(name, retained),
  };
}

/** `tagTimeRetained` (a Duration as decimal seconds: a number, or its text) in ms; anything else is a DataInvalid. */
function retainedMillis(name: string, retained: unknown): number {
  const seconds = typeof retained === "number" || typeof retained === "bigint" || typeof retained === "string" ? Number(retained) : NaN;
  if (!Number.isFinite(seconds) || seconds < 0) throw dataInvalid(`tag '${name}' is damaged: tagTimeRetained ${String(retained).slice(0, 40)} is not a duration in seconds`);
  return Math.round(seconds * 1000);
}

/** The tag file's content: the snapshot's JSON, plus the create time and the retention when there is one. */
export function tagToJsonText(snapshot: Snapshot, timeRetainedMs: number | null, nowMs: number): string {
  const json = snapshotToJson(snapshot);
  if (timeRetainedMs !== null) {
    json["tagCreateTime"] = localDateTimeArray(nowMs);
    // Decimal seconds, as Jackson writes a Duration (86400.000000000; pypaimon writes 86400.0).
    json["tagTimeRetained"] = new LosslessNumber(`${Math.floor(timeRetainedMs / 1000)}.${String(timeRetainedMs % 1000).padStart(3, "0")}`);
  }
  return stringifyJson(json);
}

/** Every tag of the table, sorted by name. A tag file deleted while listing is skipped, as Java skips it. */
export async function listTags(table: Table): Promise<Tag[]> {
  const out: Tag[] = [];
  for (const file of (await table.io.list(tagDir(table))).sort()) {
    if (!file.startsWith(TAG_PREFIX) || file.length === TAG_PREFIX.length) continue;
    const tag = await readTag(table, file.slice(TAG_PREFIX.length));
    if (tag !== null) out.push(tag);
  }
  return out;
}

async function readTag(table: Table, name: string): Promise<Tag | null> {
  try {
    return tagFromText(name, await table.io.readText(tagPath(table, name)));
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return null;
    throw e;
  }
}

/** The tag of that name, or null. */
export async function getTag(table: Table, name: string): Promise<Tag | null> {
  checkName("tag", name);
  return readTag(table, name);
}

/** The tag of that name; a missing one is a NotFound naming the tags that exist. */
export async function getTagOrThrow(table: Table, name: string): Promise<Tag> {
  const tag = await getTag(table, name);
  if (tag !== null) return tag;
  const names = (await listTags(table)).map((t) => t.name);
  throw new LakeError(ErrorKind.NotFound, `tag '${name}' of ${table.name} does not exist (${names.length ? `tags: ${names.join(", ")}` : "the table has no tags"})`);
}

export interface CreateTagOptions {
  /** Tag this snapshot; default the latest. */
  snapshotId?: number;
  /** `tagTimeRetained`: how long the tag is meant to be kept (recorded; natslake does not expire tags by it). */
  timeRetainedMs?: number;
  /** Now, epoch ms (tests). */
  now?: number;
}

/** Creates a tag exclusively: an existing name is refused (AlreadyExists), as is a snapshot that does not exist. */
export async function createTag(table: Table, name: string, o: CreateTagOptions = {}): Promise<Tag> {
  checkNewName("tag", name);
  if (o.timeRetainedMs !== undefined && !(o.timeRetainedMs > 0)) throw dataInvalid(`the time a tag is retained must be positive, got ${o.timeRetainedMs} ms`);
  let snapshot: Snapshot;
  if (o.snapshotId !== undefined) {
    if (!(await table.snapshots.snapshotExists(o.snapshotId))) {
      const ids = await table.snapshots.listIds();
      const range = ids.length ? `snapshots ${ids[0]}..${ids[ids.length - 1]} exist` : "the table has no snapshots";
      throw new LakeError(ErrorKind.NotFound, `snapshot ${o.snapshotId} of ${table.name} does not exist (${range})`);
    }
    snapshot = await table.snapshots.snapshot(o.snapshotId);
  } else {
    const latest = await table.snapshots.latest();
    if (latest === null) throw new LakeError(ErrorKind.NotFound, `${table.name} has no snapshot to tag`);
    snapshot = latest;
  }
  const now = o.now ?? Date.now();
  const text = tagToJsonText(snapshot, o.timeRetainedMs ?? null, now);
  if (!(await table.io.createExclusive(tagPath(table, name), text))) {
    const existing = await readTag(table, name);
    throw new LakeError(ErrorKind.AlreadyExists, `tag '${name}' of ${table.name} already exists${existing ? ` (on snapshot ${existing.snapshot.id})` : ""}`);
  }
  return tagFromText(name, text);
}

export interface DeleteTagResult {
  tag: Tag;
  /** Data files, changelog files and manifests deleted with it (0 unless its snapshot was expired, see the module comment). */
  dataFilesDeleted: number;
  changelogFilesDeleted: number;
  manifestsDeleted: number;
}

/** Deletes a tag (NotFound when there is none) and, when it was their last holder, its files. */
export async function deleteTag(table: Table, name: string): Promise<DeleteTagResult> {
  const tag = await getTagOrThrow(table, name);
  const result: DeleteTagResult = { tag, dataFilesDeleted: 0, changelogFilesDeleted: 0, manifestsDeleted: 0 };
  const id = tag.snapshot.id;
  if (await table.snapshots.snapshotExists(id)) {
    await table.io.delete(tagPath(table, name));
    return result;
  }
  // Read every tag before the file goes (as Java does): the neighbours decide what is still used.
  const all = await listTags(table);
  await table.io.delete(tagPath(table, name));
  if (all.some((t) => t.name !== name && t.snapshot.id === id)) return result;
  const others = [...new Map(all.filter((t) => t.snapshot.id !== id).map((t) => [t.snapshot.id, t.snapshot])).values()].sort((a, b) => a.id - b.id);
  const left = others.filter((s) => s.id < id).pop();
  let right = others.find((s) => s.id > id);
  const earliest = await table.snapshots.earliestId();
  if (earliest !== null && (right === undefined || earliest < right.id)) right = await table.snapshots.snapshot(earliest);
  const keep = [left, right].filter((s): s is Snapshot => s !== undefined);

  const store = new ManifestStore(table);
  const keepFiles = new Set<string>();
  const keepManifests = new Set<string>();
  for (const s of keep) {
    for (const e of await store.readLiveEntries(s)) keepFiles.add(fileKey(e));
    for (const list of manifestListsOf(s)) {
      keepManifests.add(list);
      for (const m of await store.readManifestList(list)) keepManifests.add(m.fileName);
    }
  }
  for (const e of await store.readLiveEntries(tag.snapshot)) {
    if (keepFiles.has(fileKey(e))) continue;
    if (await table.io.delete(dataFilePath(table, e))) result.dataFilesDeleted++;
  }
  for (const e of await changelogFilesOf(store, tag.snapshot)) if (await table.io.delete(dataFilePath(table, e))) result.changelogFilesDeleted++;
  for (const list of manifestListsOf(tag.snapshot)) {
    // A changelog list may be gone already: Java's expiration deletes it with the tagged snapshot.
    for (const m of await ifPresent(store.readManifestList(list), [])) {
      if (!keepManifests.has(m.fileName) && (await table.io.delete(table.paths.manifestPath(m.fileName)))) result.manifestsDeleted++;
    }
    if (!keepManifests.has(list) && (await table.io.delete(table.paths.manifestPath(list)))) result.manifestsDeleted++;
  }
  return result;
}
