/**
 * A natslake node: one OS process running the actors of its roles for every table of the warehouse.
 *
 * - writer: a WriterHostActor per table follows the bucket assignment and runs one BucketWriterActor per owned
 *   bucket; rejections (of committables and compactions) addressed to this node are routed to them.
 * - committer: a CommitterActor per table contends for the table's Redis lease; the leader also runs the table's
 *   CoordinatorActor (bucket assignment) beside it.
 * - reader: answers admin requests (create/list/describe tables) on `<prefix>.ctl.admin`, serves consume
 *   sessions (a table's rows over NATS, Arrow IPC with flow control: cluster/consume-service.ts) and lookups of
 *   primary-key tables' rows by key (cluster/lookup-service.ts).
 * The leader of a table also runs its MaintenanceActor and answers its maintenance requests
 * (`<prefix>.ctl.maint.<db>.<table>`: the CLI's compact, expire-snapshots, … with `--nats`).
 * Every node heartbeats into the members KV bucket. New tables in the warehouse are picked up by a periodic scan.
 * `drain()` (SIGTERM): the node announces it is draining, the coordinator revokes its buckets (writers flush and
 * hand off), then committers release their leases and the process stops. `handOff()` (`natslake node drain`) does
 * the same but keeps the process and its NATS connection: a drained member holding nothing until it is restarted.
 */
import { CommitTurns } from "../actors/commit-turns.ts";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { DiskCachedFileIO } from "../src/io/file-cache.ts";
import { failpointAsync } from "../src/failpoints.ts";
import { ParquetEncoderPool, setSharedParquetPoolDefaultSize, sharedParquetPool } from "../src/codec/parquet-pool.ts";
import { createBucketBuffers, type BucketBuffers } from "../actors/ingest/bucket-buffers.ts";
import { workerCountFromEnv } from "../src/env.ts";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { metrics, type Meter } from "@opentelemetry/api";
import { METRICS } from "../actors/metrics.ts";
import type { Redis } from "ioredis";
import { ActorSystem } from "../actors/runtime/index.ts";
import type { ActorRef, Logger } from "../actors/runtime/index.ts";
import { CommitterActor, type CommitterMsg } from "../actors/committer.ts";
import { CoordinatorActor, type CoordinatorMsg } from "../actors/coordinator.ts";
import { RouterActor, type RouterMsg } from "../actors/router.ts";
import { WriterHostActor, type WriterHostMsg } from "../actors/writer-host.ts";
import { ProbeGate } from "../actors/poison-guard.ts";
import { systemClock } from "../actors/ports.ts";

import { ensureError } from "../src/errors.ts";
import { checkWarehouse } from "../src/io/warehouse.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Identifier, Table } from "../src/table/table.ts";
import { validateWritableSchema } from "../src/lsm/table-rules.ts";
import { WriteBudget } from "../src/write/write-budget.ts";
import { withTimeout } from "../src/timeout.ts";
import { warmUpParquetDecode } from "../src/codec/warm-up.ts";
import { parseDuration } from "../src/options.ts";
import type { NodeConfig } from "./config.ts";
import { natsPorts, type NatsPorts } from "./nats/adapters.ts";
import { Subjects } from "./nats/subjects.ts";
import { isClientInbox } from "./nats/inbox.ts";
import { unsupportedNatsServer } from "./nats/server-version.ts";
import { bindWarehouse } from "./nats/warehouse-binding.ts";
import { CompactionSlots } from "../actors/compaction-slots.ts";
import { LsmRewriteWorkers } from "../actors/lsm-rewriter.ts";
import { defaultCompactionInterval } from "../actors/bucket-compactor.ts";
import { ConsumeService } from "./consume-service.ts";
import { LookupService } from "./lookup-service.ts";
import { ensureClusterKv, ensureTableInfra, isTransientJetStreamError, registerDlqDroppedMetric } from "./nats/table-infra.ts";
import { registerBucketPendingMetric } from "./nats/pending-metric.ts";
import { registerS3RequestMetric } from "./s3-metrics.ts";
import { connectLeaseRedis, leaseKey, RedisErrorReporter, RedisLease, redactRedisUrl } from "./redis/lease.ts";
import { redisConnectionOptions } from "./redis/connect-options.ts";
import { connectNats } from "./nats/connect.ts";
import { redactUrl } from "./nats/connect-errors.ts";
import { startStallWatch, type StallWatch } from "./stall-watch.ts";
import { registerRuntimeMetrics, type RuntimeMetrics } from "./runtime-metrics.ts";
import { installRedisCommitLock } from "./redis/commit-lock.ts";
import { LeaseKeeper } from "../actors/lease-keeper.ts";
import { decodeRejection } from "../actors/wire/codec.ts";
import type { MemberHeartbeat, TableAssignment } from "../actors/wire/messages.ts";
import { handleAdmin } from "./admin.ts";
import { cleanUpDroppedTable, dropTable, type TableDropDeps } from "./table-drop.ts";
import { serveTableStop } from "./table-stop.ts";
import { resetOffsets } from "./stream-reset.ts";
import { MaintenanceActor, type MaintenanceMsg } from "../actors/maintenance.ts";
import { maintenanceTasks } from "../actors/maintenance-tasks.ts";
import { serveMaintenance } from "./maintenance-service.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import { parquetCodec } from "../src/codec/parquet-ops.mjs";
import { nativeDecodeChoice } from "../actors/ingest/native-decode.ts";

interface TableService {
  table: Table;
  host?: ActorRef<WriterHostMsg>;
  hostActor?: WriterHostActor;
  committer?: ActorRef<CommitterMsg>;
  coordinator?: ActorRef<CoordinatorMsg>;
  /** The leader epoch of the running coordinator (undefined when this node does not lead the table). */
  /** The leader epoch whose committer decided its commit-stream backlog (orphan cleanup waits for it). */
  backlogDecidedEpoch?: number;
  coordinatorEpoch?: number;
  router?: ActorRef<RouterMsg>;
  /** Scheduled and requested maintenance while this node leads the table. */
  maintenance?: ActorRef<MaintenanceMsg>;
  /** The table's maintenance request subject, subscribed while this node leads the table. */
  maintenanceSub?: Subscription;
  /** Whether this node's lease on the table is still valid (set while it leads). */
  leaseValid?: () => boolean;
  /** Who commits the table on this node: the committer's rounds, or a maintenance job's commit for a while. */
  turns?: CommitTurns;
  stops: Array<() => void>;
}

/**
 * The longest a maintenance job's commit holds a table's commit turn (the committer's rounds wait meanwhile): a
 * restore of a large table copies its files inside the commit; ingest must not wait longer than this for it.
 */
const MAX_COMMIT_TURN_MS = 30_000;

/** How a drain went (`Node.handOff`). */
export interface HandOffResult {
  /** Buckets this node's writers owned when the drain began. */
  handedOff: number;
  /** Buckets still owned when the drain timeout passed (their leases expire instead). */
  stillOwned: number;
  /** Released buckets whose last committable was not committed within the drain timeout. */
  uncommitted: number;
}

export class Node {
  private readonly system: ActorSystem;
  private readonly services = new Map<string, TableService>();
  /** Primary-key tables not served (natslake does not write them), said once each. */
  private readonly skippedTables = new Set<string>();
  private readonly assignments = new Map<string, TableAssignment>();
  private readonly keepers = new Set<LeaseKeeper>();
  private draining = false;
  /** The drain finished; the process may stay up holding nothing (`handOff`). */
  private drained = false;
  private handOffRun: Promise<HandOffResult> | null = null;
  private quiesceRun: Promise<void> | null = null;
  private stopRun: Promise<void> | null = null;
  private renewLagMax = 0;
  private readonly renewalsSeen = new WeakMap<LeaseKeeper, number>();
  private readonly renewLagMaxSeen = new WeakMap<LeaseKeeper, number>();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private scanTimer: NodeJS.Timeout | undefined;
  /** The table scan under way (`scanTables`), and the one asked for while it runs. */
  private scanning: Promise<void> | null = null;
  private scanAgain: Promise<void> | null = null;
  private stuckTimer: NodeJS.Timeout | undefined;
  /** Actors stuck in one message at the last check (the gauge `natslake_actors_stuck`). */
  private stuckNow = 0;
  /** Stuck handlers already reported (actor → the message's start), so each is logged once, not every check. */
  private readonly stuckReported = new Map<string, number>();
  private adminSub: Subscription | undefined;
  /** "Stop serving this table" requests from a node dropping it (cluster/table-stop.ts). */
  private tableStopSub: Subscription | undefined;
  /** Tables whose services are being stopped (a drop), by name. */
  private readonly stopping = new Map<string, Promise<void>>();
  /** Reader role: consume sessions (rows over NATS, cluster/consume-service.ts). */
  private consume: ConsumeService | undefined;
  /** Reader role: rows by key (cluster/lookup-service.ts). */
  private lookups: LookupService | undefined;
  /** The disk level of the lookups' cache (an object-store warehouse only). */
  private lookupDiskCache: DiskCachedFileIO | undefined;
  private readonly startedAt = Date.now();
  /** When the last membership heartbeat was written (readiness). */
  private lastHeartbeatAt = 0;
  /** Where writers of unpartitioned tables decode and keep rows until a flush encodes them (worker threads). */
  private bucketBuffers: BucketBuffers | null = null;
  /** One memory budget for the write buffers of every bucket writer on this node. */
  private writeBudget: WriteBudget | null = null;
  /** One poison probe at a time among this node's bucket writers (actors/poison-guard.ts). */
  private readonly probeGate = new ProbeGate();
  /** How many writer-side compactions run at once on this node (null: compaction off, `compactionSlots: 0`). */
  private readonly compactionSlots: CompactionSlots | null;
  /**
   * The Parquet workers of this node's compactions, at the lower CPU priority `compactionNice` (null: compaction off,
   * or nice 0 — then they share the process's pool with the flushes). One more than the slots: a bucket's small-lane
   * job may run beside the jobs holding a slot.
   */
  private readonly compactionPool: ParquetEncoderPool | null;
  /**
   * The worker threads of this node's primary-key compactions (null: compaction off): one per compaction slot, each
   * merging one bucket's files at a time off the thread of the actors, at `compactionNice`. Started with the first
   * primary-key table this node writes.
   */
  private readonly lsmRewriters: LsmRewriteWorkers | null;
  private readonly meter: Meter;
  /**
   * Kills the process when its main thread is blocked past `decodeDeadline` (cluster/stall-watch.ts): a stall there —
   * a partitioned table's decode, or any with NATSLAKE_DECODE_WORKERS=0 — cannot be stopped otherwise, and as a death
   * the poison guard counts it and, in the end, dead-letters the message.
   */
  private readonly stallWatch: StallWatch;
  private readonly runtimeMetrics: RuntimeMetrics;
  /** Lease failures of every table, logged as `redis at <url>: <reason>` (rate-limited), and the recovery. */
  private readonly redisReporter: RedisErrorReporter;
  readonly catalog: Catalog;
  readonly subjects: Subjects;

  private constructor(
    readonly cfg: NodeConfig,
    readonly nc: NatsConnection,
    private readonly redis: Redis | null,
    private readonly ports: NatsPorts,
    private readonly log: Logger,
  ) {
    this.system = new ActorSystem({ log });
    this.redisReporter = new RedisErrorReporter((e, ok) => (ok ? log.info(e.message) : log.warn(e.message, { redis: cfg.redis ? redactRedisUrl(cfg.redis) : undefined })));
    this.catalog = new Catalog(cfg.warehouse);
    this.subjects = new Subjects(cfg.prefix);
    this.compactionSlots = cfg.compactionSlots > 0 ? new CompactionSlots(cfg.compactionSlots) : null;
    this.compactionPool = this.compactionSlots !== null && cfg.compactionNice > 0 && cfg.roles.includes("writer") ? new ParquetEncoderPool({ size: Math.min(availableParallelism(), cfg.compactionSlots + 1), nice: cfg.compactionNice, onPriorityError: (error) => log.warn("compaction workers run at the node's CPU priority: lowering it failed", { compactionNice: cfg.compactionNice, error }) }) : null;
    this.lsmRewriters =
      this.compactionSlots !== null && cfg.roles.includes("writer")
        ? new LsmRewriteWorkers({ warehouse: cfg.warehouse, size: cfg.compactionSlots, nice: cfg.compactionNice, onPriorityError: (error) => log.warn("primary-key compaction workers run at the node's CPU priority: lowering it failed", { compactionNice: cfg.compactionNice, error }) })
        : null;
    this.stallWatch = startStallWatch({ deadlineMs: cfg.decodeDeadline, nodeId: cfg.nodeId, onError: (error) => log.warn("the stall watch thread failed: a main thread blocked for good is not stopped", { error: error.message }) });
    this.meter = metrics.getMeter("natslake");
    METRICS.leaseRenewLag.create(this.meter).addCallback((r) => {
      for (const k of this.keepers) r.observe(k.stats().renewLagMsMax);
    });
    METRICS.actorsStuck.create(this.meter).addCallback((r) => r.observe(this.stuckNow));
    this.runtimeMetrics = registerRuntimeMetrics(this.meter);
    registerDlqDroppedMetric(this.meter, nc, this.subjects);
    registerBucketPendingMetric(this.meter, nc, this.subjects, () => [...this.services.values()].filter((s) => s.coordinator !== undefined).map((s) => s.table));
    registerS3RequestMetric(this.meter, this.catalog.io);
  }

  static async start(cfg: NodeConfig, log: Logger): Promise<Node> {
    // Before anything connects: NATSLAKE_DECODE_NATIVE=1 without the addon's decoder refuses the start, naming why.
    const decodeChoice = nativeDecodeChoice();
    // Credential files are read (and a bad one named) before anything connects; secrets stay out of the logs.
    const redisAuth = redisConnectionOptions(cfg, process.env);
    // A comma-separated list names several servers of a NATS cluster: the node starts while any of them is up. The
    // first connection is tried once per server: wrong credentials or an untrusted certificate fail the start, with
    // the reason, instead of being retried in silence.
    const nc = await connectNats(cfg.nats, cfg, { name: `natslake-${cfg.nodeId}`, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const oldServer = unsupportedNatsServer(nc.info?.version);
    if (oldServer !== undefined) log.warn(oldServer, { nats: redactUrl(cfg.nats) });
    const subjects = new Subjects(cfg.prefix);
    // A warehouse that opted into commit-lock=redis locks in the cluster's Redis (the one of the lease).
    installRedisCommitLock(cfg.redis, { auth: redisAuth });
    let redis: Redis | null = null;
    let node: Node | null = null;
    try {
      redis = cfg.roles.includes("committer") && cfg.redis ? await connectLeaseRedis(cfg.redis, { commandTimeoutMs: Math.max(100, Math.floor(cfg.leaseTtl / 4)), auth: redisAuth }) : null;
      const ports = await retryAtStart(log, "cluster KV buckets", async () => {
        await ensureClusterKv(nc, subjects, cfg.replicas);
        return natsPorts(nc, subjects);
      });
      // Before it joins: a node given another warehouse than its cluster's would take buckets of tables it cannot
      // commit (cluster/nats/warehouse-binding.ts).
      const { binding, created } = await retryAtStart(log, "warehouse binding", () => bindWarehouse(nc, subjects, { warehouse: cfg.warehouse, nodeId: cfg.nodeId }));
      if (created) log.info("cluster bound to its warehouse", { prefix: cfg.prefix, warehouse: binding.warehouse });
      const n = new Node(cfg, nc, redis, ports, log);
      node = n;
      // Before the first heartbeat: a member is asked to stop a table being dropped, and must be able to answer.
      n.tableStopSub = serveTableStop({ nc, subjects, nodeId: cfg.nodeId, log, stop: (t) => n.stopTable(t) });
      // An object-store warehouse: its bucket reachable, and — for a node that writes — conditional puts enforced.
      await checkWarehouse(n.catalog.io, { writes: cfg.roles.includes("writer") || cfg.roles.includes("committer") });
      if (cfg.roles.includes("writer")) {
        // The Parquet pool serves partitioned tables only (unpartitioned ones encode in their bucket buffers); the
        // main thread and the bucket-buffer worker need a core too: one Parquet worker fewer than cores.
        setSharedParquetPoolDefaultSize(Math.max(1, availableParallelism() - 1));
        // The bucket-buffer workers start now and warm their Parquet encoders before the node announces itself,
        // so no bucket's first flushes wait on cold WebAssembly.
        // Beside them, the primary-key compaction workers load their modules and warm their Parquet code (at the
        // node's priority, lowered once warm): started with a table, they were still warming at nice 10 on a busy
        // machine when its buckets' first compactions came due, and those buckets stopped at the stop trigger for
        // seconds (see bench notes in lsm-rewrite-worker.mjs).
        await Promise.all([warmUpEncoders(log, n.buffers()), warmUpRewriters(log, n.lsmRewriters)]);
        // The Parquet workers of append compactions start with the first such job, not here: two idle warm workers
        // held ~85 MB of a node that writes only primary-key tables (an idle node measured 295 MB RSS with them, 207
        // without). An append compaction is never waited on, so its first one may wait for a thread to start.
      }
      await retryAtStart(log, "first heartbeat", () => n.heartbeat());
      n.heartbeatTimer = setInterval(() => void n.heartbeat().catch((e: unknown) => log.warn("heartbeat failed", { error: ensureError(e).message })), cfg.heartbeatInterval);
      await n.scanTables();
      n.scanTimer = setInterval(() => void n.scanTables().catch((e: unknown) => log.warn("table scan failed", { error: ensureError(e).message })), 2000);
      n.stuckTimer = setInterval(() => n.reportStuckHandlers(), Math.min(STUCK_CHECK_MS, cfg.stallReport));
      n.stuckTimer.unref();
      if (cfg.roles.includes("reader")) {
        // Consumers catching up (a full start, a backlog) decode data files in the Parquet pool: its threads start
        // and its WebAssembly warms now, not under the first one (measured: ~0.2–0.6 s of a 1M-row catch-up to start
        // the threads; its first files decoded 2–3× slower than once warm).
        await failpointAsync("node.before-reader");
        await warmUpDecoders(log);
        n.consume = new ConsumeService({ nc, subjects, catalog: n.catalog, system: n.system, nodeId: cfg.nodeId, log, meter: n.meter, feedLimits: { maxBytes: cfg.consumeFeedMemory } });
        n.consume.start();
        n.lookups = new LookupService({ nc, subjects, catalog: n.lookupCatalog(), nodeId: cfg.nodeId, log, meter: n.meter });
        n.lookups.start();
        // Admin requests last: a node that answers one serves consume sessions too. Answering admin before the
        // decoders warmed up let a client create a table and open a consumer while no reader listened yet — and a
        // plain subscriber to the prefix (a wire tap, `nats sub 'lake.>'`) then took the consume-open without
        // answering, so the consumer waited out its whole timeout instead of being told "no responders" and retrying
        // (the wire-contracts test, whenever the warm-up ran long on a loaded machine).
        const sub = nc.subscribe(subjects.admin, { queue: `${cfg.prefix}-admin` });
        n.adminSub = sub;
        void (async () => {
          for await (const m of sub) {
            // Answers go to inboxes only (cluster/nats/inbox.ts); a request with another reply subject is not handled.
            if (!isClientInbox(m.reply)) {
              log.warn("admin request dropped: its reply subject is not an inbox", { reply: m.reply ?? null });
              continue;
            }
            const reply = await handleAdmin(m.data, {
              catalog: n.catalog,
              ensure: (t) => n.ensureInfra(t),
              resetOffsets: (t, from) => resetOffsets(ports, t, from),
              dropTable: (id, ifExists) => dropTable(n.dropDeps(), id, { ifExists }),
            });
            m.respond(new TextEncoder().encode(JSON.stringify(reply)));
            void n.scanTables().catch(() => undefined);
          }
        })();
      }
    } catch (e) {
      // A node that cannot start must not linger with open connections (the process would never exit): close
      // everything, then fail.
      if (node !== null) await node.stop().catch(() => undefined);
      else redis?.disconnect();
      await nc.close().catch(() => undefined);
      throw e;
    }
    // Which Parquet codec this process (and its worker threads) runs, and why: NATSLAKE_PARQUET or whether the addon
    // loaded; the same for the bucket workers' decode (NATSLAKE_DECODE_NATIVE, actors/ingest/native-decode.ts).
    log.info("node started", { nodeId: cfg.nodeId, roles: cfg.roles, nats: redactUrl(cfg.nats), warehouse: cfg.warehouse, parquet: parquetCodec.path, parquetReason: parquetCodec.reason, decode: decodeChoice.path, decodeReason: decodeChoice.reason });
    return node;
  }

  private async heartbeat(): Promise<void> {
    // Recent lag: the largest renew lag among renewals since the previous heartbeat (a renewal counter tells them apart).
    let recent = 0;
    for (const k of this.keepers) {
      const st = k.stats();
      this.renewLagMax = Math.max(this.renewLagMax, st.renewLagMsMax);
      const seen = this.renewalsSeen.get(k) ?? 0;
      if (st.renewals > seen) recent = Math.max(recent, st.renewLagMsLast, st.renewLagMsMax > (this.renewLagMaxSeen.get(k) ?? 0) ? st.renewLagMsMax : 0);
      this.renewalsSeen.set(k, st.renewals);
      this.renewLagMaxSeen.set(k, st.renewLagMsMax);
    }
    const leading = [...this.services.values()].filter((s) => s.coordinator !== undefined).map((s) => s.table.name);
    const hb: MemberHeartbeat = { v: 1, nodeId: this.cfg.nodeId, roles: this.cfg.roles, pid: process.pid, startedAt: this.startedAt, at: Date.now(), draining: this.draining, ...(this.drained ? { drained: true } : {}), leaseRenewLagMsMax: this.renewLagMax, leaseRenewLagMsRecent: recent, leading };
    await this.ports.cluster.heartbeat(hb);
    this.lastHeartbeatAt = Date.now();
  }

  /**
   * Ready: connected to NATS, its membership heartbeat written within the member timeout (so the cluster counts it),
   * and not draining (`/readyz`, cluster/metrics-server.ts).
   */
  readiness(): { ready: boolean; reasons: string[] } {
    const reasons: string[] = [];
    if (this.nc.isClosed()) reasons.push("NATS connection closed");
    const age = Date.now() - this.lastHeartbeatAt;
    if (age > this.cfg.memberTimeout) reasons.push(`last membership heartbeat ${Math.round(age / 1000)} s ago (NATS or JetStream unreachable?)`);
    if (this.drained) reasons.push("drained: it holds no buckets and no leases (restart it to rejoin)");
    else if (this.draining) reasons.push("draining");
    return { ready: reasons.length === 0, reasons };
  }

  async ensureInfra(t: Table): Promise<void> {
    const infra = await ensureTableInfra({ nc: this.nc, subjects: this.subjects, table: t, replicas: this.cfg.replicas, ...(this.cfg.streamMaxBytes !== undefined ? { maxBytes: this.cfg.streamMaxBytes } : {}), ...(this.cfg.duplicateWindow !== undefined ? { duplicateWindowMs: this.cfg.duplicateWindow } : {}) });
    for (const w of infra.warnings) this.log.warn(w, { table: t.name });
  }

  /**
   * Starts services for tables that appeared in the warehouse, and follows schema changes of running ones. Every 2 s,
   * so it is kept cheap on an object store: one listing of the warehouse and one per database; a table already
   * running costs one existence check (is there a `schema-<id+1>`?), and only a name not known yet has its schema/
   * listed. (Listing every table's schema/ each time made 5 LISTs per scan for one table.)
   */
  scanTables(): Promise<void> {
    if (this.scanning === null) {
      this.scanning = this.scanOnce().finally(() => (this.scanning = null));
      return this.scanning;
    }
    // One scan at a time: two at once raced on a table's restart — the second found it missing from `services` while
    // the first still stopped it, and started it beside the stopping actors ("an actor named 'committer-…' already
    // exists"; seen on a saturated machine, where a scan outlasts the 2 s timer). A caller that comes during a scan
    // gets one more after it: the scan under way may have listed the warehouse before the caller's change.
    this.scanAgain ??= this.scanning.catch(() => undefined).then(() => {
      this.scanAgain = null;
      return this.scanTables();
    });
    return this.scanAgain;
  }

  private async scanOnce(): Promise<void> {
    if (this.draining) return;
    const listed = new Set<string>();
    for (const db of await this.catalog.listDatabases()) {
      for (const name of await this.catalog.listTableDirectories(db)) {
        const key = `${db}.${name}`;
        listed.add(key);
        // A table being stopped (a drop) is not started again beside its stopping actors.
        if (this.stopping.has(key)) continue;
        const running = this.services.get(key);
        if (running !== undefined) {
          if (await this.isGone(running.table)) await this.onTableGone(running);
          else await this.followSchema(running);
          continue;
        }
        let id: ReturnType<typeof parseIdentifier>;
        try {
          id = parseIdentifier(key);
        } catch {
          continue; // a name no table can have (a stray file)
        }
        const refusal = this.servingRefusal(id);
        if (refusal !== null) {
          // Said once, and only of a table (not of any directory): its name cannot be served, whatever made it.
          if (!this.skippedTables.has(key) && (await this.catalog.tableExists(id))) {
            this.log.warn("table not served", { table: key, reason: refusal });
            this.skippedTables.add(key);
          }
          continue;
        }
        if (!(await this.catalog.tableExists(id))) continue; // a directory, not a table (yet)
        const table = await this.catalog.getTable(id);
        // A table natslake cannot write (deletion vectors; a primary-key table with dynamic buckets, another merge
        // engine: one Paimon's engines made) is left alone, said once: serving it would dead-letter every row.
        const unwritable = writableError(key, table);
        if (unwritable !== null) {
          if (!this.skippedTables.has(key)) this.log.info("table not served: natslake does not write it", { table: key, reason: unwritable });
          this.skippedTables.add(key);
          continue;
        }
        this.services.set(key, { table, stops: [] });
        try {
          await this.ensureInfra(table);
          await this.startTable(this.services.get(key)!);
        } catch (e) {
          // One table's streams or services failing (a JetStream API timeout while several nodes start at once)
          // neither stops the other tables nor the node: what started of it is stopped, and the next scan, 2 s
          // later, tries again.
          const svc = this.services.get(key)!;
          this.services.delete(key);
          await this.abandonTable(svc);
          this.log.warn("table not started; retrying at the next scan", { table: key, error: ensureError(e).message });
        }
      }
    }
    // A served table whose directory went with its database, or whose last file went: dropped on the warehouse.
    for (const svc of [...this.services.values()]) {
      if (!listed.has(svc.table.name) && this.services.get(svc.table.name) === svc && (await this.isGone(svc.table))) await this.onTableGone(svc);
    }
  }

  /**
   * Whether a served table was dropped from the warehouse: its current schema file is gone (one HEAD per scan), and
   * — looked at only then — it has no schema at all.
   */
  private async isGone(t: Table): Promise<boolean> {
    return !(await t.io.isFile(t.paths.schemaPath(t.schema.id))) && !(await this.catalog.tableExists(t.identifier));
  }

  /**
   * A table this node serves was dropped on the warehouse (not through the cluster): its services here stop at once —
   * left running they would write its snapshots and data files again into the deleted directory — and, unless another
   * node or a drop through the cluster has it, its streams, KV keys and dead letters are removed (cluster/table-drop.ts).
   */
  private async onTableGone(svc: TableService): Promise<void> {
    const name = svc.table.name;
    await this.stopTable(name);
    this.log.info("table dropped from the warehouse: its services here stopped", { table: name });
    void cleanUpDroppedTable(this.dropDeps(), svc.table.identifier).then(
      (r) => {
        if (r === null) return;
        this.log.info("removed what the cluster kept for a table dropped from the warehouse", { table: name, streams: r.streams, kvKeys: r.kvKeys, deadLetters: r.deadLetters, stoppedOn: r.stoppedOn });
        if (r.silent.length > 0) this.log.warn("nodes did not say they stopped serving a dropped table (they stop at their next table scan)", { table: name, nodes: r.silent });
      },
      (e: unknown) => this.log.warn("could not remove what the cluster kept for a table dropped from the warehouse: `natslake table drop --nats --if-exists` does it", { table: name, error: ensureError(e).message }),
    );
  }

  /**
   * Stops this node's services of the table (a drop); false when it serves no such table. A stop already under way
   * (the table scan noticed the drop while a stop-table request came) is waited for: the answer "stopped" must hold.
   */
  async stopTable(name: string): Promise<boolean> {
    this.skippedTables.delete(name);
    const underWay = this.stopping.get(name);
    if (underWay !== undefined) {
      await underWay;
      return true;
    }
    const svc = this.services.get(name);
    if (svc === undefined) return false;
    this.services.delete(name);
    this.assignments.delete(name);
    const stopped = this.abandonTable(svc).finally(() => this.stopping.delete(name));
    this.stopping.set(name, stopped);
    await stopped;
    return true;
  }

  /** What dropping a table through this node needs (cluster/table-drop.ts). */
  private dropDeps(): TableDropDeps {
    return {
      nc: this.nc,
      subjects: this.subjects,
      catalog: this.catalog,
      liveMembers: async () => (await this.ports.cluster.liveMembers(this.cfg.memberTimeout)).map((m) => m.nodeId),
    };
  }

  /**
   * Why a table in the warehouse cannot be served, or null: a name that cannot be a NATS subject token (one made
   * before the rules for new names, or by another engine: `t x`, `a.b`), or one whose streams would be those of a
   * table already served (`a_b.c` beside `a.b_c`: both `<P>_IN_a_b_c`; their purges would delete each other's rows).
   */
  private servingRefusal(id: Identifier): string | null {
    try {
      this.subjects.tableKey(id);
    } catch (e) {
      return ensureError(e).message;
    }
    const stream = this.subjects.ingestStream(id);
    for (const svc of this.services.values()) {
      if (this.subjects.ingestStream(svc.table.identifier) === stream)
        return `its NATS streams would be those of table ${svc.table.name} (both are named ${stream}): only one of them can be served`;
    }
    return null;
  }

  /**
   * Restarts a table's services on its latest schema once a newer one appears (a column added by `natslake table
   * alter`, pypaimon or Java): writers, the router and the committer all hold the schema they started with. A
   * restart is the recovery path every crash takes — writers resume from the committed offset, the lease moves, a new
   * coordinator assigns with fresh owner epochs — so no acknowledged row is lost or doubled; rows already buffered
   * are re-read under the new schema. `ensureInfra` then publishes the new schema to producers (KV metadata).
   */
  private async followSchema(svc: TableService): Promise<void> {
    const key = svc.table.name;
    // Schema ids grow by one (each change creates the next id exclusively): no next schema, no change — one HEAD.
    if (!(await svc.table.io.isFile(svc.table.paths.schemaPath(svc.table.schema.id + 1)))) return;
    const latest = await svc.table.schemas.latest();
    if (latest === null || latest.id <= svc.table.schema.id || this.draining || this.services.get(key) !== svc) return;
    this.log.info("table schema changed; restarting its services on the new schema", { table: key, from: svc.table.schema.id, to: latest.id });
    this.services.delete(key);
    await this.abandonTable(svc);
    const table = await this.catalog.getTable(parseIdentifier(key));
    const next: TableService = { table, stops: [] };
    this.services.set(key, next);
    try {
      await this.ensureInfra(table);
      await this.startTable(next);
    } catch (e) {
      this.services.delete(key);
      await this.abandonTable(next);
      this.log.warn("table not restarted on its new schema; retrying at the next scan", { table: key, error: ensureError(e).message });
    }
  }

  /**
   * The bucket buffers of this node's writers (`NATSLAKE_DECODE_WORKERS` worker threads, default 1, each append and
   * flush stopped past `decodeDeadline`), made once.
   */
  private buffers(): BucketBuffers {
    if (this.bucketBuffers !== null) return this.bucketBuffers;
    const threads = workerCountFromEnv("NATSLAKE_DECODE_WORKERS") ?? 1;
    if (threads === 0) this.log.warn("NATSLAKE_DECODE_WORKERS=0: bucket writers decode and encode on the node's thread: one that stalls past decodeDeadline kills the whole node (its stall watch), not a worker thread");
    return (this.bucketBuffers = createBucketBuffers(threads, { deadlineMs: this.cfg.decodeDeadline }));
  }

  /**
   * The catalog lookups read tables through: on an object-store warehouse, its immutable files go through a disk
   * cache of this node's (src/io/file-cache.ts), so the files a lookup needs are fetched once, not again each time the
   * memory level dropped them; on a local disk, the node's catalog.
   */
  private lookupCatalog(): Catalog {
    if (!this.catalog.io.prefersRangedReads) return this.catalog;
    const dir = this.cfg.lookupCacheDir ?? join(tmpdir(), `natslake-lookup-cache-${this.cfg.nodeId.replace(/[^A-Za-z0-9_-]/g, "-")}`);
    const cache = new DiskCachedFileIO(this.catalog.io, { dir, maxBytes: this.cfg.lookupCacheMaxDiskSize, retentionMs: this.cfg.lookupCacheFileRetention });
    this.lookupDiskCache = cache;
    METRICS.lookupDiskCacheBytes.create(this.meter).addCallback((r) => r.observe(cache.snapshot().bytes));
    METRICS.lookupDiskCacheReads.create(this.meter).addCallback((r) => {
      const s = cache.snapshot();
      r.observe(s.hits, { result: "hit" });
      r.observe(s.misses, { result: "miss" });
    });
    this.log.info("lookups keep the warehouse's files on this node's disk", { dir, maxBytes: this.cfg.lookupCacheMaxDiskSize, retentionMs: this.cfg.lookupCacheFileRetention });
    return new Catalog({ uri: this.catalog.uri, root: this.catalog.warehouse, io: cache });
  }

  /** Stops whatever a failed `startTable` got running, so a later attempt starts from nothing. */
  private async abandonTable(svc: TableService): Promise<void> {
    for (const f of svc.stops) f();
    svc.maintenanceSub?.unsubscribe();
    for (const ref of [svc.host, svc.committer, svc.coordinator, svc.router, svc.maintenance]) if (ref) await this.system.stop(ref).catch(() => undefined);
  }

  private commitIntervalOf(t: Table): number {
    const v = t.options.raw["natslake.commit-interval"];
    return v === undefined ? this.cfg.commitInterval : parseDuration(v);
  }

  private async startTable(svc: TableService): Promise<void> {
    const t = svc.table;
    const name = t.name;
    const commitIntervalMs = this.commitIntervalOf(t);
    if (this.cfg.roles.includes("writer")) {
      const hostActor = new WriterHostActor({
        nodeId: this.cfg.nodeId,
        cluster: this.ports.cluster,
        writerDeps: {
          table: t,
          writerId: this.cfg.nodeId,
          ingestLog: this.ports.ingest,
          commitLog: this.ports.commits,
          bus: this.ports.bus,
          attempts: { log: this.ports.attempts, gate: this.probeGate },
          clock: systemClock,
          meter: this.meter,
          commitIntervalMs,
          maxBufferedRows: this.cfg.maxBufferedRows,
          budget: (this.writeBudget ??= new WriteBudget(this.cfg.writerMemory)),
          fetchBatch: 64,
          buffers: this.buffers(),
          stallReportMs: this.cfg.stallReport,
          ...(this.compactionSlots !== null ? { compaction: { slots: this.compactionSlots, checkIntervalMs: this.cfg.compactionInterval ?? defaultCompactionInterval(commitIntervalMs), ...(this.compactionPool !== null ? { pool: this.compactionPool } : {}), ...(this.lsmRewriters !== null ? { rewriter: this.lsmRewriters } : {}) } } : {}),
        },
        spawnWriter: (ctx, childName, factory) => ctx.spawn(childName, factory, { supervision: { minBackoffMs: 200, maxBackoffMs: 5000, maxRestarts: 1000, withinMs: 60_000 } }),
        stopWriter: (ref) => this.system.stop(ref),
      });
      svc.hostActor = hostActor;
      svc.host = this.system.spawn(`host-${name}`, () => hostActor);
      const host = svc.host;
      const watch = await this.ports.cluster.watchAssignment(name, (a) => host.tell({ type: "assignment", assignment: a }));
      svc.stops.push(() => watch.stop());
      const sub = this.nc.subscribe(this.subjects.reject(t.identifier, this.cfg.nodeId));
      void (async () => {
        for await (const m of sub) {
          try {
            host.tell({ type: "rejection", rejection: decodeRejection(m.data) });
          } catch (e) {
            this.log.warn("bad rejection message", { error: ensureError(e).message });
          }
        }
      })();
      svc.stops.push(() => sub.unsubscribe());
    }
    if (this.cfg.roles.includes("committer") && this.redis) {
      const lease = new RedisLease(this.redis, leaseKey(this.cfg.prefix, name), {
        ttlMs: this.cfg.leaseTtl,
        safetyMarginMs: Math.floor(this.cfg.leaseTtl / 10),
        ...(this.cfg.redis ? { url: this.cfg.redis } : {}),
        reporter: this.redisReporter,
      });
      const turns = (svc.turns ??= new CommitTurns({
        now: () => systemClock.monotonic(),
        maxHoldMs: MAX_COMMIT_TURN_MS,
        onHoldExpired: (ms) => this.log.warn("a maintenance job held the table's commit turn too long; the commit rounds go on beside it", { table: name, heldMs: Math.round(ms) }),
      }));
      svc.committer = this.system.spawn(
        `committer-${name}`,
        () =>
          new CommitterActor({
            table: t,
            nodeId: this.cfg.nodeId,
            lease,
            keeper: (l, grant, onLost) => {
              const k = new LeaseKeeper(l, grant, { intervalMs: Math.floor(this.cfg.leaseTtl / 4) });
              k.onLost((reason) => {
                this.keepers.delete(k);
                onLost(reason);
              });
              this.keepers.add(k);
              k.start();
              svc.leaseValid = () => k.isValid();
              return {
                isValid: () => k.isValid(),
                stop: () => {
                  this.keepers.delete(k);
                  void k.stop();
                },
                stats: () => k.stats(),
              };
            },
            commitLog: this.ports.commits,
            ingestLog: this.ports.ingest,
            bus: this.ports.bus,
            assignments: {
              ownerEpochOf: (table, b) => this.assignments.get(table)?.buckets[String(b)]?.epoch,
              storedLeaderEpoch: async (table) => (await this.ports.cluster.readAssignment(table))?.leaderEpoch ?? 0,
            },
            clock: systemClock,
            meter: this.meter,
            commitIntervalMs,
            acquireIntervalMs: Math.max(50, Math.floor(this.cfg.leaseTtl / 10)),
            stallReportMs: this.cfg.stallReport,
            onLeadership: (leader, epoch) => this.onLeadership(svc, leader, epoch),
            onBacklogDecided: (epoch) => {
              svc.backlogDecidedEpoch = epoch;
            },
            onCommitted: (snapshotId) => svc.maintenance?.tell({ type: "committed", snapshotId }),
            turns,
          }),
        { supervision: { minBackoffMs: 200, maxBackoffMs: 5000, maxRestarts: 1000, withinMs: 60_000 } },
      );
    }
  }

  private onLeadership(svc: TableService, leader: boolean, epoch: number): void {
    const name = svc.table.name;
    if (leader) {
      if (svc.coordinator && !svc.coordinator.stopped) return;
      svc.coordinatorEpoch = epoch;
      svc.coordinator = this.system.spawn(
        `coordinator-${name}-${epoch}`,
        () =>
          new CoordinatorActor({
            table: svc.table,
            nodeId: this.cfg.nodeId,
            leaderEpoch: epoch,
            cluster: this.ports.cluster,
            clock: systemClock,
            intervalMs: Math.max(100, Math.floor(this.cfg.heartbeatInterval)),
            memberTimeoutMs: this.cfg.memberTimeout,
            revokeTimeoutMs: 10_000,
            maxMovesPerRound: 2,
            // Only the coordinator of the current leadership feeds the committer's acceptance rule: a stopped one
            // may still finish a round.
            onAssignment: (a) => {
              if (svc.coordinatorEpoch === epoch) this.assignments.set(name, a);
            },
          }),
        { supervision: { minBackoffMs: 200, maxBackoffMs: 5000, maxRestarts: 1000, withinMs: 60_000 } },
      );
      const maintenance = this.system.spawn(
        `maintenance-${name}-${epoch}`,
        () =>
          new MaintenanceActor({
            table: svc.table,
            tasks: maintenanceTasks(this.meter),
            clock: systemClock,
            meter: this.meter,
            nodeId: this.cfg.nodeId,
            stillLeader: () => svc.leaseValid?.() === true && svc.coordinatorEpoch === epoch,
            backlogDecided: () => svc.backlogDecidedEpoch === epoch,
            ...(svc.turns !== undefined ? { turns: svc.turns } : {}),
          }),
        { supervision: { minBackoffMs: 200, maxBackoffMs: 5000, maxRestarts: 1000, withinMs: 60_000 } },
      );
      svc.maintenance = maintenance;
      // Requests reach only the leader, and only while it leads: the subscription ends with the leadership.
      svc.maintenanceSub?.unsubscribe();
      svc.maintenanceSub = serveMaintenance({ nc: this.nc, subjects: this.subjects, table: svc.table, nodeId: this.cfg.nodeId, actor: maintenance, log: this.log });
      svc.router = this.system.spawn(
        `router-${name}-${epoch}`,
        () => new RouterActor({ table: svc.table, raw: this.ports.raw, bus: this.ports.bus, clock: systemClock, meter: this.meter, fetchBatch: 256 }),
        { supervision: { minBackoffMs: 200, maxBackoffMs: 5000, maxRestarts: 1000, withinMs: 60_000 } },
      );
    } else {
      this.assignments.delete(name);
      svc.coordinatorEpoch = undefined;
      svc.maintenanceSub?.unsubscribe();
      svc.maintenanceSub = undefined;
      for (const ref of [svc.coordinator, svc.router, svc.maintenance]) if (ref) void this.system.stop(ref);
      svc.coordinator = undefined;
      svc.router = undefined;
      svc.maintenance = undefined;
    }
  }

  /** What this node holds now (`natslake node drain` reports it). */
  holdings(): { buckets: number; leading: string[]; draining: boolean } {
    const leading = [...this.services.values()].filter((s) => s.coordinator !== undefined).map((s) => s.table.name);
    return { buckets: this.ownedBuckets(), leading, draining: this.draining };
  }

  /** Buckets this node's writers still own (drain waits for zero). */
  ownedBuckets(): number {
    let n = 0;
    for (const s of this.services.values()) n += s.hostActor?.ownedBuckets ?? 0;
    return n;
  }

  /** Graceful stop: hand buckets off (flushing), release leases, close connections. */
  async drain(): Promise<void> {
    await this.handOff();
    await this.stop();
  }

  /**
   * Everything a drain hands off — buckets (flushed, each to its new owner), the last committables of the released
   * buckets committed, the leases — then the actors and reader services stop. The NATS connection and the heartbeat
   * (marked draining and drained) stay, so the process may stay up holding nothing. Runs once; later calls (a
   * SIGTERM after `natslake node drain`) get the same result.
   */
  handOff(): Promise<HandOffResult> {
    return (this.handOffRun ??= this.runHandOff());
  }

  private async runHandOff(): Promise<HandOffResult> {
    this.draining = true;
    const handedOff = this.ownedBuckets();
    this.log.info("draining", { nodeId: this.cfg.nodeId, buckets: handedOff });
    await this.heartbeat().catch(() => undefined);
    const deadline = Date.now() + this.cfg.drainTimeout;
    while (this.ownedBuckets() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const stillOwned = this.ownedBuckets();
    let uncommitted = 0;
    if (stillOwned > 0) this.log.warn("drain timed out with buckets still owned; their leases will expire", { buckets: stillOwned });
    else uncommitted = await this.waitHandedOffCommitted(deadline);
    await (this.quiesceRun ??= this.quiesce());
    this.drained = true;
    await this.heartbeat().catch(() => undefined);
    this.log.info("drained", { nodeId: this.cfg.nodeId, handedOff, stillOwned, uncommitted });
    return { handedOff, stillOwned, uncommitted };
  }

  /**
   * Waits (until `deadline`) for the last committables of the buckets this node released to be committed — by this
   * node's committer if it leads the table, which must not stop before — so a drain that hands a bucket to nobody
   * (the last node, or a whole cluster stopping) leaves what was acknowledged committed, not only in the streams.
   */
  private async waitHandedOffCommitted(deadline: number): Promise<number> {
    const pending = async (): Promise<number> => {
      let n = 0;
      for (const svc of this.services.values()) {
        const released = (await this.ports.cluster.releasedBuckets(svc.table.name)).filter((r) => r.node === this.cfg.nodeId);
        if (released.length === 0) continue;
        const st = await natslakeStateAsOf(svc.table, await svc.table.snapshots.latest());
        for (const r of released) if (Number(st?.buckets.get(r.bucket)?.offset ?? 0n) < r.lastOffset) n++;
      }
      return n;
    };
    for (;;) {
      const left = await pending().catch(() => 0);
      if (left === 0) return 0;
      if (Date.now() >= deadline) {
        this.log.warn("drain timed out before the last committables were committed; they stay in the commit stream for the next leader", { buckets: left });
        return left;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Logs, once each, the actors that have been handling one message for `stallReport` or more: such an actor
   * handles nothing else meanwhile — no timer, no flush, no commit — so a hung await would otherwise stall a bucket
   * or a table without a word. The gauge `natslake_actors_stuck` counts them for alerts.
   */
  private reportStuckHandlers(): void {
    const stuck = this.system.busyHandlers(this.cfg.stallReport);
    this.stuckNow = stuck.length;
    const seen = new Set<string>();
    for (const s of stuck) {
      seen.add(s.actor);
      if (this.stuckReported.get(s.actor) === s.since) continue;
      this.stuckReported.set(s.actor, s.since);
      this.log.warn("an actor has been handling one message for long: it handles nothing else meanwhile", { actor: s.actor, message: s.message, seconds: Math.round(s.ms / 1000) });
    }
    for (const a of [...this.stuckReported.keys()]) if (!seen.has(a)) this.stuckReported.delete(a);
  }

  /** Stops what serves the cluster — table scans, admin, consume sessions, every actor — but not the connection. */
  private async quiesce(): Promise<void> {
    clearInterval(this.scanTimer);
    clearInterval(this.stuckTimer);
    this.adminSub?.unsubscribe();
    this.tableStopSub?.unsubscribe();
    await this.consume?.stop().catch(() => undefined);
    await this.lookups?.stop().catch(() => undefined);
    this.lookupDiskCache?.close();
    for (const s of this.services.values()) for (const f of s.stops) f();
    // Each step is logged, so a shutdown that hangs says where.
    this.log.info("stopping actors", { nodeId: this.cfg.nodeId });
    await this.system.shutdown();
    this.log.info("actors stopped", { nodeId: this.cfg.nodeId });
    await this.bucketBuffers?.close().catch(() => undefined);
    await this.compactionPool?.close().catch(() => undefined);
    await this.lsmRewriters?.close().catch(() => undefined);
  }

  stop(): Promise<void> {
    return (this.stopRun ??= this.runStop());
  }

  private async runStop(): Promise<void> {
    clearInterval(this.heartbeatTimer);
    await (this.quiesceRun ??= this.quiesce());
    this.log.info("closing connections", { nodeId: this.cfg.nodeId });
    await this.ports.kv.members.delete(this.cfg.nodeId).catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
    this.redis?.disconnect();
    await this.stallWatch.stop();
    this.runtimeMetrics.stop();
    this.log.info("node stopped", { nodeId: this.cfg.nodeId });
  }
}

/** How long a starting node keeps trying a JetStream step that fails for a passing reason (see isTransientJetStreamError). */
const START_RETRY_BUDGET_MS = 60_000;
/** How often the node looks for actors stuck in one message (reported past its `stallReport`). */
const STUCK_CHECK_MS = 5_000;

/**
 * Runs a start-up step until it succeeds or START_RETRY_BUDGET_MS have passed: JetStream answers slowly or not at all
 * while a NATS cluster elects its leaders or the server is overloaded, and a node started alongside it should wait
 * that out (logging each failure) rather than exit. Any other error (settings JetStream refuses) fails at once.
 */
async function retryAtStart<T>(log: Logger, step: string, run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + START_RETRY_BUDGET_MS;
  for (let attempt = 1, waitMs = 250; ; attempt++, waitMs = Math.min(4000, waitMs * 2)) {
    try {
      return await run();
    } catch (e) {
      if (!isTransientJetStreamError(e) || Date.now() + waitMs > deadline) throw e;
      log.warn("node start step failed; trying again", { step, attempt, inMs: waitMs, error: ensureError(e).message });
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}

/** The reader's Parquet pool: its workers started and their decoders warmed (see `warmUp`). */
async function warmUpDecoders(log: Logger): Promise<void> {
  const pool = sharedParquetPool();
  if (pool === null) return;
  pool.warm();
  await warmUp(log, "decoder", () => warmUpParquetDecode(pool, { rounds: 20 }));
}

async function warmUpEncoders(log: Logger, buffers: BucketBuffers): Promise<void> {
  await warmUp(log, "encoder", () => buffers.warmUp());
}

/** The primary-key compaction workers, started and warm (see LsmRewriteWorkers.warm); null: compaction is off. */
async function warmUpRewriters(log: Logger, rewriters: LsmRewriteWorkers | null): Promise<void> {
  if (rewriters !== null) await warmUp(log, "compaction worker", () => rewriters.warm());
}

/** Bounded and best-effort: a failed or slow warm-up only costs latency later, never the node's start. */
async function warmUp(log: Logger, what: "encoder" | "decoder" | "compaction worker", work: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  try {
    const done = await withTimeout(work().then(() => true), 5000, () => false);
    if (!done) log.warn(`Parquet ${what} warm-up still running after 5 s; starting anyway`);
    else log.info(`Parquet ${what}s warmed up`, { ms: Math.round(performance.now() - started) });
  } catch (e) {
    log.warn(`Parquet ${what} warm-up failed`, { error: ensureError(e).message });
  }
}

/** Why natslake cannot write a table (src/lsm/table-rules.ts), or null when it can. */
function writableError(name: string, table: Table): string | null {
  try {
    validateWritableSchema(name, table.schema);
    return null;
  } catch (e) {
    return ensureError(e).message;
  }
}
