/**
 * A local S3-compatible object store for tests and `natslake up --s3`: SeaweedFS's `weed server -s3` (master, volume
 * server, filer and S3 gateway in one process) on free loopback ports, with its own data directory and one identity
 * whose random keys only the caller knows; stopped by PID.
 *
 *   const s3 = await startSeaweed();   // s3.endpoint = "http://127.0.0.1:<port>", s3.credentials, s3.env
 *   await s3.createBucket("wh");
 *   ...
 *   await s3.stop();
 *
 * The binary: `NATSLAKE_WEED` when set, else the one scripts/setup.sh builds with `go install` into
 * `$NATSLAKE_TOOLS_DIR/seaweedfs-<version>/weed` (version in scripts/seaweedfs-version). A missing binary is an error
 * that says how to build it (tests never skip).
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { REPO_ROOT } from "../repo-root.ts";
import { freePort, PortTakenError, spawnServerProcess } from "./servers.ts";

export interface SeaweedHandle {
  /** The S3 gateway, e.g. `http://127.0.0.1:41234`. */
  endpoint: string;
  port: number;
  pid: number;
  dir: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The environment a natslake process needs to use this store (credentials, endpoint, region). */
  env: Record<string, string>;
  /** A client of this store (the caller's; destroyed by stop()). */
  client: S3Client;
  createBucket(name: string): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s; removes the data directory unless `keepData`. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
  process: ChildProcess;
  /** The last 8 KB the server printed. */
  output(): string;
}

export interface SeaweedOptions {
  bin?: string;
  dir?: string;
  /** Start it in its own process group (a Ctrl-C at the terminal does not reach it; its owner stops it). */
  detached?: boolean;
  /** Append its output to this file (else only its tail is kept, in memory). */
  logFile?: string;
  /** Readiness deadline (default 60 s: the first start initialises its stores). */
  startTimeoutMs?: number;
  /**
   * No identities: the gateway takes every request without checking its signature (tests only — a proxy in front
   * may then change a request's headers, e.g. drop `If-None-Match` to play a store that ignores conditions).
   */
  anonymous?: boolean;
}

/** The pinned SeaweedFS version (a Go pseudo-version: SeaweedFS tags are not semantic versions). */
export function seaweedVersion(): string {
  return readFileSync(join(REPO_ROOT, "scripts", "seaweedfs-version"), "utf8").trim();
}

/** Where scripts/setup.sh puts `weed`. */
export function seaweedBin(env: NodeJS.ProcessEnv = process.env): string {
  if (env["NATSLAKE_WEED"]) return env["NATSLAKE_WEED"];
  return join(env["NATSLAKE_TOOLS_DIR"] || join(homedir(), "go", "natslake-bin"), `seaweedfs-${seaweedVersion()}`, "weed");
}

export async function startSeaweed(opts: SeaweedOptions = {}): Promise<SeaweedHandle> {
  const bin = opts.bin ?? seaweedBin();
  if (!existsSync(bin)) throw new Error(`no SeaweedFS binary at ${bin}: run scripts/setup.sh (it builds weed ${seaweedVersion()} with go install), or set NATSLAKE_WEED`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(bin, opts);
    } catch (e) {
      if (!(e instanceof PortTakenError) || attempt >= 5) throw e;
    }
  }
}

async function launch(bin: string, opts: SeaweedOptions): Promise<SeaweedHandle> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-seaweed-"));
  mkdirSync(join(dir, "data"), { recursive: true });
  // Eight listeners (HTTP and gRPC of master, volume server, filer, S3); all explicit, so none lands on a default.
  const ports: number[] = [];
  while (ports.length < 8) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const [s3, s3Grpc, master, masterGrpc, volume, volumeGrpc, filer, filerGrpc] = ports as [number, number, number, number, number, number, number, number];
  const credentials = { accessKeyId: `natslake${randomBytes(6).toString("hex")}`, secretAccessKey: randomBytes(24).toString("hex") };
  const configPath = join(dir, "s3.json");
  writeFileSync(
    configPath,
    JSON.stringify({ identities: [{ name: "natslake", credentials: [{ accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey }], actions: ["Admin", "Read", "List", "Tagging", "Write"] }] }),
    { mode: 0o600 },
  );
  const args = [
    "server",
    "-ip=127.0.0.1",
    "-ip.bind=127.0.0.1",
    `-dir=${join(dir, "data")}`,
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    "-master.telemetry=false",
    "-master.volumeSizeLimitMB=64",
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    "-volume.max=0",
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-filer.localSocket=${join(dir, "filer.sock")}`,
    "-s3",
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    "-s3.port.iceberg=0",
    "-s3.port.lance=0",
    `-s3.localSocket=${join(dir, "s3.sock")}`,
    ...(opts.anonymous === true ? [] : [`-s3.config=${configPath}`]),
  ];
  const server = await spawnServerProcess(bin, args, { dir, ...(opts.detached !== undefined ? { detached: opts.detached } : {}), ...(opts.logFile !== undefined ? { logFile: opts.logFile } : {}) });
  const { proc, output } = server;
  const endpoint = `http://127.0.0.1:${s3}`;
  process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true"; // see S3FileIO's constructor
  const region = "us-east-1";
  const client = new S3Client({ endpoint, region, forcePathStyle: true, credentials, maxAttempts: 1, requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
  try {
    await waitReady(client, proc, opts.startTimeoutMs ?? 60_000, output);
  } catch (e) {
    client.destroy();
    await server.stop("SIGKILL", opts.dir !== undefined);
    throw e;
  }
  return {
    endpoint,
    port: s3,
    pid: proc.pid!,
    dir,
    region,
    credentials,
    env: { AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey, AWS_REGION: region, NATSLAKE_S3_ENDPOINT: endpoint },
    client,
    process: proc,
    output,
    createBucket: async (name: string) => {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    stop: async (o?: { keepData?: boolean }) => {
      client.destroy();
      await server.stop("SIGTERM", o?.keepData ?? false);
    },
  };
}

/**
 * Ready when the S3 gateway answers a signed ListBuckets with our keys. A port another process took between freePort
 * and the bind makes weed exit with "address already in use" (a PortTakenError: tried again on other ports).
 */
async function waitReady(client: S3Client, proc: ChildProcess, timeoutMs: number, logs: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      const text = logs();
      const msg = `weed exited (${proc.exitCode ?? proc.signalCode}) before its S3 gateway was ready:\n${text}`;
      throw /address already in use/i.test(text) ? new PortTakenError(msg) : new Error(msg);
    }
    try {
      await client.send(new ListBucketsCommand({}));
      return;
    } catch {
      // not listening yet, or its filer not ready: wait
    }
    if (Date.now() > deadline) throw new Error(`weed's S3 gateway was not ready within ${timeoutMs} ms:\n${logs()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
