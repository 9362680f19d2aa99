/**
 * Reads a node's `/metrics` (Prometheus text, `--metrics-port`): the S3 request counters
 * (`natslake_s3_requests_total{type, area}`, cluster/s3-metrics.ts) for tests and the cluster benchmark.
 */
import { S3_AREAS, S3_REQUEST_TYPES, countsSince, zeroAreaCounts, zeroCounts, type S3Area, type S3AreaCounts, type S3RequestCounts } from "../../src/io/s3-requests.ts";
import { S3_REQUESTS_METRIC } from "../../cluster/s3-metrics.ts";

export interface NodeS3Requests {
  /** Summed over areas. */
  total: S3RequestCounts;
  byArea: S3AreaCounts;
}

/** The S3 request counts in a Prometheus text body; null when the node exports none (a local warehouse). */
export function parseS3Requests(body: string): NodeS3Requests | null {
  const out: NodeS3Requests = { total: zeroCounts(), byArea: zeroAreaCounts() };
  let seen = false;
  const line = new RegExp(`^${S3_REQUESTS_METRIC}\\{([^}]*)\\} (\\d+(?:\\.\\d+)?(?:e\\+?\\d+)?)`, "gm");
  for (const m of body.matchAll(line)) {
    const label = (name: string): string | undefined => new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(m[1]!)?.[1];
    const type = label("type") as keyof S3RequestCounts | undefined;
    const area = label("area") as S3Area | undefined;
    if (type === undefined || !S3_REQUEST_TYPES.includes(type) || area === undefined || !S3_AREAS.includes(area)) continue;
    out.total[type] += Number(m[2]);
    out.byArea[area][type] += Number(m[2]);
    seen = true;
  }
  return seen ? out : null;
}

/** What `after` added to `before`, in total and by area. */
export function requestsSince(before: NodeS3Requests, after: NodeS3Requests): NodeS3Requests {
  const byArea = zeroAreaCounts();
  for (const a of S3_AREAS) byArea[a] = countsSince(before.byArea[a], after.byArea[a]);
  return { total: countsSince(before.total, after.total), byArea };
}

/** The areas with at least one request of `type`, with their counts (for messages). */
export function areasWith(r: NodeS3Requests, type: keyof S3RequestCounts): Partial<Record<S3Area, number>> {
  return Object.fromEntries(S3_AREAS.filter((a) => r.byArea[a][type] > 0).map((a) => [a, r.byArea[a][type]]));
}

/** Scrapes `http://127.0.0.1:<port>/metrics` once (5 s timeout). */
export async function scrapeMetrics(port: number): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (r.status !== 200) throw new Error(`/metrics on port ${port} answered ${r.status}`);
  return r.text();
}

/** The node's S3 request counts now; throws when it exports none. */
export async function scrapeS3Requests(port: number): Promise<NodeS3Requests> {
  const counts = parseS3Requests(await scrapeMetrics(port));
  if (counts === null) throw new Error(`the node on metrics port ${port} exports no ${S3_REQUESTS_METRIC}`);
  return counts;
}
