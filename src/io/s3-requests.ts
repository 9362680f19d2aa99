/**
 * Counts the HTTP requests an S3 client sends, by type (PUT, GET, HEAD, LIST, DELETE), so tests and benchmarks can
 * assert what a code path costs — above all that the commit path never LISTs. Installed as a middleware on the
 * client, below its retry middleware: a retried request counts once per attempt, as the store bills it.
 *
 * Each request is also counted by the area of the table it touched (snapshot/, manifest/, a bucket's data, schema/,
 * consumer/, tag/, …; `catalog` for the warehouse and database levels): a running cluster's periodic work (table
 * scans, maintenance) lists too, and only the area tells a listing of `snapshot/` or `manifest/` — what a commit
 * path that listed would show — from a table scan's.
 */
import type { S3Client } from "@aws-sdk/client-s3";

export const S3_REQUEST_TYPES = ["PUT", "GET", "HEAD", "LIST", "DELETE", "OTHER"] as const;
export type S3RequestType = (typeof S3_REQUEST_TYPES)[number];
export type S3RequestCounts = Record<S3RequestType, number>;

export const zeroCounts = (): S3RequestCounts => ({ PUT: 0, GET: 0, HEAD: 0, LIST: 0, DELETE: 0, OTHER: 0 });

export const S3_AREAS = ["snapshot", "manifest", "data", "schema", "consumer", "tag", "committables", "probe", "catalog"] as const;
export type S3Area = (typeof S3_AREAS)[number];
export type S3AreaCounts = Record<S3Area, S3RequestCounts>;

export const zeroAreaCounts = (): S3AreaCounts => Object.fromEntries(S3_AREAS.map((a) => [a, zeroCounts()])) as S3AreaCounts;

const AREA_OF_DIR: Readonly<Record<string, S3Area>> = {
  snapshot: "snapshot",
  manifest: "manifest",
  schema: "schema",
  consumer: "consumer",
  tag: "tag",
  "natslake-committables": "committables",
  ".natslake": "probe",
};

/**
 * The area of an object key or listing prefix: the table directory it is under (`…/db.db/t/snapshot/LATEST` →
 * snapshot), `data` for partition and bucket directories (`…/t/dt=a/bucket-0/…`), `catalog` for anything above a
 * table (the warehouse, a database, a table's own directory).
 */
export function areaOfKey(key: string): S3Area {
  const parts = key.split("/").filter((p) => p !== "");
  // The object's own name (the last part) is not a directory, unless the key is a listing prefix ending in `/`.
  const dirs = key.endsWith("/") ? parts : parts.slice(0, -1);
  for (let i = dirs.length - 1; i >= 0; i--) {
    const d = dirs[i]!;
    const area = AREA_OF_DIR[d];
    if (area !== undefined) return area;
    if (/^bucket-(\d+|postpone)$/.test(d) || d.includes("=")) return "data"; // a bucket or partition directory
  }
  return "catalog";
}

/** What `after` added to `before`, type by type. */
export function countsSince(before: S3RequestCounts, after: S3RequestCounts): S3RequestCounts {
  const out = zeroCounts();
  for (const t of S3_REQUEST_TYPES) out[t] = after[t] - before[t];
  return out;
}

/** The shape of a request the middleware sees (smithy's HttpRequest, only what is read here). */
interface SeenRequest {
  method?: string;
  query?: Record<string, unknown>;
}

/**
 * The type of one request. A LIST is a GET on the bucket with `list-type` (ListObjectsV2) or without a key; a
 * multi-object delete is a POST with `?delete`; the multipart steps (create, part, complete, abort) count as the PUT
 * (or DELETE) they are part of.
 */
export function classifyRequest(req: SeenRequest, commandName: string | undefined): S3RequestType {
  const method = (req.method ?? "").toUpperCase();
  const query = req.query ?? {};
  if (commandName === "ListObjectsV2Command" || commandName === "ListObjectsCommand" || "list-type" in query) return "LIST";
  if (method === "GET") return "GET";
  if (method === "HEAD") return "HEAD";
  if (method === "PUT") return "PUT";
  if (method === "DELETE") return "DELETE";
  if (method === "POST") return "delete" in query ? "DELETE" : "uploads" in query || "uploadId" in query ? "PUT" : "OTHER";
  return "OTHER";
}

/** Adds the counting middleware to `client`; the counts grow as it sends requests (by area too, when given). */
export function countRequests(client: S3Client, counts: S3RequestCounts = zeroCounts(), byArea?: S3AreaCounts): S3RequestCounts {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const type = classifyRequest(args.request as SeenRequest, context.commandName);
      counts[type]++;
      if (byArea !== undefined) {
        const input = args.input as { Key?: string; Prefix?: string } | undefined;
        byArea[areaOfKey(input?.Key ?? input?.Prefix ?? "")][type]++;
      }
      return next(args);
    },
    // After signing, inside the retry loop: once per attempt.
    { step: "finalizeRequest", priority: "low", name: "natslakeRequestCounter" },
  );
  return counts;
}
