/**
 * `natslake_dlq_total{stage="router"}` counts each dead letter once, also when its group of raw messages is routed
 * again: the router records its progress only after the group's letters were published, so a progress write that
 * fails (a KV timeout) makes supervision restart the router, which routes the same group again and publishes the same
 * letters under the same message ids. The DLQ stream de-duplicates them; the count must not double either.
 *
 * Against a real nats-server, with the cluster's own NATS ports; only the router's progress write is wrapped, to fail
 * once after the group's letters went out.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { ActorSystem, noopLogger } from "../../actors/runtime/index.ts";
import { RouterActor } from "../../actors/router.ts";
import { systemClock, type RawLog } from "../../actors/ports.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureTableInfra } from "../../cluster/nats/table-infra.ts";
import { natsPorts } from "../../cluster/nats/adapters.ts";
import { letterCount } from "../../cluster/dlq.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { tempDir } from "../helpers/tables.ts";
import { waitFor } from "../helpers/cluster.ts";

/** Collects the meter's instruments on demand (no exporter). */
class CollectingReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

let server: ServerHandle;
let nc: NatsConnection;
const warehouse = tempDir("natslake-router-dlq-");
const system = new ActorSystem({ log: noopLogger });

before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
});

after(async () => {
  await system.shutdown();
  await nc.close();
  await server.stop();
  warehouse.cleanup();
});

test("router - a group routed again after its progress write failed counts its dead letters once (the DLQ stores them once)", async () => {
  const subjects = new Subjects("lake");
  const table = await new Catalog(warehouse.path).createTable(parseIdentifier("db.letters"), { columns: parseColumnList("id BIGINT NOT NULL, n INT"), options: { bucket: "2", "bucket-key": "id" } });
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
  const ports = await natsPorts(nc, subjects);
  const js = jetstream(nc);
  const raw = (rows: unknown[]): Promise<number> => js.publish(subjects.ingestRaw(table.identifier), JSON.stringify(rows)).then((a) => a.seq);
  await raw([{ id: 1, n: 1 }, { id: 2, n: "two" }, { id: 3, n: 3 }]);
  const last = await raw([{ id: 4, nope: true }, { id: 5, n: 5 }]);

  // The progress write that completes a group (intent cleared) fails once: the letters went out, the progress did not.
  let failed = 0;
  const rawLog: RawLog = Object.create(ports.raw) as RawLog;
  rawLog.writeProgress = (t, p, revision) => {
    if (p.intent === null && failed === 0) {
      failed++;
      return Promise.reject(new Error("KV put timed out (injected)"));
    }
    return ports.raw.writeProgress(t, p, revision);
  };

  const reader = new CollectingReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter("test");
  system.spawn("router-letters", () => new RouterActor({ table, raw: rawLog, bus: ports.bus, clock: systemClock, meter, fetchBatch: 64 }), {
    supervision: { minBackoffMs: 10, maxBackoffMs: 100, maxRestarts: 20, withinMs: 60_000 },
  });
  await waitFor("the router routed everything", async () => ((await ports.raw.readProgress(table.name)).progress.through >= last ? true : undefined), 20_000, 50);
  assert.equal(failed, 1, "the progress write failed once, so the group was routed twice");

  const stored = await letterCount(await jetstreamManager(nc), subjects, table.identifier);
  assert.equal(stored, 2, "the DLQ holds each bad row once");
  const { resourceMetrics } = await reader.collect();
  const points = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).flatMap((m) => (m.descriptor.name === "natslake_dlq_total" ? (m.dataPoints as Array<DataPoint<number>>) : []));
  const counted = points.filter((p) => p.attributes["stage"] === "router" && p.attributes["table"] === table.name).reduce((sum, p) => sum + p.value, 0);
  assert.equal(counted, 2, "natslake_dlq_total counts the letters the DLQ holds, not each time they were published");
});
