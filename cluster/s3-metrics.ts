/**
 * `natslake_s3_requests_total{type}`: the requests this node's warehouse FileIO sent to the object store, by type
 * (PUT, GET, HEAD, LIST, DELETE, OTHER; src/io/s3-requests.ts counts them on the client, once per attempt, as the
 * store bills them). Operators see what the node costs, and the benchmark reads requests per commit and LISTs per
 * second from here. A local warehouse exports nothing.
 */
import type { Meter } from "@opentelemetry/api";
import type { FileIO } from "../src/io/file-io.ts";
import { S3FileIO } from "../src/io/s3.ts";
import { S3_REQUEST_TYPES } from "../src/io/s3-requests.ts";

export const S3_REQUESTS_METRIC = "natslake_s3_requests_total";

export function registerS3RequestMetric(meter: Meter, io: FileIO): void {
  if (!(io instanceof S3FileIO)) return;
  meter
    .createObservableCounter(S3_REQUESTS_METRIC, { description: "requests sent to the warehouse's object store by this node, by type (PUT, GET, HEAD, LIST, DELETE, OTHER)" })
    .addCallback((r) => {
      for (const type of S3_REQUEST_TYPES) r.observe(io.requests[type], { type, bucket: io.bucket });
    });
}
