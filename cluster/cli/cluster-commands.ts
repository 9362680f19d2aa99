/**
 * `natslake node` (one cluster node), `natslake up` (a local cluster with its servers), `natslake publish`
 * (rows from a file through the producer client) and `natslake subscribe` (snapshot notifications).
 */
import type { Command } from "commander";
import { pino } from "pino";
import type { Logger } from "../../actors/runtime/index.ts";
import { ErrorKind, LakeError, isLakeError } from "../../src/errors.ts";
import { loadNodeConfig, type NodeConfig } from "../config.ts";
import type { Node } from "../node.ts";
import { readTableMeta } from "../nats/table-infra.ts";
import { Subjects } from "../nats/subjects.ts";
import { subscribeSnapshots, type SnapshotSubscription } from "../snapshots-client.ts";
import { connectOrExplain, parsePositiveInt, UsageError, parseNonNegativeInt, WAREHOUSE_FLAG, WAREHOUSE_HELP, examples } from "./common.ts";
import { redactUrl } from "../nats/connect-errors.ts";
import type { PublishFlags } from "./publish-command.ts";
import type { UpFlags } from "./up-command.ts";
import { startTracingIfConfigured, type Tracing } from "../tracing.ts";
import { NATSLAKE_VERSION } from "../version.ts";
import { serveNodeControl } from "../node-control.ts";
import { registerNodeDrainCommand } from "./node-drain-command.ts";
import { natsAuthFlags, redisAuthFlags } from "./connection-flags.ts";

function pinoLogger(level: string, base: Record<string, unknown>): Logger {
  const p = pino({ level, base }, pino.destination(2));
  return {
    debug: (msg, f) => p.debug(f ?? {}, msg),
    info: (msg, f) => p.info(f ?? {}, msg),
    warn: (msg, f) => p.warn(f ?? {}, msg),
    error: (msg, f) => p.error(f ?? {}, msg),
  };
}

/** The options of `natslake node` as commander parses them. */
export interface NodeFlags {
  roles?: string;
  nats?: string;
  redis?: string;
  warehouse?: string;
  config?: string;
  nodeId?: string;
  prefix?: string;
  commitInterval?: string;
  leaseTtl?: string;
  replicas?: number;
  writerMemory?: string;
  consumeFeedMemory?: string;
  lookupCacheDir?: string;
  lookupCacheMaxDiskSize?: string;
  lookupCacheFileRetention?: string;
  metricsPort?: number;
  metricsHost?: string;
  otlpEndpoint?: string;
  logLevel?: string;
}

/**
 * A node's configuration from its parsed flags, the environment and the `--config` file (flags win), validated;
 * bad settings are a UsageError (exit 2) naming them. Without --roles, NATSLAKE_ROLES or `roles` in the file a node
 * takes every role (the schema's default).
 */
export function nodeConfigOf(o: NodeFlags, env: NodeJS.ProcessEnv): NodeConfig {
  try {
    return loadNodeConfig({
      flags: {
        roles: o.roles?.split(",").map((s) => s.trim()),
        nats: o.nats,
        redis: o.redis,
        warehouse: o.warehouse,
        nodeId: o.nodeId,
        prefix: o.prefix,
        commitInterval: o.commitInterval,
        leaseTtl: o.leaseTtl,
        replicas: o.replicas,
        writerMemory: o.writerMemory,
        consumeFeedMemory: o.consumeFeedMemory,
        lookupCacheDir: o.lookupCacheDir,
        lookupCacheMaxDiskSize: o.lookupCacheMaxDiskSize,
        lookupCacheFileRetention: o.lookupCacheFileRetention,
        logLevel: o.logLevel,
        metricsPort: o.metricsPort,
        metricsHost: o.metricsHost,
        otlpEndpoint: o.otlpEndpoint,
        ...natsAuthFlags(o),
        ...redisAuthFlags(o),
      },
      env,
      ...(o.config ? { file: o.config } : {}),
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function registerClusterCommands(program: Command, out: (s: string) => void): void {
  const nodeCommand = program
    .command("node")
    .description("run one cluster node (flags > NATSLAKE_* environment > --config file)")
    .option("--roles <list>", "comma-separated roles: writer, committer, reader (default all)")
    .option("--nats <url>", "NATS server URL, or a comma-separated list of a cluster's servers (NATSLAKE_NATS)")
    .option("--redis <url>", "Redis URL for the committer lease (NATSLAKE_REDIS)")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .option("--config <file>", "JSON config file")
    .option("--node-id <id>", "node id (default host-pid-random)")
    .option("--prefix <p>", "subject prefix (default lake)")
    .option("--commit-interval <d>", "default commit interval, e.g. 250ms")
    .option("--lease-ttl <d>", "committer lease TTL, e.g. 2s")
    .option("--replicas <n>", "stream replicas", parsePositiveInt("--replicas"))
    .option("--writer-memory <size>", "decoded rows this node's writers may hold before flushing early, e.g. 64mb (NATSLAKE_WRITER_MEMORY)")
    .option("--consume-feed-memory <size>", "encoded rows one shared consume feed of this reader may hold, e.g. 32mb (NATSLAKE_CONSUME_FEED_MEMORY)")
    .option("--lookup-cache-dir <dir>", "where a reader on an object-store warehouse keeps the files its lookups read (NATSLAKE_LOOKUP_CACHE_DIR)")
    .option("--lookup-cache-max-disk-size <size>", "bytes that lookup disk cache holds at most, e.g. 10gb (NATSLAKE_LOOKUP_CACHE_MAX_DISK_SIZE)")
    .option("--lookup-cache-file-retention <d>", "a file of that cache not read for this long is dropped, e.g. 1h (NATSLAKE_LOOKUP_CACHE_FILE_RETENTION)")
    .option("--log-level <level>", "debug, info, warn or error")
    .option("--metrics-port <port>", "serve /metrics (Prometheus), /healthz and /readyz on this port (NATSLAKE_METRICS_PORT)", parseNonNegativeInt("--metrics-port"))
    .option("--metrics-host <addr>", "address of the metrics endpoint (default 127.0.0.1; NATSLAKE_METRICS_HOST)")
    .option("--otlp-endpoint <url>", "export traces by OTLP/HTTP (JSON) to this collector, e.g. http://127.0.0.1:4318 (or OTEL_EXPORTER_OTLP_ENDPOINT; off by default)")
    .addHelpText(
      "after",
      examples("natslake node --roles writer,committer,reader --nats nats://127.0.0.1:4222 --redis redis://127.0.0.1:6379 --warehouse /data/wh --node-id node-1 --metrics-port 9464", "natslake node --roles reader --nats nats://a:4222,nats://b:4222,nats://c:4222 --warehouse /data/wh --replicas 3", "natslake node drain node-1 --nats nats://127.0.0.1:4222   # hand its buckets off without a signal") +
        "\nSIGTERM (or `natslake node drain`) drains: buckets flushed and handed over, leases released.",
    )
    .action(async (o: NodeFlags) => {
      const cfg = nodeConfigOf(o, process.env);
      let tracing: Tracing | null;
      try {
        tracing = await startTracingIfConfigured(process.env, { serviceName: "natslake", instanceId: cfg.nodeId, version: NATSLAKE_VERSION, ...(cfg.otlpEndpoint !== undefined ? { otlpEndpoint: cfg.otlpEndpoint } : {}) });
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      const log = pinoLogger(cfg.logLevel, { node: cfg.nodeId });
      if (tracing !== null) log.info("exporting traces", { endpoint: cfg.otlpEndpoint ?? process.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? process.env["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? process.env["OTEL_TRACES_EXPORTER"] });
      // Signals are handled from before the start: a SIGTERM while the node starts (it may wait up to a minute for
      // JetStream) is a drain once it is up, not the default handler's abrupt exit; the watchdog bounds either wait.
      let node: Node | null = null;
      let draining = false;
      let watchdog: NodeJS.Timeout | undefined;
      let resolveStop: () => void = () => undefined;
      const stopped = new Promise<void>((r) => (resolveStop = r));
      const drain = (n: Node): void => {
        n.drain().then(
          () => {
            clearTimeout(watchdog);
            resolveStop();
          },
          (e: unknown) => {
            log.error("drain failed", { error: String(e) });
            process.exitCode = 1;
            resolveStop();
          },
        );
      };
      // A signal, or a `natslake node drain --exit` whose hand-off is done: drain (at once, when it is), then exit.
      const onSignal = (sig: string): void => {
        if (draining) return;
        draining = true;
        log.info(sig === "drain request" ? "drain request done; stopping" : "signal received; draining", { signal: sig, ...(node === null ? { during: "start" } : {}) });
        // A drain that cannot finish (a hung connection, an actor that never stops) must not keep the process
        // alive: past the drain timeout and a grace period, exit non-zero and say so.
        watchdog = setTimeout(() => {
          log.error("shutdown did not finish in time; exiting", { afterMs: cfg.drainTimeout + 10_000 });
          process.exit(1);
        }, cfg.drainTimeout + 10_000);
        watchdog.unref();
        if (node !== null) drain(node);
      };
      process.once("SIGTERM", () => onSignal("SIGTERM"));
      process.once("SIGINT", () => onSignal("SIGINT"));
      // Before the node creates its instruments: until a meter provider is set they would be no-ops.
      // The node, the metrics SDK and the exporter load here, not when the CLI starts: the other commands of this
      // group (publish, subscribe, up) need none of them (command-groups.ts).
      const { Node } = await import("../node.ts");
      const { startMetricsServer } = await import("../metrics-server.ts");
      const metricsServer = cfg.metricsPort !== undefined ? await startMetricsServer({ port: cfg.metricsPort, host: cfg.metricsHost, nodeId: cfg.nodeId }) : null;
      if (metricsServer !== null) log.info("metrics endpoint listening", { url: `http://${cfg.metricsHost}:${metricsServer.port}/metrics` });
      node = await Node.start(cfg, log);
      const started = node;
      metricsServer?.setReadiness(() => started.readiness());
      // `natslake node drain <id>`: the same hand-off without a signal.
      serveNodeControl({ nc: started.nc, subjects: started.subjects, nodeId: cfg.nodeId, log, holdings: () => started.holdings(), handOff: () => started.handOff(), exit: () => onSignal("drain request") });
      if (draining) drain(node);
      await stopped;
      // The last spans (the drain's final flushes and commits) go out before the process does.
      await tracing?.shutdown();
      // Drained and stopped: nothing is left to do, whatever handle a library may still hold open.
      process.exit(process.exitCode ?? 0);
    });
  registerNodeDrainCommand(nodeCommand, out);

  program
    .command("up")
    .description("start a local cluster: nats-server and redis-server (unless URLs are given) and N nodes")
    .option("--nodes <n>", "number of nodes", parsePositiveInt("--nodes"), 3)
    .option(WAREHOUSE_FLAG, "warehouse: a directory, where the JetStream store and logs are kept in <dir>/.natslake-up (default: a new temporary directory, removed at stop), or s3://bucket/prefix (credentials in the environment; see also --s3)")
    .option("--nats <url>", "use this NATS server instead of starting one")
    .option("--redis <url>", "use this Redis instead of starting one")
    .option("--commit-interval <d>", "default commit interval", "250ms")
    .option("--duration <seconds>", "stop by itself after this many seconds", parsePositiveInt("--duration"))
    .option("--demo", "create a demo table and publish a few rows through the producer client")
    .option("--s3", "run the nodes on an S3 warehouse: a temporary SeaweedFS (built by scripts/setup.sh) with bucket natslake")
    .option("--no-restart", "leave a node that died down (default: start it again 1 s later, at most 3 times a minute per node)")
    .addHelpText(
      "after",
      examples("natslake up --nodes 3 --demo", "natslake up --warehouse /data/wh --duration 60") +
        "\nnats-server: NATSLAKE_NATS_SERVER, else the current one (scripts/nats-server-version) where scripts/setup.sh puts\n" +
        "it (NATSLAKE_TOOLS_DIR, default ~/go/natslake-bin), built there with `go install` when missing\n" +
        "(scripts/install-nats-server.sh; without Go, up stops with the command that fixes it); never Debian's 2.9 on PATH.\n" +
        "Printed at start (an explicit one older than 2.10 with a warning); it listens on 4222 when that port is free.\n" +
        "Ctrl-C drains the nodes (SIGTERM, waiting for them to exit), then stops the servers. A node that dies is reported,\n" +
        "the others take over its buckets and up starts it again (not with --no-restart); up then exits 1. The servers run\n" +
        "until Ctrl-C or --duration whatever the nodes do (nodes you start by hand use them too); one that exits is\n" +
        "reported at once. Every process's output is in the logs folder: node-N.log, nats-server.log, redis-server.log.",
    )
    .action(async (o: UpFlags) => (await import("./up-command.ts")).runUp(o, out));

  program
    .command("publish <table> <file>")
    .description("publish the rows of a JSONL or CSV file through the producer client (a primary-key table's rows may name their kind in _row_kind: +I, -U, +U, -D; a -D needs only the key)")
    .requiredOption("--nats <url>", "NATS server URL")
    .option("--prefix <p>", "subject prefix", "lake")
    .option("--no-progress", "no progress bar")
    .option("--wait-visible", "wait until the rows are visible in a snapshot")
    .option(
      "--idempotent",
      "message ids from the file's SHA-256 and batches cut by size only, so publishing the same file again within the " +
        "stream's duplicate window (natslake.stream.duplicate-window, default 2 min) stores its rows once; without it, " +
        "every publish of a file adds all its rows again",
    )
    .addHelpText(
      "after",
      "\nEvery row is counted under its batch's outcome: ok, duplicate (stored earlier under the same message id), failed\n" +
        "(not stored) or unknown (no acknowledgement: may or may not be stored). Exit 0 when every row was acknowledged (ok or\n" +
        "duplicate), 1 when any was not, 2 for bad input (it stops at the line: <file>:<line>: <why>), 1 when NATS cannot be reached.\n" +
        "Publishing a file twice without --idempotent stores its rows twice.\n" +
        examples("natslake publish shop.orders orders.jsonl --nats nats://127.0.0.1:4222 --wait-visible", "natslake publish shop.orders orders.csv --nats nats://127.0.0.1:4222 --idempotent"),
    )
    .action(async (table: string, file: string, o: PublishFlags) => (await import("./publish-command.ts")).publishFile(table, file, o, out));

  program
    .command("subscribe <table>")
    .description("print snapshot notifications of a table as JSON lines")
    .requiredOption("--nats <url>", "NATS server URL")
    .option("--prefix <p>", "subject prefix", "lake")
    .option("--count <n>", "stop after n notifications", parsePositiveInt("--count"))
    .addHelpText("after", examples("natslake subscribe shop.orders --nats nats://127.0.0.1:4222 --count 10"))
    .action(async (table: string, o: { nats: string; prefix: string; count?: number }) => {
      const nc = await connectOrExplain({ ...o, nats: o.nats });
      try {
        // An unknown table would wait forever for notifications that never come: refuse it.
        try {
          await readTableMeta(nc, new Subjects(o.prefix), table);
        } catch (e) {
          if (isLakeError(e, ErrorKind.NotFound)) throw new LakeError(ErrorKind.NotFound, `unknown table '${table}': ${e.message}`, { cause: e });
          if (isLakeError(e)) throw e;
          throw new LakeError(ErrorKind.Io, `cannot read the metadata of '${table}' from NATS at ${redactUrl(o.nats)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
        }
        let seen = 0;
        let sub: SnapshotSubscription | undefined;
        // Something must hold the event loop while only a subscription waits: measured here, the process otherwise
        // ended (exit 0, nothing printed) with the NATS connection open when no notification came at once.
        const keepAlive = setInterval(() => undefined, 60_000);
        await new Promise<void>((done, fail) => {
          const stop = (): void => {
            clearInterval(keepAlive);
            sub?.stop();
            done();
          };
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
          subscribeSnapshots(nc, table, (n) => {
            out(JSON.stringify(n));
            if (o.count !== undefined && ++seen >= o.count) stop();
          }, { prefix: o.prefix }).then((s) => {
            sub = s;
          }, (e: unknown) => {
            clearInterval(keepAlive);
            fail(e);
          });
        });
      } finally {
        await nc.close().catch(() => undefined);
      }
    });

}

