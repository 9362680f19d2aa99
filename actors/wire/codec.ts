/**
 * msgpack codecs of the control-plane messages (committables, rejections). One Packr configuration for all of them:
 * no records extension (other languages can read the bytes), bigints as int64 both ways, so sequence numbers of
 * DataFileMeta survive exactly. Decoding validates the shape once; the rest of the code trusts the types.
 */
import { Packr } from "msgpackr";
import { dataInvalid } from "../../src/errors.ts";
import type { DataFileMeta } from "../../src/format/manifest.ts";
import { bigField, describeValue, intField, listField, nullableField, objectField, strField, stringsField } from "../../src/format/wire/fields.ts";
import type { CommitEntry, Committable, CommittableClaim, CompactionEntry, CompactionRejection, Rejection, WriterRejection } from "./messages.ts";

const packr = new Packr({ useRecords: false, int64AsType: "bigint", mapsAsObjects: true });

export const encodeMsg = (m: CommitEntry | WriterRejection): Uint8Array => packr.pack(m);

// Field readers (src/format/wire/fields.ts): a field of the wrong type is a DataInvalid naming it.
const num = intField;
const big = bigField;
const str = strField;
const list = listField;
const strings = stringsField;
const nullable = nullableField;
const record = objectField;
const bytes = (v: unknown, what: string): Uint8Array => {
  if (v instanceof Uint8Array) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw dataInvalid(`${what} is not bytes (got ${describeValue(v)})`);
};

/** A control message's map; bytes that are not msgpack, or not a map, are a DataInvalid. */
function unpackMap(data: Uint8Array, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = packr.unpack(data);
  } catch (e) {
    throw dataInvalid(`${what} is not valid msgpack: ${(e as Error).message}`);
  }
  return record(v, what);
}

/** The fields a committable and a reference to one share (see CommittableClaim). */
function decodeClaim(o: Record<string, unknown>): CommittableClaim {
  return {
    table: str(o["table"], "table"),
    ...(typeof o["stream"] === "string" ? { stream: o["stream"] } : {}),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    writerId: str(o["writerId"], "writerId"),
    prevOffset: num(o["prevOffset"], "prevOffset"),
    lastOffset: num(o["lastOffset"], "lastOffset"),
    flushId: num(o["flushId"], "flushId"),
    ...(typeof o["beatMillis"] === "number" ? { beatMillis: o["beatMillis"] } : {}),
    ...(typeof o["traceparent"] === "string" ? { traceparent: o["traceparent"] } : {}),
    ...(o["seq"] !== undefined && o["seq"] !== null ? { seq: seqRangeOf(record(o["seq"], "seq")) } : {}),
  };
}

/** A primary-key flush's sequence range (both ends int64). */
function seqRangeOf(r: Record<string, unknown>): { first: bigint; last: bigint } {
  if (r["first"] === undefined || r["last"] === undefined) throw dataInvalid("a sequence range needs first and last");
  return { first: big(r["first"], "seq.first"), last: big(r["last"], "seq.last") };
}

/** A message of the commit stream: a committable or a reference to one. */
export function decodeCommitEntry(data: Uint8Array): CommitEntry {
  const o = unpackMap(data, "commit entry");
  if (o["type"] === "committable-ref") {
    if (o["v"] !== 1) throw dataInvalid("not a v1 committable reference");
    return {
      type: "committable-ref",
      v: 1,
      ...decodeClaim(o),
      path: str(o["path"], "path"),
      size: num(o["size"], "size"),
    };
  }
  if (o["type"] === "compaction") return compactionOf(o);
  return committableOf(o);
}

function compactionOf(o: Record<string, unknown>): CompactionEntry {
  if (o["v"] !== 1) throw dataInvalid("not a v1 compaction");
  if (!Array.isArray(o["changes"])) throw dataInvalid("a compaction without changes");
  return {
    type: "compaction",
    v: 1,
    table: str(o["table"], "table"),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    writerId: str(o["writerId"], "writerId"),
    compactionId: str(o["compactionId"], "compactionId"),
    planSnapshotId: num(o["planSnapshotId"], "planSnapshotId"),
    changes: list(o["changes"], "changes").map((c, i) => {
      const ch = record(c, `changes[${i}]`);
      return {
        partition: bytes(ch["partition"], `changes[${i}].partition`),
        totalBuckets: num(ch["totalBuckets"], `changes[${i}].totalBuckets`),
        before: list(ch["before"], `changes[${i}].before`).map((m) => fileMetaOf(m)),
        after: list(ch["after"], `changes[${i}].after`).map((m) => fileMetaOf(m)),
        ...(ch["changelog"] !== undefined ? { changelog: list(ch["changelog"], `changes[${i}].changelog`).map((m) => fileMetaOf(m)) } : {}),
      };
    }),
  };
}

export function decodeCommittable(data: Uint8Array): Committable {
  return committableOf(unpackMap(data, "committable"));
}

function committableOf(o: Record<string, unknown>): Committable {
  if (o["type"] !== "committable" || o["v"] !== 1) throw dataInvalid("not a v1 committable");
  const files = list(o["files"], "files").map((x, i) => {
    const f = record(x, `files[${i}]`);
    return {
      partition: bytes(f["partition"], `files[${i}].partition`),
      totalBuckets: num(f["totalBuckets"], `files[${i}].totalBuckets`),
      meta: fileMetaOf(f["meta"]),
      ...(f["changelog"] === true ? { changelog: true as const } : {}),
    };
  });
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
function fileMetaOf(x: unknown): DataFileMeta {
  const m = record(x, "file meta");
  const stats = (s: unknown, what: string) => {
    const st = record(s, what);
    return {
      minValues: bytes(st["minValues"], `${what}.minValues`),
      maxValues: bytes(st["maxValues"], `${what}.maxValues`),
      nullCounts: list(st["nullCounts"], `${what}.nullCounts`).map((n) => nullable(n, (v) => big(v, `${what}.nullCounts`))),
    };
  };
  return {
    fileName: str(m["fileName"], "fileName"),
    fileSize: num(m["fileSize"], "fileSize"),
    rowCount: num(m["rowCount"], "rowCount"),
    minKey: bytes(m["minKey"], "minKey"),
    maxKey: bytes(m["maxKey"], "maxKey"),
    keyStats: stats(m["keyStats"], "keyStats"),
    valueStats: stats(m["valueStats"], "valueStats"),
    minSequenceNumber: big(m["minSequenceNumber"], "minSequenceNumber"),
    maxSequenceNumber: big(m["maxSequenceNumber"], "maxSequenceNumber"),
    schemaId: num(m["schemaId"], "schemaId"),
    level: num(m["level"], "level"),
    extraFiles: nullable(m["extraFiles"], (v) => strings(v, "extraFiles")) ?? [],
    creationTimeMillis: nullable(m["creationTimeMillis"], (v) => num(v, "creationTimeMillis")),
    deleteRowCount: nullable(m["deleteRowCount"], (v) => num(v, "deleteRowCount")),
    embeddedIndex: nullable(m["embeddedIndex"], (v) => bytes(v, "embeddedIndex")),
    fileSource: nullable(m["fileSource"], (v) => num(v, "fileSource")),
    valueStatsCols: nullable(m["valueStatsCols"], (v) => strings(v, "valueStatsCols")),
    externalPath: nullable(m["externalPath"], (v) => str(v, "externalPath")),
    firstRowId: nullable(m["firstRowId"], (v) => big(v, "firstRowId")),
    writeCols: nullable(m["writeCols"], (v) => strings(v, "writeCols")),
  };
}

/** A message of `<p>.ctl.reject.<db>.<table>.<writer>`: a committable's rejection or a compaction's. */
export function decodeRejection(data: Uint8Array): WriterRejection {
  const o = unpackMap(data, "rejection");
  if (o["type"] === "compaction-rejection") return decodeCompactionRejection(o);
  if (o["type"] !== "rejection") throw dataInvalid("not a rejection");
  return {
    type: "rejection",
    table: str(o["table"], "table"),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    prevOffset: num(o["prevOffset"], "prevOffset"),
    committedOffset: num(o["committedOffset"], "committedOffset"),
    ...(o["committedSeq"] !== undefined && o["committedSeq"] !== null ? { committedSeq: big(o["committedSeq"], "committedSeq") } : {}),
    reason: str(o["reason"], "reason") as Rejection["reason"],
  };
}

function decodeCompactionRejection(o: Record<string, unknown>): CompactionRejection {
  if (typeof o["compactionId"] !== "string") throw dataInvalid("compaction rejection without a compactionId");
  return {
    type: "compaction-rejection",
    table: str(o["table"], "table"),
    bucket: num(o["bucket"], "bucket"),
    ownerEpoch: num(o["ownerEpoch"], "ownerEpoch"),
    compactionId: o["compactionId"],
    reason: str(o["reason"], "reason") as CompactionRejection["reason"],
    detail: o["detail"] === undefined || o["detail"] === null ? "" : str(o["detail"], "detail"),
  };
}
