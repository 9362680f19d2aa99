/**
 * `natslake_s3_requests_total{type, area}`: the requests this node's warehouse FileIO sent to the object store, by
 * type (PUT, GET, HEAD, LIST, DELETE, OTHER) and by the area of the table they touched (snapshot, manifest, data,
 * schema, consumer, tag, committables, probe; catalog above the tables) — src/io/s3-requests.ts counts them on the
 * client, once per attempt, as the store bills them. Operators see what a node costs; the benchmark reads requests
 * per commit from here, and that nothing lists snapshot/ or manifest/ while commits land. Sum over `area` for the
 * totals. A local warehouse exports nothing.
 */
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "../actors/metrics.ts";
import type { FileIO } from "../src/io/file-io.ts";
import { S3FileIO } from "../src/io/s3.ts";
import { S3_AREAS, S3_REQUEST_TYPES } from "../src/io/s3-requests.ts";

export const S3_REQUESTS_METRIC = METRICS.s3Requests.name;

export function registerS3RequestMetric(meter: Meter, io: FileIO): void {
  if (!(io instanceof S3FileIO)) return;
  METRICS.s3Requests.create(meter).addCallback((r) => {
      // A series appears with its first request (counters only grow, so it stays).
      for (const area of S3_AREAS) for (const type of S3_REQUEST_TYPES) if (io.requestsByArea[area][type] > 0) r.observe(io.requestsByArea[area][type], { type, area, bucket: io.bucket });
    });
}
