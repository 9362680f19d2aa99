/**
 * A real S3-compatible store for tests: SeaweedFS (cluster/local/seaweedfs.ts) on loopback with a fresh bucket, its
 * credentials put into this process's environment (as a deployment would: never in a URI), and warehouse URIs on it.
 */
import { randomBytes } from "node:crypto";
import { startSeaweed, type SeaweedHandle } from "../../cluster/local/seaweedfs.ts";
import { openWarehouse, type Warehouse } from "../../src/io/warehouse.ts";
import type { S3FileIO } from "../../src/io/s3.ts";

export { startSeaweed, type SeaweedHandle };

export interface S3TestStore {
  server: SeaweedHandle;
  bucket: string;
  /** `s3://<bucket>/<prefix>?endpoint=…` — a fresh prefix per call unless one is given. */
  uri(prefix?: string): string;
  /** The warehouse of `uri(prefix)`, its S3FileIO counting requests. */
  open(prefix?: string): Warehouse & { io: S3FileIO };
  stop(): Promise<void>;
}

export async function startS3Store(): Promise<S3TestStore> {
  const server = await startSeaweed();
  const bucket = "natslake-test";
  try {
    await server.createBucket(bucket);
  } catch (e) {
    await server.stop();
    throw e;
  }
  Object.assign(process.env, server.env);
  const uri = (prefix = `wh-${randomBytes(4).toString("hex")}`): string => `s3://${bucket}/${prefix}?endpoint=${encodeURIComponent(server.endpoint)}`;
  return {
    server,
    bucket,
    uri,
    open: (prefix?: string) => openWarehouse(uri(prefix)) as Warehouse & { io: S3FileIO },
    stop: () => server.stop(),
  };
}
