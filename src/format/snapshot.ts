/**
 * Snapshot: the content of `snapshot/snapshot-N`, its wire form, and natslake's properties inside it.
 *
 * natslake keeps its exactly-once state in the snapshot's `properties` (Paimon 2.x dropped `logOffsets`):
 * `natslake.epoch` (the committing leader's fencing epoch), `natslake.offset.<bucket>` (the last stream sequence
 * committed for the bucket) and `natslake.owner-epoch.<bucket>`. Every snapshot natslake writes carries them all
 * forward, so the newest natslake snapshot alone tells where every bucket resumes.
 *
 * Offsets are sequence numbers of one JetStream stream, meaningless in any other: `natslake.stream` names the stream
 * they belong to (its name and creation time, see src/commit/stream-identity.ts), and `natslake.offset-epoch` counts
 * the explicit resets that moved the table onto another stream (`natslake table reset-offsets`).
 */
import { dataInvalid } from "../errors.ts";
import { bigField, intField, nullableField, strField } from "./wire/fields.ts";

export const CommitKind = { APPEND: "APPEND", COMPACT: "COMPACT", OVERWRITE: "OVERWRITE", ANALYZE: "ANALYZE" } as const;
export type CommitKind = (typeof CommitKind)[keyof typeof CommitKind];

/** Java's Long.MAX_VALUE: the commit identifier of batch (non-streaming) commits. */
export const BATCH_COMMIT_IDENTIFIER = 9223372036854775807n;

export interface Snapshot {
  version: number;
  id: number;
  schemaId: number;
  baseManifestList: string;
  baseManifestListSize: number | null;
  deltaManifestList: string;
  deltaManifestListSize: number | null;
  changelogManifestList: string | null;
  changelogManifestListSize: number | null;
  indexManifest: string | null;
  commitUser: string;
  commitIdentifier: bigint;
  commitKind: CommitKind;
  timeMillis: number;
  totalRecordCount: number;
  deltaRecordCount: number;
  changelogRecordCount: number | null;
  watermark: bigint | null;
  statistics: string | null;
  properties: Record<string, string> | null;
  nextRowId: number | null;
  uuid: string | null;
  operation: string | null;
}

const optNum = (o: Record<string, unknown>, k: string): number | null => nullableField(o[k], (v) => intField(v, `snapshot '${k}'`));
const optStr = (v: unknown): string | null => (typeof v === "string" ? v : null);
const KINDS: readonly string[] = Object.values(CommitKind);

/** A snapshot file's JSON (or a tag's); a field missing or of the wrong type is a DataInvalid naming it. */
export function snapshotFromJson(json: unknown): Snapshot {
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw dataInvalid("snapshot file is not a JSON object");
  const o = json as Record<string, unknown>;
  for (const k of ["id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser", "commitIdentifier", "commitKind", "timeMillis"]) {
    if (o[k] === undefined || o[k] === null) throw dataInvalid(`snapshot file lacks '${k}'`);
  }
  const int = (k: string): number => intField(o[k], `snapshot '${k}'`);
  const str = (k: string): string => strField(o[k], `snapshot '${k}'`);
  const props = o["properties"];
  const commitKind = str("commitKind");
  if (!KINDS.includes(commitKind)) throw dataInvalid(`snapshot 'commitKind' is ${JSON.stringify(commitKind.slice(0, 40))} (one of ${KINDS.join(", ")})`);
  return {
    version: o["version"] === undefined ? 3 : int("version"),
    id: int("id"),
    schemaId: int("schemaId"),
    baseManifestList: str("baseManifestList"),
    baseManifestListSize: optNum(o, "baseManifestListSize"),
    deltaManifestList: str("deltaManifestList"),
    deltaManifestListSize: optNum(o, "deltaManifestListSize"),
    changelogManifestList: optStr(o["changelogManifestList"]),
    changelogManifestListSize: optNum(o, "changelogManifestListSize"),
    indexManifest: optStr(o["indexManifest"]),
    commitUser: str("commitUser"),
    commitIdentifier: bigField(o["commitIdentifier"], "snapshot 'commitIdentifier'"),
    commitKind: commitKind as CommitKind,
    timeMillis: int("timeMillis"),
    totalRecordCount: optNum(o, "totalRecordCount") ?? 0,
    deltaRecordCount: optNum(o, "deltaRecordCount") ?? 0,
    changelogRecordCount: optNum(o, "changelogRecordCount"),
    watermark: nullableField(o["watermark"], (v) => bigField(v, "snapshot 'watermark'")),
    statistics: optStr(o["statistics"]),
    properties: props && typeof props === "object" ? Object.fromEntries(Object.entries(props).map(([k, v]) => [k, String(v)])) : null,
    nextRowId: optNum(o, "nextRowId"),
    uuid: optStr(o["uuid"]),
    operation: optStr(o["operation"]),
  };
}

/** The wire object in Java's key order; null-valued optional keys are omitted as Java omits them. */
export function snapshotToJson(s: Snapshot): Record<string, unknown> {
  const out: Record<string, unknown> = { version: s.version };
  if (s.uuid !== null) out["uuid"] = s.uuid;
  out["id"] = s.id;
  out["schemaId"] = s.schemaId;
  out["baseManifestList"] = s.baseManifestList;
  if (s.baseManifestListSize !== null) out["baseManifestListSize"] = s.baseManifestListSize;
  out["deltaManifestList"] = s.deltaManifestList;
  if (s.deltaManifestListSize !== null) out["deltaManifestListSize"] = s.deltaManifestListSize;
  if (s.changelogManifestList !== null) out["changelogManifestList"] = s.changelogManifestList;
  if (s.changelogManifestListSize !== null) out["changelogManifestListSize"] = s.changelogManifestListSize;
  if (s.indexManifest !== null) out["indexManifest"] = s.indexManifest;
  out["commitUser"] = s.commitUser;
  out["commitIdentifier"] = s.commitIdentifier;
  out["commitKind"] = s.commitKind;
  out["timeMillis"] = s.timeMillis;
  out["totalRecordCount"] = s.totalRecordCount;
  out["deltaRecordCount"] = s.deltaRecordCount;
  if (s.changelogRecordCount !== null) out["changelogRecordCount"] = s.changelogRecordCount;
  if (s.watermark !== null) out["watermark"] = s.watermark;
  if (s.statistics !== null) out["statistics"] = s.statistics;
  if (s.properties !== null && Object.keys(s.properties).length > 0) out["properties"] = s.properties;
  if (s.nextRowId !== null) out["nextRowId"] = s.nextRowId;
  if (s.operation !== null) out["operation"] = s.operation;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// natslake properties

export const PROP_EPOCH = "natslake.epoch";
export const PROP_OFFSET_PREFIX = "natslake.offset.";
export const PROP_OWNER_EPOCH_PREFIX = "natslake.owner-epoch.";
export const PROP_STREAM = "natslake.stream";
export const PROP_OFFSET_EPOCH = "natslake.offset-epoch";
export const PROP_COMPACTIONS_DECIDED = "natslake.compactions-decided";
/** Primary-key tables: the highest sequence number a bucket's committed flushes took (merged-away rows included). */
export const PROP_SEQ_PREFIX = "natslake.seq.";

export interface BucketProgress {
  /** Last stream sequence committed for the bucket. */
  offset: bigint;
  ownerEpoch: number;
  /**
   * Primary-key tables: the highest sequence number taken by the bucket's committed flushes. A writer continues at
   * the next one, from the same snapshot (or rejection) as its offset: a bucket's sequence numbers then grow with its
   * stream order across restarts and hand-offs, which the merge of its versions depends on.
   */
  seq?: bigint;
}

export interface NatslakeState {
  epoch: number;
  buckets: Map<number, BucketProgress>;
  /**
   * The identity of the stream the offsets belong to; undefined in snapshots of natslake versions that did not record
   * it (and before the first committable of a table).
   */
  stream?: string;
  /** How many times the offsets were reset onto another stream (0 when never). */
  offsetEpoch?: number;
  /**
   * The last commit-stream entry of a writer's compaction that a COMPACT snapshot decided, as
   * `<commit stream identity>/<sequence>` (src/commit/compaction-commit.ts): a compaction read again at or below it
   * (a leader died before purging it) is a duplicate, even when its outputs were compacted away since.
   */
  compactionsDecided?: string;
}

/** natslake's state in a snapshot, or null when the snapshot was committed by another engine. */
export function natslakeState(s: Snapshot): NatslakeState | null {
  const p = s.properties;
  if (p === null || p[PROP_EPOCH] === undefined) return null;
  const buckets = new Map<number, BucketProgress>();
  for (const [k, v] of Object.entries(p)) {
    if (!k.startsWith(PROP_OFFSET_PREFIX)) continue;
    const b = Number(k.slice(PROP_OFFSET_PREFIX.length));
    const progress: BucketProgress = { offset: BigInt(v), ownerEpoch: Number(p[PROP_OWNER_EPOCH_PREFIX + b] ?? "0") };
    const seq = p[PROP_SEQ_PREFIX + b];
    if (seq !== undefined) progress.seq = BigInt(seq);
    buckets.set(b, progress);
  }
  const st: NatslakeState = { epoch: Number(p[PROP_EPOCH]), buckets };
  if (p[PROP_STREAM] !== undefined) st.stream = p[PROP_STREAM];
  if (p[PROP_OFFSET_EPOCH] !== undefined) st.offsetEpoch = Number(p[PROP_OFFSET_EPOCH]);
  if (p[PROP_COMPACTIONS_DECIDED] !== undefined) st.compactionsDecided = p[PROP_COMPACTIONS_DECIDED];
  return st;
}

export function natslakeProperties(state: NatslakeState, base: Record<string, string> | null = null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(base ?? {})) if (!k.startsWith("natslake.")) out[k] = v;
  out[PROP_EPOCH] = String(state.epoch);
  if (state.stream !== undefined) out[PROP_STREAM] = state.stream;
  if (state.offsetEpoch !== undefined && state.offsetEpoch > 0) out[PROP_OFFSET_EPOCH] = String(state.offsetEpoch);
  if (state.compactionsDecided !== undefined) out[PROP_COMPACTIONS_DECIDED] = state.compactionsDecided;
  for (const [b, p] of [...state.buckets.entries()].sort((x, y) => x[0] - y[0])) {
    out[PROP_OFFSET_PREFIX + b] = p.offset.toString();
    out[PROP_OWNER_EPOCH_PREFIX + b] = String(p.ownerEpoch);
    if (p.seq !== undefined) out[PROP_SEQ_PREFIX + b] = p.seq.toString();
  }
  return out;
}
