/**
 * `natslake doctor`: checks a table's files and says what to do about each problem found. Read-only: it changes
 * nothing, so it is safe beside a running cluster. Through the table's FileIO only (a directory or an object store).
 *
 * Checks, in order:
 * - schemas: every `schema-N` parses; every retained snapshot's schema exists;
 * - snapshots: every `snapshot-N` on disk parses (a damaged one: roll back past it, or expire it);
 * - files: every manifest list and manifest of every retained snapshot exists and decodes, and every data file they
 *   hold (live in some retained snapshot, changelog files included) exists with the size its manifest entry says and
 *   a Parquet footer that parses and holds the entry's row count — one finding per file, naming the snapshots that
 *   use it and the newest snapshot before them to roll back to;
 * - index files: every index manifest of a retained snapshot decodes, and each index file it lists (deletion vectors,
 *   tables Java wrote) exists with its size and decodes (doctor-index.ts);
 * - levels: in primary-key tables, each bucket's levels ≥ 1 are sorted runs (no overlapping key ranges), as Java
 *   Paimon restores a bucket (bucket-levels.ts) — for each distinct state of a bucket across the retained snapshots;
 * - hints: `LATEST` and `EARLIEST` agree with the snapshots on disk (checked again after a moment when they do not:
 *   a commit writes the hint just after its snapshot);
 * - orphans: files no snapshot, tag or in-flight committable references, older than the orphan bound (remove-orphans
 *   in a dry run), and foreign files — names that are no file of a Paimon table — in the metadata directories;
 * - consumers: every consumer file parses, and none points at an expired snapshot or past the next one.
 */
import { ErrorKind, isLakeError } from "../errors.ts";
import { footerRangeFromTail } from "../codec/parquet-ranges.ts";
import { decodeStruct } from "../codec/parquet-footer.mjs";
import { FileKind, type ManifestEntry, mergeEntries } from "../format/manifest.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { damagedFileOf, reasonOf } from "../table/damaged-file.ts";
import { getConsumer } from "../table/consumers.ts";
import { dataFilePath, fileKey, manifestListsOf } from "../table/file-refs.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { bucketLevels, levelRulesOf } from "./bucket-levels.ts";
import type { LiveBucket } from "./live-buckets.ts";
import { checkIndexFiles } from "./doctor-index.ts";
import { removeOrphans } from "./remove-orphans.ts";

/** What a finding is about. */
export type DoctorCheck = "schema" | "snapshot" | "manifest-list" | "manifest" | "data-file" | "index-manifest" | "index-file" | "levels" | "hint" | "orphan" | "foreign-file" | "consumer";

export interface DoctorFinding {
  check: DoctorCheck;
  /** The file the finding is about, as the table's FileIO names it (absent for one about several files). */
  path?: string;
  /** The files of a finding about several (orphans), relative to the table's directory. */
  files?: string[];
  /** The retained snapshots that use the file or show the problem, ascending. */
  snapshots?: number[];
  /** What is wrong. */
  problem: string;
  /** What to do about it. */
  action: string;
}

export interface DoctorReport {
  table: string;
  location: string;
  /** No finding. */
  healthy: boolean;
  earliestSnapshot: number | null;
  latestSnapshot: number | null;
  /** What was checked. */
  checked: { schemas: number; snapshots: number; manifestLists: number; manifests: number; dataFiles: number; indexFiles: number; buckets: number; consumers: number };
  findings: DoctorFinding[];
  /** Checks that could not run, and why (a finding above explains it). */
  skipped: string[];
}

export interface DoctorProgress {
  stage: "snapshots" | "data files";
  done: number;
  total: number;
}

export interface DoctorOptions {
  /** Orphans are files unreferenced and older than this; default the table's `natslake.orphan-older-than` (1 day). */
  orphansOlderThanMs?: number;
  /** Now, in epoch ms (tests). */
  now?: number;
  /** How long to wait before checking a hint that disagrees once more (default 500 ms). */
  hintRecheckMs?: number;
  /** Data files checked at once (default 8: on an object store each check is two requests). */
  concurrency?: number;
  onProgress?: (p: DoctorProgress) => void;
}

/**
 * A data file the retained snapshots hold, and which of them do: runs of consecutive ids as [from, to, from, to, …]
 * (a file is live from the snapshot that adds it to the one before the one that deletes it, so a run or two per file,
 * not an id per snapshot and file).
 */
interface HeldFile {
  entry: ManifestEntry;
  path: string;
  runs: number[];
}

/** Adds `id` (ascending across calls) to the runs. */
function addToRuns(runs: number[], id: number): void {
  if (runs.length > 0 && runs[runs.length - 1] === id - 1) runs[runs.length - 1] = id;
  else runs.push(id, id);
}

/** The ids of the runs. */
function idsOfRuns(runs: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < runs.length; i += 2) for (let id = runs[i]!; id <= runs[i + 1]!; id++) out.push(id);
  return out;
}

/** Where to roll back to so that snapshots `ids` (ascending) are gone: the newest readable one before them. */
interface Rollback {
  ids: readonly number[];
  good: ReadonlySet<number>;
}

export async function doctorTable(table: Table, o: DoctorOptions = {}): Promise<DoctorReport> {
  const findings: DoctorFinding[] = [];
  const skipped: string[] = [];
  const store = new ManifestStore(table);
  const name = table.name;

  // Schemas.
  const schemaIds = await table.schemas.listIds();
  for (const id of schemaIds) {
    try {
      await table.schemas.schema(id);
    } catch (e) {
      findings.push(fileFinding(e, "schema", table.io.uriOf(table.paths.schemaPath(id)), "restore it from a backup (the snapshots written under it cannot be read without it)"));
    }
  }

  // Snapshots.
  const ids = await table.snapshots.listIds();
  const snapshots = new Map<number, Snapshot>();
  for (const [i, id] of ids.entries()) {
    o.onProgress?.({ stage: "snapshots", done: i, total: ids.length });
    try {
      snapshots.set(id, await table.snapshots.snapshot(id));
    } catch (e) {
      if (isLakeError(e, ErrorKind.NotFound)) continue; // expired meanwhile
      findings.push(fileFinding(e, "snapshot", table.io.uriOf(table.paths.snapshotPath(id)), damagedSnapshotAction(name, id, ids)));
    }
  }
  const good = new Set(snapshots.keys());
  const latest = ids.length === 0 ? null : ids[ids.length - 1]!;
  const earliest = ids.length === 0 ? null : ids[0]!;
  for (const s of snapshots.values()) {
    if (!schemaIds.includes(s.schemaId)) {
      findings.push({ check: "schema", path: table.io.uriOf(table.paths.schemaPath(s.schemaId)), snapshots: [s.id], problem: `missing: snapshot ${s.id} was written under schema ${s.schemaId}`, action: `restore it from a backup, or ${rollbackAction(name, { ids: [s.id], good })}` });
    }
  }

  // Manifest lists and manifests, once each, with the snapshots that use them.
  const metadataUsers = new Map<string, { kind: "manifest-list" | "manifest"; snapshots: number[]; error: unknown }>();
  const held = new Map<string, HeldFile>();
  const buckets = new Map<string, { snapshots: number[]; bucket: LiveBucket }>();
  let listsChecked = 0;
  const manifestsChecked = new Set<string>();
  for (const s of snapshots.values()) {
    const readable = await checkSnapshotMetadata(store, s, metadataUsers, manifestsChecked);
    listsChecked += manifestListsOf(s).length;
    // A snapshot with a damaged manifest: the data files its readable manifests hold are checked all the same.
    const live = readable ? await store.readLiveEntries(s) : await readableEntries(store, s);
    const changelog = (await store.readChangelogEntries(s).catch(() => [])).filter((e) => e.kind === FileKind.ADD);
    for (const e of [...live, ...changelog]) {
      const key = fileKey(e);
      const h = held.get(key);
      if (h === undefined) held.set(key, { entry: e, path: dataFilePath(table, e), runs: [s.id, s.id] });
      else addToRuns(h.runs, s.id);
    }
    if (table.isPrimaryKeyTable && readable) collectBucketStates(live, s.id, buckets);
  }
  for (const [file, u] of metadataUsers) {
    if (u.error === null) continue;
    findings.push({ ...fileFinding(u.error, u.kind, table.io.uriOf(table.paths.manifestPath(file)), `restore it from a backup, or ${rollbackAction(name, { ids: u.snapshots, good })}`), snapshots: u.snapshots });
  }

  // Data files: exist, have their size, and a footer that parses with their row count.
  const files = [...held.values()];
  let done = 0;
  await forEachLimited(files, o.concurrency ?? 8, async (f) => {
    const problem = await dataFileProblem(table, f);
    o.onProgress?.({ stage: "data files", done: ++done, total: files.length });
    if (problem !== null) {
      const used = idsOfRuns(f.runs);
      findings.push({ check: "data-file", path: table.io.uriOf(f.path), snapshots: used, problem, action: `restore it from a backup, or ${rollbackAction(name, { ids: used, good })}` });
    }
  });

  // Index manifests and the index files they list (tables Java wrote with deletion vectors).
  const index = await checkIndexFiles(table, snapshots.values());
  for (const p of index.problems) {
    findings.push({ ...fileFinding(p.error, p.check, table.io.uriOf(p.path), `restore it from a backup, or ${rollbackAction(name, { ids: p.snapshots, good })}`), snapshots: p.snapshots });
  }

  // Levels of primary-key buckets.
  if (table.isPrimaryKeyTable) findings.push(...levelFindings(table, buckets, good));

  // Hints.
  findings.push(...(await hintFindings(table, o.hintRecheckMs ?? 500)));

  // Orphans and foreign files.
  try {
    const r = await removeOrphans(table, { dryRun: true, ...(o.orphansOlderThanMs !== undefined ? { olderThanMs: o.orphansOlderThanMs } : {}), ...(o.now !== undefined ? { now: o.now } : {}) });
    if (r.files.length > 0) {
      findings.push({
        check: "orphan",
        files: r.files.map((f) => f.path),
        problem: `${r.files.length} ${r.files.length === 1 ? "file" : "files"} (${r.totalBytes} bytes) no snapshot, tag or in-flight committable references, older than ${r.olderThanMs / 1000} s`,
        action: `run natslake remove-orphans ${name} (add --dry-run to list them first)`,
      });
    }
  } catch (e) {
    skipped.push(damagedFileOf(e) !== null ? "orphans: remove-orphans refuses to run while the table is damaged (the problems above)" : `orphans: ${reasonOf(e)}`);
  }
  findings.push(...(await foreignFindings(table)));

  // Consumers.
  const consumerFindings = await checkConsumers(table, earliest, latest);
  findings.push(...consumerFindings.findings);

  return {
    table: name,
    location: table.location,
    healthy: findings.length === 0,
    earliestSnapshot: earliest,
    latestSnapshot: latest,
    checked: { schemas: schemaIds.length, snapshots: ids.length, manifestLists: listsChecked, manifests: manifestsChecked.size, dataFiles: files.length, indexFiles: index.indexFiles, buckets: buckets.size, consumers: consumerFindings.checked },
    findings,
    skipped,
  };
}

/** A finding about a file from the error reading it gave (its reason when it is a damaged-file error). */
export function fileFinding(e: unknown, check: DoctorCheck, path: string, action: string): DoctorFinding {
  const d = damagedFileOf(e);
  const problem = d === null ? `cannot be read: ${reasonOf(e)}` : d.problem === "missing" ? "missing" : `damaged: ${damagedReason(e)}`;
  return { check, path, problem, action };
}

/** The decoder's reason inside a damaged-file message (`… (reason); remedy`), else the whole message. */
function damagedReason(e: unknown): string {
  const text = reasonOf(e);
  const m = /is damaged: not a readable [a-z -]+ \((.*)\); [^;]*$/.exec(text);
  return m?.[1] ?? text;
}

/** What to do about damaged snapshot `id` among `ids` (ascending). */
function damagedSnapshotAction(table: string, id: number, ids: readonly number[]): string {
  const i = ids.indexOf(id);
  const before = i > 0 ? ids[i - 1]! : null;
  if (id === ids[ids.length - 1]) {
    return before === null
      ? `restore it from a backup (it is the only snapshot)`
      : `restore it from a backup, or roll back to the snapshot before it: natslake rollback ${table} --to-snapshot ${before} --force (the rows only it held are lost)`;
  }
  return `restore it from a backup, or expire it (reads of the latest snapshot do not need it): natslake expire-snapshots ${table} --retain-max ${ids.length - 1 - i} --older-than '0 s'`;
}

/** "roll back to snapshot N: natslake rollback …" — the newest readable snapshot before all of `ids`, when there is one. */
function rollbackAction(table: string, r: Rollback): string {
  const first = Math.min(...r.ids);
  let target: number | null = null;
  for (const id of r.good) if (id < first && (target === null || id > target)) target = id;
  if (target === null) return `rewrite the table (no retained snapshot before ${first} to roll back to)`;
  return `roll back to snapshot ${target}, the last before it: natslake rollback ${table} --to-snapshot ${target} (the rows written since are lost)`;
}

/** Reads a snapshot's manifest lists and manifests (each once across calls); false when one is missing or damaged. */
async function checkSnapshotMetadata(
  store: ManifestStore,
  s: Snapshot,
  users: Map<string, { kind: "manifest-list" | "manifest"; snapshots: number[]; error: unknown }>,
  manifestsChecked: Set<string>,
): Promise<boolean> {
  let readable = true;
  const note = async <T>(kind: "manifest-list" | "manifest", file: string, read: () => Promise<T>): Promise<T | null> => {
    let u = users.get(file);
    if (u === undefined) {
      u = { kind, snapshots: [], error: null };
      users.set(file, u);
      try {
        await read();
      } catch (e) {
        u.error = e;
      }
    }
    u.snapshots.push(s.id);
    if (u.error !== null) {
      readable = false;
      return null;
    }
    return read();
  };
  for (const list of manifestListsOf(s)) {
    const metas = await note("manifest-list", list, () => store.readManifestList(list));
    for (const m of metas ?? []) {
      manifestsChecked.add(m.fileName);
      await note("manifest", m.fileName, () => store.readManifest(m.fileName));
    }
  }
  return readable;
}

/** The live entries of a snapshot's manifests that can be read (the others are findings already). */
async function readableEntries(store: ManifestStore, s: Snapshot): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (const list of manifestListsOf(s)) {
    const metas = await store.readManifestList(list).catch(() => []);
    for (const m of metas) entries.push(...(await store.readManifest(m.fileName).catch(() => [])));
  }
  return mergeEntries(entries);
}

/** Each distinct state of each bucket (its live files) with the snapshots that have it. */
function collectBucketStates(live: readonly ManifestEntry[], id: number, states: Map<string, { snapshots: number[]; bucket: LiveBucket }>): void {
  const byBucket = new Map<string, LiveBucket>();
  for (const e of live) {
    if (e.bucket < 0) continue;
    const key = `${Buffer.from(e.partition).toString("hex")}/${e.bucket}`;
    let b = byBucket.get(key);
    if (b === undefined) {
      b = { partition: e.partition, partitionValues: [], bucket: e.bucket, totalBuckets: e.totalBuckets, files: [] };
      byBucket.set(key, b);
    }
    b.files.push(e.file);
  }
  for (const [key, b] of byBucket) {
    // A file's level is part of the state: an upgrade changes the levels, not the names.
    const state = `${key}:${b.files.map((f) => `${f.fileName}@${f.level}`).sort().join(",")}`;
    const seen = states.get(state);
    if (seen === undefined) states.set(state, { snapshots: [id], bucket: b });
    else seen.snapshots.push(id);
  }
}

function levelFindings(table: Table, states: Map<string, { snapshots: number[]; bucket: LiveBucket }>, good: ReadonlySet<number>): DoctorFinding[] {
  const rules = levelRulesOf(table);
  const out: DoctorFinding[] = [];
  for (const { snapshots, bucket } of states.values()) {
    try {
      bucketLevels(bucket, rules);
    } catch (e) {
      if (!isLakeError(e, ErrorKind.DataInvalid)) throw e;
      const where = `${table.partitionKeys.length > 0 ? `partition ${Buffer.from(bucket.partition).toString("hex")}, ` : ""}bucket ${bucket.bucket}`;
      out.push({
        check: "levels",
        path: table.io.uriOf(`${table.root}/bucket-${bucket.bucket}`),
        snapshots,
        problem: `${where}: ${e.message}`,
        action: `${rollbackAction(table.name, { ids: snapshots, good })}; Java Paimon and natslake refuse to write or compact the bucket as it is`,
      });
    }
  }
  return out.sort((a, b) => a.snapshots![0]! - b.snapshots![0]!);
}

/** The problem with a data file the retained snapshots hold, or null when it is whole. */
async function dataFileProblem(table: Table, f: HeldFile): Promise<string | null> {
  const want = f.entry.file;
  let size: number;
  try {
    size = await table.io.size(f.path);
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return "missing";
    throw e;
  }
  if (size !== want.fileSize) return `damaged: ${size} bytes, its manifest entry says ${want.fileSize}`;
  if (!want.fileName.endsWith(".parquet")) return null;
  try {
    const tailLength = Math.min(size, 64 * 1024);
    const tail = await table.io.readRange(f.path, size - tailLength, tailLength);
    const range = footerRangeFromTail(tail, size);
    const footer = range.start >= size - tailLength ? tail.subarray(range.start - (size - tailLength)) : await table.io.readRange(f.path, range.start, size - range.start);
    const head = await table.io.readRange(f.path, 0, 4);
    if (Buffer.from(head).toString("latin1") !== "PAR1") return "damaged: no PAR1 magic at its start";
    const meta = decodeStruct(footer, 0, footer.length - 8);
    const rows = meta.find((x) => x.id === 3)?.value;
    if (typeof rows !== "bigint") return "damaged: its Parquet footer has no row count";
    if (Number(rows) !== want.rowCount) return `damaged: its Parquet footer says ${rows} rows, its manifest entry ${want.rowCount}`;
  } catch (e) {
    return `damaged: not a readable Parquet footer (${reasonOf(e)})`;
  }
  return null;
}

async function hintFindings(table: Table, recheckMs: number): Promise<DoctorFinding[]> {
  const check = async (): Promise<DoctorFinding[]> => {
    const ids = await table.snapshots.listIds();
    const out: DoctorFinding[] = [];
    for (const hint of ["LATEST", "EARLIEST"] as const) {
      const path = `${table.paths.snapshotDir}/${hint}`;
      let text: string | null;
      try {
        text = (await table.io.readText(path)).trim();
      } catch (e) {
        if (!isLakeError(e, ErrorKind.NotFound)) throw e;
        text = null;
      }
      const actual = ids.length === 0 ? null : hint === "LATEST" ? ids[ids.length - 1]! : ids[0]!;
      // No EARLIEST hint: nothing was expired yet (natslake writes it at the first expiration).
      if (text === null && (actual === null || hint === "EARLIEST")) continue;
      if (text !== null && actual !== null && text === String(actual)) continue;
      const said = text === null ? "is missing" : /^\d+$/.test(text) ? `says ${text}` : `holds '${text.slice(0, 40)}', not a snapshot id`;
      const truth = actual === null ? "there is no snapshot" : `the ${hint === "LATEST" ? "newest" : "oldest"} snapshot on disk is ${actual}`;
      out.push({
        check: "hint",
        path: table.io.uriOf(path),
        problem: `the ${hint} hint ${said}, but ${truth} (readers check the hint and fall back to listing the directory, which costs a LIST per read on an object store)`,
        action: actual === null ? `delete it` : `write ${actual} into it (the next ${hint === "LATEST" ? "commit" : "snapshot expiration"} rewrites it too)`,
      });
    }
    return out;
  };
  const first = await check();
  if (first.length === 0) return first;
  // A commit writes LATEST just after its snapshot, an expiration EARLIEST after deleting: look once more.
  await new Promise((r) => setTimeout(r, recheckMs));
  return check();
}

/** Names in the table's metadata directories that are no file of a Paimon table. */
const KNOWN_NAMES: Record<string, RegExp> = {
  snapshot: /^(snapshot-\d+|LATEST|EARLIEST|\..+\.tmp)$/,
  schema: /^(schema-\d+|\..+\.tmp)$/,
  manifest: /^(manifest-|manifest-list-|index-manifest-|\..+\.tmp$)/,
  consumer: /^(consumer-.+|\..+\.tmp)$/,
  tag: /^(tag-.+|\..+\.tmp)$/,
};

async function foreignFindings(table: Table): Promise<DoctorFinding[]> {
  const out: DoctorFinding[] = [];
  for (const [dir, known] of Object.entries(KNOWN_NAMES)) {
    for (const st of await table.io.listStatus(`${table.root}/${dir}`)) {
      if (st.kind === "file" && known.test(st.name)) continue;
      const path = table.io.uriOf(`${table.root}/${dir}/${st.name}`);
      out.push({ check: "foreign-file", path, problem: `no file of a Paimon table belongs in ${dir}/ under this name (${st.kind === "file" ? "a file" : `a ${st.kind}`})`, action: `move it out of the table's directory (natslake and Paimon ignore it, remove-orphans never deletes it)` });
    }
  }
  return out;
}

async function checkConsumers(table: Table, earliest: number | null, latest: number | null): Promise<{ findings: DoctorFinding[]; checked: number }> {
  const findings: DoctorFinding[] = [];
  let checked = 0;
  for (const file of (await table.io.list(table.paths.consumerDir)).sort()) {
    const m = /^consumer-(.+)$/.exec(file);
    if (m === null) continue;
    const id = m[1]!;
    const path = `${table.paths.consumerDir}/${file}`;
    checked++;
    let c;
    try {
      c = await getConsumer(table, id);
    } catch (e) {
      findings.push(fileFinding(e, "consumer", table.io.uriOf(path), `set its progress again (natslake consumer reset ${table.name} ${id} --next-snapshot N) or delete it (natslake consumer delete ${table.name} ${id})`));
      continue;
    }
    if (c === null) continue;
    if (earliest !== null && c.nextSnapshot < earliest) {
      findings.push({
        check: "consumer",
        path: table.io.uriOf(path),
        snapshots: [c.nextSnapshot],
        problem: `consumer ${id} is at snapshot ${c.nextSnapshot}, which was expired (the earliest retained is ${earliest}): it cannot resume where it stopped, the changes of snapshots ${c.nextSnapshot}..${earliest - 1} are gone`,
        action: `move it to the earliest retained snapshot (natslake consumer reset ${table.name} ${id} --next-snapshot ${earliest}), or delete it and read the table in full again (natslake consumer delete ${table.name} ${id})`,
      });
    } else if (latest !== null && c.nextSnapshot > latest + 1) {
      findings.push({
        check: "consumer",
        path: table.io.uriOf(path),
        snapshots: [c.nextSnapshot],
        problem: `consumer ${id} is at snapshot ${c.nextSnapshot}, past the next one to be written (${latest + 1}; the table was rolled back?): it would skip the snapshots written until then`,
        action: `move it to the next snapshot (natslake consumer reset ${table.name} ${id} --next-snapshot ${latest + 1})`,
      });
    }
  }
  return { findings, checked };
}

/** Runs `work` over `items`, at most `limit` at once. */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}

/** The report on a table that cannot be opened (its latest schema is damaged): that one finding. */
export function unopenableReport(table: string, location: string, finding: DoctorFinding): DoctorReport {
  return {
    table,
    location,
    healthy: false,
    earliestSnapshot: null,
    latestSnapshot: null,
    checked: { schemas: 1, snapshots: 0, manifestLists: 0, manifests: 0, dataFiles: 0, indexFiles: 0, buckets: 0, consumers: 0 },
    findings: [finding],
    skipped: ["everything else: the table cannot be opened without its latest schema"],
  };
}
