/**
 * FileIO over an S3-compatible object store (`@aws-sdk/client-s3`).
 *
 * Paths are the absolute POSIX paths the table library builds (`/prefix/db.db/t/snapshot/snapshot-3`); the object key
 * is the path without its leading slash, in the one bucket this FileIO serves. Directories are key prefixes: `list`
 * and `listStatus` are a delimited ListObjectsV2, `mkdirs` writes a zero-byte `dir/` marker (as Hadoop's S3A and
 * pyarrow do, so an empty database is still seen), and nothing needs `syncDir`.
 *
 * Atomicity: a PUT replaces an object whole, so `writeFile` is one PutObject (a multipart upload above
 * `multipartThreshold`, invisible until completed). `createExclusive` is a PutObject with `If-None-Match: *`:
 * 412 — the object exists — is a lost race (false). A 409 (a concurrent conditional write in flight), a 5xx or a
 * timeout leaves the outcome unknown: the object is read back and compared with what was written (ours → true,
 * another's → false, none → the put is tried again). Conditional puts are sent by a client without the SDK's own
 * retries, since a retried put that meets its own first attempt would answer 412 for a write that won.
 *
 * A store that ignores `If-None-Match` would let two committers both "create" `snapshot-N`; `verifyConditionalPut`
 * probes for that once (it creates an object twice) and refuses the store, before the first `createExclusive` —
 * unless the warehouse opted into a commit lock (commit-lock.ts), under which a create is a HEAD, a plain PUT and a
 * read-back instead.
 *
 * Reads: `readRange` is a GET with `Range`, which the table's reader uses to fetch a projection of a large Parquet
 * file (src/scan/ranged-fetch.ts).
 *
 * Every request is counted by type (s3-requests.ts): the commit path is meant to cost no LIST.
 */
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type * as S3SdkModule from "@aws-sdk/client-s3";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { ErrorKind, LakeError } from "../errors.ts";
import { failpoint, failpointArmed } from "../failpoints.ts";
import type { FileIO, FileStatus, WriteOptions } from "./file-io.ts";
import type { CommitLock } from "./commit-lock.ts";
import { countRequests, type S3AreaCounts, type S3RequestCounts, zeroAreaCounts, zeroCounts } from "./s3-requests.ts";

type S3Sdk = typeof S3SdkModule;
interface S3Clients {
  readonly sdk: S3Sdk;
  readonly client: S3Client;
  readonly once: S3Client;
}
let s3Sdk: Promise<S3Sdk> | undefined;
const loadS3Sdk = (): Promise<S3Sdk> => (s3Sdk ??= import("@aws-sdk/client-s3"));

export interface S3Settings {
  bucket: string;
  /** e.g. `http://127.0.0.1:8333`; undefined: AWS (or the SDK's own `AWS_ENDPOINT_URL_S3` setting). */
  endpoint?: string;
  region: string;
  /** `http://endpoint/bucket/key` instead of `http://bucket.endpoint/key` (most S3-compatible servers want it). */
  forcePathStyle: boolean;
  /** Attempts of an ordinary request, with the SDK's exponential back-off and jitter between them (default 5). */
  maxAttempts?: number;
  /** A request with no answer for this long fails (and is retried); default 30 s. */
  requestTimeoutMs?: number;
  /** Files larger than this go up in parts (default 32 MiB). */
  multipartThreshold?: number;
  /** Part size of a multipart upload (default 16 MiB; S3's minimum is 5 MiB). */
  partSize?: number;
  /** Attempts of a conditional put whose outcome stays unknown (default 5). */
  createAttempts?: number;
  /**
   * Paimon's alternative to conditional puts, opted into explicitly (`commit-lock=` in the warehouse URI): exclusive
   * creates check and write under this lock instead, and the probe is not needed (commit-lock.ts).
   */
  commitLock?: CommitLock;
  /** Where `verifyConditionalPut` puts its probe object (default `/.natslake`; a warehouse uses `<root>/.natslake`). */
  probeDir?: string;
  /** Credentials for the client; default: the SDK's chain (environment, shared credentials file, …). */
  credentials?: S3ClientConfig["credentials"];
}

const MiB = 1024 * 1024;
/** Under a commit lock, a create writes only while at least this much of the lock's lease is left (a PUT's bound). */
const LOCK_LEASE_NEEDED_MS = 10_000;

/** The HTTP status of an SDK error, or undefined for a failure without an answer (network, timeout). */
const statusOf = (e: unknown): number | undefined => (e as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
const nameOf = (e: unknown): string => (e as { name?: string } | undefined)?.name ?? "";
const isNotFound = (e: unknown): boolean => statusOf(e) === 404 || nameOf(e) === "NoSuchKey" || nameOf(e) === "NotFound";

const toBytes = (data: Uint8Array | string): Uint8Array => (typeof data === "string" ? Buffer.from(data, "utf8") : data);

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0;

export class S3FileIO implements FileIO {
  readonly bucket: string;
  /** Requests sent so far, by type (PUT, GET, HEAD, LIST, DELETE). */
  readonly requests: S3RequestCounts = zeroCounts();
  /** The same requests by the area of the table they touched (snapshot/, manifest/, data, …; s3-requests.ts). */
  readonly requestsByArea: S3AreaCounts = zeroAreaCounts();
  /** Bytes of object bodies read so far (whole objects and ranges). */
  bytesRead = 0;
  /** The SDK's client settings; the clients are made at the first request (see `s3()`). */
  private readonly clientConfig: S3ClientConfig;
  private clients: Promise<S3Clients> | undefined;
  private readonly multipartThreshold: number;
  private readonly partSize: number;
  private readonly createAttempts: number;
  private probe: Promise<void> | undefined;

  constructor(private readonly settings: S3Settings) {
    this.bucket = settings.bucket;
    // The SDK warns on Node < 22 that its versions after January 2027 will need Node 22; the version natslake pins
    // supports Node 20 (engines >= 20), so the warning would only clutter every command's output. An explicit
    // setting of the variable is respected.
    process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true";
    const base: S3ClientConfig = {
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      // Checksums only where S3 requires them: S3-compatible stores differ in their support of the newer ones.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // The SDK builds its Node HTTP handler from these options.
      requestHandler: { connectionTimeout: 5000, requestTimeout: settings.requestTimeoutMs ?? 30_000 },
    };
    if (settings.endpoint !== undefined) base.endpoint = settings.endpoint;
    if (settings.credentials !== undefined) base.credentials = settings.credentials;
    this.clientConfig = base;
    this.multipartThreshold = settings.multipartThreshold ?? 32 * MiB;
    this.partSize = Math.max(5 * MiB, settings.partSize ?? 16 * MiB);
    this.createAttempts = settings.createAttempts ?? 5;
  }

  /**
   * The SDK and the two clients, loaded and made at the first request: the SDK is a fifth of a second of every
   * process start that loads it, and most processes (the CLI on a local warehouse, a node on one) never touch S3.
   */
  private s3(): Promise<S3Clients> {
    this.clients ??= loadS3Sdk().then((sdk) => {
      const client = new sdk.S3Client({ ...this.clientConfig, maxAttempts: this.settings.maxAttempts ?? 5, retryMode: "standard" });
      // For conditional puts only: no SDK retries (see the module comment).
      const once = new sdk.S3Client({ ...this.clientConfig, maxAttempts: 1 });
      countRequests(client, this.requests, this.requestsByArea);
      countRequests(once, this.requests, this.requestsByArea);
      return { sdk, client, once };
    });
    return this.clients;
  }

  uriOf(path: string): string {
    return `s3://${this.bucket}/${this.keyOf(path)}`;
  }

  /** The object key of an absolute path: no leading slash; the bucket's root is "". */
  keyOf(path: string): string {
    if (!path.startsWith("/")) throw new LakeError(ErrorKind.Unexpected, `S3 paths are absolute (/prefix/…), got '${path}'`);
    return path.replace(/^\/+/, "").replace(/\/+$/, "").replace(/\/{2,}/g, "/");
  }

  /** The prefix of the keys under a directory: `dir/`, or "" for the bucket's root. */
  private prefixOf(dir: string): string {
    const key = this.keyOf(dir);
    return key === "" ? "" : `${key}/`;
  }

  async readFile(path: string): Promise<Uint8Array> {
    try {
      const s3 = await this.s3();
      const res = await s3.client.send(new s3.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(path) }));
      const bytes = await res.Body!.transformToByteArray();
      this.bytesRead += bytes.length;
      return bytes;
    } catch (e) {
      throw this.wrap(e, "read", path);
    }
  }

  /** A projection of a large data file is fetched by ranges: every byte of an object store crosses the network. */
  readonly prefersRangedReads = true;

  async readRange(path: string, offset: number, length: number): Promise<Uint8Array> {
    if (length <= 0) return new Uint8Array(0);
    try {
      const s3 = await this.s3();
      const res = await s3.client.send(new s3.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(path), Range: `bytes=${offset}-${offset + length - 1}` }));
      const bytes = await res.Body!.transformToByteArray();
      this.bytesRead += bytes.length;
      return bytes;
    } catch (e) {
      // A range that starts at or past the end: nothing there, as a local read at the end returns nothing.
      if (statusOf(e) === 416) return new Uint8Array(0);
      throw this.wrap(e, "read", path);
    }
  }

  async readText(path: string): Promise<string> {
    return Buffer.from(await this.readFile(path)).toString("utf8");
  }

  async writeFile(path: string, data: Uint8Array | string, _opts?: WriteOptions): Promise<void> {
    const body = toBytes(data);
    const key = this.keyOf(path);
    try {
      if (failpointArmed("io.write.mid")) {
        // Chaos: the upload dies half-way (a crash in the middle of a PUT). The server got a request shorter than
        // its Content-Length, so no object may appear.
        const s3 = await this.s3();
        await s3.client.send(new s3.sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Readable.from(halvesWithFailpoint(body)), ContentLength: body.length }));
      } else if (body.length <= this.multipartThreshold) {
        const s3 = await this.s3();
        await s3.client.send(new s3.sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }));
      } else {
        // Parts go up two at a time; the object appears only when the upload completes, and a failed upload is
        // aborted (its parts removed).
        const s3 = await this.s3();
        const { Upload } = await import("@aws-sdk/lib-storage");
        await new Upload({ client: s3.client, params: { Bucket: this.bucket, Key: key, Body: body }, partSize: this.partSize, queueSize: 2, leavePartsOnError: false }).done();
      }
    } catch (e) {
      throw this.wrap(e, "write", path);
    }
  }

  /** Nothing to do: a PUT that returned is durable and visible. */
  async syncDir(_dir: string): Promise<void> {}

  /** A server-side copy (no bytes through this process): S3 has no links. Objects up to 5 GB, S3's limit for one copy. */
  async copyFile(from: string, to: string): Promise<void> {
    const source = `${this.bucket}/${this.keyOf(from).split("/").map(encodeURIComponent).join("/")}`;
    try {
      const s3 = await this.s3();
      await s3.client.send(new s3.sdk.CopyObjectCommand({ Bucket: this.bucket, Key: this.keyOf(to), CopySource: source }));
    } catch (e) {
      throw this.wrap(e, "copy", `${from} -> ${to}`);
    }
  }

  async createExclusive(path: string, data: Uint8Array | string): Promise<boolean> {
    if (this.settings.commitLock !== undefined) return this.createUnderLock(this.settings.commitLock, path, toBytes(data));
    await this.verifyConditionalPut();
    return this.putIfAbsent(path, toBytes(data));
  }

  /** The commit lock exclusive creates go through (the warehouse opted into it), or undefined: conditional puts. */
  get commitLock(): CommitLock | undefined {
    return this.settings.commitLock;
  }

  /**
   * An exclusive create under the commit lock, for a store without conditional puts: under the lock of the file's
   * directory, a HEAD (there: false), a plain PUT once the lease has time left for it, and a read-back — the content
   * says whether the object is ours, should a stalled holder have written over it after its lease ran out.
   */
  private async createUnderLock(lock: CommitLock, path: string, body: Uint8Array): Promise<boolean> {
    const key = this.keyOf(path);
    const dir = key.includes("/") ? key.slice(0, key.lastIndexOf("/")) : "";
    return lock.withLock(`s3://${this.bucket}/${dir}`, async (timeLeft) => {
      if (await this.isFile(path)) return false;
      const left = await timeLeft();
      if (left < LOCK_LEASE_NEEDED_MS) {
        throw new LakeError(ErrorKind.Io, `create ${this.uriOf(path)}: the commit lock's lease has ${Math.max(0, Math.round(left))} ms left, less than a write may take`, {
          retryable: true,
          context: { path, op: "create" },
        });
      }
      try {
        // A plain PUT: retried by the SDK, which is harmless here — nobody else writes this key while we hold the lock.
        const s3 = await this.s3();
        await s3.client.send(new s3.sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }));
      } catch (e) {
        throw this.wrap(e, "create", path);
      }
      return this.isOurs(path, body);
    });
  }

  /** The conditional put itself (no probe): true when this call created the object. */
  private async putIfAbsent(path: string, body: Uint8Array): Promise<boolean> {
    const key = this.keyOf(path);
    let unknown: unknown;
    for (let attempt = 1; attempt <= this.createAttempts; attempt++) {
      try {
        const s3 = await this.s3();
        await s3.once.send(new s3.sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length, IfNoneMatch: "*" }));
        return true;
      } catch (e) {
        const status = statusOf(e);
        // A 412 after an unknown outcome may meet our own earlier attempt: the content tells.
        if (status === 412) return unknown === undefined ? false : this.isOurs(path, body);
        if (status !== undefined && status !== 409 && status < 500) throw this.wrap(e, "create", path);
        unknown = e;
      }
      // 409, 5xx or no answer: did the object land, and whose is it?
      const found = await this.readBack(path);
      if (found !== null) return sameBytes(found, body);
      await new Promise((r) => setTimeout(r, Math.min(2000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2)));
    }
    throw new LakeError(ErrorKind.Io, `create ${this.uriOf(path)}: outcome still unknown after ${this.createAttempts} attempts (${(unknown as Error).message})`, {
      cause: unknown,
      context: { path, op: "create" },
      retryable: true,
    });
  }

  private async isOurs(path: string, body: Uint8Array): Promise<boolean> {
    const found = await this.readBack(path);
    return found !== null && sameBytes(found, body);
  }

  private async readBack(path: string): Promise<Uint8Array | null> {
    try {
      return await this.readFile(path);
    } catch (e) {
      if (e instanceof LakeError && e.kind === ErrorKind.NotFound) return null;
      throw e;
    }
  }

  /**
   * Refuses a store that does not enforce `If-None-Match: *` (creating an object that exists must fail). Runs once
   * per FileIO (memoized): a probe object under `<warehouse>/.natslake/` is created, created again with other content
   * (which must fail and leave the first content), then removed.
   */
  verifyConditionalPut(): Promise<void> {
    this.probe ??= this.runProbe(this.settings.probeDir ?? "/.natslake").catch((e: unknown) => {
      this.probe = undefined; // a store that was unreachable may be tried again
      throw e;
    });
    return this.probe;
  }

  private async runProbe(probeDir: string): Promise<void> {
    const path = `${probeDir.replace(/\/+$/, "")}/probe-${randomUUID()}`;
    const first = Buffer.from("first");
    if (!(await this.putIfAbsent(path, first))) throw new LakeError(ErrorKind.Unexpected, `probe ${this.uriOf(path)} existed before it was created`);
    try {
      const second = await this.putIfAbsent(path, Buffer.from("second"));
      const kept = await this.readBack(path);
      if (second || kept === null || !sameBytes(kept, first)) {
        throw new LakeError(
          ErrorKind.Unsupported,
          `the object store at ${this.settings.endpoint ?? "AWS S3"} (bucket ${this.bucket}) does not enforce conditional puts (If-None-Match: *): creating an object that exists succeeded, so two committers could both create one snapshot. natslake refuses such a store unless its warehouse URI opts into Paimon's alternative, a commit lock: add commit-lock=redis (e.g. s3://${this.bucket}/prefix?commit-lock=redis, with NATSLAKE_REDIS naming the Redis every writer of the warehouse uses)`,
          { retryable: false, context: { bucket: this.bucket } },
        );
      }
    } finally {
      await this.delete(path).catch(() => undefined);
    }
  }

  /** A file (an object, not a prefix) is at `path`: one HEAD. */
  async isFile(path: string): Promise<boolean> {
    try {
      const s3 = await this.s3();
      await s3.client.send(new s3.sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.keyOf(path) }));
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw this.wrap(e, "head", path);
    }
  }

  /** A file, or a directory (a key under the prefix, a marker included): a HEAD, and a one-key LIST when no object. */
  async exists(path: string): Promise<boolean> {
    if (this.keyOf(path) !== "" && (await this.isFile(path))) return true;
    const res = await this.listPage(this.prefixOf(path), undefined, undefined, 1);
    return (res.KeyCount ?? 0) > 0;
  }

  async list(dir: string): Promise<string[]> {
    return (await this.listStatus(dir)).map((s) => s.name);
  }

  async listStatus(dir: string): Promise<FileStatus[]> {
    const prefix = this.prefixOf(dir);
    const out: FileStatus[] = [];
    const pages = new PageTokens(this.uriOf(dir));
    for (;;) {
      const res = await this.listPage(prefix, "/", pages.token);
      for (const p of res.CommonPrefixes ?? []) {
        const name = pages.nameUnder(prefix, p.Prefix).replace(/\/$/, "");
        if (name !== "") out.push({ name, kind: "directory", size: 0, mtime: 0 });
      }
      for (const o of res.Contents ?? []) {
        const name = pages.nameUnder(prefix, o.Key);
        if (name === "") continue; // the directory's own marker
        out.push({ name, kind: "file", size: pages.checked("Size", o.Size ?? 0, name), mtime: pages.checked("LastModified", o.LastModified?.getTime() ?? 0, name) });
      }
      if (!pages.next(res)) return out;
    }
  }

  private async listPage(prefix: string, delimiter: string | undefined, token: string | undefined, maxKeys?: number) {
    try {
      const s3 = await this.s3();
      return await s3.client.send(
        new s3.sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token, MaxKeys: maxKeys }),
      );
    } catch (e) {
      throw this.wrap(e, "list", `/${prefix}`);
    }
  }

  /** Only the marker (or nothing but it) under the prefix: the marker is removed. A prefix with no key is "not there". */
  async deleteEmptyDir(path: string): Promise<boolean> {
    const prefix = this.prefixOf(path);
    if (prefix === "") return false;
    const res = await this.listPage(prefix, undefined, undefined, 2);
    const keys = (res.Contents ?? []).map((o) => o.Key!);
    if (keys.length !== 1 || keys[0] !== prefix) return false;
    await this.deleteKey(prefix, path);
    return true;
  }

  async delete(path: string): Promise<boolean> {
    // S3 answers a DELETE of a missing key with success: the HEAD tells whether there was one.
    if (!(await this.isFile(path))) return false;
    await this.deleteKey(this.keyOf(path), path);
    return true;
  }

  private async deleteKey(key: string, path: string): Promise<void> {
    try {
      const s3 = await this.s3();
      await s3.client.send(new s3.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e) {
      throw this.wrap(e, "delete", path);
    }
  }

  async deleteTree(path: string): Promise<void> {
    const prefix = this.prefixOf(path);
    if (prefix === "") throw new LakeError(ErrorKind.Unexpected, `refusing to delete the whole bucket ${this.bucket}`);
    const pages = new PageTokens(this.uriOf(path));
    for (;;) {
      const res = await this.listPage(prefix, undefined, pages.token);
      const keys = (res.Contents ?? []).map((o) => ({ Key: prefix + pages.nameUnder(prefix, o.Key) }));
      if (keys.length > 0) {
        try {
          const s3 = await this.s3();
          const out = await s3.client.send(new s3.sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
          const failed = out.Errors?.[0];
          if (failed !== undefined) throw new Error(`${failed.Key}: ${failed.Code} ${failed.Message}`);
        } catch (e) {
          throw this.wrap(e, "delete", path);
        }
      }
      if (!pages.next(res)) return;
    }
  }

  /** A zero-byte `dir/` marker, so that a directory nothing was written into yet (an empty database) is seen. */
  async mkdirs(path: string): Promise<void> {
    const prefix = this.prefixOf(path);
    if (prefix === "") return;
    try {
      const s3 = await this.s3();
      await s3.client.send(new s3.sdk.PutObjectCommand({ Bucket: this.bucket, Key: prefix, Body: new Uint8Array(0), ContentLength: 0 }));
    } catch (e) {
      throw this.wrap(e, "mkdir", path);
    }
  }

  async size(path: string): Promise<number> {
    return (await this.head(path)).ContentLength ?? 0;
  }

  async mtime(path: string): Promise<number> {
    return (await this.head(path)).LastModified?.getTime() ?? 0;
  }

  private async head(path: string) {
    try {
      const s3 = await this.s3();
      return await s3.client.send(new s3.sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.keyOf(path) }));
    } catch (e) {
      throw this.wrap(e, "head", path);
    }
  }

  /** The bucket is there and these credentials may use it (for a clear error before anything else). */
  async checkBucket(): Promise<void> {
    try {
      const s3 = await this.s3();
      await s3.client.send(new s3.sdk.HeadBucketCommand({ Bucket: this.bucket }));
    } catch (e) {
      const status = statusOf(e);
      const why =
        status === 404 ? "no such bucket" : status === 403 ? "access denied (check the credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the shared credentials file)" : describe(e);
      throw new LakeError(status === 404 ? ErrorKind.NotFound : ErrorKind.Io, `warehouse bucket s3://${this.bucket} at ${this.settings.endpoint ?? "AWS S3"}: ${why}`, {
        cause: e,
        retryable: status === undefined || status >= 500,
      });
    }
  }

  /** Closes the clients' connection pools. */
  destroy(): void {
    // Clients still being made are closed once they are.
    void this.clients?.then(({ client, once }) => {
      client.destroy();
      once.destroy();
    });
  }

  private wrap(e: unknown, op: string, path: string): LakeError {
    if (e instanceof LakeError) return e;
    const uri = this.uriOf(path);
    if (nameOf(e) === "NoSuchBucket") return new LakeError(ErrorKind.NotFound, `${op} ${uri}: bucket s3://${this.bucket} does not exist at ${this.settings.endpoint ?? "AWS S3"}`, { cause: e, context: { path } });
    if (isNotFound(e)) return new LakeError(ErrorKind.NotFound, `${op} ${uri}: no such object`, { cause: e, context: { path } });
    const status = statusOf(e);
    return new LakeError(ErrorKind.Io, `${op} ${uri} failed: ${describe(e)}`, {
      cause: e,
      context: { path, op, status },
      // No answer or a server error: worth another try. A 4xx (access denied, a bad request) will fail again.
      retryable: status === undefined || status >= 500 || status === 409 || status === 429,
    });
  }
}

/**
 * The pages of one listing. The store's answers are checked, not trusted: a page marked truncated without a
 * continuation token would end the listing short (files silently missing), one whose token was used already would
 * have it asked for ever, and a key outside the listed prefix names no file under it — each is an Io error.
 */
class PageTokens {
  token: string | undefined = undefined;
  private readonly seen = new Set<string>();

  constructor(private readonly uri: string) {}

  /** Whether another page follows `res` (its token is then `token`). */
  next(res: { IsTruncated?: boolean | undefined; NextContinuationToken?: string | undefined }): boolean {
    if (res.IsTruncated !== true) return false;
    const t = res.NextContinuationToken;
    if (t === undefined || t === "") throw this.bad("a page is marked truncated but carries no continuation token");
    if (this.seen.has(t)) throw this.bad(`the store repeats continuation token '${t.slice(0, 40)}'`);
    this.seen.add(t);
    this.token = t;
    return true;
  }

  /** A listed key's name below `prefix`. */
  nameUnder(prefix: string, key: string | undefined): string {
    if (key === undefined || !key.startsWith(prefix)) throw this.bad(`an entry ${key === undefined ? "without a key" : `'${key.slice(0, 80)}'`} outside the prefix`);
    return key.slice(prefix.length);
  }

  /**
   * A listed size or time, which must be a whole number ≥ 0: an unparseable one is an error rather than 0 or NaN — a
   * LastModified read as 0 would make a fresh file look old enough for the orphan cleaner.
   */
  checked(what: string, v: number, name: string): number {
    if (Number.isSafeInteger(v) && v >= 0) return v;
    throw this.bad(`entry '${name.slice(0, 80)}' has an invalid ${what}`);
  }

  private bad(why: string): LakeError {
    return new LakeError(ErrorKind.Io, `list ${this.uri}: ${why}`, { context: { uri: this.uri }, retryable: true });
  }
}

/** A body in two halves; `io.write.mid` fires once the first half had time to reach the connection. */
async function* halvesWithFailpoint(body: Uint8Array): AsyncGenerator<Uint8Array> {
  const half = body.length >> 1;
  yield body.subarray(0, half);
  await new Promise((r) => setTimeout(r, 20));
  failpoint("io.write.mid");
  yield body.subarray(half);
}

function describe(e: unknown): string {
  const status = statusOf(e);
  const name = nameOf(e);
  const msg = e instanceof Error ? e.message : String(e);
  return `${name && name !== "Error" ? name : "error"}${status !== undefined ? ` (HTTP ${status})` : ""}${msg && msg !== name && msg !== "UnknownError" ? `: ${msg}` : ""}`;
}
