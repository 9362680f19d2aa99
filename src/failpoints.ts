/**
 * Named failpoints, compiled into the product and off by default (chaos/ and crash tests turn them on).
 *
 * `FAILPOINTS=commit.before-snapshot:kill,writer.flush.mid:sleep(500)` arms points by name. Actions:
 * `kill` (SIGKILL this process, as a crash would), `exit` (exit code 137 without cleanup), `throw` (an Error at
 * that point), `sleep(ms)` (a pause, for timing faults; asynchronous points only), `hang(ms)` (the thread blocked
 * that long, nothing else running on it: a decode or an encode that does not return). A suffix `@N` fires only on the N-th time the point is
 * reached (`writer.file.written:kill@3`), so a crash can land mid-run rather than at the first flush.
 * A point reached with data (a message's payload) may carry a marker: `ingest.message[POISON]:kill` fires only on
 * data holding the bytes `POISON` (a marker holds no `:`, `[` or `]`).
 * When FAILPOINTS is unset, `failpoint()` costs one size check of an empty map.
 *
 * The points (the chaos suite, chaos/scenarios/, arms each on one node process):
 * - writer: `io.write.mid` (src/io/local.ts: half of a file's bytes written; src/io/s3.ts: half of a PUT's body sent), `writer.parquet.encoded` and
 *   `writer.file.written` (src/write/data-file-writer.ts: before the file / after it, before the committable),
 *   `writer.after-committable` (actors/writer.ts: the committable is in the commit stream); with `sleep(ms)`,
 *   `writer.before-append` (a decode held: the bucket's stall report) and `writer.appended` (the writer's handling of a
 *   decoded batch held: the node's stuck-actor report — test/integration/stall-reports.test.ts); `bucket-buffer.append`
 *   and `bucket-buffer.flush` (actors/ingest/bucket-buffer.ts, in the worker thread that holds a bucket's rows:
 *   there `exit` ends that thread only, and `kill` the whole node); with a marker (`name[marker]:action`),
 *   `ingest.message` (a message whose payload holds the marker, as it is decoded: in that worker thread, or on the
 *   writer's thread for partitioned tables), `ingest.stall` (the same places: armed with `hang(ms)`, a second kind of
 *   poison, a message that stalls the decode — in a bucket buffer's worker thread the node stops that thread at its
 *   decodeDeadline, on the writer's thread the node's stall watch, cluster/stall-watch.ts, kills the process) and `ingest.flush-row` (a bucket buffer's flush holding rows of such a message) — poison messages for
 *   test/integration/poison.test.ts;
 * - committer: `commit.after-manifests`, `commit.after-manifest-lists` (src/commit/file-store-commit.ts),
 *   `commit.before-snapshot`, `commit.after-snapshot` (src/table/snapshot-manager.ts: `snapshot-N` linked, before the
 *   LATEST hint), `committer.after-snapshot` (actors/committer.ts: before rejections, the notification and purges),
 *   `committer.after-compact-snapshot` (the writers' COMPACT snapshot linked, the commit stream not purged),
 *   `committer.first-round` (a new leadership's first round, before it reads the commit stream: with `sleep(ms)`, a
 *   slow backlog — test/integration/orphans-backlog.test.ts);
 * - writer-side compaction: `writer.compaction-before-send` (actors/bucket-compactor.ts: outputs written, the change
 *   not yet in the commit stream; with `sleep(ms)` a compaction held — test/integration/cluster-pk-backpressure.test.ts);
 *   a primary-key bucket's rewrite reaches `compact.rewrite.after-output` (below) in the node's compaction worker
 *   thread (actors/lsm-rewriter.ts: there `exit` ends that thread only, and `kill` the whole node);
 * - maintenance: `expire.after-data-file`, `expire.before-snapshots`, `expire.after-snapshot`
 *   (src/maintenance/expire-snapshots.ts), `orphans.after-delete` (remove-orphans.ts), `rollback.after-recreate`,
 *   `rollback.after-tag`, `rollback.after-snapshot`, `rollback.after-data-file` (rollback.ts);
 * - compaction (the CLI's and the writers'): `compact.rewrite.after-output` (src/maintenance/compact.ts: mid-rewrite,
 *   after each output file, before the task's next output; src/lsm/compact-bucket.ts: after each rewrite step of a
 *   primary-key bucket), `compact.after-rewrite` (every output written, before the COMPACT commit, whose own points
 *   are the committer's `commit.*` ones; also src/maintenance/compact-pk.ts);
 * - coordinator: `coordinator.before-write` (actors/coordinator.ts: a round's assignment computed, not yet written;
 *   with `sleep(ms)` a round outlives its leader's lease — test/integration/stale-coordinator.test.ts);
 * - consume sessions (a reader node): `consume.ack.received` (actors/consume-session.ts: a consumer's ack arrived, not
 *   yet recorded) and `consume.ack.recorded` (its progress written, not yet answered) — with `kill`, a reader dying
 *   with an ack in flight (test/integration/consume-ack-follow.test.ts); `lookup.before-reply` (cluster/lookup-service.ts:
 *   a lookup answered, the reply not yet sent) — with `kill`, a reader dying mid-request (test/integration/lookup-service.test.ts);
 * - node start: `node.before-reader` (cluster/node.ts: a reader node's last start-up step, before its decoders warm
 *   up and it answers consume and admin requests; with `sleep(ms)` a slow warm-up — test/integration/node-start.test.ts).
 */
import { writeSync } from "node:fs";

type Action = ({ kind: "kill" } | { kind: "exit" } | { kind: "throw" } | { kind: "sleep"; ms: number } | { kind: "hang"; ms: number }) & { nth?: number; marker?: Buffer };

function parse(spec: string | undefined): Map<string, Action> {
  const out = new Map<string, Action>();
  if (!spec) return out;
  for (const part of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const i = part.lastIndexOf(":");
    if (i <= 0) throw new Error(`FAILPOINTS entry '${part}' must be name:action`);
    // `name[marker]`: a point reached with data (`failpointOnData`) fires only when the data holds the marker's bytes.
    const named = /^([^[]+)(?:\[([^\]]+)\])?$/.exec(part.slice(0, i));
    if (named === null) throw new Error(`FAILPOINTS entry '${part}': write name:action or name[marker]:action`);
    const name = named[1]!;
    const marker = named[2] === undefined ? {} : { marker: Buffer.from(named[2], "utf8") };
    const m = /^(.*?)(?:@(\d+))?$/.exec(part.slice(i + 1))!;
    const act = m[1]!;
    const nth = m[2] === undefined ? {} : { nth: Number(m[2]) };
    const timed = /^(sleep|hang)\((\d+)\)$/.exec(act);
    if (timed) out.set(name, { kind: timed[1] === "sleep" ? "sleep" : "hang", ms: Number(timed[2]), ...nth, ...marker });
    else if (act === "kill" || act === "exit" || act === "throw") out.set(name, { kind: act, ...nth, ...marker });
    else throw new Error(`FAILPOINTS action '${act}' is not one of kill, exit, throw, sleep(ms), hang(ms) (optionally @N)`);
  }
  return out;
}

const armed = parse(process.env["FAILPOINTS"]);
const hits = new Map<string, number>();

/** The action to take at this hit of `name`, if any. */
function due(name: string): Action | undefined {
  const a = armed.get(name);
  if (a === undefined) return undefined;
  if (a.nth === undefined) return a;
  const n = (hits.get(name) ?? 0) + 1;
  hits.set(name, n);
  return n === a.nth ? a : undefined;
}

/**
 * True when `name` is armed (one size check when FAILPOINTS is unset). For points that need extra work to set up —
 * e.g. `io.write.mid` splits a write in two — so that work is only done when the point can fire.
 */
export function failpointArmed(name: string): boolean {
  return armed.size !== 0 && armed.has(name);
}

/** Synchronous failpoint: kill, exit, throw or hang. A `sleep` action is ignored here (use `failpointAsync`). */
export function failpoint(name: string): void {
  if (armed.size === 0) return;
  const a = due(name);
  if (a === undefined) return;
  trigger(name, a);
}

/**
 * True when `name` is armed and `data` would make it fire: it holds the point's marker (`name[marker]:action`), or the
 * point has none. For points that remember data and fire later (a flush of rows from a marked message).
 */
export function failpointMatches(name: string, data: Uint8Array): boolean {
  if (armed.size === 0) return false;
  const a = armed.get(name);
  return a !== undefined && (a.marker === undefined || Buffer.from(data.buffer, data.byteOffset, data.byteLength).includes(a.marker));
}

/**
 * A synchronous failpoint reached with data (a message's payload): armed as `name[marker]:action` it fires only for
 * data that holds the marker's bytes — a poison message among good ones (test/integration/poison.test.ts).
 */
export function failpointOnData(name: string, data: Uint8Array): void {
  if (failpointMatches(name, data)) failpoint(name);
}

/** Asynchronous failpoint: also honours `sleep(ms)`. */
export async function failpointAsync(name: string): Promise<void> {
  if (armed.size === 0) return;
  const a = due(name);
  if (a === undefined) return;
  if (a.kind === "sleep") {
    await new Promise((r) => setTimeout(r, a.ms));
    return;
  }
  trigger(name, a);
}

/**
 * Says which point fired on fd 2 directly: in a worker thread `process.stderr` is forwarded to the main thread
 * asynchronously, so a line written there just before SIGKILL would be lost (and the chaos harness, which reads it
 * from the node's log, could not tell which point fired).
 */
function announce(line: string): void {
  try {
    writeSync(2, line);
  } catch {
    // stderr closed: nothing to tell
  }
}

function trigger(name: string, a: Action): void {
  switch (a.kind) {
    case "kill":
      announce(`failpoint ${name}: SIGKILL\n`);
      process.kill(process.pid, "SIGKILL");
      break;
    case "exit":
      announce(`failpoint ${name}: exit 137\n`);
      process.exit(137);
      break;
    case "throw":
      throw new Error(`failpoint ${name}`);
    case "sleep":
      break;
    case "hang":
      announce(`failpoint ${name}: hang ${a.ms} ms\n`);
      // Blocks the thread, as a decoder spinning in a loop would: no timer, message or promise of this thread runs.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, a.ms);
      break;
  }
}

export const failpointsArmed = (): string[] => [...armed.keys()];
