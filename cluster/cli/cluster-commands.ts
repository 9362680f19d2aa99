/**
 * `natslake node` (one cluster node), `natslake up` (a local cluster with its servers), `natslake publish`
 * (rows from a file through the producer client) and `natslake subscribe` (snapshot notifications).
 */
import { REPO_ROOT } from "../repo-root.ts";
import { createReadStream, mkdirSync, openSync, statSync } from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { join, resolve } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Command } from "commander";
import { SingleBar, Presets } from "cli-progress";
import { parse as parseCsv } from "csv-parse";
import { pino } from "pino";
import { connect } from "@nats-io/transport-node";
import type { Logger } from "../../actors/runtime/index.ts";
import { loadNodeConfig } from "../config.ts";
import { Node } from "../node.ts";
import { startNats, startRedis, type ServerHandle } from "../local/servers.ts";
import { createProducer } from "../producer.ts";
import { subscribeSnapshots } from "../snapshots-client.ts";
import { parsePositiveInt, UsageError } from "./common.ts";
import { adminRequest } from "../admin-client.ts";

const BIN = join(REPO_ROOT, "bin", "natslake.mjs");

function pinoLogger(level: string, base: Record<string, unknown>): Logger {
  const p = pino({ level, base }, pino.destination(2));
  return {
    debug: (msg, f) => p.debug(f ?? {}, msg),
    info: (msg, f) => p.info(f ?? {}, msg),
    warn: (msg, f) => p.warn(f ?? {}, msg),
    error: (msg, f) => p.error(f ?? {}, msg),
  };
}

interface NodeFlags {
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
  logLevel?: string;
}

export function registerClusterCommands(program: Command, out: (s: string) => void): void {
  program
    .command("node")
    .description("run one cluster node (flags > NATSLAKE_* environment > --config file)")
    .option("--roles <list>", "comma-separated roles: writer, committer, reader (default all)")
    .option("--nats <url>", "NATS server URL, or a comma-separated list of a cluster's servers (NATSLAKE_NATS)")
    .option("--redis <url>", "Redis URL for the committer lease (NATSLAKE_REDIS)")
    .option("--warehouse <dir>", "warehouse directory (NATSLAKE_WAREHOUSE)")
    .option("--config <file>", "JSON config file")
    .option("--node-id <id>", "node id (default host-pid-random)")
    .option("--prefix <p>", "subject prefix (default lake)")
    .option("--commit-interval <d>", "default commit interval, e.g. 250ms")
    .option("--lease-ttl <d>", "committer lease TTL, e.g. 2s")
    .option("--replicas <n>", "stream replicas", parsePositiveInt("--replicas"))
    .option("--writer-memory <size>", "decoded rows this node's writers may hold before flushing early, e.g. 64mb (NATSLAKE_WRITER_MEMORY)")
    .option("--log-level <level>", "debug, info, warn or error")
    .action(async (o: NodeFlags) => {
      let cfg;
      try {
        cfg = loadNodeConfig({
          flags: {
            roles: o.roles?.split(",").map((s) => s.trim()) ?? (process.env["NATSLAKE_ROLES"] ? undefined : ["writer", "committer", "reader"]),
            nats: o.nats,
            redis: o.redis,
            warehouse: o.warehouse,
            nodeId: o.nodeId,
            prefix: o.prefix,
            commitInterval: o.commitInterval,
            leaseTtl: o.leaseTtl,
            replicas: o.replicas,
            writerMemory: o.writerMemory,
            logLevel: o.logLevel,
          },
          env: process.env,
          ...(o.config ? { file: o.config } : {}),
        });
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      const log = pinoLogger(cfg.logLevel, { node: cfg.nodeId });
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
      const onSignal = (sig: string): void => {
        if (draining) return;
        draining = true;
        log.info("signal received; draining", { signal: sig, ...(node === null ? { during: "start" } : {}) });
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
      node = await Node.start(cfg, log);
      if (draining) drain(node);
      await stopped;
      // Drained and stopped: nothing is left to do, whatever handle a library may still hold open.
      process.exit(process.exitCode ?? 0);
    });

  program
    .command("up")
    .description("start a local cluster: nats-server and redis-server (unless URLs are given) and N nodes")
    .option("--nodes <n>", "number of nodes", parsePositiveInt("--nodes"), 3)
    .option("--warehouse <dir>", "warehouse directory (default: a new temporary directory)")
    .option("--nats <url>", "use this NATS server instead of starting one")
    .option("--redis <url>", "use this Redis instead of starting one")
    .option("--commit-interval <d>", "default commit interval", "250ms")
    .option("--duration <seconds>", "stop by itself after this many seconds", parsePositiveInt("--duration"))
    .option("--demo", "create a demo table and publish a few rows through the producer client")
    .action(async (o: { nodes: number; warehouse?: string; nats?: string; redis?: string; commitInterval: string; duration?: number; demo?: boolean }) => {
      const runDir = mkdtempSync(join(tmpdir(), "natslake-up-"));
      const warehouse = resolve(o.warehouse ?? join(runDir, "warehouse"));
      mkdirSync(warehouse, { recursive: true });
      const servers: ServerHandle[] = [];
      const nodes: ChildProcess[] = [];
      let natsUrl = o.nats;
      let redisUrl = o.redis;
      const shutdown = async (): Promise<void> => {
        for (const n of nodes) n.kill("SIGTERM");
        await Promise.all(nodes.map((n) => new Promise<void>((r) => (n.exitCode !== null ? r() : n.once("exit", () => r())))));
        for (const s of servers.reverse()) await s.stop();
      };
      try {
        if (!natsUrl) {
          const s = await startNats();
          servers.push(s);
          natsUrl = s.url;
        }
        if (!redisUrl) {
          const s = await startRedis();
          servers.push(s);
          redisUrl = s.url;
        }
        for (let i = 1; i <= o.nodes; i++) {
          const logFile = join(runDir, `node-${i}.log`);
          const fd = openSync(logFile, "a");
          const child = spawn(process.execPath, [BIN, "node", "--nats", natsUrl, "--redis", redisUrl, "--warehouse", warehouse, "--node-id", `node-${i}`, "--commit-interval", o.commitInterval], {
            stdio: ["ignore", fd, fd],
          });
          nodes.push(child);
        }
        out(`natslake local cluster: ${o.nodes} nodes, warehouse ${warehouse}`);
        out(`  NATS  ${natsUrl}    Redis ${redisUrl}    logs ${runDir}/node-*.log`);
        out(`create a table:   natslake table create db.events --nats ${natsUrl} --columns "id BIGINT NOT NULL, msg STRING" --option bucket=4 --option bucket-key=id`);
        out(`publish rows:     natslake publish db.events rows.jsonl --nats ${natsUrl}`);
        out(`                  (or raw JSON/msgpack rows to subject lake.in.db.events, e.g. nats pub lake.in.db.events '{"id":1,"msg":"hi"}')`);
        out(`subscribe:        natslake subscribe db.events --nats ${natsUrl}`);
        out(`read the table:   natslake read db.events --warehouse ${warehouse}`);
        if (o.demo) await runDemo(natsUrl, out);
        await new Promise<void>((r) => {
          const timer = o.duration ? setTimeout(r, o.duration * 1000) : undefined;
          const stop = (): void => {
            clearTimeout(timer);
            r();
          };
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
          for (const n of nodes) n.once("exit", (code) => code !== 0 && code !== null && out(`a node exited with ${code}; see ${runDir}`));
        });
      } finally {
        out("stopping the local cluster…");
        await shutdown();
      }
    });

  program
    .command("publish <table> <file>")
    .description("publish the rows of a JSONL or CSV file through the producer client")
    .requiredOption("--nats <url>", "NATS server URL")
    .option("--prefix <p>", "subject prefix", "lake")
    .option("--no-progress", "no progress bar")
    .option("--wait-visible", "wait until the rows are visible in a snapshot")
    .action(async (table: string, file: string, o: { nats: string; prefix: string; progress: boolean; waitVisible?: boolean }) => {
      let size: number;
      try {
        size = statSync(file).size;
      } catch {
        throw new UsageError(`cannot read input file '${file}'`);
      }
      const nc = await connect({ servers: o.nats });
      const producer = await createProducer({ nc, table, prefix: o.prefix });
      const bar = new SingleBar({ format: "publishing |{bar}| {percentage}% | {rows} rows", stream: process.stderr }, Presets.shades_classic);
      const tty = o.progress && process.stderr.isTTY === true;
      if (tty) bar.start(size, 0, { rows: 0 });
      let bytes = 0;
      let rows = 0;
      const stream = createReadStream(file);
      stream.on("data", (c) => (bytes += c.length));
      const records: AsyncIterable<Record<string, unknown>> = file.endsWith(".csv")
        ? (stream.pipe(parseCsv({ columns: true, skip_empty_lines: true, cast: (v) => (v === "" ? null : v) })) as AsyncIterable<Record<string, unknown>>)
        : (async function* () {
            for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
          })();
      const pending: Array<Promise<unknown>> = [];
      for await (const r of records) {
        pending.push(producer.write(r));
        rows++;
        if (tty && rows % 1000 === 0) bar.update(Math.min(bytes, size), { rows });
      }
      const outcomes = await producer.flush();
      await Promise.all(pending);
      if (tty) {
        bar.update(size, { rows });
        bar.stop();
      }
      const counts: Record<string, number> = {};
      for (const oc of outcomes) counts[oc.status] = (counts[oc.status] ?? 0) + oc.rows;
      out(`published ${rows} rows to ${table}: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")}`);
      if (o.waitVisible) {
        await producer.waitVisible(producer.token(), 60_000);
        out("visible in a snapshot");
      }
      await producer.close();
      await nc.close();
      if ((counts["failed"] ?? 0) + (counts["unknown"] ?? 0) > 0) process.exitCode = 1;
    });

  program
    .command("subscribe <table>")
    .description("print snapshot notifications of a table as JSON lines")
    .requiredOption("--nats <url>", "NATS server URL")
    .option("--prefix <p>", "subject prefix", "lake")
    .option("--count <n>", "stop after n notifications", parsePositiveInt("--count"))
    .action(async (table: string, o: { nats: string; prefix: string; count?: number }) => {
      const nc = await connect({ servers: o.nats });
      let seen = 0;
      await new Promise<void>((done) => {
        void subscribeSnapshots(nc, table, (n) => {
          out(JSON.stringify(n));
          if (o.count !== undefined && ++seen >= o.count) done();
        }, { prefix: o.prefix }).then((sub) => {
          process.once("SIGINT", () => {
            sub.stop();
            done();
          });
        });
      });
      await nc.close();
    });


}

/** `up --demo`: create a table through the cluster and publish rows, so the first run shows something. */
async function runDemo(natsUrl: string, out: (s: string) => void): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  // The nodes are still starting: retry until one answers (bounded).
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await adminRequest(nc, "lake", { type: "create-table", table: "demo.events", columns: "id BIGINT NOT NULL, msg STRING, at TIMESTAMP(3)", options: { bucket: "4", "bucket-key": "id" } }, 5_000);
      break;
    } catch (e) {
      if (/already exists/.test(String(e))) break;
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const producer = await createProducer({ nc, table: "demo.events" });
  for (let i = 0; i < 1000; i++) void producer.write({ id: i, msg: `hello ${i}`, at: Date.now() });
  await producer.flush();
  const started = Date.now();
  await producer.waitVisible(producer.token(), 60_000);
  out(`demo: created demo.events and published 1000 rows; visible in a snapshot ${Date.now() - started} ms after the last ack`);
  out("demo: read them with  natslake read demo.events --warehouse <the warehouse above> --limit 5");
  await producer.close();
  await nc.close();
}
