/**
 * Warehouses named by URI, and the one factory that turns a name into the FileIO and root path the catalog uses.
 *
 * - a local directory: `/data/wh`, `./wh` or `file:///data/wh` → LocalFileIO, root = the absolute path;
 * - an object store: `s3://bucket/prefix` → S3FileIO on `bucket`, root = `/prefix` (`/` for the whole bucket).
 *
 * S3 settings, none of them secret: `?endpoint=http://127.0.0.1:8333&region=us-east-1&path-style=true` in the URI,
 * and `commit-lock=redis` for a store without conditional puts (commit-lock.ts: Paimon's lock alternative, explicit),
 * else the environment (`NATSLAKE_S3_ENDPOINT`, `AWS_REGION` / `AWS_DEFAULT_REGION`, `NATSLAKE_S3_PATH_STYLE`).
 * Credentials never come from the URI (it appears in `ps`, logs and status output): they come from the SDK's chain —
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (/ `AWS_SESSION_TOKEN`), or the shared credentials file
 * (`AWS_SHARED_CREDENTIALS_FILE`, default ~/.aws/credentials, profile `AWS_PROFILE`), or the instance's role.
 */
import { resolve } from "node:path";
import { dataInvalid } from "../errors.ts";
import type { FileIO } from "./file-io.ts";
import { LocalFileIO } from "./local.ts";
import { S3FileIO, type S3Settings } from "./s3.ts";
import { COMMIT_LOCK_KINDS, commitLockOf, type CommitLockKind } from "./commit-lock.ts";

export interface Warehouse {
  /** How the user named it, normalised (for messages and logs; holds no secret). */
  uri: string;
  /** The root path the catalog joins database and table names to. */
  root: string;
  io: FileIO;
}

export type WarehouseLocation =
  | { kind: "local"; path: string }
  | { kind: "s3"; bucket: string; prefix: string; endpoint?: string; region?: string; pathStyle?: boolean; commitLock?: CommitLockKind };

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);

function parseBool(what: string, v: string): boolean {
  const l = v.toLowerCase();
  if (TRUE.has(l)) return true;
  if (FALSE.has(l)) return false;
  throw dataInvalid(`${what} must be true or false, got '${v}'`);
}

/** S3 bucket names: 3–63 characters of lower-case letters, digits, dots and hyphens. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export const isObjectStoreUri = (text: string): boolean => /^s3a?:\/\//i.test(text);

/** Parses a warehouse name; a malformed S3 URI (or one carrying credentials) is a DataInvalid error saying why. */
export function parseWarehouse(text: string): WarehouseLocation {
  if (!isObjectStoreUri(text)) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && !/^file:\/\//i.test(text)) throw dataInvalid(`unsupported warehouse URI '${text}': use a directory, file:///dir or s3://bucket/prefix`);
    return { kind: "local", path: resolve(text.replace(/^file:\/\//i, "")) };
  }
  let url: URL;
  try {
    url = new URL(text.replace(/^s3a:/i, "s3:"));
  } catch {
    throw dataInvalid(`warehouse '${text}' is not a valid URI (expected s3://bucket/prefix)`);
  }
  if (url.username !== "" || url.password !== "")
    throw dataInvalid("an S3 warehouse URI must not carry credentials (they would show in ps and logs): set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or use a credentials file (AWS_SHARED_CREDENTIALS_FILE)");
  const bucket = url.hostname;
  if (!BUCKET.test(bucket)) throw dataInvalid(`warehouse '${text}': '${bucket}' is not a valid bucket name (3-63 lower-case letters, digits, '.' and '-')`);
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, "");
  if (prefix.split("/").some((p) => p === "." || p === ".." || (p === "" && prefix !== ""))) throw dataInvalid(`warehouse '${text}': the prefix must not contain empty, '.' or '..' segments`);
  const loc: WarehouseLocation = { kind: "s3", bucket, prefix };
  for (const [k, v] of url.searchParams) {
    if (k === "endpoint") loc.endpoint = v;
    else if (k === "region") loc.region = v;
    else if (k === "path-style") loc.pathStyle = parseBool("path-style", v);
    else if (k === "commit-lock") {
      if (!(COMMIT_LOCK_KINDS as readonly string[]).includes(v)) throw dataInvalid(`warehouse '${text}': commit-lock must be one of ${COMMIT_LOCK_KINDS.join(", ")}, got '${v}'`);
      loc.commitLock = v as CommitLockKind;
    } else throw dataInvalid(`warehouse '${text}': unknown setting '${k}' (known: endpoint, region, path-style, commit-lock)`);
  }
  if (loc.endpoint !== undefined && !/^https?:\/\/[^/]+\/?$/i.test(loc.endpoint)) throw dataInvalid(`warehouse '${text}': endpoint must be http(s)://host[:port], got '${loc.endpoint}'`);
  return loc;
}

/** The S3 client settings of a location, the environment filling in what the URI does not say. */
export function s3SettingsOf(loc: Extract<WarehouseLocation, { kind: "s3" }>, env: NodeJS.ProcessEnv = process.env): S3Settings {
  const endpoint = loc.endpoint ?? (env["NATSLAKE_S3_ENDPOINT"] || undefined);
  const pathStyleEnv = env["NATSLAKE_S3_PATH_STYLE"];
  const settings: S3Settings = {
    bucket: loc.bucket,
    region: loc.region ?? (env["AWS_REGION"] || env["AWS_DEFAULT_REGION"] || "us-east-1"),
    // S3-compatible servers on an endpoint of their own rarely have per-bucket host names.
    forcePathStyle: loc.pathStyle ?? (pathStyleEnv ? parseBool("NATSLAKE_S3_PATH_STYLE", pathStyleEnv) : endpoint !== undefined),
  };
  if (endpoint !== undefined) settings.endpoint = endpoint;
  return settings;
}

/** The canonical text of a location (no secrets: there are none in it). */
export function warehouseUri(loc: WarehouseLocation): string {
  if (loc.kind === "local") return loc.path;
  const q = new URLSearchParams();
  if (loc.endpoint !== undefined) q.set("endpoint", loc.endpoint);
  if (loc.region !== undefined) q.set("region", loc.region);
  if (loc.pathStyle !== undefined) q.set("path-style", String(loc.pathStyle));
  if (loc.commitLock !== undefined) q.set("commit-lock", loc.commitLock);
  const qs = q.toString();
  return `s3://${loc.bucket}${loc.prefix === "" ? "" : `/${loc.prefix}`}${qs === "" ? "" : `?${qs}`}`;
}

export interface OpenOptions {
  env?: NodeJS.ProcessEnv;
  /** LocalFileIO's fsync (tests and benchmarks of the format turn it off). */
  fsync?: boolean;
  /** Overrides of the S3 client settings (timeouts, part sizes, credentials for tests). */
  s3?: Partial<S3Settings>;
}

/** The FileIO and root of a warehouse name. Nothing is contacted yet (see `checkWarehouse`). */
export function openWarehouse(text: string, opts: OpenOptions = {}): Warehouse {
  const loc = parseWarehouse(text);
  if (loc.kind === "local") return { uri: loc.path, root: loc.path, io: new LocalFileIO({ fsync: opts.fsync ?? true }) };
  const root = `/${loc.prefix}`;
  const uri = warehouseUri(loc);
  const settings: S3Settings = { ...s3SettingsOf(loc, opts.env), probeDir: `${loc.prefix === "" ? "" : root}/.natslake`, ...opts.s3 };
  if (loc.commitLock !== undefined && settings.commitLock === undefined) settings.commitLock = commitLockOf(loc.commitLock, uri);
  return { uri, root, io: new S3FileIO(settings) };
}

/**
 * What a process checks at start: an S3 bucket must be reachable with these credentials and, for a process that
 * writes, enforce conditional puts (else no snapshot could be created safely: S3FileIO.verifyConditionalPut; the
 * first `createExclusive` runs the same probe, so nothing writes unchecked). A local directory needs nothing here
 * (its checks stay with the callers, which know whether it may be created).
 */
export async function checkWarehouse(io: FileIO, opts: { writes?: boolean } = {}): Promise<void> {
  if (!(io instanceof S3FileIO)) return;
  await io.checkBucket();
  if (!(opts.writes ?? true)) return;
  // A warehouse that opted into a commit lock needs its lock service, not conditional puts.
  if (io.commitLock !== undefined) await io.commitLock.check();
  else await io.verifyConditionalPut();
}
