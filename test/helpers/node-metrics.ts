/**
 * Reads a node's `/metrics` (Prometheus text, `--metrics-port`): the S3 request counters
 * (`natslake_s3_requests_total{type}`, cluster/s3-metrics.ts) for tests and the cluster benchmark.
 */
import { S3_REQUEST_TYPES, zeroCounts, type S3RequestCounts } from "../../src/io/s3-requests.ts";
import { S3_REQUESTS_METRIC } from "../../cluster/s3-metrics.ts";

/** The S3 request counts in a Prometheus text body; null when the node exports none (a local warehouse). */
export function parseS3Requests(body: string): S3RequestCounts | null {
  const out = zeroCounts();
  let seen = false;
  const line = new RegExp(`^${S3_REQUESTS_METRIC}\\{([^}]*)\\} (\\d+(?:\\.\\d+)?(?:e\\+?\\d+)?)`, "gm");
  for (const m of body.matchAll(line)) {
    const type = /(?:^|,)type="([A-Z]+)"/.exec(m[1]!)?.[1];
    if (type === undefined || !(S3_REQUEST_TYPES as readonly string[]).includes(type)) continue;
    out[type as keyof S3RequestCounts] += Number(m[2]);
    seen = true;
  }
  return seen ? out : null;
}

/** Scrapes `http://127.0.0.1:<port>/metrics` once (5 s timeout). */
export async function scrapeMetrics(port: number): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (r.status !== 200) throw new Error(`/metrics on port ${port} answered ${r.status}`);
  return r.text();
}

/** The node's S3 request counts now; throws when it exports none. */
export async function scrapeS3Requests(port: number): Promise<S3RequestCounts> {
  const counts = parseS3Requests(await scrapeMetrics(port));
  if (counts === null) throw new Error(`the node on metrics port ${port} exports no ${S3_REQUESTS_METRIC}`);
  return counts;
}
