/**
 * Runs the Java Paimon oracles (test/compat/java/*.java against paimon-bundle 1.4.2), which scripts/setup.sh
 * fetches and compiles into `$NATSLAKE_JAVA_ORACLE_DIR` (default `~/.cache/natslake/java-oracle`). A missing
 * oracle is an error, never a skip. One JVM start reads every request of a call (a start costs seconds).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DataType } from "../../src/format/data-types.ts";
import type { Table } from "../../src/table/table.ts";
import { decimalToUnscaled, formatDecimal, Timestamp, toJsonValue, type Value } from "../../src/format/values.ts";

export function javaOracleDir(): string {
  const fromEnv = process.env.NATSLAKE_JAVA_ORACLE_DIR;
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : join(homedir(), ".cache/natslake/java-oracle");
}

/**
 * The classpath of the oracle program `mainClass`; throws (never skips) when setup.sh has not prepared it from this
 * checkout's sources.
 */
function classpath(mainClass: string): string {
  const dir = javaOracleDir();
  for (const stamp of ["lib/.stamp", `classes/${mainClass}.class`, "classes/.stamp"]) {
    if (!existsSync(join(dir, stamp))) throw new Error(`the Java Paimon oracle is missing (${join(dir, stamp)}); run scripts/setup.sh (or point NATSLAKE_JAVA_ORACLE_DIR at its directory)`);
  }
  // setup.sh stamps the classes with the SHA-256 of the sources and the pom, in this order: an oracle compiled from
  // other sources would fail on requests it does not know, or answer them differently.
  const hash = createHash("sha256");
  for (const file of JAVA_STAMPED) hash.update(readFileSync(file));
  if (readFileSync(join(dir, "classes/.stamp"), "utf8").split(" ")[0] !== hash.digest("hex")) {
    throw new Error(`the Java Paimon oracle in ${dir} was compiled from other sources than this checkout's test/compat/java/; run scripts/setup.sh`);
  }
  return `${join(dir, "lib")}/*:${join(dir, "classes")}`;
}

/**
 * The class path and JVM flags of an oracle run: with the class-data-sharing archive setup.sh made of an oracle run's
 * classes (halves a start's CPU), when its stamp says it was made from this lib and these classes; else the class
 * directory as it is. Either way the JVM's own log goes to stderr at warning level: by default it prints to stdout,
 * where a warning (e.g. an archive it cannot map) would break the oracle's JSON.
 */
function oracleLaunch(mainClass: string): { classpath: string; flags: string[] } {
  const plain = classpath(mainClass);
  const dir = javaOracleDir();
  const logToStderr = ["-Xlog:disable", "-Xlog:all=warning:stderr"];
  const cds = join(dir, "cds");
  try {
    const expected = `${readFileSync(join(dir, "lib/.stamp"), "utf8")} ${readFileSync(join(dir, "classes/.stamp"), "utf8")}`;
    if (readFileSync(join(cds, ".stamp"), "utf8") === expected && existsSync(join(cds, "oracles.jsa"))) {
      return { classpath: `${join(dir, "lib")}/*:${join(cds, "oracles.jar")}`, flags: [...logToStderr, `-XX:SharedArchiveFile=${join(cds, "oracles.jsa")}`] };
    }
  } catch {
    // no archive (an older setup.sh, or its training run failed): the plain class path
  }
  return { classpath: plain, flags: logToStderr };
}

/**
 * What setup.sh's classes stamp hashes: its JAVA_SRCS (read from setup.sh itself, so the two lists cannot drift
 * apart), then the pom.
 */
const JAVA_STAMPED = ((): string[] => {
  const setup = readFileSync(fileURLToPath(new URL("../../scripts/setup.sh", import.meta.url)), "utf8");
  const line = /^JAVA_SRCS=\((.*)\)$/m.exec(setup);
  if (line === null) throw new Error("scripts/setup.sh has no JAVA_SRCS=(...) line");
  const sources = [...line[1]!.matchAll(/test\/compat\/java\/([A-Za-z]+\.java)/g)].map((m) => m[1]!);
  return [...sources, "pom.xml"].map((f) => fileURLToPath(new URL(`../compat/java/${f}`, import.meta.url)));
})();

export interface JavaReadRequest {
  /** `db.table` */
  table: string;
  /** Projection, in this order. */
  columns?: string[];
  /** A Paimon predicate `column op literal` (op: gt, ge, lt, le, eq), pushed down and applied to rows. */
  filter?: { column: string; op: "gt" | "ge" | "lt" | "le" | "eq"; literal: string };
  /** Time travel (one of them), through Paimon's own options: scan.snapshot-id, scan.tag-name, scan.timestamp-millis. */
  snapshot?: number;
  tag?: string;
  atMillis?: number;
}

/** A column Java read: its name and Paimon's SQL rendering of its type (`DataType.asSQLString`). */
export interface JavaField {
  name: string;
  type: string;
}

/** What Java returned for one request: its columns and rows, or the exception chain that ended it. */
export type JavaResult<R> = { fields: JavaField[]; rows: R[]; error?: undefined } | { fields?: undefined; rows?: undefined; error: string };

/** Rows of each request as PaimonRead.java renders them (see its class comment), in Java's split order. */
export async function javaPaimonReadRaw(warehouse: string, requests: readonly JavaReadRequest[], timeoutMs = 180_000): Promise<Array<JavaResult<Record<string, unknown>>>> {
  const args = requests.map((r) => {
    let a = r.table;
    if (r.snapshot !== undefined) a += `;snapshot=${r.snapshot}`;
    if (r.tag !== undefined) a += `;tag=${r.tag}`;
    if (r.atMillis !== undefined) a += `;at=${r.atMillis}`;
    if (r.columns !== undefined) a += `;columns=${r.columns.join(",")}`;
    if (r.filter !== undefined) a += `;filter=${r.filter.column},${r.filter.op},${r.filter.literal}`;
    return a;
  });
  const { stdout, stderr } = await runJavaOracle("PaimonRead", [warehouse, ...args], null, timeoutMs);
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  if (lines.length !== requests.length) throw new Error(`PaimonRead printed ${lines.length} results for ${requests.length} requests\n${stderr}`);
  return lines.map((l) => JSON.parse(l) as JavaResult<Record<string, unknown>>);
}

/**
 * The JVM flags of an oracle run: the C1 compiler only, since an oracle run is short and compiles little (C2 would
 * cost more than it gains). A benchmark passes its own (the full JIT).
 */
export const ORACLE_JVM_FLAGS: readonly string[] = ["-Xshare:auto", "-XX:TieredStopAtLevel=1"];

/**
 * Runs the oracle program `mainClass` (a class compiled from test/compat/java/) with `args`, writing `stdin` to it,
 * and resolves with what it printed; rejects with its stderr when it exits non-zero or outlives `timeoutMs`.
 */
export function runJavaOracle(
  mainClass: string,
  args: readonly string[],
  stdin: string | null,
  timeoutMs = 180_000,
  jvmFlags: readonly string[] = ORACLE_JVM_FLAGS,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Inside the executor, so a missing oracle rejects like any other failure.
    const launch = oracleLaunch(mainClass);
    const cmd = [...launch.flags, ...jvmFlags, "-cp", launch.classpath, mainClass, ...args];
    const child = spawn("java", cmd, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start java: ${e.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString("utf8");
      if (code !== 0) return reject(new Error(`${mainClass} ${args.join(" ")} exited with ${code ?? signal}\n${stderr}`));
      resolve({ stdout: Buffer.concat(out).toString("utf8"), stderr });
    });
    // A program that exits without reading its input closes the pipe; its exit status reports what went wrong.
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin ?? "");
  });
}

/**
 * Reads with Java Paimon and renders the rows like `toJsonValue` (as `readJson` and the pypaimon oracle do), using
 * each table's schema. `tables[i]` is the table of `requests[i]` (for a time-travel request, in the schema the
 * travelled-to snapshot has: `Table.inSchema`); a failed request keeps its error.
 */
export async function javaPaimonRead(warehouse: string, tables: readonly Table[], requests: readonly JavaReadRequest[]): Promise<Array<JavaResult<Record<string, unknown>>>> {
  const raw = await javaPaimonReadRaw(warehouse, requests);
  return raw.map((res, i) => (res.rows === undefined ? res : { fields: res.fields, rows: res.rows.map(javaRowToJson(tables[i]!, requests[i]!.columns)) }));
}

/**
 * A row as the Java oracles render it → the row as `readJson` renders it (`toJsonValue` of each value), for the
 * columns `projection` (default: all of the table's, in order).
 */
export function javaRowToJson(table: Table, projection?: readonly string[]): (row: Record<string, unknown>) => Record<string, unknown> {
  const fields = table.schema.fields;
  const wanted = (projection ?? fields.map((f) => f.name)).map((name) => {
    const f = fields.find((x) => x.name === name);
    if (f === undefined) throw new Error(`no column ${name} in ${table.name}`);
    return f;
  });
  return (r) => Object.fromEntries(wanted.map((f) => [f.name, toJsonValue(f.type, fromJava(f.type, r[f.name]))]));
}

/** The rows of a result; throws Java's error for a failed request. */
export function javaRows<R>(res: JavaResult<R> | undefined): R[] {
  if (res === undefined) throw new Error("no Java result (did the reading hook run?)");
  if (res.rows === undefined) throw new Error(`Java Paimon failed: ${res.error}`);
  return res.rows;
}

/** PaimonRead's rendering → natslake's canonical value. */
export function fromJava(type: DataType, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (type.root) {
    case "BIGINT":
      return BigInt(v as string);
    case "DECIMAL":
      return decimalToUnscaled(v as string, type.precision, type.scale, "java");
    case "FLOAT":
    case "DOUBLE":
      return typeof v === "number" ? v : v === "-0.0" ? -0 : Number(v as string);
    case "BINARY":
    case "VARBINARY":
      return Uint8Array.from(Buffer.from(v as string, "hex"));
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return Timestamp.fromEpochNanos(BigInt(v as string));
    case "ARRAY":
      return (v as unknown[]).map((x) => fromJava(type.element, x));
    case "MULTISET":
      return (v as Array<[unknown, number]>).flatMap(([x, n]) => Array.from({ length: n }, () => fromJava(type.element, x)));
    case "MAP":
      return (v as Array<[unknown, unknown]>).map(([k, x]) => [fromJava(type.key, k), fromJava(type.value, x)]);
    case "ROW": {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(type.fields.map((f) => [f.name, fromJava(f.type, o[f.name])]));
    }
    default:
      return v as Value;
  }
}

/** natslake's canonical value → the Java oracles' form (the inverse of `fromJava`; PaimonJson.java parses it). */
export function toJava(type: DataType, v: Value): unknown {
  if (v === null) return null;
  switch (type.root) {
    case "BIGINT":
      return String(v as bigint);
    case "DECIMAL":
      return formatDecimal(v as bigint, type.scale);
    case "FLOAT":
    case "DOUBLE":
      // JSON has no NaN, infinities or negative zero: PaimonJson parses these strings.
      if (Object.is(v, -0)) return "-0.0";
      return Number.isFinite(v as number) ? v : String(v as number);
    case "BINARY":
    case "VARBINARY":
      return Buffer.from(v as Uint8Array).toString("hex");
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return (v as Timestamp).toEpochNanos().toString();
    case "ARRAY":
      return (v as Value[]).map((x) => toJava(type.element, x));
    case "MULTISET": {
      // natslake holds a multiset as its elements with repeats; Java as element → count.
      const counts = new Map<string, [unknown, number]>();
      for (const x of v as Value[]) {
        const j = toJava(type.element, x);
        const key = JSON.stringify(j);
        const c = counts.get(key);
        if (c === undefined) counts.set(key, [j, 1]);
        else c[1]++;
      }
      return [...counts.values()];
    }
    case "MAP":
      return (v as Array<[Value, Value]>).map(([k, x]) => [toJava(type.key, k), toJava(type.value, x)]);
    case "ROW": {
      const o = v as Record<string, Value>;
      return Object.fromEntries(type.fields.map((f) => [f.name, toJava(f.type, o[f.name] ?? null)]));
    }
    default:
      return v;
  }
}
