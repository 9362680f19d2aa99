/**
 * msgpack codecs of the control-plane messages (committables, rejections). One Packr configuration for all of them:
 * no records extension (other languages can read the bytes), bigints as int64 both ways, so sequence numbers of
 * DataFileMeta survive exactly. Decoding validates the shape once; the rest of the code trusts the types.
 */
import { Packr } from "msgpackr";
import { dataInvalid } from "../../src/errors.ts";
import type { DataFileMeta } from "../../src/format/manifest.ts";
import type { CommitEntry, Committable, CommittableClaim, CompactionEntry, CompactionRejection, Rejection, WriterRejection } from "./messages.ts";

const packr = new Packr({ useRecords: false, int64AsType: "bigint", mapsAsObjects: true });

export const encodeMsg = (m: CommitEntry | WriterRejection): Uint8Array => packr.pack(m);

const num = (v: unknown, what: string): number => {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  throw dataInvalid(`${what} is not a number`);
};
const big = (v: unknown): bigint => (typeof v === "bigint" ? v : BigInt(v as number));
const bytes = (v: unknown): Uint8Array => (v instanceof Uint8Array ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(0));

/** The fields a committable and a reference to one share (see CommittableClaim). */
function decodeClaim(o: Record<string, unknown>): CommittableClaim {
  return {
    table: String(o["table"]),
    ...(typeof o["stream"] === "string" ? { stream: o["stream"] } : {}),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    writerId: String(o["writerId"]),
    prevOffset: num(o["prevOffset"], "prevOffset"),
    lastOffset: num(o["lastOffset"], "lastOffset"),
    flushId: num(o["flushId"], "flushId"),
    ...(typeof o["beatMillis"] === "number" ? { beatMillis: o["beatMillis"] } : {}),
    ...(typeof o["traceparent"] === "string" ? { traceparent: o["traceparent"] } : {}),
    ...(o["seq"] !== undefined && o["seq"] !== null ? { seq: seqRangeOf(o["seq"] as Record<string, unknown>) } : {}),
  };
}

/** A primary-key flush's sequence range (both ends int64). */
function seqRangeOf(r: Record<string, unknown>): { first: bigint; last: bigint } {
  if (r["first"] === undefined || r["last"] === undefined) throw dataInvalid("a sequence range needs first and last");
  return { first: big(r["first"]), last: big(r["last"]) };
}

/** A message of the commit stream: a committable or a reference to one. */
export function decodeCommitEntry(data: Uint8Array): CommitEntry {
  const o = packr.unpack(data) as Record<string, unknown>;
  if (o?.["type"] === "committable-ref") {
    if (o["v"] !== 1) throw dataInvalid("not a v1 committable reference");
    return {
      type: "committable-ref",
      v: 1,
      ...decodeClaim(o),
      path: String(o["path"]),
      size: num(o["size"], "size"),
    };
  }
  if (o?.["type"] === "compaction") return compactionOf(o);
  return committableOf(o);
}

function compactionOf(o: Record<string, unknown>): CompactionEntry {
  if (o["v"] !== 1) throw dataInvalid("not a v1 compaction");
  if (!Array.isArray(o["changes"])) throw dataInvalid("a compaction without changes");
  return {
    type: "compaction",
    v: 1,
    table: String(o["table"]),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    writerId: String(o["writerId"]),
    compactionId: String(o["compactionId"]),
    planSnapshotId: num(o["planSnapshotId"], "planSnapshotId"),
    changes: (o["changes"] as Array<Record<string, unknown>>).map((ch) => ({
      partition: bytes(ch["partition"]),
      totalBuckets: num(ch["totalBuckets"], "totalBuckets"),
      before: (ch["before"] as unknown[]).map((m) => fileMetaOf(m as Record<string, unknown>)),
      after: (ch["after"] as unknown[]).map((m) => fileMetaOf(m as Record<string, unknown>)),
    })),
  };
}

export function decodeCommittable(data: Uint8Array): Committable {
  return committableOf(packr.unpack(data) as Record<string, unknown>);
}

function committableOf(o: Record<string, unknown>): Committable {
  if (o?.["type"] !== "committable" || o["v"] !== 1) throw dataInvalid("not a v1 committable");
  const files = (o["files"] as Array<Record<string, unknown>>).map((f) => ({
    partition: bytes(f["partition"]),
    totalBuckets: num(f["totalBuckets"], "totalBuckets"),
    meta: fileMetaOf(f["meta"] as Record<string, unknown>),
    ...(f["changelog"] === true ? { changelog: true as const } : {}),
  }));
  return {
    type: "committable",
    v: 1,
    ...decodeClaim(o),
    rowCount: num(o["rowCount"], "rowCount"),
    files,
    firstArrivalMillis: num(o["firstArrivalMillis"], "firstArrivalMillis"),
  };
}

/** A DataFileMeta as msgpack carries it (bigints as int64, bytes as bin). */
function fileMetaOf(m: Record<string, unknown>): DataFileMeta {
  const stats = (s: unknown) => {
    const x = s as Record<string, unknown>;
    return { minValues: bytes(x["minValues"]), maxValues: bytes(x["maxValues"]), nullCounts: (x["nullCounts"] as unknown[]).map((n) => (n === null ? null : big(n))) };
  };
  return {
        fileName: String(m["fileName"]),
        fileSize: num(m["fileSize"], "fileSize"),
        rowCount: num(m["rowCount"], "rowCount"),
        minKey: bytes(m["minKey"]),
        maxKey: bytes(m["maxKey"]),
        keyStats: stats(m["keyStats"]),
        valueStats: stats(m["valueStats"]),
        minSequenceNumber: big(m["minSequenceNumber"]),
        maxSequenceNumber: big(m["maxSequenceNumber"]),
        schemaId: num(m["schemaId"], "schemaId"),
        level: num(m["level"], "level"),
        extraFiles: (m["extraFiles"] as string[]) ?? [],
        creationTimeMillis: m["creationTimeMillis"] === null ? null : num(m["creationTimeMillis"], "creationTimeMillis"),
        deleteRowCount: m["deleteRowCount"] === null ? null : num(m["deleteRowCount"], "deleteRowCount"),
        embeddedIndex: m["embeddedIndex"] === null || m["embeddedIndex"] === undefined ? null : bytes(m["embeddedIndex"]),
        fileSource: m["fileSource"] === null ? null : num(m["fileSource"], "fileSource"),
        valueStatsCols: (m["valueStatsCols"] as string[] | null) ?? null,
        externalPath: (m["externalPath"] as string | null) ?? null,
        firstRowId: m["firstRowId"] === null || m["firstRowId"] === undefined ? null : big(m["firstRowId"]),
        writeCols: (m["writeCols"] as string[] | null) ?? null,
  };
}

/** A message of `<p>.ctl.reject.<db>.<table>.<writer>`: a committable's rejection or a compaction's. */
export function decodeRejection(data: Uint8Array): WriterRejection {
  const o = packr.unpack(data) as Record<string, unknown>;
  if (o?.["type"] === "compaction-rejection") return decodeCompactionRejection(o);
  if (o?.["type"] !== "rejection") throw dataInvalid("not a rejection");
  return {
    type: "rejection",
    table: String(o["table"]),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    prevOffset: num(o["prevOffset"], "prevOffset"),
    committedOffset: num(o["committedOffset"], "committedOffset"),
    ...(o["committedSeq"] !== undefined && o["committedSeq"] !== null ? { committedSeq: big(o["committedSeq"]) } : {}),
    reason: o["reason"] as Rejection["reason"],
  };
}

function decodeCompactionRejection(o: Record<string, unknown>): CompactionRejection {
  if (typeof o["compactionId"] !== "string") throw dataInvalid("compaction rejection without a compactionId");
  return {
    type: "compaction-rejection",
    table: String(o["table"]),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    compactionId: o["compactionId"],
    reason: o["reason"] as CompactionRejection["reason"],
    detail: String(o["detail"] ?? ""),
  };
}
