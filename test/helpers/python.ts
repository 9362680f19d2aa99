/**
 * Runs the Python oracles (pypaimon, pyarrow, DuckDB) used by the compat tests and benchmarks.
 *
 * The interpreter is `$NATSLAKE_PYTHON`, else `<repo>/.venv/bin/python` (created by `.ci/run`). A missing
 * interpreter is an error, never a skip: compat tests that silently pass without their oracle prove nothing.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** `paimon_read.py <warehouse> <db.table> [--snapshot N] [--columns a,b] [--with-bucket] [--partition k=v,...]` */
export const PAIMON_READ_PY = join(REPO_ROOT, "test/compat/py/paimon_read.py");
/** `paimon_write.py` with a JSON spec on stdin (see the script's docstring and {@link PaimonWriteSpec}). */
export const PAIMON_WRITE_PY = join(REPO_ROOT, "test/compat/py/paimon_write.py");
/** `pypaimon_bench.py <workdir> <rows>`: one JSON line of timings. */
export const PYPAIMON_BENCH_PY = join(REPO_ROOT, "bench/py/pypaimon_bench.py");
/** `pypaimon_pk_bench.py <warehouse> <rows> <buckets> [warm-up rows]`: one JSON line of timings. */
export const PYPAIMON_PK_BENCH_PY = join(REPO_ROOT, "bench/py/pypaimon_pk_bench.py");

const SETUP_HINT =
  "run .ci/run or create .venv with pypaimon (python3 -m venv .venv && .venv/bin/pip install -r examples/python/requirements.txt) " +
  "(or point NATSLAKE_PYTHON at an interpreter that has them)";

/** The Python interpreter for the oracles; throws (never skips) when it is missing. */
export function pythonBin(): string {
  const fromEnv = process.env.NATSLAKE_PYTHON;
  if (fromEnv !== undefined && fromEnv !== "") {
    if (!existsSync(fromEnv)) throw new Error(`NATSLAKE_PYTHON=${fromEnv} does not exist; ${SETUP_HINT}`);
    return fromEnv;
  }
  const venv = join(REPO_ROOT, ".venv/bin/python");
  if (!existsSync(venv)) throw new Error(`no Python for the compat oracles at ${venv}; ${SETUP_HINT}`);
  return venv;
}

export interface RunPythonOptions {
  /** Written to the script's stdin (UTF-8); stdin is closed either way. */
  input?: string;
  /** Kill the script (SIGKILL) and reject after this long. Default 120 s. */
  timeoutMs?: number;
  /** More environment variables for the script (e.g. the NATS user it logs in as). */
  env?: Record<string, string>;
}

/** Runs `python <scriptPath> ...args`; resolves with stdout (UTF-8), rejects with stderr on a non-zero exit. */
export function runPython(scriptPath: string, args: string[], opts: RunPythonOptions = {}): Promise<string> {
  const bin = pythonBin();
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise<string>((resolve, reject) => {
    const child = spawn(bin, [scriptPath, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...opts.env, PYTHONUTF8: "1", PYTHONDONTWRITEBYTECODE: "1" },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${bin} ${scriptPath}: ${e.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString("utf8");
      const cmd = `${bin} ${[scriptPath, ...args].join(" ")}`;
      if (timedOut) reject(new Error(`${cmd} timed out after ${timeoutMs} ms\n${stderr}`));
      else if (code !== 0) reject(new Error(`${cmd} exited with ${code ?? signal}\n${stderr}`));
      else resolve(Buffer.concat(out).toString("utf8"));
    });
    // A script that exits without reading stdin makes the write fail with EPIPE; the exit status reports it.
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
  });
}

/** Parses JSON lines (blank lines ignored). */
export function parseJsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export interface PaimonReadOptions {
  snapshot?: number;
  columns?: string[];
  /** Adds `_bucket` (the split's bucket) and `_partition` (`k=v/k2=v2`, "" when unpartitioned) to each row. */
  withBucket?: boolean;
  /** Only these partitions, e.g. `{ dt: "2024-01-01" }` (values as the read renders them). */
  partition?: Record<string, string>;
  /** A value filter pushed to pypaimon (it skips files by their statistics): `[op, column, literal]`, ANDed. */
  filter?: Array<["equal" | "less_than" | "less_or_equal" | "greater_than" | "greater_or_equal", string, string | number]>;
  timeoutMs?: number;
}

/** Reads a table with pypaimon: rows rendered like `toJsonValue`, in pypaimon's split order. */
export async function paimonRead(warehouse: string, table: string, opts: PaimonReadOptions = {}): Promise<Array<Record<string, unknown>>> {
  const args = [warehouse, table];
  if (opts.snapshot !== undefined) args.push("--snapshot", String(opts.snapshot));
  if (opts.columns !== undefined) args.push("--columns", opts.columns.join(","));
  if (opts.withBucket === true) args.push("--with-bucket");
  if (opts.partition !== undefined) {
    args.push("--partition", Object.entries(opts.partition).map(([k, v]) => `${k}=${v}`).join(","));
  }
  if (opts.filter !== undefined) args.push("--filter-stdin");
  const stdout = await runPython(PAIMON_READ_PY, args, {
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
    ...(opts.filter === undefined ? {} : { input: JSON.stringify(opts.filter) }),
  });
  return parseJsonLines(stdout);
}

export interface PaimonWriteSpec {
  warehouse: string;
  /** `db.table` */
  table: string;
  /** Create the table (and the database when missing); the table must not exist yet. */
  create: {
    /** `[name, Paimon SQL type]`, e.g. `["amount", "DECIMAL(10, 2) NOT NULL"]` */
    columns: Array<[string, string]>;
    partitionKeys?: string[];
    primaryKeys?: string[];
    options?: Record<string, string>;
  } | null;
  /** Rows rendered like `toJsonValue`; each batch is one pypaimon write + commit (one snapshot). */
  batches: Array<Array<Record<string, unknown>>>;
  /** INSERT OVERWRITE of this static partition (`{}` = the whole table); null = append. */
  overwrite: Record<string, string> | null;
}

export interface PaimonWriteResult {
  table: string;
  created: boolean;
  rows: number;
  /** Snapshot ids the batches created, in order. */
  snapshots: number[];
  latestSnapshot: number | null;
}

/** Writes with pypaimon (see `paimon_write.py`). */
export async function paimonWrite(spec: PaimonWriteSpec, timeoutMs?: number): Promise<PaimonWriteResult> {
  const stdout = await runPython(PAIMON_WRITE_PY, [], { input: JSON.stringify(spec), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  return JSON.parse(stdout) as PaimonWriteResult;
}

/** `paimon_alter.py` (see its docstring): a schema change made by pypaimon. */
export const PAIMON_ALTER_PY = join(REPO_ROOT, "test/compat/py/paimon_alter.py");

/** Changes `table`'s schema with pypaimon (`["--rename", a, b]`, `["--drop", a]`, `["--type", a, T]`, or `[column, T]` to add); the new schema id. */
export async function paimonAlter(warehouse: string, table: string, change: string[]): Promise<number> {
  return (JSON.parse(await runPython(PAIMON_ALTER_PY, [warehouse, table, ...change])) as { schemaId: number }).schemaId;
}

/** `paimon_tag.py create|read|list` (see the script's docstring): tags made and read by pypaimon. */
export const PAIMON_TAG_PY = join(REPO_ROOT, "test/compat/py/paimon_tag.py");

/** pypaimon's `table.create_tag`; returns the tagged snapshot id. */
export async function paimonCreateTag(warehouse: string, table: string, name: string, opts: { snapshot?: number; timeRetained?: string } = {}): Promise<number> {
  const args = ["create", warehouse, table, name];
  if (opts.snapshot !== undefined) args.push("--snapshot", String(opts.snapshot));
  if (opts.timeRetained !== undefined) args.push("--time-retained", opts.timeRetained);
  return (JSON.parse(await runPython(PAIMON_TAG_PY, args)) as { snapshot: number }).snapshot;
}

/** Rows of the table at a tag, read by pypaimon (`scan.tag-name`). */
export async function paimonReadTag(warehouse: string, table: string, name: string): Promise<Array<Record<string, unknown>>> {
  return parseJsonLines(await runPython(PAIMON_TAG_PY, ["read", warehouse, table, name]));
}

/** pypaimon's view of the tags: name, snapshot, create time (ISO local), retention in seconds. */
export async function paimonListTags(warehouse: string, table: string): Promise<Array<{ name: string; snapshot: number; createTime: string | null; timeRetainedSeconds: number | null }>> {
  return parseJsonLines(await runPython(PAIMON_TAG_PY, ["list", warehouse, table])) as Array<{ name: string; snapshot: number; createTime: string | null; timeRetainedSeconds: number | null }>;
}

/** `paimon_time_travel.py` (see its docstring): many reads, time-travelled or not, in one pypaimon process. */
export const PAIMON_TIME_TRAVEL_PY = join(REPO_ROOT, "test/compat/py/paimon_time_travel.py");

/** One read of `paimonTimeTravel`: one of snapshot, tag, atMillis (none: the latest snapshot), and a projection. */
export interface PaimonTimeTravelRead {
  snapshot?: number;
  tag?: string;
  atMillis?: number;
  columns?: string[];
}

/** The columns (name, type as the schema file writes it) and rows of each read, or pypaimon's refusal. */
export type PaimonTimeTravelResult = { fields: Array<{ name: string; type: unknown }>; rows: Array<Record<string, unknown>>; error?: undefined } | { fields?: undefined; rows?: undefined; error: string };

/** Reads `table` with pypaimon's time travel (`table.copy` with scan.snapshot-id, scan.tag-name or scan.timestamp-millis). */
export async function paimonTimeTravel(warehouse: string, table: string, reads: readonly PaimonTimeTravelRead[], timeoutMs?: number): Promise<PaimonTimeTravelResult[]> {
  const stdout = await runPython(PAIMON_TIME_TRAVEL_PY, [warehouse, table], { input: JSON.stringify(reads), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  return parseJsonLines(stdout) as PaimonTimeTravelResult[];
}
