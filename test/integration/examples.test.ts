/**
 * The examples under examples/, each run as a user runs it — a child process in the repository folder with the
 * command line documented at the top of its file — against a real local cluster (nats-server, redis-server, a
 * node): what each prints, and what the table holds afterwards.
 *
 * One table, in the order a user would go: the TypeScript producer creates it and publishes rows (an idempotent
 * re-publish stores nothing), the TypeScript consumer receives them and records its progress, the Python publisher
 * adds the sample file's rows, the Python consumer receives all of them, the TypeScript consumer started again
 * resumes after its progress (only the new rows), and the Python query aggregates the table with DuckDB.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { adminRequest } from "../../cluster/admin-client.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { getConsumer } from "../../src/table/consumers.ts";
import { startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { REPO_ROOT, pythonBin } from "../helpers/python.ts";

const TABLE = "ex.events";
const SAMPLE = join(REPO_ROOT, "examples/data/events.jsonl");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in the repository folder (stdin from `input`), killed after `timeoutMs`; its exit and output. */
function run(command: string, args: string[], o: { input?: string; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 120_000);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (signal !== null) reject(new Error(`${command} ${args.join(" ")} was killed (${signal}):\n${stdout}\n${stderr}`));
      else resolve({ code, stdout, stderr });
    });
    child.stdin.on("error", () => {}); // a command that never reads stdin
    child.stdin.end(o.input ?? "");
  });
}

/** A run that must succeed: its stdout (the whole output in the failure message otherwise). */
async function ok(command: string, args: string[], o: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await run(command, args, o);
  assert.equal(r.code, 0, `${command} ${args.join(" ")} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const tsExample = (name: string, args: string[]): Promise<string> => ok("npx", ["tsx", "--conditions=development", `examples/typescript/${name}`, ...args]);
const pyExample = (name: string, args: string[], input?: string): Promise<string> =>
  ok(pythonBin(), [`examples/python/${name}`, ...args], input !== undefined ? { input } : {});

test("examples - producer and consumer (TypeScript), publisher, consumer and query (Python) against a live cluster", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      // The node answers admin requests once its start-up table scan is done (the producer creates the table).
      await waitFor("the node serving admin requests", () => adminRequest(c.nc, "lake", { type: "list-tables" }, 2000).then(() => true), 60_000, 200);
      const nats = ["--nats", c.nats.url, "--table", TABLE];

      const produced = await tsExample("producer.ts", [...nats, "--rows", "300", "--first-id", "100", "--producer-id", "examples-test"]);
      assert.match(produced, /^created ex\.events \(id BIGINT NOT NULL, msg STRING, at TIMESTAMP\(3\); 4 buckets by id\)$/m);
      assert.match(produced, /^published 300 rows \(ids 100\.\.399\) to ex\.events in \d+ batches as producer examples-test: 300 ok$/m);
      const visibleIn = Number(/^visible in snapshot (\d+) of ex\.events/m.exec(produced)?.[1]);
      assert.ok(visibleIn >= 1, produced);
      assert.match(produced, /^published the same 300 rows again as producer examples-test \(a restarted producer re-sending\): 300 duplicate$/m);
      assert.match(produced, /the stream stored nothing twice/);

      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(TABLE));
      const ids = async (): Promise<number[]> => (await readAllRows(t)).map((r) => Number(r["id"])).sort((a, b) => a - b);
      const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
      assert.deepEqual(await ids(), range(100, 300), "every row once: the re-publish stored nothing");

      const consumed = await tsExample("consumer.ts", [...nats, "--consumer-id", "ex-ts", "--rows", "300", "--timeout", "60"]);
      const first = /^snapshot (\d+) \(full\): 300 rows, first \{"id":\d+,"msg":"example row \d+","at":\d+\}; acknowledged$/m.exec(consumed);
      assert.ok(first, consumed);
      assert.match(consumed, new RegExp(`^received 300 rows in 1 snapshot\\(s\\); acknowledged through snapshot ${first[1]}; stopped: reached --rows 300$`, "m"));
      assert.equal((await getConsumer(t, "ex-ts"))?.nextSnapshot, Number(first[1]) + 1, "its progress is Paimon's consumer file");

      const sample = readFileSync(SAMPLE, "utf8");
      const published = JSON.parse((await pyExample("publish.py", nats, sample)).trim()) as { rows: number; messages: number; duplicates: number };
      assert.deepEqual({ rows: published.rows, duplicates: published.duplicates }, { rows: 5, duplicates: 0 });

      // Python, from full: the producer's rows and, in this snapshot or the next, the sample file's.
      const py = await pyExample("consume.py", [...nats, "--consumer-id", "ex-py", "--rows", "305", "--timeout", "60"]);
      assert.match(py, /^snapshot \d+ \(full\): \d+ rows, first \{"id": \d+, "msg": "[^"]+", "at": /m);
      assert.match(py, /^received 305 rows in [1-6] snapshot\(s\); acknowledged through snapshot \d+; stopped: reached --rows 305$/m);
      assert.deepEqual(await ids(), [...range(1, 5), ...range(100, 300)]);

      // The TypeScript consumer again: it resumes after its acknowledged snapshot — only the sample file's rows.
      const resumed = await tsExample("consumer.ts", [...nats, "--consumer-id", "ex-ts", "--rows", "5", "--timeout", "60"]);
      // (The node may commit the file's rows in one snapshot or in several, a bucket at a time.)
      const deltas = [...resumed.matchAll(/^snapshot \d+ \((\w+)\): (\d+) rows, first \{"id":[1-5],"msg":/gm)];
      assert.ok(deltas.length >= 1 && deltas.every((m) => m[1] === "delta"), resumed);
      assert.equal(deltas.reduce((n, m) => n + Number(m[2]), 0), 5, resumed);
      assert.match(resumed, /^received 5 rows in [1-5] snapshot\(s\); acknowledged through snapshot \d+; stopped: reached --rows 5$/m);

      const query = await pyExample("query.py", ["--warehouse", c.warehouse, "--table", TABLE]);
      assert.match(query, /^read 305 rows of ex\.events \(snapshot \d+\) with pypaimon in \d+ ms$/m);
      assert.deepEqual(query.trim().split("\n").slice(1).map((l) => l.trim().split(/\s+/)), [["rows", "ids", "min_id", "max_id"], ["305", "305", "1", "399"]]);
      const grouped = await pyExample("query.py", ["--warehouse", c.warehouse, "--table", TABLE, "--sql", "SELECT id < 100 AS from_file, count(*) AS n FROM t GROUP BY 1 ORDER BY 1"]);
      assert.deepEqual(grouped.trim().split("\n").slice(1).map((l) => l.trim().split(/\s+/)), [["from_file", "n"], ["False", "300"], ["True", "5"]]);
    });
  } finally {
    await c.stop();
  }
});

test("examples - a wrong flag or an unreachable NATS is one line and a non-zero exit", { timeout: 120_000 }, async () => {
  const closed = "nats://127.0.0.1:1";
  const bad = await run("npx", ["tsx", "--conditions=development", "examples/typescript/producer.ts", "--rows", "zero"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^producer\.ts: --rows must be a positive integer, got 'zero'\nusage: producer\.ts/);
  const unreachable = await run("npx", ["tsx", "--conditions=development", "examples/typescript/consumer.ts", "--nats", closed]);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /^consumer\.ts: cannot reach NATS at nats:\/\/127\.0\.0\.1:1 \(is `npm run up` running\?\)/);
  const py = await run(pythonBin(), ["examples/python/consume.py", "--nats", closed]);
  assert.equal(py.code, 1);
  assert.match(py.stderr, /consume\.py: cannot reach NATS at nats:\/\/127\.0\.0\.1:1/);
});
