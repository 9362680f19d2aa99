/**
 * The CLI run as a user runs it against one warehouse (`--warehouse` appended), and the table helpers the
 * maintenance tests share: a history of small commits, the files under a table, the data files a plan reads.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, reopen, writeRows } from "./tables.ts";
import type { Table } from "../../src/table/table.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface WarehouseCli {
  cli(args: string[], env?: Record<string, string>): Promise<Run>;
  /** Runs and expects exit 0; its stdout. */
  ok(args: string[]): Promise<string>;
  /** Runs and expects `code` with a one-line error matching `message`. */
  fails(args: string[], code: number, message: RegExp): Promise<void>;
}

/** Runs `natslake <args>` as a user would (a fresh process), collecting its output. */
export function runNatslake(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export function warehouseCli(warehouse: string): WarehouseCli {
  const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> => runNatslake([...args, "--warehouse", warehouse], env);
  return {
    cli,
    async ok(args) {
      const r = await cli(args);
      assert.equal(r.code, 0, `natslake ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    },
    async fails(args, code, message) {
      const r = await cli(args);
      assert.equal(r.code, code, `natslake ${args.join(" ")} exits ${code}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, message);
      // One line, no stack (commander adds its usage hint to argument errors).
      assert.equal(r.stderr.trim().split("\n").filter((l) => l !== "(run with --help for usage)").length, 1, r.stderr);
    },
  };
}

/** `commits` appends of 5 rows into partitions a/b (2 buckets), snapshot `overwriteAt` an overwrite of partition a. */
export async function historyTable(warehouse: string, name: string, commits: number, overwriteAt = -1): Promise<Table> {
  const t = await createTable(warehouse, name, "id BIGINT NOT NULL, dt STRING NOT NULL, msg STRING", { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } });
  for (let c = 0; c < commits; c++) {
    const dt = c % 2 === 0 || c === overwriteAt ? "a" : "b";
    await writeRows(t, Array.from({ length: 5 }, (_, k) => ({ id: c * 5 + k, dt, msg: `c${c}` })), c === overwriteAt ? { partition: ["a"] } : undefined);
  }
  return reopen(warehouse, name);
}

/** Every file under the table (data files, manifests, snapshots, tags, …) as sorted relative paths. */
export function filesOf(t: Table): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const n of readdirSync(dir)) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(t.root, p));
    }
  };
  walk(t.root);
  return out.sort();
}

/** Data files on disk under the table's `dt` partitions. */
export function dataFilesOnDisk(t: Table): string[] {
  return filesOf(t).filter((p) => /^dt=/.test(p));
}

/** Data files a snapshot's (or a tag's) plan reads, as paths relative to the table (a table partitioned by `dt`). */
export async function liveDataFiles(t: Table, spec: { snapshotId?: number; tag?: string }): Promise<string[]> {
  const { planScan } = await import("../../src/scan/plan.ts");
  const plan = await planScan(t, spec);
  return plan.splits.flatMap((s) => s.files.map((f) => join(`dt=${String(s.partitionValues[0])}`, `bucket-${s.bucket}`, f.fileName))).sort();
}

/**
 * The `id`s a snapshot's plan reads, per `dt=<partition>/bucket-<n>`, each bucket in the order its files are read
 * (sequence order): what "a bucket keeps its order" is checked against.
 */
export async function idsByBucket(t: Table, spec: { snapshotId?: number; tag?: string } = {}): Promise<Record<string, number[]>> {
  const { planScan } = await import("../../src/scan/plan.ts");
  const { readDataFile } = await import("../../src/scan/read.ts");
  const out: Record<string, number[]> = {};
  for (const s of (await planScan(t, spec)).splits) {
    const ids = (out[`dt=${String(s.partitionValues[0])}/bucket-${s.bucket}`] ??= []);
    for (const f of s.files) for (const b of await readDataFile(t, s, f)) for (const v of b.getChild("id")!.toArray() as BigInt64Array) ids.push(Number(v));
  }
  return out;
}
