/**
 * Counts the HTTP requests an S3 client sends, by type (PUT, GET, HEAD, LIST, DELETE), so tests and benchmarks can
 * assert what a code path costs — above all that the commit path never LISTs. Installed as a middleware on the
 * client, below its retry middleware: a retried request counts once per attempt, as the store bills it.
 */
import type { S3Client } from "@aws-sdk/client-s3";

export const S3_REQUEST_TYPES = ["PUT", "GET", "HEAD", "LIST", "DELETE", "OTHER"] as const;
export type S3RequestType = (typeof S3_REQUEST_TYPES)[number];
export type S3RequestCounts = Record<S3RequestType, number>;

export const zeroCounts = (): S3RequestCounts => ({ PUT: 0, GET: 0, HEAD: 0, LIST: 0, DELETE: 0, OTHER: 0 });

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

/** Adds the counting middleware to `client`; the returned counts grow as it sends requests. */
export function countRequests(client: S3Client, counts: S3RequestCounts = zeroCounts()): S3RequestCounts {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts[classifyRequest(args.request as SeenRequest, context.commandName)]++;
      return next(args);
    },
    // After signing, inside the retry loop: once per attempt.
    { step: "finalizeRequest", priority: "low", name: "natslakeRequestCounter" },
  );
  return counts;
}
