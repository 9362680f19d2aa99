/**
 * The chaos load generator of the primary-key workload, in its own process (as chaos/load-child.ts is for the
 * append workload):
 *
 *   node --import tsx chaos/pk-load-child.ts <spec.json>
 *
 * Upserts, updates and deletes over a bounded key space through the producer client (test/helpers/pk-load.ts; one
 * NATS connection per producer, keys partitioned between them), bounded by `durationMs` and `maxChanges`, the keys
 * and kinds drawn from `seed`. Every change's outcome goes to `out` as a JSON line (chaos/types.ts
 * `LoadChangeLine`), flushed every 200 ms and at the end; SIGTERM stops handing over changes early (those handed
 * over still get their outcome).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../cluster/nats/connect.ts";
import { startPkLoad } from "../test/helpers/pk-load.ts";
import { ENGINE_WORKLOADS, type PkEngine } from "../test/helpers/pk-engines.ts";
import { createRng } from "./prng.ts";
import { openHistory, readSpecArg, stoppedBy } from "./load-io.ts";

export interface PkLoadSpec {
  urls: string[];
  table: string;
  out: string;
  seed: number;
  ratePerSec: number;
  durationMs: number;
  maxChanges: number;
  keys: number;
  deleteShare: number;
  updateShare: number;
  producers: number;
  /** The table's merge engine: the rows its changes publish, and whether they may retract. */
  engine: PkEngine;
}

const spec = readSpecArg<PkLoadSpec>("pk-load-child.ts");
const history = openHistory(spec.out);

// Each producer prefers another server of the cluster first, as services spread over it would.
const connections: NatsConnection[] = [];
for (let i = 0; i < spec.producers; i++) {
  const urls = [...spec.urls.slice(i % spec.urls.length), ...spec.urls.slice(0, i % spec.urls.length)];
  // Credentials and inbox prefix from the environment (the producer's with `chaos run --auth`).
  connections.push(await connectNats(urls.join(","), {}, { noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, name: `chaos-pk-load-${i}` }));
}
const startedAt = Date.now();
const rng = createRng(spec.seed);
const engine = ENGINE_WORKLOADS[spec.engine];
const load = startPkLoad({
  connections,
  table: spec.table,
  keys: spec.keys,
  deleteShare: spec.deleteShare,
  updateShare: spec.updateShare,
  row: engine.row,
  retractions: engine.retractions,
  ratePerSec: spec.ratePerSec,
  durationMs: spec.durationMs,
  maxChanges: spec.maxChanges,
  random: rng.next,
  onOutcome: (c) => history.line({ kind: "change", ...c }),
});
process.on("SIGTERM", () => load.stop());

let failure: unknown = null;
try {
  await load.done;
} catch (e) {
  failure = e;
}
const changes = load.outcomes.length;
history.line({ kind: "done", rows: changes, startedAt, endedAt: Date.now(), stoppedBy: stoppedBy(changes, spec.maxChanges, startedAt, spec.durationMs) });
history.close();
for (const nc of connections) await nc.close().catch(() => undefined);
if (failure !== null) {
  process.stderr.write(`load failed: ${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}\n`);
  process.exit(1);
}
process.stderr.write(`load done: ${changes} changes (${load.handedOver()} handed over)\n`);
