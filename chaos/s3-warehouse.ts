/**
 * The chaos topology's object-store warehouse (`chaos run --s3`): a SeaweedFS of the run's own
 * (cluster/local/seaweedfs.ts: its own data directory in the run directory, random keys, loopback ports), bucket
 * `natslake-chaos`, the nodes on `s3://natslake-chaos/warehouse` with the credentials in their environment (the
 * runner's own process gets them too: its quiescence check and the verifier open the same URI).
 *
 * The verifier (chaos/verifier.ts) reads a warehouse directory — pyarrow checks each data file by path, the link time
 * of a snapshot is its file's mtime — so once every node is stopped, `copyTo` downloads the warehouse's objects into
 * a local directory with the same layout and verification runs on that copy: the same bytes, read after the last
 * write. S3 gives modification times to the second (SeaweedFS's LastModified, like AWS's listings), so a copied file's
 * mtime is the END of the second its object was stored in: a snapshot never counts as linked before it was, and a
 * recovery time (I5) is overstated by less than a second, never understated.
 */
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { GetObjectCommand, ListObjectsV2Command, type _Object } from "@aws-sdk/client-s3";
import { seaweedVersion, startSeaweed, type SeaweedHandle } from "../cluster/local/seaweedfs.ts";

export const CHAOS_BUCKET = "natslake-chaos";
const PREFIX = "warehouse";

export interface ChaosS3 {
  /** The warehouse URI the nodes get (`s3://natslake-chaos/warehouse?endpoint=…`). */
  readonly uri: string;
  readonly server: SeaweedHandle;
  /** For the report: which store, which version. */
  readonly label: string;
  /** Downloads every object of the warehouse into `dir` (same layout); call once nothing writes any more. */
  copyTo(dir: string): Promise<{ objects: number; bytes: number }>;
  stop(): Promise<void>;
}

export async function startChaosS3(dataDir: string): Promise<ChaosS3> {
  const server = await startSeaweed({ dir: dataDir });
  const env = server.env;
  try {
    await server.createBucket(CHAOS_BUCKET);
  } catch (e) {
    await server.stop();
    throw e;
  }
  // Credentials travel in the environment only (never in a URI): the nodes inherit them from this process.
  Object.assign(process.env, env);
  return {
    uri: `s3://${CHAOS_BUCKET}/${PREFIX}?endpoint=${encodeURIComponent(server.endpoint)}`,
    server,
    label: `S3 (SeaweedFS ${seaweedVersion()}, s3://${CHAOS_BUCKET}/${PREFIX})`,
    copyTo: (dir) => copyObjects(server, dir),
    stop: async () => {
      for (const k of Object.keys(env)) if (process.env[k] === env[k]) delete process.env[k];
      await server.stop();
    },
  };
}

async function copyObjects(server: SeaweedHandle, dir: string): Promise<{ objects: number; bytes: number }> {
  const objects: _Object[] = [];
  let token: string | undefined;
  do {
    const page = await server.client.send(new ListObjectsV2Command({ Bucket: CHAOS_BUCKET, Prefix: `${PREFIX}/`, ContinuationToken: token }));
    objects.push(...(page.Contents ?? []));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  mkdirSync(dir, { recursive: true });
  let bytes = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) {
      const o = objects[next++]!;
      const rel = o.Key!.slice(PREFIX.length + 1);
      if (rel === "" || rel.endsWith("/")) {
        mkdirSync(join(dir, rel), { recursive: true }); // a directory marker
        continue;
      }
      const res = await server.client.send(new GetObjectCommand({ Bucket: CHAOS_BUCKET, Key: o.Key }));
      const body = await res.Body!.transformToByteArray();
      const path = join(dir, rel);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      bytes += body.length;
      const stored = o.LastModified?.getTime() ?? Date.now();
      const end = stored % 1000 === 0 ? stored + 999 : stored; // second resolution: the end of that second
      utimesSync(path, end / 1000, end / 1000);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { objects: objects.length, bytes };
}
