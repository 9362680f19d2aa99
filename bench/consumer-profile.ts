/**
 * Profiles one consumer catching up (issue 11; the catch-up phase of bench/consumer.bench.ts), for `--cpu-prof`:
 * a loopback cluster — 2 nodes `--roles writer,committer`, one `--roles reader` run with `--cpu-prof` into DIR —, a
 * backlog of N rows committed, then natslake's full scan and one consumer `from: "full"` in this process, twice
 * (cold, then warm). Prints each run's rows/s and its CLOCK_MONOTONIC window in µs — the clock of the sample times in
 * the .cpuprofile files — so a profile can be cut to one run: `node bench/cpuprofile-summary.mjs FILE FROM TO`.
 * The reader writes its profiles (main thread and Parquet workers) when it exits, at the end.
 *
 *   node --import tsx bench/consumer-profile.ts --profile-dir DIR [--rows N]   (default 1,000,000 rows)
 *   (profile this process, the consumer, too: node --cpu-prof --cpu-prof-dir DIR2 --import tsx bench/consumer-profile.ts …)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { CLUSTER_TABLE_DEFAULTS } from "../cluster/admin.ts";
import { openConsumer } from "../cluster/consumer.ts";
import { chooseNatsServer, startNats, startRedis } from "../cluster/local/servers.ts";
import { readBatches } from "../src/scan/read.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { publishBenchRows, waitForAssignment } from "./cluster-harness.ts";
import { BENCH_COLUMNS } from "./shape.ts";

const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const { values: flags } = parseArgs({ options: { "profile-dir": { type: "string" }, rows: { type: "string" } } });
const ROWS = Number(flags.rows ?? 1_000_000);
if (flags["profile-dir"] === undefined || !(ROWS > 0)) {
  process.stderr.write("usage: node --import tsx bench/consumer-profile.ts --profile-dir DIR [--rows N]\n");
  process.exit(2);
}
const PROFILE_DIR = resolve(flags["profile-dir"]);
const say = (line: string): void => void process.stdout.write(line + "\n");
const monotonicMicros = (): bigint => process.hrtime.bigint() / 1000n;
const rate = (rows: number, seconds: number): string => `${Math.round(rows / seconds).toLocaleString("en-US")} rows/s`;

const dir = mkdtempSync(join(tmpdir(), "natslake-consumer-profile-"));
const nats = await startNats({ bin: chooseNatsServer().bin });
const redis = await startRedis();
const warehouse = join(dir, "wh");
const nodes: ChildProcess[] = [];
const node = (i: number, roles: string, profile: boolean): ChildProcess => {
  const fd = openSync(join(dir, `n${i}.log`), "a");
  const args = [...(profile ? ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR] : []), BIN, "node", "--roles", roles, "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", `n${i}`, "--commit-interval", "100ms", "--log-level", "warn"];
  const p = spawn(process.execPath, args, { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) });
  nodes.push(p);
  return p;
};
node(1, "writer,committer", false);
node(2, "writer,committer", false);
const reader = node(3, "reader", true);
const nc = await connect({ servers: nats.url });
try {
  say(`consumer profile: ${ROWS.toLocaleString("en-US")} rows; reader profiles into ${PROFILE_DIR}; load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const name = "bench.backlog";
  const table = await new Catalog(warehouse).createTable(parseIdentifier(name), { columns: parseColumnList(BENCH_COLUMNS), options: { ...CLUSTER_TABLE_DEFAULTS, bucket: "6", "bucket-key": "id" } });
  if (!(await waitForAssignment(nc, name, 6, 2, 60_000))) throw new Error(`${name}: buckets not assigned within 60 s`);
  await publishBenchRows(nc, name, ROWS);
  // Committed, and no snapshot for 3 s (writer-side compaction done).
  let last = -1;
  let since = Date.now();
  for (const deadline = Date.now() + 300_000; ; ) {
    if (Date.now() > deadline) throw new Error(`${name}: not committed and quiet within 300 s`);
    const s = await table.snapshots.latest();
    if (s !== null && s.id !== last) [last, since] = [s.id, Date.now()];
    if (s !== null && Number(s.totalRecordCount) >= ROWS && Date.now() - since > 3000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const run of ["cold", "warm"]) {
    const t0 = performance.now();
    let scanned = 0;
    for await (const b of readBatches(table, { snapshotId: last })) scanned += b.numRows;
    const scanS = (performance.now() - t0) / 1000;
    const from = monotonicMicros();
    const t1 = performance.now();
    const consumer = await openConsumer({ nc, table: name, from: "full" });
    let rows = 0;
    let firstMs = 0;
    for await (const s of consumer) {
      for await (const b of s.batches) {
        if (rows === 0) firstMs = performance.now() - t1;
        rows += b.numRows;
      }
      if (rows >= ROWS) break;
    }
    await consumer.close();
    const consumerS = (performance.now() - t1) / 1000;
    say(`${run}: full scan ${rate(scanned, scanS)}; consumer ${rate(rows, consumerS)} (${(scanS / consumerS).toFixed(2)}× the scan), first rows after ${firstMs.toFixed(0)} ms; monotonic µs ${from}..${monotonicMicros()}`);
  }
} finally {
  // SIGTERM: the reader drains and exits, writing its profiles.
  reader.kill("SIGTERM");
  await new Promise((r) => (reader.exitCode !== null || reader.signalCode !== null ? r(null) : reader.once("exit", r)));
  for (const p of nodes) p.kill("SIGKILL");
  await nc.close();
  await nats.stop();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
