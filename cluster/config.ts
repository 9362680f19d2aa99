/**
 * Node configuration: command-line flags over environment variables over a JSON config file over defaults,
 * validated once with zod so a wrong value fails at start with a message naming the setting and its source.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { nearestName, parseDuration, parseMemory } from "../src/options.ts";
import type { NodeRole } from "../actors/wire/messages.ts";
import { DEFAULT_STALL_DEADLINE_MS } from "../actors/ingest/stall-deadline.ts";
import { NATS_AUTH_ENV, parseSwitch } from "./nats/connect-options.ts";
import { REDIS_AUTH_ENV } from "./redis/connect-options.ts";

const ROLES = ["writer", "committer", "reader"] as const;

/** A duration: milliseconds as a number, or text such as "250ms", "2s", "1 min". */
export const durationSetting = z.unknown().transform((v, ctx) => {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === "string") {
    try {
      return parseDuration(v);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: (e as Error).message });
      return z.NEVER;
    }
  }
  ctx.addIssue({ code: "custom", message: `expected a duration such as 250ms or 2s, got ${JSON.stringify(v)}` });
  return z.NEVER;
});

/** A size in bytes: a positive number, or text such as "64mb", "512 kb", "1 gb". */
export const sizeSetting = z.unknown().transform((v, ctx) => {
  if (typeof v === "number" && Number.isInteger(v) && v > 0) return v;
  if (typeof v === "string") {
    try {
      const bytes = parseMemory(v);
      if (bytes > 0) return bytes;
      ctx.addIssue({ code: "custom", message: `expected a size above zero, got ${JSON.stringify(v)}` });
      return z.NEVER;
    } catch (e) {
      ctx.addIssue({ code: "custom", message: (e as Error).message });
      return z.NEVER;
    }
  }
  ctx.addIssue({ code: "custom", message: `expected a size such as 64mb or 512kb, got ${JSON.stringify(v)}` });
  return z.NEVER;
});

export const NodeConfigSchema = z.object({
  nodeId: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, "node ids use letters, digits, '_' and '-' only")
    .describe("this node's id in membership, bucket assignments, leases, metrics and logs (letters, digits, '_' and '-'; default `<host>-<pid>-<random hex>`)"),
  roles: z
    .array(z.enum(ROLES))
    .min(1, "give at least one role")
    .default([...ROLES])
    .describe("the roles this node takes: `writer` (writes buckets' rows to data files), `committer` (leads tables: commits snapshots, runs maintenance; needs `redis`), `reader` (answers admin requests, serves consume sessions); all three by default"),
  nats: z.string().min(1).describe("NATS server URL, or a comma-separated list of a NATS cluster's servers (the node starts while any of them is up); required"),
  redis: z.string().optional().describe("Redis URL of the committer leases; required with the `committer` role"),
  // Credentials are named by file (or given in the environment), never by value: see cluster/nats/connect-options.ts.
  natsUser: z.string().min(1).optional().describe("NATS user name; its password from NATSLAKE_NATS_PASSWORD or `natsPasswordFile`"),
  natsPasswordFile: z.string().min(1).optional().describe("a file holding the NATS user's password"),
  natsTokenFile: z.string().min(1).optional().describe("a file holding a NATS token (or NATSLAKE_NATS_TOKEN)"),
  natsNkey: z.string().min(1).optional().describe("an nkey seed file (`SU…`) to authenticate to NATS with"),
  natsCreds: z.string().min(1).optional().describe("a NATS credentials file (user JWT and nkey seed, as `nsc generate creds` writes it)"),
  natsTlsCa: z.string().min(1).optional().describe("PEM file of the CA that signed the NATS server's certificate (TLS; default: the system's CAs)"),
  natsTlsCert: z.string().min(1).optional().describe("PEM client certificate for NATS (mutual TLS; with `natsTlsKey`)"),
  natsTlsKey: z.string().min(1).optional().describe("PEM key of the NATS client certificate"),
  natsTlsFirst: z.boolean().optional().describe("start the NATS connection with the TLS handshake (the server's `handshake_first`)"),
  redisUser: z.string().min(1).optional().describe("Redis ACL user; its password from NATSLAKE_REDIS_PASSWORD or `redisPasswordFile`"),
  redisPasswordFile: z.string().min(1).optional().describe("a file holding the Redis password"),
  redisTlsCa: z.string().min(1).optional().describe("PEM file of the CA that signed the Redis server's certificate (TLS also with a `rediss://` URL)"),
  redisTlsCert: z.string().min(1).optional().describe("PEM client certificate for Redis (with `redisTlsKey`)"),
  redisTlsKey: z.string().min(1).optional().describe("PEM key of the Redis client certificate"),
  warehouse: z.string().min(1).describe("the warehouse: a directory, or `s3://bucket/prefix[?endpoint=…]` with credentials from the AWS environment; required"),
  prefix: z.string().regex(/^[A-Za-z0-9_-]+$/).default("lake").describe("the prefix of every subject, stream and KV bucket of this cluster; every node and client of one cluster uses the same"),
  commitInterval: durationSetting.default(250).describe("how often a table's leader commits a snapshot, for tables without their own `natslake.commit-interval`"),
  leaseTtl: durationSetting.default(2000).describe("committer lease TTL: a table whose leader stops renewing its lease gets a new leader this long after"),
  heartbeatInterval: durationSetting.default(500).describe("how often the node writes its membership heartbeat"),
  memberTimeout: durationSetting.default(3000).describe("a member whose heartbeat is older than this is gone: its buckets are assigned to others (and this node reports itself not ready when its own heartbeat is that old)"),
  replicas: z.number().int().min(1).max(5).default(1).describe("replicas of the streams and KV buckets this node creates (1 on a single server, 3 in a NATS cluster)"),
  // Defaults only: a table's own `natslake.stream.*` option wins (cluster/nats/table-infra.ts, streamSettings).
  streamMaxBytes: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("size bound, in bytes, of the ingest streams this node creates for tables without their own `natslake.stream.max-bytes` (default 1 GiB); a full stream refuses new messages, and producers get an error saying so"),
  duplicateWindow: durationSetting
    .optional()
    .describe("de-duplication window of the ingest streams this node creates for tables without their own `natslake.stream.duplicate-window` (default 2 min): a message published again with the same `Nats-Msg-Id` within it is stored once"),
  maxBufferedRows: z.number().int().positive().default(500_000).describe("rows one bucket writer buffers before it flushes (besides the table's `write-buffer-size`)"),
  // The write budget is shared by every bucket writer of the node (src/write/write-budget.ts): beyond it the largest
  // buffer is flushed early.
  writerMemory: sizeSetting.default(128 * 1024 * 1024).describe("bytes of decoded, not yet written rows that this node's bucket writers may hold together; beyond it the largest buffer is flushed early"),
  // Snapshots are read once for every session that projects and filters a table the same way (actors/consume-feed.ts).
  consumeFeedMemory: sizeSetting
    .default(32 * 1024 * 1024)
    .describe("encoded rows one shared consume feed of a reader may hold: beyond it the oldest go, and sessions that still need them read them themselves"),
  logLevel: z.enum(["debug", "info", "warn", "error"]).default("info").describe("the least severe log lines written (JSON lines on stderr)"),
  drainTimeout: durationSetting
    .default(15_000)
    .describe("how long a drain (SIGTERM, `natslake node drain`) waits for the buckets to be handed off and their last committables committed; a drain still running 10 s after it ends the process with exit code 1"),
  // Each of them holds rows back, and a wait that never ends would otherwise stall a table without a word.
  stallReport: durationSetting
    .default(15_000)
    .describe("how long an actor may handle one message, a table's commit round may run, or a bucket may hold what it read without a flush before the node reports it (a warning naming what it waits on; `natslake_actors_stuck`)"),
  // A stall is a bug or a hostile message, never real work: far above the slowest real flush (see
  // actors/ingest/stall-deadline.ts).
  decodeDeadline: durationSetting
    .default(DEFAULT_STALL_DEADLINE_MS)
    .describe(
      "how long a bucket writer's decode of what it read, or encode of a flush, may run before the node stops the worker thread running it: the bucket reads again, and a message that stalls it `natslake.writer.max-attempts` times, then alone, is dead-lettered (`natslake_bucket_stalls_total`); a node whose main thread is blocked this long (a partitioned table's decode, or any with NATSLAKE_DECODE_WORKERS=0) kills itself, and the message is dead-lettered as one that kills its writer",
    ),
  // A reader on an object-store warehouse keeps the files its lookups read on its own disk (src/io/file-cache.ts):
  // decoded files the memory level (`lookup.cache-max-memory-size`) dropped are decoded again from there, not fetched.
  lookupCacheDir: z
    .string()
    .min(1)
    .optional()
    .describe("directory where a reader on an object-store warehouse keeps the data files its lookups read (emptied at start; default a directory of the node's id under the system's temporary directory); unused on a local warehouse"),
  lookupCacheMaxDiskSize: sizeSetting.default(10 * 1024 * 1024 * 1024).describe("bytes of files the lookup disk cache holds at most, least recently read dropped first (Paimon's lookup.cache-max-disk-size)"),
  lookupCacheFileRetention: durationSetting.default(60 * 60 * 1000).describe("a file in the lookup disk cache not read for this long is dropped (Paimon's lookup.cache-file-retention)"),
  // Each compaction holds its inputs' rows while rewriting them.
  compactionSlots: z
    .number()
    .int()
    .min(0)
    .max(16)
    .default(1)
    .describe("writer-side compactions this node runs at once; 0 turns writer-side compaction off on this node (a table's `write-only = true` turns it off for the table)"),
  // Compaction is background work, several times the bytes ingested: on a saturated machine it yields the cores to
  // the threads that ingest, commit and deliver (and to nats-server, readers, consumers).
  compactionNice: z
    .number()
    .int()
    .min(0)
    .max(19)
    .default(10)
    .describe("the CPU priority (Unix nice, 0–19) of the worker threads that rewrite this node's compactions; 0: the compactions share the node's Parquet workers at its own priority, as flushes do"),
  compactionInterval: durationSetting.optional().describe("how often a bucket writer plans a compaction (default: every commit interval, at least 250 ms)"),
  metricsPort: z.number().int().min(0).max(65535).optional().describe("serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this port (0: any free one; absent: no endpoint)"),
  metricsHost: z.string().min(1).default("127.0.0.1").describe("the address the metrics endpoint listens on (0.0.0.0 in a container)"),
  otlpEndpoint: z
    .string()
    .min(1)
    .optional()
    .describe("export traces by OTLP/HTTP (JSON) to this collector's base URL, e.g. http://127.0.0.1:4318; absent: the OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_TRACES_EXPORTER variables decide (off when unset)"),
});

export type NodeConfig = z.infer<typeof NodeConfigSchema>;

export interface ConfigSources {
  flags: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  file?: string;
}

/** The environment variable of each setting that has one (flags win over them, they win over the config file). */
export const NODE_CONFIG_ENV: Readonly<Partial<Record<keyof NodeConfig, string>>> = {
  nodeId: "NATSLAKE_NODE_ID",
  roles: "NATSLAKE_ROLES",
  nats: "NATSLAKE_NATS",
  redis: "NATSLAKE_REDIS",
  ...NATS_AUTH_ENV,
  ...REDIS_AUTH_ENV,
  warehouse: "NATSLAKE_WAREHOUSE",
  prefix: "NATSLAKE_PREFIX",
  commitInterval: "NATSLAKE_COMMIT_INTERVAL",
  leaseTtl: "NATSLAKE_LEASE_TTL",
  replicas: "NATSLAKE_REPLICAS",
  logLevel: "NATSLAKE_LOG_LEVEL",
  writerMemory: "NATSLAKE_WRITER_MEMORY",
  decodeDeadline: "NATSLAKE_DECODE_DEADLINE",
  consumeFeedMemory: "NATSLAKE_CONSUME_FEED_MEMORY",
  lookupCacheDir: "NATSLAKE_LOOKUP_CACHE_DIR",
  lookupCacheMaxDiskSize: "NATSLAKE_LOOKUP_CACHE_MAX_DISK_SIZE",
  lookupCacheFileRetention: "NATSLAKE_LOOKUP_CACHE_FILE_RETENTION",
  compactionSlots: "NATSLAKE_COMPACTION_SLOTS",
  compactionInterval: "NATSLAKE_COMPACTION_INTERVAL",
  compactionNice: "NATSLAKE_COMPACTION_NICE",
  metricsPort: "NATSLAKE_METRICS_PORT",
  metricsHost: "NATSLAKE_METRICS_HOST",
};

const NUMERIC = new Set(["replicas", "streamMaxBytes", "maxBufferedRows", "compactionSlots", "compactionNice", "metricsPort"]);

export function defaultNodeId(): string {
  return `${hostname().replace(/[^A-Za-z0-9_-]/g, "-")}-${process.pid}-${randomBytes(2).toString("hex")}`;
}

/** Merges the sources (flag > env > file > default) and validates; throws an Error listing every problem. */
export function loadNodeConfig(src: ConfigSources): NodeConfig {
  const merged: Record<string, unknown> = {};
  if (src.file) {
    let text: string;
    try {
      text = readFileSync(src.file, "utf8");
    } catch {
      throw new Error(`cannot read config file '${src.file}'`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new Error(`config file '${src.file}' is not valid JSON: ${(e as Error).message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error(`config file '${src.file}' must hold a JSON object of settings`);
    // A misspelt setting would otherwise be dropped silently and its default used: refuse it, naming the nearest.
    const known = Object.keys(NodeConfigSchema.shape);
    const unknown = Object.keys(parsed).filter((k) => !known.includes(k));
    if (unknown.length > 0) {
      const lines = unknown.map((k) => {
        const near = nearestName(k, known);
        return `  ${k}: unknown setting${near ? ` (did you mean '${near}'?)` : ""}`;
      });
      throw new Error(`invalid node configuration in '${src.file}':\n${lines.join("\n")}\n  (settings: ${known.join(", ")})`);
    }
    Object.assign(merged, parsed);
  }
  for (const [key, name] of Object.entries(NODE_CONFIG_ENV)) {
    const v = src.env[name];
    if (v !== undefined && v !== "") merged[key] = key === "roles" ? v.split(",").map((s) => s.trim()) : NUMERIC.has(key) ? Number(v) : key === "natsTlsFirst" ? parseSwitch(name, v) : v;
  }
  for (const [k, v] of Object.entries(src.flags)) if (v !== undefined) merged[k] = v;
  if (merged["nodeId"] === undefined) merged["nodeId"] = defaultNodeId();
  const r = NodeConfigSchema.safeParse(merged);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join(".") || "(config)"}: ${i.message}`);
    throw new Error(`invalid node configuration:\n${lines.join("\n")}`);
  }
  if (r.data.roles.includes("committer") && !r.data.redis) throw new Error("invalid node configuration:\n  redis: the committer role needs --redis URL (or NATSLAKE_REDIS)");
  // Checked here, not in the schema: the reference page knows a duration setting by its schema (the shared one).
  if (r.data.decodeDeadline < 1000) throw new Error(`invalid node configuration:\n  decodeDeadline: expected at least 1 s (got ${r.data.decodeDeadline} ms): a real decode or flush on a loaded machine takes seconds`);
  return r.data;
}

export const parseRoles = (v: string): NodeRole[] => v.split(",").map((s) => s.trim()) as NodeRole[];
