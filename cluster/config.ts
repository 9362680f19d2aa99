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

const ROLES = ["writer", "committer", "reader"] as const;

/** A duration: milliseconds as a number, or text such as "250ms", "2s", "1 min". */
const duration = z.unknown().transform((v, ctx) => {
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
const memory = z.unknown().transform((v, ctx) => {
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
  nodeId: z.string().regex(/^[A-Za-z0-9_-]+$/, "node ids use letters, digits, '_' and '-' only"),
  roles: z.array(z.enum(ROLES)).min(1, "give at least one role"),
  nats: z.string().min(1),
  redis: z.string().optional(),
  warehouse: z.string().min(1),
  prefix: z.string().regex(/^[A-Za-z0-9_-]+$/).default("lake"),
  commitInterval: duration.default(250),
  leaseTtl: duration.default(2000),
  heartbeatInterval: duration.default(500),
  memberTimeout: duration.default(3000),
  replicas: z.number().int().min(1).max(5).default(1),
  streamMaxBytes: z.number().int().positive().default(1024 * 1024 * 1024),
  duplicateWindow: duration.default(120_000),
  maxBufferedRows: z.number().int().positive().default(500_000),
  /** Bytes of decoded, not yet written rows that this node's bucket writers may hold together (WriteBudget). */
  writerMemory: memory.default(128 * 1024 * 1024),
  /**
   * Encoded rows one shared consume feed of a reader may hold (snapshots read once for every session that projects
   * and filters a table the same way; actors/consume-feed.ts): beyond it the oldest go, and sessions that still
   * need them read them themselves.
   */
  consumeFeedMemory: memory.default(32 * 1024 * 1024),
  logLevel: z.enum(["debug", "info", "warn", "error"]).default("info"),
  drainTimeout: duration.default(15_000),
  /**
   * How long an actor may handle one message, a table's commit round may run, or a bucket may hold what it read
   * without a flush before the node reports it (a warning naming what it waits on; `natslake_actors_stuck`): each of
   * them holds rows back, and a wait that never ends would otherwise stall a table without a word.
   */
  stallReport: duration.default(15_000),
  /**
   * Writer-side compactions this node runs at once (each holds its inputs' rows while rewriting them); 0 turns
   * writer-side compaction off on this node (the table's `write-only = true` turns it off for a table).
   */
  compactionSlots: z.number().int().min(0).max(16).default(1),
  /**
   * The CPU priority (Unix nice, 0–19) of the worker threads that rewrite this node's compactions: 10 by default, so
   * that on a saturated machine compaction — background work, several times the bytes ingested — yields the cores to
   * the threads that ingest, commit and deliver (and to other processes: nats-server, readers, consumers). 0: the
   * compactions share the node's Parquet workers at its own priority, as flushes do.
   */
  compactionNice: z.number().int().min(0).max(19).default(10),
  /** How often a bucket writer plans a compaction (default: every commit interval, at least 250 ms). */
  compactionInterval: duration.optional(),
  /** Serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this port (0: any free one; absent: no endpoint). */
  metricsPort: z.number().int().min(0).max(65535).optional(),
  /** The address the metrics endpoint listens on (loopback by default; 0.0.0.0 in a container). */
  metricsHost: z.string().min(1).default("127.0.0.1"),
  /** Export traces by OTLP/HTTP to this collector (base URL; cluster/tracing.ts). Absent: the OTEL_* variables decide. */
  otlpEndpoint: z.string().min(1).optional(),
});

export type NodeConfig = z.infer<typeof NodeConfigSchema>;

export interface ConfigSources {
  flags: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  file?: string;
}

const ENV: Record<string, string> = {
  nodeId: "NATSLAKE_NODE_ID",
  roles: "NATSLAKE_ROLES",
  nats: "NATSLAKE_NATS",
  redis: "NATSLAKE_REDIS",
  warehouse: "NATSLAKE_WAREHOUSE",
  prefix: "NATSLAKE_PREFIX",
  commitInterval: "NATSLAKE_COMMIT_INTERVAL",
  leaseTtl: "NATSLAKE_LEASE_TTL",
  replicas: "NATSLAKE_REPLICAS",
  logLevel: "NATSLAKE_LOG_LEVEL",
  writerMemory: "NATSLAKE_WRITER_MEMORY",
  consumeFeedMemory: "NATSLAKE_CONSUME_FEED_MEMORY",
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
  for (const [key, name] of Object.entries(ENV)) {
    const v = src.env[name];
    if (v !== undefined && v !== "") merged[key] = key === "roles" ? v.split(",").map((s) => s.trim()) : NUMERIC.has(key) ? Number(v) : v;
  }
  for (const [k, v] of Object.entries(src.flags)) if (v !== undefined) merged[k] = v;
  if (merged["nodeId"] === undefined) merged["nodeId"] = defaultNodeId();
  const r = NodeConfigSchema.safeParse(merged);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join(".") || "(config)"}: ${i.message}`);
    throw new Error(`invalid node configuration:\n${lines.join("\n")}`);
  }
  if (r.data.roles.includes("committer") && !r.data.redis) throw new Error("invalid node configuration:\n  redis: the committer role needs --redis URL (or NATSLAKE_REDIS)");
  return r.data;
}

export const parseRoles = (v: string): NodeRole[] => v.split(",").map((s) => s.trim()) as NodeRole[];
